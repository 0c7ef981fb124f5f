/*
 * A program of small blocks whose output must not depend on where its blocks come from
 * (tests/runtime/test_arena.py runs it without objtier and with segregated arenas and compares
 * the output). Every line is a check and a checksum, never an address.
 *
 *   arena_program [mixed|aligned|usable|calloc|threads|fork|sites N]...
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed * 31 + i * 7);
}

static int same(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed * 31 + i * 7))
            return 0;
    return 1;
}

/* realloc growth and shrink across every size class and past the arenas' largest block */
static void mixed(void)
{
    enum { N = 3000 };
    static unsigned char *b[N];
    static size_t len[N];
    unsigned long bad = 0, sum = 0;
    for (int i = 0; i < N; i++) {
        len[i] = 1 + next() % (i % 10 == 0 ? 20000 : 600);
        b[i] = malloc(len[i]);
        fill(b[i], len[i], (unsigned)i);
    }
    static const size_t steps[] = {3, 17, 300, 4096, 70000, 140000, 300000, 1000, 24, 1};
    for (int r = 0; r < 10; r++)
        for (int i = r; i < N; i += 10) {
            size_t n = steps[(r + i) % 10], keep = n < len[i] ? n : len[i];
            bad += !same(b[i], keep, (unsigned)i);
            unsigned char *q = realloc(b[i], n);
            if (!q) {
                bad++;
                continue;
            }
            b[i] = q;
            bad += !same(q, keep, (unsigned)i);
            fill(q, n, (unsigned)i);
            len[i] = n;
        }
    for (int i = 0; i < N; i++) {
        bad += !same(b[i], len[i], (unsigned)i);
        sum += len[i];
        free(i % 3 ? b[i] : realloc(b[i], 0) /* frees, NULL (glibc) */);
    }
    void *z = reallocarray(NULL, 100, 8);
    bad += z == NULL;
    errno = 0;
    volatile size_t half = SIZE_MAX / 2;
    bad += reallocarray(z, half, 4) != NULL || errno != ENOMEM;
    free(z);
    printf("mixed bad=%lu bytes=%lu\n", bad, sum);
}

static void aligned(void)
{
    unsigned long bad = 0;
    for (size_t a = 16; a <= (1u << 21); a *= 2) {
        for (size_t n = 1; n <= 9000; n = n * 3 + 5) {
            void *p = NULL, *q, *r;
            bad += posix_memalign(&p, a, n) != 0 || ((uintptr_t)p & (a - 1));
            q = aligned_alloc(a, n);
            r = memalign(a, n);
            bad += q == NULL || ((uintptr_t)q & (a - 1)) || r == NULL || ((uintptr_t)r & (a - 1));
            memset(p, 1, n);
            memset(q, 2, n);
            memset(r, 3, n);
            bad +=
                malloc_usable_size(p) < n || malloc_usable_size(q) < n || malloc_usable_size(r) < n;
            void *g = realloc(q, n * 5); /* an aligned block grows like any other */
            bad += g == NULL || ((unsigned char *)g)[n - 1] != 2;
            free(p);
            free(g);
            free(r);
        }
    }
    void *p = NULL;
    bad += posix_memalign(&p, 24, 100) != EINVAL; /* not a power of two */
    bad += posix_memalign(&p, 4, 100) != EINVAL;  /* below sizeof(void *) */
    void *v = valloc(5000);
    bad += v == NULL || ((uintptr_t)v & 4095);
    free(v);
    printf("aligned bad=%lu\n", bad);
}

/* the bytes malloc_usable_size promises are the program's, and survive realloc */
static void usable(void)
{
    unsigned long bad = 0, total = 0;
    for (size_t n = 1; n < 100000; n = n * 2 + 1) {
        unsigned char *p = malloc(n);
        size_t u = malloc_usable_size(p);
        bad += u < n;
        fill(p, u, (unsigned)n);
        unsigned char *q = realloc(p, u + 1000);
        bad += q == NULL || !same(q, u, (unsigned)n);
        total += n;
        free(q);
    }
    bad += malloc_usable_size(NULL) != 0;
    printf("usable bad=%lu total=%lu\n", bad, total);
}

static void zeroed(void)
{
    unsigned long bad = 0;
    for (int round = 0; round < 4; round++) {
        void *d[200];
        for (int i = 0; i < 200; i++) {
            d[i] = malloc(16 + (size_t)i * 40);
            memset(d[i], 0xab, 16 + (size_t)i * 40);
        }
        for (int i = 0; i < 200; i++)
            free(d[i]);
        for (int i = 0; i < 200; i++) {
            unsigned char *c = calloc(1 + (size_t)i, 40);
            for (size_t k = 0; k < (1 + (size_t)i) * 40; k++)
                bad += c[k] != 0;
            d[i] = c;
        }
        for (int i = 0; i < 200; i++)
            free(d[i]);
    }
    errno = 0;
    volatile size_t huge = SIZE_MAX / 8;
    bad += calloc(huge, 16) != NULL || errno != ENOMEM;
    printf("calloc bad=%lu\n", bad);
}

/* threads: each allocates; blocks are freed by another thread through a shared ring */
#define RING 4096
static void *ring[RING];
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg, x = id * 2654435761u;
    unsigned long bad = 0;
    for (int i = 0; i < 40000; i++) {
        x = x * 1103515245u + 12345u;
        size_t n = 8 + (x >> 8) % 2000;
        unsigned char *p = malloc(n);
        p[0] = (unsigned char)n;
        p[n - 1] = (unsigned char)(n >> 3);
        pthread_mutex_lock(&ring_lock);
        unsigned char *old = ring[x % RING];
        ring[x % RING] = p;
        pthread_mutex_unlock(&ring_lock);
        if (old) {
            size_t m = malloc_usable_size(old);
            bad += m < 8;
            free(old);
        }
    }
    return (void *)(uintptr_t)bad;
}

static void threads(void)
{
    pthread_t t[4];
    unsigned long bad = 0;
    for (unsigned i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += (unsigned long)(uintptr_t)r;
    }
    for (int i = 0; i < RING; i++)
        free(ring[i]);
    printf("threads bad=%lu\n", bad);
}

/* fork while another thread allocates; the child frees the parent's blocks and makes its own */
static volatile int spinning = 1;
static void *spinner(void *arg)
{
    (void)arg;
    while (spinning)
        free(malloc(1 + next() % 3000));
    return NULL;
}

static void forks(void)
{
    enum { K = 500 };
    unsigned char *keep[K];
    for (int i = 0; i < K; i++) {
        keep[i] = malloc(10 + (size_t)i);
        fill(keep[i], 10 + (size_t)i, (unsigned)i);
    }
    pthread_t t;
    pthread_create(&t, NULL, spinner, NULL);
    int statuses = 0;
    for (int round = 0; round < 8; round++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            int bad = 0;
            for (int i = 0; i < K; i++) {
                bad += !same(keep[i], 10 + (size_t)i, (unsigned)i);
                keep[i] = realloc(keep[i], 20 + (size_t)i * 3);
                bad += !same(keep[i], 10 + (size_t)i, (unsigned)i);
            }
            for (int i = 0; i < K; i++)
                free(keep[i]);
            char *s = strdup("child");
            bad += strcmp(s, "child") != 0;
            free(s);
            _exit(bad ? 3 : 0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        statuses += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    spinning = 0;
    pthread_join(t, NULL);
    int bad = 0;
    for (int i = 0; i < K; i++) {
        bad += !same(keep[i], 10 + (size_t)i, (unsigned)i);
        free(keep[i]);
    }
    printf("fork children_ok=%d bad=%d\n", statuses, bad);
}

/* n blocks of two sites: rows (kept, read often) and scratch (freed at once) */
__attribute__((noinline)) void *site_row(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" ::: "memory");
    return p;
}
__attribute__((noinline)) void *site_scratch(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" ::: "memory");
    return p;
}

static void sites(int n)
{
    unsigned char **rows = calloc((size_t)n, sizeof *rows);
    unsigned long sum = 0;
    for (int i = 0; i < n; i++) {
        rows[i] = site_row(200);
        fill(rows[i], 200, (unsigned)i);
        unsigned char *s = site_scratch(64);
        fill(s, 64, (unsigned)i);
        sum += s[5];
        free(s);
    }
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < n; i++)
            sum += rows[i][i % 200];
    for (int i = 0; i < n; i++)
        free(rows[i]);
    free(rows);
    printf("sites n=%d sum=%lu\n", n, sum);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "mixed"))
            mixed();
        else if (!strcmp(argv[i], "aligned"))
            aligned();
        else if (!strcmp(argv[i], "usable"))
            usable();
        else if (!strcmp(argv[i], "calloc"))
            zeroed();
        else if (!strcmp(argv[i], "threads"))
            threads();
        else if (!strcmp(argv[i], "fork"))
            forks();
        else if (!strcmp(argv[i], "sites") && i + 1 < argc)
            sites(atoi(argv[++i]));
        else {
            fprintf(stderr, "unknown part %s\n", argv[i]);
            return 2;
        }
    }
    return 0;
}
