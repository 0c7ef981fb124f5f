/* Raw system calls and small helpers used everywhere in the runtime. Everything here is
 * async-signal-safe except rt_log (vsnprintf on a stack buffer; used outside handlers). */
#define _GNU_SOURCE
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

_Atomic int rt_state;
RT_TLS int rt_guard;
static RT_TLS uint32_t tls_tid;
size_t rt_page_bytes = 4096;
int rt_log_level;

uint32_t rt_tid(void)
{
    if (RT_UNLIKELY(tls_tid == 0))
        tls_tid = (uint32_t)syscall(SYS_gettid);
    return tls_tid;
}

void rt_tid_reset(void)
{
    tls_tid = 0;
}

void *rt_sys_mmap(size_t bytes)
{
#ifdef OBJTIER_SANITIZED
    /* sanitizer builds (unit tests only): let the sanitizer see mappings come and go */
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
#endif
    long r =
        syscall(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r < 0 && r > -4096)
        return NULL;
    return (void *)r;
}

void rt_sys_munmap(void *p, size_t bytes)
{
#ifdef OBJTIER_SANITIZED
    if (p)
        munmap(p, bytes);
    return;
#endif
    if (p)
        syscall(SYS_munmap, p, bytes);
}

long rt_sys_write_all(int fd, const void *buf, size_t bytes)
{
    const char *p = buf;
    size_t done = 0;
    while (done < bytes) {
        long r = syscall(SYS_write, fd, p + done, bytes - done);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return -EIO;
        done += (size_t)r;
    }
    return (long)done;
}

int rt_sys_mprotect(void *addr, size_t bytes, int prot)
{
    long r = syscall(SYS_mprotect, addr, bytes, prot);
    return r < 0 ? -errno : 0;
}

int rt_sys_read_small(const char *path, char *buf, size_t cap)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    long n = syscall(SYS_read, fd, buf, cap - 1);
    syscall(SYS_close, fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    return (int)n;
}

void rt_log(int force, const char *fmt, ...)
{
    if (!force && rt_log_level < 1)
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "objtier: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len =
        (size_t)n +
        ((size_t)m < sizeof line - (size_t)n - 1 ? (size_t)m : sizeof line - (size_t)n - 2);
    line[len++] = '\n';
    rt_sys_write_all(2, line, len);
}

void rt_thread_stop(pthread_t t, pthread_mutex_t *lock, pthread_cond_t *cond, int *stop,
                    int *started)
{
    if (!*started)
        return;
    pthread_mutex_lock(lock);
    *stop = 1;
    pthread_cond_signal(cond);
    pthread_mutex_unlock(lock);
    pthread_join(t, NULL);
    *started = 0;
}

int rt_home_cpu = -1;

void rt_thread_stay_home(void)
{
    int cpu = rt_home_cpu;
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)sched_setaffinity(0, sizeof set, &set); /* this thread only; failure: stays free */
}
