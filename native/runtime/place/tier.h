/*
 * A tier: how plan enforcement acts on the memory of a planned object — the swap tier with
 * mlock (fast) and MADV_COLD/MADV_PAGEOUT (slow) under a memory cgroup limit, the NUMA tier
 * with mbind to the fast and the slow nodes. placement.c keeps the table of planned objects
 * and calls the tier in force (OBJTIER_TIER) through these ops, as runtime.c calls the
 * sampler through rt_sampler_ops.
 *
 * Every op that takes an object runs with rt_planned_lock held; an op left NULL does
 * nothing. The background ops run on placement's thread.
 */
#ifndef OBJTIER_TIER_H
#define OBJTIER_TIER_H

#include <stdint.h>

#include "config.h"
#include "planned.h"

typedef struct rt_tier_ops {
    const char *name; /* as OBJTIER_TIER spells it */
    /* Start-up, whether or not a plan is enforced; tracing: a trace file is written. */
    void (*setup)(const rt_config *cfg, int tracing);
    /* A plan was loaded: the tier's settings. 0, or -1 after one warning (no plan). */
    int (*init)(const rt_config *cfg);
    /* A new planned object, planned for the phase in force: apply its plan. */
    void (*place)(rt_pobj *o);
    /* o leaves the table (released, unmapped, its address reused): undo what place did. */
    void (*forget)(rt_pobj *o);
    /* A phase change, after o was planned anew: first every object leaves what no longer
     * applies (phase_leave), then every object takes what now applies (phase_enter). */
    void (*phase_leave)(rt_pobj *o);
    void (*phase_enter)(rt_pobj *o);
    /* After the runtime became ACTIVE (and in a following forked child): starts what the
     * tier runs on its own; returns 1 when it needs the background thread. planned: a plan
     * is enforced (rt_place_on). */
    int (*start)(int planned);
    /* The background thread: thread_begin once when it starts; then it sleeps until
     * next_wake() (CLOCK_MONOTONIC ns) and calls tick with the time it woke. */
    void (*thread_begin)(uint64_t now_ns, int planned);
    uint64_t (*next_wake)(void);
    void (*tick)(uint64_t now_ns);
    /* Process exit: stop before the background thread stops, finish after. */
    void (*stop)(void);
    void (*finish)(void);
    /* fork(): in the child, after the table was emptied; follow = it writes its own trace. */
    void (*fork_child)(int follow);
} rt_tier_ops;

extern const rt_tier_ops rt_tier_swap_ops; /* tier_swap.c */
extern const rt_tier_ops rt_tier_numa_ops; /* tier_numa.c */

/* A node list ("0", "0-1,3") as a bit mask: 0, or -1 when malformed or a node >= 64. */
int rt_parse_nodes(const char *s, uint64_t *mask);

#endif
