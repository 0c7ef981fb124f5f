/*
 * The NUMA tier (OBJTIER_TIER=numa); see tier.h. A planned object's fast part is bound with
 * mbind to OBJTIER_FAST_NODES (preferred unless OBJTIER_NUMA_STRICT), its slow part to
 * OBJTIER_SLOW_NODES; while recording, residency records say where the pages are
 * (residency.c, every OBJTIER_RESIDENCY_MS).
 *
 * Invariant: bound_split of an object is the split last applied with mbind
 * (RT_POBJ_UNBOUND before).
 */
#define _GNU_SOURCE
#include "tier.h"
#include "residency.h"
#include "rt.h"

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

static int numa_strict;
static uint64_t fast_mask, slow_mask; /* NUMA node bit masks (nodes < 64) */
static int residency_on;
static uint32_t residency_ms;
static uint64_t next_resid;

/* ---- settings -------------------------------------------------------------------- */

/* "0", "0-1,3" -> bit mask; -1 when malformed or a node >= 64 (tier.h). */
int rt_parse_nodes(const char *s, uint64_t *mask)
{
    uint64_t m = 0;
    if (!*s)
        return -1;
    while (*s) {
        unsigned a = 0, b;
        if (*s < '0' || *s > '9')
            return -1;
        for (; *s >= '0' && *s <= '9'; s++)
            if ((a = a * 10 + (unsigned)(*s - '0')) >= 64)
                return -1;
        b = a;
        if (*s == '-') {
            s++;
            if (*s < '0' || *s > '9')
                return -1;
            for (b = 0; *s >= '0' && *s <= '9'; s++)
                if ((b = b * 10 + (unsigned)(*s - '0')) >= 64)
                    return -1;
        }
        if (b < a)
            return -1;
        for (unsigned n = a; n <= b; n++)
            m |= 1ull << n;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    *mask = m;
    return 0;
}

static void numa_setup(const rt_config *cfg, int tracing)
{
    residency_on = tracing;
    residency_ms = cfg->residency_ms;
    if (residency_on && rt_residency_init() != 0)
        residency_on = 0;
}

static int numa_init(const rt_config *cfg)
{
    if (rt_parse_nodes(cfg->fast_nodes, &fast_mask) != 0 ||
        rt_parse_nodes(cfg->slow_nodes, &slow_mask) != 0) {
        rt_log(1, "OBJTIER_TIER=numa needs OBJTIER_FAST_NODES and OBJTIER_SLOW_NODES as node "
                  "lists such as 0 or 0-1,3 (nodes below 64); running without a plan");
        return -1;
    }
    numa_strict = cfg->numa_strict;
    return 0;
}

/* ---- binding ------------------------------------------------------------------------ */

static long sys_mbind(uint64_t start, uint64_t len, int mode, uint64_t mask, unsigned flags)
{
    unsigned long m[1] = {(unsigned long)mask};
    return syscall(SYS_mbind, (void *)(uintptr_t)start, len, mode, mask ? m : NULL, mask ? 65 : 0,
                   flags);
}

/* mbind [start, end) to the fast nodes (preferred unless OBJTIER_NUMA_STRICT). */
static void numa_bind_fast(rt_pobj *o, uint64_t start, uint64_t end)
{
    int mode = MPOL_BIND;
    uint64_t mask = fast_mask;
    if (!numa_strict)
        mode = (mask & (mask - 1)) ? MPOL_PREFERRED_MANY : MPOL_PREFERRED;
    long r = sys_mbind(start, end - start, mode, mask, MPOL_MF_MOVE);
    if (r != 0 && mode == MPOL_PREFERRED_MANY) /* kernels before 5.15 */
        r = sys_mbind(start, end - start, MPOL_PREFERRED, mask & -mask, MPOL_MF_MOVE);
    rt_planned_record(o, start, end, OT_PLACE_MBIND, rt_place_result(r), mask);
}

static void numa_bind_slow(rt_pobj *o, uint64_t start, uint64_t end)
{
    long r = sys_mbind(start, end - start, MPOL_BIND, slow_mask, MPOL_MF_MOVE);
    rt_planned_record(o, start, end, OT_PLACE_MBIND, rt_place_result(r), slow_mask);
}

/* A "pages" entry on the NUMA tier: its ranges fast, the gaps between them slow. bound_split
 * cannot tell one pages entry from another, so a phase change always rebinds. */
static void numa_bind_pages(rt_pobj *o)
{
    uint64_t at = o->lo, a, b;
    for (uint64_t i = 0; i < rt_plan_in_force.entries[o->pages].n_ranges; i++) {
        if (!rt_planned_pages_range(o, o->pages, i, &a, &b))
            break;
        if (a > at)
            numa_bind_slow(o, at, a);
        numa_bind_fast(o, a, b);
        at = b;
    }
    if (at < o->hi)
        numa_bind_slow(o, at, o->hi);
    o->bound_split = RT_POBJ_UNBOUND;
}

static void numa_bind(rt_pobj *o)
{
    if (o->planned && o->pages != RT_PLAN_NONE) {
        numa_bind_pages(o);
        return;
    }
    if (!o->planned || o->bound_split == o->split)
        return;
    /* MPOL_MF_MOVE: pages already touched (reused heap memory, realloc, a phase change)
     * migrate; untouched ones are placed at first touch. */
    if (o->split > o->lo)
        numa_bind_fast(o, o->lo, o->split);
    if (o->split < o->hi)
        numa_bind_slow(o, o->split, o->hi);
    o->bound_split = o->split;
}

/* ---- residency --------------------------------------------------------------------- */

static int numa_start(int planned)
{
    (void)planned; /* residency runs with or without a plan */
    return residency_on && residency_ms > 0;
}

static void numa_thread_begin(uint64_t now, int planned)
{
    (void)planned;
    next_resid = now + (uint64_t)residency_ms * 1000000ull;
}

static uint64_t numa_next_wake(void)
{
    return next_resid;
}

static void numa_tick(uint64_t now)
{
    if (now >= next_resid) {
        rt_residency_pass(now);
        next_resid = rt_now_ns() + (uint64_t)residency_ms * 1000000ull;
    }
}

static void numa_finish(void)
{
    if (residency_on)
        rt_residency_pass(rt_now_ns());
}

static void numa_fork_child(int follow)
{
    if (!follow) /* a passive child: nothing is written */
        residency_on = 0;
}

const rt_tier_ops rt_tier_numa_ops = {
    .name = "numa",
    .setup = numa_setup,
    .init = numa_init,
    .place = numa_bind,
    .phase_leave = numa_bind,
    .start = numa_start,
    .thread_begin = numa_thread_begin,
    .next_wake = numa_next_wake,
    .tick = numa_tick,
    .finish = numa_finish,
    .fork_child = numa_fork_child,
};
