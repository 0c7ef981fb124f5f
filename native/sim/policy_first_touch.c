/*
 * first-touch: the static default of an untiered kernel. A new page goes to the fast tier while
 * it has a free page (allocation order decides; the seed's Finding 3), otherwise to the slow
 * tier, and nothing ever moves.
 */
#include "sim_internal.h"

static int first_touch_alloc(sim_t *s, sim_page *pg, uint32_t obj, uint64_t offset)
{
    (void)s, (void)pg, (void)obj, (void)offset;
    return SIM_FAST; /* the core falls back to slow when fast is full */
}

static const sim_param_def first_touch_params[] = {{NULL, 0}};

const sim_policy_ops sim_policy_first_touch = {
    .name = "first-touch",
    .params = first_touch_params,
    .on_alloc = first_touch_alloc,
};
