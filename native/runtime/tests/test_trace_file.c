/* Trace files: directory 0700, files 0600 created with O_EXCL, close-on-exec, never opened
 * through a symbolic link, never reused when another user could read them. */
#define _GNU_SOURCE
#include "check.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
    umask(0);
    char base[] = "/tmp/objtier-trace-file-XXXXXX", dir[256], link_dir[256], path[512];
    CHECK(mkdtemp(base) != NULL);
    snprintf(dir, sizeof dir, "%s/out", base);
    snprintf(link_dir, sizeof link_dir, "%s/link", base);

    /* a new directory is created 0700 and opened close-on-exec */
    int d = rt_trace_dir_open(dir);
    CHECK(d >= 0);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
    CHECK(fcntl(d, F_GETFD) & FD_CLOEXEC);

    /* a file is created 0600, once */
    int f = rt_trace_file_create(d, "proc-1.otr");
    CHECK(f >= 0);
    CHECK(fstat(f, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(fcntl(f, F_GETFD) & FD_CLOEXEC);
    close(f);
    CHECK(rt_trace_file_create(d, "proc-1.otr") == -EEXIST);
    f = rt_trace_file_reopen(d, "proc-1.otr");
    CHECK(f >= 0);
    close(f);

    /* a symbolic link in the file's place is neither created through nor reopened */
    snprintf(path, sizeof path, "%s/victim", base);
    FILE *v = fopen(path, "w");
    CHECK(v && fputs("keep", v) >= 0 && fclose(v) == 0);
    snprintf(path, sizeof path, "%s/proc-2.otr", dir);
    char target[300];
    snprintf(target, sizeof target, "%s/victim", base);
    CHECK(symlink(target, path) == 0);
    CHECK(rt_trace_file_create(d, "proc-2.otr") == -EEXIST);
    CHECK(rt_trace_file_reopen(d, "proc-2.otr") == -ELOOP);
    CHECK(stat(target, &st) == 0 && st.st_size == 4); /* untouched */

    /* a file others may read is not reused */
    snprintf(path, sizeof path, "%s/proc-3.otr", dir);
    int o = open(path, O_WRONLY | O_CREAT, 0644);
    CHECK(o >= 0);
    close(o);
    CHECK(rt_trace_file_reopen(d, "proc-3.otr") == -EPERM);
    close(d);

    /* the directory itself may not be a symbolic link */
    CHECK(symlink(dir, link_dir) == 0);
    CHECK(rt_trace_dir_open(link_dir) == -ELOOP);
    /* an existing directory keeps its mode */
    d = rt_trace_dir_open(dir);
    CHECK(d >= 0);
    close(d);

    /* clean up */
    unlink(link_dir);
    snprintf(path, sizeof path, "%s/proc-1.otr", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/proc-2.otr", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/proc-3.otr", dir);
    unlink(path);
    rmdir(dir);
    unlink(target);
    rmdir(base);
    puts("test_trace_file ok");
    return 0;
}
