/*
 * static: a fixed placement decided before the run (objtier plans: object, spill; the oracle).
 * Object i's pages whose first byte lies in its first place_fast_bytes[i] bytes go fast, and so
 * does page k of object i when place_bits[place_base[i] + k] is set (k counted from the page that
 * holds the object's first byte). Everything else goes to the slow tier, or, with rest_fast=1,
 * to the fast tier while it has room. Fast pages are pinned; nothing migrates. When the plan asks
 * for more fast pages than are free at allocation time, the surplus lands in the slow tier (as an
 * mbind with MPOL_PREFERRED would do).
 */
#include "sim_internal.h"

static const sim_param_def static_params[] = {
    {"rest_fast", 0}, /* 1: unplanned pages go fast while there is room (first-touch) */
    {NULL, 0},
};

static int static_alloc(sim_t *s, sim_page *pg, uint32_t obj, uint64_t offset)
{
    bool fast = false;
    if (s->place_fast_bytes && offset < s->place_fast_bytes[obj])
        fast = true;
    if (!fast && s->place_bits && s->place_base) {
        unsigned sh = s->cfg.page_shift;
        uint64_t lead = s->objects[obj].addr & ((1ull << sh) - 1);
        uint64_t k = offset ? (offset + lead) >> sh : 0;
        fast = s->place_bits[s->place_base[obj] + k] != 0;
    }
    if (fast) {
        pg->flags |= SIM_PG_PINNED;
        return SIM_FAST;
    }
    return s->param[0] != 0 ? SIM_FAST : SIM_SLOW;
}

const sim_policy_ops sim_policy_static = {
    .name = "static",
    .params = static_params,
    .on_alloc = static_alloc,
};
