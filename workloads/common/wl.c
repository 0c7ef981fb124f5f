/* Shared helpers of the objtier workloads; see wl.h. */
#define _GNU_SOURCE
#include "wl.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Largest single fread/fwrite: the loaders read big arrays in pieces of this size. */
#define WL_IO_CHUNK ((size_t)64 << 20)

const char *wl_prog = "workload";

void wl_init(const char *prog)
{
    const char *slash = strrchr(prog, '/');
    wl_prog = slash ? slash + 1 : prog;
}

void wl_die(int code, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s: ", wl_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

void wl_bad_option(int optopt_char, const char *arg)
{
    if (optopt_char == 0 && arg)
        wl_die(WL_EXIT_USAGE, "unknown option '%s' (try -h)", arg);
    if (optopt_char == 0)
        wl_die(WL_EXIT_USAGE, "bad command line (try -h)");
    wl_die(WL_EXIT_USAGE, "unknown option or missing value for '-%c' (try -h)", optopt_char);
}

uint64_t wl_parse_u64(const char *opt, const char *text, uint64_t min, uint64_t max)
{
    char *end = NULL;
    errno = 0;
    if (!text || !*text || *text == '-' || *text == '+')
        wl_die(WL_EXIT_USAGE, "%s needs a non-negative integer, got '%s'", opt, text ? text : "");
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end)
        wl_die(WL_EXIT_USAGE, "%s needs a non-negative integer, got '%s'", opt, text);
    if (v < min || v > max)
        wl_die(WL_EXIT_USAGE, "%s must be in [%llu, %llu], got %llu", opt, (unsigned long long)min,
               (unsigned long long)max, v);
    return v;
}

uint64_t wl_parse_bytes(const char *opt, const char *text, uint64_t min, uint64_t max)
{
    char *end = NULL;
    errno = 0;
    if (!text || !*text || *text == '-' || *text == '+')
        wl_die(WL_EXIT_USAGE, "%s needs a size such as 512M, got '%s'", opt, text ? text : "");
    unsigned long long v = strtoull(text, &end, 10);
    unsigned shift = 0;
    if (*end) {
        switch (*end) {
        case 'k':
        case 'K': shift = 10; break;
        case 'm':
        case 'M': shift = 20; break;
        case 'g':
        case 'G': shift = 30; break;
        case 't':
        case 'T': shift = 40; break;
        default: shift = 99;
        }
        if (shift == 99 || (end[1] && !((end[1] == 'B' || end[1] == 'b') && !end[2])))
            wl_die(WL_EXIT_USAGE, "%s needs a size such as 512M, got '%s'", opt, text);
    }
    if (errno || (shift && v > (~0ULL >> shift)))
        wl_die(WL_EXIT_USAGE, "%s is out of range: '%s'", opt, text);
    v <<= shift;
    if (v < min || v > max)
        wl_die(WL_EXIT_USAGE, "%s must be in [%llu, %llu] bytes, got %llu", opt,
               (unsigned long long)min, (unsigned long long)max, v);
    return v;
}

double wl_parse_double(const char *opt, const char *text, double min, double max)
{
    char *end = NULL;
    errno = 0;
    double v = text ? strtod(text, &end) : NAN;
    if (!text || !*text || errno || *end || !isfinite(v))
        wl_die(WL_EXIT_USAGE, "%s needs a number, got '%s'", opt, text ? text : "");
    if (v < min || v > max)
        wl_die(WL_EXIT_USAGE, "%s must be in [%g, %g], got %g", opt, min, max, v);
    return v;
}

void wl_set_threads(uint64_t threads)
{
    if (threads > 0)
        omp_set_num_threads((int)threads);
}

double wl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void *wl_malloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        wl_die(WL_EXIT_SYSTEM, "out of memory allocating %s (%zu bytes)", what, bytes);
    return p;
}

void *wl_calloc(size_t count, size_t size, const char *what)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        wl_die(WL_EXIT_SYSTEM, "out of memory allocating %s (%zu x %zu bytes)", what, count, size);
    return p;
}

void *wl_aligned(size_t alignment, size_t bytes, const char *what)
{
    void *p = NULL;
    int rc = posix_memalign(&p, alignment, bytes ? bytes : alignment);
    if (rc)
        wl_die(WL_EXIT_SYSTEM, "out of memory allocating %s (%zu bytes, aligned %zu)", what, bytes,
               alignment);
    return p;
}

void wl_read_exact(FILE *f, void *dst, size_t bytes, const char *path)
{
    char *p = dst;
    while (bytes > 0) {
        size_t want = bytes < WL_IO_CHUNK ? bytes : WL_IO_CHUNK;
        size_t got = fread(p, 1, want, f);
        if (got != want)
            wl_die(WL_EXIT_SYSTEM, "%s: %s", path,
                   ferror(f) ? strerror(errno) : "file is shorter than its header says");
        p += got;
        bytes -= got;
    }
}

void wl_write_exact(FILE *f, const void *src, size_t bytes, const char *path)
{
    const char *p = src;
    while (bytes > 0) {
        size_t want = bytes < WL_IO_CHUNK ? bytes : WL_IO_CHUNK;
        if (fwrite(p, 1, want, f) != want)
            wl_die(WL_EXIT_SYSTEM, "%s: write failed: %s", path, strerror(errno));
        p += want;
        bytes -= want;
    }
}

void wl_fom(const char *name, double value, const char *unit, double seconds)
{
    printf("FOM %s=%.6g %s time=%.6f\n", name, value, unit, seconds);
    fflush(stdout);
}
