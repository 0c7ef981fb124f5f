/*
 * Shared helpers of the objtier workloads: option parsing with one-line errors,
 * a monotonic timer, a seeded random generator, chunked file I/O and the FOM line.
 *
 * Every workload prints exactly one line
 *     FOM <name>=<value> <unit> time=<seconds>
 * on stdout for its timed region (wl_fom); all other output is free-form.
 * Errors go to stderr as one line "<prog>: <message>" and exit with
 * WL_EXIT_USAGE (bad option), WL_EXIT_FAIL (verification failed) or
 * WL_EXIT_SYSTEM (out of memory, I/O).
 */
#ifndef OBJTIER_WL_H
#define OBJTIER_WL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    WL_EXIT_USAGE = 2,  /* bad command line */
    WL_EXIT_FAIL = 3,   /* the result did not verify */
    WL_EXIT_SYSTEM = 4, /* allocation or I/O failure */
};

/* Set once by wl_init; used as the prefix of every error line. */
extern const char *wl_prog;

void wl_init(const char *prog);

/* Print "<prog>: <formatted message>\n" to stderr and exit with `code`. */
_Noreturn void wl_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Report an unknown option or a missing argument as returned by getopt ('?' or ':'),
 * naming the offending option; exits with WL_EXIT_USAGE. */
_Noreturn void wl_bad_option(int optopt_char, const char *arg);

/* Parse an unsigned decimal integer option value in [min, max]; exits on error. */
uint64_t wl_parse_u64(const char *opt, const char *text, uint64_t min, uint64_t max);

/* Parse a byte count with an optional K/M/G/T suffix (powers of 1024) in [min, max]. */
uint64_t wl_parse_bytes(const char *opt, const char *text, uint64_t min, uint64_t max);

/* Parse a finite double in [min, max]. */
double wl_parse_double(const char *opt, const char *text, double min, double max);

/* Set the OpenMP thread count when threads > 0 (0 keeps the OpenMP default). */
void wl_set_threads(uint64_t threads);

/* Seconds on CLOCK_MONOTONIC. */
double wl_now(void);

/* Allocation helpers that exit with WL_EXIT_SYSTEM on failure. Each call is one
 * separate heap object, which is what object-level tiering tools attribute
 * accesses to; `what` names the object in the error message. */
void *wl_malloc(size_t bytes, const char *what);
void *wl_calloc(size_t count, size_t size, const char *what);
void *wl_aligned(size_t alignment, size_t bytes, const char *what);

/* splitmix64: a 64-bit mixing function, used both as a sequential generator
 * (state += golden gamma) and as a counter-based hash (wl_hash64(seed ^ i)). */
static inline uint64_t wl_hash64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

typedef struct wl_rng {
    uint64_t state;
} wl_rng;

static inline uint64_t wl_rng_next(wl_rng *r)
{
    r->state += 0x9E3779B97F4A7C15ULL;
    uint64_t x = r->state;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* Uniform double in [0, 1) with 53 random bits. */
static inline double wl_rng_unit(wl_rng *r)
{
    return (double)(wl_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, bound), bound > 0 (multiply-shift; bias < 2^-64 * bound). */
static inline uint64_t wl_rng_below(wl_rng *r, uint64_t bound)
{
    return (uint64_t)(((unsigned __int128)wl_rng_next(r) * bound) >> 64);
}

/* fread/fwrite of exactly `bytes` bytes, in chunks of at most 64 MiB;
 * exit with WL_EXIT_SYSTEM naming `path` on a short read or write. */
void wl_read_exact(FILE *f, void *dst, size_t bytes, const char *path);
void wl_write_exact(FILE *f, const void *src, size_t bytes, const char *path);

/* Print the one figure-of-merit line. `unit` has no spaces. */
void wl_fom(const char *name, double value, const char *unit, double seconds);

#endif
