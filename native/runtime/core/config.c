/* The settings table: every OBJTIER_* variable, its default and its bounds, in one place.
 * Parsing never allocates (runs inside the first malloc call of the process). */
#define _GNU_SOURCE
#include "config.h"

#include <stdio.h>
#include <string.h>

typedef enum { T_PATH, T_SAMPLER, T_U64, T_BOOL, T_TIER } rt_type;

typedef struct {
    const char *name;
    rt_type type;
    const char *def;   /* default as text */
    uint64_t min, max; /* inclusive bounds for T_U64 */
    size_t off;        /* offset in rt_config */
    int width;         /* bytes of the field: integers 4 or 8, T_PATH the array with its NUL */
} rt_setting;

#define F(field) offsetof(rt_config, field), (int)sizeof(((rt_config *)0)->field)
static const rt_setting settings[] = {
    {"OBJTIER_OUTPUT", T_PATH, "", 0, 0, F(output)},
    {"OBJTIER_SAMPLER", T_SAMPLER, "auto", 0, 6, F(sampler)},
    {"OBJTIER_RATE", T_U64, "2000", 1, 10000000, F(rate)},
    {"OBJTIER_OVERHEAD_BP", T_U64, "0", 0, 10000, F(overhead_bp)},
    {"OBJTIER_MIN_SIZE", T_U64, "131072", 1, UINT64_MAX / 2, F(min_size)},
    {"OBJTIER_STACK_DEPTH", T_U64, "8", 1, RT_MAX_STACK_DEPTH, F(stack_depth)},
    {"OBJTIER_FOLLOW_FORKS", T_BOOL, "0", 0, 1, F(follow_forks)},
    {"OBJTIER_WINDOW_PAGES", T_U64, "1024", 1, RT_MAX_WINDOW_PAGES, F(window_pages)},
    {"OBJTIER_FLUSH_MS", T_U64, "200", 1, 60000, F(flush_ms)},
    {"OBJTIER_LOG", T_BOOL, "0", 0, 1, F(log)},
    {"OBJTIER_LLC_BYTES", T_U64, "0", 0, 1ULL << 40, F(llc_bytes)},
    {"OBJTIER_LLC_WAYS", T_U64, "0", 0, 64, F(llc_ways)},
    {"OBJTIER_LLC_LINE", T_U64, "0", 0, 4096, F(llc_line)},
    {"OBJTIER_TRACE_LIMIT", T_U64, "0", 0, UINT64_MAX / 2, F(trace_limit)},
    {"OBJTIER_TRACE_STREAM", T_U64, "0", 0, UINT64_MAX / 2, F(trace_stream)},
    {"OBJTIER_TRACE_STREAM_WINDOW", T_U64, "0", 0, 1 << 30, F(trace_stream_window)},
    {"OBJTIER_PLAN", T_PATH, "", 0, 0, F(plan)},
    {"OBJTIER_TIER", T_TIER, "swap", 0, 1, F(tier)},
    {"OBJTIER_MLOCK_LIMIT", T_U64, "0", 0, UINT64_MAX / 2, F(mlock_limit)},
    {"OBJTIER_PAGEOUT", T_BOOL, "0", 0, 1, F(pageout)},
    {"OBJTIER_ADVISE_MS", T_U64, "0", 0, 3600000, F(advise_ms)},
    {"OBJTIER_PRESSURE_MS", T_U64, "10", 0, 3600000, F(pressure_ms)},
    {"OBJTIER_INACTIVE_PCT", T_U64, "12", 1, 100, F(inactive_pct)},
    {"OBJTIER_READAHEAD_KB", T_U64, "0", 0, 1 << 20, F(readahead_kb)},
    {"OBJTIER_LARGE_FOLIOS", T_BOOL, "1", 0, 1, F(large_folios)},
    {"OBJTIER_FAST_NODES", T_PATH, "", 0, 0, F(fast_nodes)},
    {"OBJTIER_SLOW_NODES", T_PATH, "", 0, 0, F(slow_nodes)},
    {"OBJTIER_NUMA_STRICT", T_BOOL, "1", 0, 1, F(numa_strict)},
    {"OBJTIER_RESIDENCY_MS", T_U64, "500", 0, 3600000, F(residency_ms)},
    {"OBJTIER_SAMPLER_REASON", T_PATH, "", 0, 0, F(sampler_reason)},
    {"OBJTIER_STATICS", T_BOOL, "1", 0, 1, F(statics)},
    {"OBJTIER_SITE_PERIOD", T_U64, "64", 0, 1 << 30, F(site_period)},
    {"OBJTIER_ARENA", T_PATH, "", 0, 0, F(arena)},
    {"OBJTIER_ARENA_STATS", T_PATH, "", 0, 0, F(arena_stats)},
    {"OBJTIER_ARENA_SITES", T_PATH, "", 0, 0, F(arena_sites)},
    {"OBJTIER_ARENA_LEARN", T_U64, "0", 0, 256, F(arena_learn)},
    {"OBJTIER_ARENA_LEARN_BYTES", T_U64, "4194304", 1, 1ULL << 40, F(arena_learn_bytes)},
};
#undef F
#define N_SETTINGS (sizeof settings / sizeof settings[0])

static const char *const sampler_names[] = {"none",    "fault", "perf", "trace",
                                            "pageout", "wp",    "auto"};
#define N_SAMPLERS (int)(sizeof sampler_names / sizeof sampler_names[0])
static const char *const tier_names[] = {"swap", "numa"};

/* Decimal integer with an optional K/M/G suffix (powers of 1024). */
static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    unsigned shift = 0;
    if (*p == 'k' || *p == 'K')
        shift = 10;
    else if (*p == 'm' || *p == 'M')
        shift = 20;
    else if (*p == 'g' || *p == 'G')
        shift = 30;
    if (shift) {
        p++;
        if (*p == 'i' || *p == 'I')
            p++;
        if (*p == 'b' || *p == 'B')
            p++;
        if (v > (UINT64_MAX >> shift))
            return -1;
        v <<= shift;
    }
    if (*p)
        return -1;
    *out = v;
    return 0;
}

static void store(rt_config *cfg, const rt_setting *s, uint64_t v)
{
    char *field = (char *)cfg + s->off;
    if (s->width == 8)
        memcpy(field, &v, 8);
    else {
        uint32_t w = (uint32_t)v;
        memcpy(field, &w, 4);
    }
}

static uint64_t load(const rt_config *cfg, const rt_setting *s)
{
    const char *field = (const char *)cfg + s->off;
    if (s->width == 8) {
        uint64_t v;
        memcpy(&v, field, 8);
        return v;
    }
    uint32_t w;
    memcpy(&w, field, 4);
    return w;
}

int rt_config_load(rt_config *cfg, const char *(*getter)(const char *), char *err, size_t err_len)
{
    memset(cfg, 0, sizeof *cfg);
    int bad = 0;
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const rt_setting *s = &settings[i];
        const char *text = getter(s->name);
        int from_env = text && *text;
        if (!from_env)
            text = s->def;
        uint64_t v = 0;
        switch (s->type) {
        case T_PATH: /* a char array field: s->width bytes with the NUL */
            if (strlen(text) >= (size_t)s->width) {
                if (!bad)
                    snprintf(err, err_len, "%s is too long (max %d bytes)", s->name, s->width - 1);
                bad = 1;
            } else
                strcpy((char *)cfg + s->off, text);
            continue;
        case T_TIER:
            if (strcmp(text, tier_names[0]) == 0)
                v = 0;
            else if (strcmp(text, tier_names[1]) == 0)
                v = 1;
            else {
                if (!bad)
                    snprintf(err, err_len, "%s=%s is not swap or numa", s->name, text);
                bad = 1;
                continue;
            }
            break;
        case T_SAMPLER: {
            int found = -1;
            for (int k = 0; k < N_SAMPLERS; k++)
                if (strcmp(text, sampler_names[k]) == 0)
                    found = k;
            if (found < 0) {
                if (!bad)
                    snprintf(err, err_len,
                             "%s=%s is not one of auto, none, fault, perf, trace, pageout, wp",
                             s->name, text);
                bad = 1;
                continue;
            }
            v = (uint64_t)found;
            break;
        }
        case T_BOOL:
            if (strcmp(text, "0") == 0)
                v = 0;
            else if (strcmp(text, "1") == 0)
                v = 1;
            else {
                if (!bad)
                    snprintf(err, err_len, "%s=%s is not 0 or 1", s->name, text);
                bad = 1;
                continue;
            }
            break;
        case T_U64:
            if (parse_u64(text, &v) != 0 || v < s->min || v > s->max) {
                if (!bad)
                    snprintf(err, err_len, "%s=%s is not an integer in %llu..%llu", s->name, text,
                             (unsigned long long)s->min, (unsigned long long)s->max);
                bad = 1;
                continue;
            }
            break;
        }
        store(cfg, s, v);
    }
    return bad ? -1 : 0;
}

size_t rt_config_text(const rt_config *cfg, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < N_SETTINGS && n < cap; i++) {
        const rt_setting *s = &settings[i];
        int w;
        if (s->type == T_PATH)
            w = snprintf(out + n, cap - n, "%s=%s\n", s->name, (const char *)cfg + s->off);
        else if (s->type == T_TIER)
            w = snprintf(out + n, cap - n, "%s=%s\n", s->name, tier_names[cfg->tier ? 1 : 0]);
        else if (s->type == T_SAMPLER)
            w = snprintf(out + n, cap - n, "%s=%s\n", s->name, sampler_names[cfg->sampler]);
        else
            w = snprintf(out + n, cap - n, "%s=%llu\n", s->name, (unsigned long long)load(cfg, s));
        if (w < 0)
            break;
        n += (size_t)w;
    }
    return n < cap ? n : cap;
}
