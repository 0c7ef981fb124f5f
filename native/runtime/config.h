/* Runtime settings: one table of OBJTIER_* environment variables, read once at start-up. */
#ifndef OBJTIER_CONFIG_H
#define OBJTIER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum rt_sampler_kind { RT_SAMPLER_NONE = 0, RT_SAMPLER_FAULT = 1, RT_SAMPLER_PERF = 2 };

typedef struct rt_config {
    char output[1024];       /* OBJTIER_OUTPUT: directory; empty = passive */
    int sampler;             /* OBJTIER_SAMPLER: enum rt_sampler_kind */
    uint64_t rate;           /* OBJTIER_RATE: max samples per second (>= 1) */
    uint64_t min_size;       /* OBJTIER_MIN_SIZE: bytes; objects >= this are recorded */
    uint32_t stack_depth;    /* OBJTIER_STACK_DEPTH: frames per context, 1..32 */
    int follow_forks;        /* OBJTIER_FOLLOW_FORKS: 0/1 */
    uint32_t window_pages;   /* OBJTIER_WINDOW_PAGES: fault scan window, pages */
    uint32_t flush_ms;       /* OBJTIER_FLUSH_MS: background flush period, ms */
    int log;                 /* OBJTIER_LOG: 0 quiet, 1 warnings */
} rt_config;

#define RT_MAX_STACK_DEPTH 32
#define RT_MAX_WINDOW_PAGES 65536

extern int rt_log_level;

/* Fills *cfg from getter(name) (getenv in the runtime; any lookup in tests).
 * Returns 0, or -1 with a one-line reason in err (the runtime then stays passive). */
int rt_config_load(rt_config *cfg, const char *(*getter)(const char *name), char *err,
                   size_t err_len);

/* Writes the effective settings as "KEY=VALUE\n" lines; returns bytes written
 * (truncated to cap). */
size_t rt_config_text(const rt_config *cfg, char *out, size_t cap);

#endif
