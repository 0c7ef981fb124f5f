/* Programs that notice a sampler changing what the kernel does for them. Each mode works on
 * buffers of a few MiB for about a second (so a sampler arms them many times), checks what
 * must hold, and prints a checksum; the exit status says whether every check held.
 *
 *   read     read() and pread() of a file into a heap buffer, over and over: every call must
 *            return the full count (no EFAULT, no short read)
 *   stdio    fread()/fwrite() through stdio into and out of heap buffers (the FORTIFY build
 *            goes through __fread_chk / __read_chk)
 *   sigblock a thread that blocks every signal sweeps a buffer; must finish normally
 *   guard    a guard page after a buffer and a region made read-only must still fault on a
 *            write (checked in forked children: exit 0 only when both died of SIGSEGV)
 *   reserve  PROT_NONE reservation committed piece by piece with mprotect(READ|WRITE)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB            (1UL << 20)
#define ROUNDS_SECONDS 0.6

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t sum_bytes(const unsigned char *p, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i += 64)
        s = s * 31 + p[i];
    return s;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((i * 2654435761u + seed) >> 13);
}

static int mode_read(const char *dir)
{
    size_t n = 16 * MIB;
    unsigned char *src = malloc(n), *dst = malloc(n);
    fill(src, n, 1);
    char path[4096];
    snprintf(path, sizeof path, "%s/data.bin", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, src, n) != (ssize_t)n)
        return 2;
    uint64_t check = 0;
    int bad = 0, rounds = 0;
    double until = now_s() + ROUNDS_SECONDS;
    while (now_s() < until || rounds < 8) {
        ssize_t got = pread(fd, dst, n, 0);
        if (got != (ssize_t)n) {
            fprintf(stderr, "pread returned %zd (%s)\n", got, strerror(errno));
            bad = 1;
            break;
        }
        lseek(fd, 0, SEEK_SET);
        got = read(fd, dst, n);
        if (got != (ssize_t)n) {
            fprintf(stderr, "read returned %zd (%s)\n", got, strerror(errno));
            bad = 1;
            break;
        }
        check = sum_bytes(dst, n);
        sum_bytes(src, n);
        rounds++;
    }
    close(fd);
    unlink(path);
    printf("read checksum %llu equal %d\n", (unsigned long long)check, memcmp(src, dst, n) == 0);
    return bad;
}

static int mode_stdio(const char *dir)
{
    size_t n = 8 * MIB;
    unsigned char *src = malloc(n), *dst = malloc(n);
    fill(src, n, 2);
    char path[4096];
    snprintf(path, sizeof path, "%s/stdio.bin", dir);
    int bad = 0, rounds = 0;
    double until = now_s() + ROUNDS_SECONDS;
    while (now_s() < until || rounds < 8) {
        FILE *f = fopen(path, "w");
        if (!f || fwrite(src, 1, n, f) != n || fclose(f) != 0) {
            bad = 1;
            break;
        }
        f = fopen(path, "r");
        size_t got = f ? fread(dst, 1, n, f) : 0;
        if (f)
            fclose(f);
        if (got != n) {
            fprintf(stderr, "fread returned %zu\n", got);
            bad = 1;
            break;
        }
        rounds++;
    }
    unlink(path);
    printf("stdio checksum %llu equal %d\n", (unsigned long long)sum_bytes(dst, n),
           memcmp(src, dst, n) == 0);
    return bad;
}

static void *blocked_sweeper(void *arg)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    size_t n = 16 * MIB;
    unsigned char *p = malloc(n);
    fill(p, n, 3);
    uint64_t s = 0;
    int rounds = 0;
    double until = now_s() + ROUNDS_SECONDS;
    while (now_s() < until || rounds < 8) {
        for (size_t i = 0; i < n; i += 4096)
            p[i]++;
        s = sum_bytes(p, n);
        rounds++;
    }
    (void)s;
    /* undo the increments: the checksum must not depend on how many rounds ran */
    for (size_t i = 0; i < n; i += 4096)
        p[i] = (unsigned char)(p[i] - rounds);
    *(uint64_t *)arg = sum_bytes(p, n);
    return NULL;
}

static int mode_sigblock(void)
{
    pthread_t t;
    uint64_t s = 0;
    if (pthread_create(&t, NULL, blocked_sweeper, &s) != 0)
        return 2;
    pthread_join(t, NULL);
    printf("sigblock checksum %llu\n", (unsigned long long)s);
    return 0;
}

/* 1 when writing to p in a child kills the child with SIGSEGV. */
static int write_faults(volatile unsigned char *p)
{
    pid_t c = fork();
    if (c == 0) {
        signal(SIGSEGV, SIG_DFL);
        *p = 7;
        _exit(0);
    }
    int st = 0;
    waitpid(c, &st, 0);
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

static int mode_guard(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t n = 8 * MIB;
    unsigned char *m =
        mmap(NULL, n + (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *ro = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || ro == MAP_FAILED)
        return 2;
    fill(m, n, 4);
    fill(ro, n, 5u << 20);
    mprotect(m + n, (size_t)pg, PROT_NONE); /* guard page */
    mprotect(ro, n, PROT_READ);             /* read-only from now on */
    uint64_t s = 0;
    int rounds = 0, ok = 1;
    double until = now_s() + ROUNDS_SECONDS;
    while (now_s() < until || rounds < 8) {
        s = sum_bytes(m, n) * 3 + sum_bytes(ro, n);
        if (rounds % 4 == 0)
            ok &= write_faults(m + n) & write_faults(ro + (size_t)(rounds % 64) * (size_t)pg);
        rounds++;
    }
    printf("guard checksum %llu faults %d\n", (unsigned long long)s, ok);
    return ok ? 0 : 1;
}

static int mode_reserve(void)
{
    size_t n = 64 * MIB, piece = 4 * MIB;
    unsigned char *r = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED)
        return 2;
    uint64_t s = 0;
    size_t committed = 0;
    int rounds = 0;
    double until = now_s() + ROUNDS_SECONDS;
    while (now_s() < until || rounds < 16) {
        if (committed < n) {
            if (mprotect(r + committed, piece, PROT_READ | PROT_WRITE) != 0)
                return 2;
            fill(r + committed, piece, 6);
            committed += piece;
        }
        s = sum_bytes(r, committed);
        rounds++;
    }
    printf("reserve checksum %llu committed %zu\n", (unsigned long long)s, committed);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *dir = argc > 2 ? argv[2] : ".";
    if (!strcmp(argv[1], "read"))
        return mode_read(dir);
    if (!strcmp(argv[1], "stdio"))
        return mode_stdio(dir);
    if (!strcmp(argv[1], "sigblock"))
        return mode_sigblock();
    if (!strcmp(argv[1], "guard"))
        return mode_guard();
    if (!strcmp(argv[1], "reserve"))
        return mode_reserve();
    return 2;
}
