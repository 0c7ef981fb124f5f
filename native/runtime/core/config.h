/* Runtime settings: one table of OBJTIER_* environment variables, read once at start-up. */
#ifndef OBJTIER_CONFIG_H
#define OBJTIER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum rt_sampler_kind {
    RT_SAMPLER_NONE = 0,
    RT_SAMPLER_FAULT = 1,
    RT_SAMPLER_PERF = 2,
    RT_SAMPLER_TRACE = 3,
    RT_SAMPLER_PAGEOUT = 4,
    RT_SAMPLER_WP = 5,
    RT_SAMPLER_AUTO = 6 /* the default: resolved at start-up (sampler.h, rt_sampler_auto) */
};
enum rt_tier_kind { RT_TIER_SWAP = 0, RT_TIER_NUMA = 1 };

typedef struct rt_config {
    char output[1024];     /* OBJTIER_OUTPUT: directory; empty = passive */
    int sampler;           /* OBJTIER_SAMPLER: enum rt_sampler_kind; never AUTO once started */
    uint64_t rate;         /* OBJTIER_RATE: max samples per second (>= 1) */
    uint64_t min_size;     /* OBJTIER_MIN_SIZE: bytes; objects >= this are recorded */
    uint32_t stack_depth;  /* OBJTIER_STACK_DEPTH: frames per context, 1..32 */
    int follow_forks;      /* OBJTIER_FOLLOW_FORKS: 0/1 */
    uint32_t window_pages; /* OBJTIER_WINDOW_PAGES: fault scan window, pages */
    uint32_t flush_ms;     /* OBJTIER_FLUSH_MS: background flush period, ms */
    int log;               /* OBJTIER_LOG: 0 quiet, 1 warnings */
    /* exact tracing (sampler_trace.c); 0 = the machine's LLC geometry from sysfs */
    uint64_t llc_bytes;    /* OBJTIER_LLC_BYTES: cache model size, bytes */
    uint32_t llc_ways;     /* OBJTIER_LLC_WAYS: cache model associativity */
    uint32_t llc_line;     /* OBJTIER_LLC_LINE: cache model line size, bytes (power of two) */
    uint64_t trace_limit;  /* OBJTIER_TRACE_LIMIT: SAMPLE records of the address trace; 0 = none */
    uint64_t trace_stream; /* OBJTIER_TRACE_STREAM: ACCESS records (ordered stream); 0 = none */
    uint64_t trace_stream_window; /* OBJTIER_TRACE_STREAM_WINDOW: records per window spread
                                     over the run; 0 = the first trace_stream accesses */
    /* plan enforcement (placement.c) */
    char plan[1024];          /* OBJTIER_PLAN: text-form plan file; empty = no plan */
    int tier;                 /* OBJTIER_TIER: enum rt_tier_kind */
    uint64_t mlock_limit;     /* OBJTIER_MLOCK_LIMIT: bytes the plan may mlock; 0 = no own cap */
    int pageout;              /* OBJTIER_PAGEOUT: 1 = MADV_PAGEOUT planned-slow ranges too */
    uint32_t advise_ms;       /* OBJTIER_ADVISE_MS: period of whole slow-range advice; 0 = never */
    uint32_t pressure_ms;     /* OBJTIER_PRESSURE_MS: period of MADV_COLD while the memory
                                cgroup is at its limit; 0 = never */
    uint32_t inactive_pct;    /* OBJTIER_INACTIVE_PCT: under pressure, advise slow pages cold
                                while inactive anonymous memory is below this % of the limit */
    uint32_t readahead_kb;    /* OBJTIER_READAHEAD_KB: swap tier, under a memory limit: KiB
                                advised MADV_WILLNEED ahead of each ascending stream of page
                                faults in planned objects (swapahead.c); 0 = none (the default:
                                it costs more than it saves on most programs measured) */
    int large_folios;         /* OBJTIER_LARGE_FOLIOS: swap tier: 1 (default) = the plan's `folio`
                                objects get MADV_HUGEPAGE on their planned-slow runs at
                                allocation (placement.c); 0 = base pages everywhere */
    char fast_nodes[64];      /* OBJTIER_FAST_NODES: node list such as "0" or "0-1,3" */
    char slow_nodes[64];      /* OBJTIER_SLOW_NODES */
    int numa_strict;          /* OBJTIER_NUMA_STRICT: 1 MPOL_BIND fast part, 0 MPOL_PREFERRED */
    uint32_t residency_ms;    /* OBJTIER_RESIDENCY_MS: numa tier residency period; 0 = at exit */
    char sampler_reason[256]; /* OBJTIER_SAMPLER_REASON: why `objtier record` chose the
                                 sampler, kept in the trace's settings text; may be empty */
    int statics;              /* OBJTIER_STATICS: 1 (default) = .data/.bss symbols of at least
                                OBJTIER_MIN_SIZE are objects (statics.c); 0 = heap and mmap only */
    uint32_t overhead_bp;     /* OBJTIER_OVERHEAD_BP: the pageout sampler's cost budget, basis
                                points of the program's CPU time; 0 = no pacing (overhead.h) */
    uint32_t site_period;     /* OBJTIER_SITE_PERIOD: 1 in N heap blocks below min_size are
                                sampled as allocation sites (trace_format.h); 0 = none */
    /* segregated arenas (place/arena.c) */
    char arena[8];              /* OBJTIER_ARENA: "" = the plan's `site` records, "all" =
                                   every small block from an arena of its calling address,
                                   "off" */
    char arena_stats[1024];     /* OBJTIER_ARENA_STATS: one line of arena counts per process
                                   appended here at exit; may be empty */
    char arena_sites[1024];     /* OBJTIER_ARENA_SITES: sites to watch while recording, one
                                   `KEY FRAME0` a line (place/arena_watch.h); "" = none */
    uint32_t arena_learn;       /* OBJTIER_ARENA_LEARN: with no sites file, watch the N sites
                                   with the most sampled bytes once arena_learn_bytes were
                                   seen; 0 = off */
    uint64_t arena_learn_bytes; /* OBJTIER_ARENA_LEARN_BYTES (estimated small-block bytes) */
} rt_config;

#define RT_MAX_STACK_DEPTH  32
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
