/*
 * tpp: Transparent Page Placement (Meta, ASPLOS'23) on top of the tiering scanner: kswapd starts
 * at and reclaims up to a decoupled demotion watermark (demote_scale_factor, 1/10000 of the fast
 * tier) so new allocations find room; a slow page is promoted only on a hint fault while it is on
 * the active LRU (a previous fault, referenced since), no latency threshold.
 */
#include "numab.h"

static const sim_param_def tpp_params[] = {
    NUMAB_COMMON_PARAMS,
    {"demote_scale_factor", 200}, /* 2% of the fast tier kept free */
    {NULL, 0},
};

static int tpp_init(sim_t *s)
{
    return numab_init(s, true);
}

const sim_policy_ops sim_policy_tpp = {
    .name = "tpp",
    .params = tpp_params,
    .state_bytes = sizeof(numab_state),
    .init = tpp_init,
    .on_alloc = numab_alloc,
    .on_access = numab_access,
    .access_flags = SIM_PG_PROTNONE, /* only hint faults matter */
    .on_tick = numab_tick,
};
