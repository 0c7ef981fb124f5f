/*
 * numab2: Linux NUMA balancing in memory-tiering mode (kernel.numa_balancing=2) with demotion
 * enabled: scanner + hint faults, hot threshold on hint-fault latency (dynamic), promotion rate
 * limit, kswapd demotion to the promo watermark. Mechanics in numab.c.
 */
#include "numab.h"

static const sim_param_def numab2_params[] = {
    NUMAB_COMMON_PARAMS,
    {"hot_threshold_ms", 1000},
    {"adjust_threshold", 1},  /* 1: numa_promotion_adjust_threshold every scan_period_max */
    {"free_enough_mb", 1024}, /* fault promotes unconditionally above promo + max(this, node/16) */
    {NULL, 0},
};

static int numab2_init(sim_t *s)
{
    return numab_init(s, false);
}

const sim_policy_ops sim_policy_numab2 = {
    .name = "numab2",
    .params = numab2_params,
    .state_bytes = sizeof(numab_state),
    .init = numab2_init,
    .on_alloc = numab_alloc,
    .on_access = numab_access,
    .access_flags = SIM_PG_PROTNONE, /* only hint faults matter */
    .on_tick = numab_tick,
};
