/*
 * Linux NUMA balancing in memory-tiering mode (numa_balancing=2), shared by the numab2 and
 * tpp policies: the PTE scanner, hint faults, the hot-threshold and rate-limit promotion filter,
 * and kswapd demotion. Mechanics and defaults: ../shared/reference/kernel-tiering.md §1 (kernel
 * 5.18-6.x), TPP §2. All times in the state are ns of trace time unless named _ms.
 */
#ifndef OBJTIER_SIM_NUMAB_H
#define OBJTIER_SIM_NUMAB_H

#include "sim_internal.h"

typedef struct numab_state {
    bool tpp; /* TPP variant: active-LRU filter, decoupled demotion watermark */
    /* parameters, converted */
    uint64_t scan_delay_ns, period_min_ms, period_max_ms, scan_pages;
    uint64_t def_th_ms;   /* hot_threshold_ms */
    uint64_t rate_limit;  /* pages per second */
    uint64_t free_enough; /* pages above WMARK_PROMO that make every fault promote */
    uint64_t demote_free; /* kswapd reclaims until this many fast pages are free */
    uint64_t wake_free;   /* kswapd wakes when fewer fast pages than this are free */
    bool demotion, adjust;
    /* scanner */
    uint64_t next_scan_ns;
    uint64_t cursor; /* sim_page_key of the page where the next scan starts */
    /* dynamic threshold (numa_promotion_adjust_threshold) */
    uint64_t th_ms; /* 0 = use def_th_ms */
    uint64_t th_start_ms, th_cand;
    /* rate limit (numa_promotion_rate_limit) */
    uint64_t rl_start_ms, rl_cand0;
    bool rl_started;
    bool kswapd_pending;
} numab_state;

int numab_init(sim_t *s, bool tpp);
int numab_alloc(sim_t *s, sim_page *pg, uint32_t obj, uint64_t offset);
void numab_access(sim_t *s, sim_page *pg, uint64_t now, uint64_t weight, bool store);
void numab_tick(sim_t *s, uint64_t now);

/* Parameters common to both, in this order at the start of each policy's table. */
#define NUMAB_COMMON_PARAMS                                                                        \
    {"scan_delay_ms", 1000}, {"scan_period_min_ms", 1000}, {"scan_period_max_ms", 60000},          \
        {"scan_size_mb", 256}, {"promote_rate_limit_MBps", 65536}, {"demotion_enabled", 1},        \
        {"watermark_scale_factor", 10},                                                            \
    {                                                                                              \
        "min_free_kbytes", -1                                                                      \
    }

#endif /* OBJTIER_SIM_NUMAB_H */
