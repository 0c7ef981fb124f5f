/*
 * Plan enforcement; see placement.h.
 *
 * Granularity: an object's plan acts on its inner pages [lo, hi) — the whole pages inside
 * [addr, addr + size), so that no action touches a page shared with another heap block. A
 * split at fast_bytes f puts [lo, split) fast with split = round_down(addr + f) clamped to
 * [lo, hi) (split = hi when f >= size); [split, hi) is the planned-slow part. A "pages" entry
 * (plan.h) puts its ranges fast, each clipped to [lo, hi), and has split = lo; its planned-slow
 * part is the gaps between its ranges (slow_run). Advice must skip the ranges: madvise
 * MADV_COLD/MADV_PAGEOUT fails with EINVAL on a range that holds an mlocked VMA.
 *
 * Here: loading the plan, matching each new object against it, the phase in force, and the
 * background thread; the table of planned objects is planned.c, and what is done to an
 * object's memory is the tier's (tier.h: tier_swap.c, tier_numa.c). Invariants of the table
 * and of each tier: planned.h, tier_swap.c, tier_numa.c.
 */
#define _GNU_SOURCE
#include "placement.h"
#include "objtier/trace_format.h"
#include "plan.h"
#include "planned.h"
#include "plankey.h"
#include "rt.h"
#include "tier.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

_Atomic int rt_place_on;
static const rt_tier_ops *tier = &rt_tier_swap_ops; /* OBJTIER_TIER */
static uint64_t matched; /* objects that matched an entry at allocation */
static int follow_forks; /* OBJTIER_FOLLOW_FORKS */
static rt_plan_self who; /* this process, for the plan's sections */
enum { SECTION_ALL = -1, SECTION_NONE = -2, SECTION_NO_PLAN = -3 };
static int section_note = SECTION_NO_PLAN; /* the section in force: index or one of those */

static pthread_t thread;
static int thread_started;
static pthread_mutex_t tlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tcond;
static int tstop;

/* ---- settings -------------------------------------------------------------------- */

size_t rt_place_process_notes(char *out, size_t cap)
{
    size_t n = 0;
    int w = 0;
    if (who.rank != RT_PLAN_NO_RANK)
        w = snprintf(out, cap, "OBJTIER_RANK=%llu\n", (unsigned long long)who.rank);
    n = w > 0 && (size_t)w < cap ? (size_t)w : 0;
    if (section_note == SECTION_NO_PLAN)
        return n;
    if (section_note >= 0)
        w = snprintf(out + n, cap - n, "OBJTIER_PLAN_SECTION=%d\n", section_note);
    else
        w = snprintf(out + n, cap - n, "OBJTIER_PLAN_SECTION=%s\n",
                     section_note == SECTION_ALL ? "all" : "none");
    return w > 0 && (size_t)w < cap - n ? n + (size_t)w : n;
}

int rt_place_init(const rt_config *cfg, int tracing)
{
    rt_plan_self_read(&who);
    rt_plan_set_self(&who);
    section_note = SECTION_NO_PLAN;
    follow_forks = cfg->follow_forks;
    tier = cfg->tier == RT_TIER_NUMA ? &rt_tier_numa_ops : &rt_tier_swap_ops;
    if (tier->setup)
        tier->setup(cfg, tracing);
    if (!cfg->plan[0])
        return 0;
    char err[400];
    section_note = SECTION_NONE;
    if (rt_plan_load(&rt_plan_in_force, cfg->plan, err, sizeof err) != 0) {
        rt_log(1, "%s; running without a plan", err);
        return 0;
    }
    if (rt_plan_in_force.n_programs && rt_plan_in_force.program_mine == RT_PLAN_NONE) {
        /* a multi-program plan with no section for this program (a launcher, a shell) */
        rt_log(0, "plan %s: no section for %s (build id %s); nothing to place", cfg->plan,
               who.exe_base, who.build_id[0] ? who.build_id : "none");
        rt_plan_free(&rt_plan_in_force);
        return 0;
    }
    section_note = rt_plan_in_force.n_programs ? (int)rt_plan_in_force.program_mine : SECTION_ALL;
    if (tier->init(cfg) != 0) {
        rt_plan_free(&rt_plan_in_force);
        return 0;
    }
    if (rt_planned_init() != 0) {
        rt_log(1, "out of memory loading the plan; running without a plan");
        rt_plan_free(&rt_plan_in_force);
        return 0;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&tcond, &ca);
    rt_planned_set_phase(0);
    rt_log(0, "plan %s: %llu entries, %u phases, tier %s", cfg->plan,
           (unsigned long long)rt_plan_in_force.n_entries, rt_plan_in_force.n_phases, tier->name);
    atomic_store(&rt_place_on, 1);
    return 1;
}

/* ---- hooks ----------------------------------------------------------------------- */

static void forget(rt_pobj *o)
{
    if (tier->forget)
        tier->forget(o);
    rt_planned_remove(o);
}

void rt_place_on_alloc(const rt_obj *ob, uint32_t ctx)
{
    if (!atomic_load_explicit(&rt_place_on, memory_order_acquire) || ctx == 0)
        return;
    pthread_mutex_lock(&rt_planned_lock);
    uint64_t key = rt_plankey_of(ctx);
    if (!rt_plan_has_key(&rt_plan_in_force, key)) {
        rt_planned_next_occurrence(key);
        pthread_mutex_unlock(&rt_planned_lock);
        return;
    }
    rt_pobj o = {.addr = ob->addr,
                 .size = ob->size,
                 .seq = ob->seq,
                 .key = key,
                 .occurrence = rt_planned_next_occurrence(key),
                 .bound_split = RT_POBJ_UNBOUND,
                 .pages = RT_PLAN_NONE,
                 .locked_entry = RT_PLAN_NONE,
                 .is_map = ob->kind == OT_ALLOC_MMAP || ob->kind == OT_ALLOC_MREMAP};
    uint64_t pg = rt_page_bytes;
    o.lo = (o.addr + pg - 1) & ~(pg - 1);
    o.hi = (o.addr + o.size) & ~(pg - 1);
    if (o.hi < o.lo)
        o.hi = o.lo;
    o.locked_end = o.lo;
    int any = 0;
    for (uint32_t ph = 0; ph < rt_plan_in_force.n_phases && !any; ph++)
        any = rt_plan_match(&rt_plan_in_force, key, o.occurrence, o.size, ph) != RT_PLAN_NONE;
    rt_pobj *d = any && o.hi != o.lo ? rt_planned_slot_for(o.addr) : NULL;
    if (!d) {
        matched += any;
        pthread_mutex_unlock(&rt_planned_lock);
        return;
    }
    matched++;
    if (d->addr > RT_POBJ_DELETED) /* a stale entry at this address: its memory was reused */
        forget(d);
    rt_planned_put(d, &o);
    rt_planned_replan(d);
    tier->place(d);
    rt_planned_changed();
    rt_planned_flush();
    pthread_mutex_unlock(&rt_planned_lock);
}

void rt_place_release(uint64_t addr)
{
    if (!atomic_load_explicit(&rt_place_on, memory_order_acquire))
        return;
    pthread_mutex_lock(&rt_planned_lock);
    rt_pobj *o = rt_planned_find(addr);
    if (o) {
        forget(o);
        rt_planned_flush();
    }
    pthread_mutex_unlock(&rt_planned_lock);
}

void rt_place_unmap(uint64_t addr, uint64_t len)
{
    if (!atomic_load_explicit(&rt_place_on, memory_order_acquire))
        return;
    pthread_mutex_lock(&rt_planned_lock);
    for (uint64_t i = 0; rt_planned_maps() && i < rt_planned_slots(); i++) {
        rt_pobj *o = rt_planned_slot(i);
        if (o->addr > RT_POBJ_DELETED && o->is_map && o->addr < addr + len &&
            addr < o->addr + o->size)
            forget(o);
    }
    rt_planned_flush();
    pthread_mutex_unlock(&rt_planned_lock);
}

void rt_place_phase(const char *name, size_t len)
{
    if (!atomic_load_explicit(&rt_place_on, memory_order_acquire))
        return;
    uint32_t ph = name ? rt_plan_phase_index(&rt_plan_in_force, name, len) : 0;
    if (ph == RT_PLAN_NONE)
        ph = 0; /* a phase the plan does not know: the whole-program entries apply */
    pthread_mutex_lock(&rt_planned_lock);
    const rt_plan_phase *phases = rt_plan_in_force.phases;
    if (phases[ph].target != phases[rt_planned_phase()].target) {
        rt_planned_set_phase(ph);
        rt_planned_changed();
        /* every object leaves the old phase's plan before any takes the new one's (tier.h) */
        for (uint64_t i = 0; i < rt_planned_slots(); i++) {
            rt_pobj *o = rt_planned_slot(i);
            if (rt_pobj_free(o))
                continue;
            rt_planned_replan(o);
            tier->phase_leave(o);
        }
        for (uint64_t i = 0; tier->phase_enter && i < rt_planned_slots(); i++) {
            rt_pobj *o = rt_planned_slot(i);
            if (!rt_pobj_free(o))
                tier->phase_enter(o);
        }
        rt_planned_flush();
    } else
        rt_planned_set_phase(ph);
    pthread_mutex_unlock(&rt_planned_lock);
}

/* ---- the background thread ------------------------------------------------------- */

static void *place_loop(void *arg)
{
    (void)arg;
    rt_guard = 1;
    rt_thread_stay_home();
    tier->thread_begin(rt_now_ns(), atomic_load(&rt_place_on));
    pthread_mutex_lock(&tlock);
    while (!tstop) {
        uint64_t wake = tier->next_wake();
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000ull),
                              .tv_nsec = (long)(wake % 1000000000ull)};
        pthread_cond_timedwait(&tcond, &tlock, &ts);
        if (tstop)
            break;
        pthread_mutex_unlock(&tlock);
        tier->tick(rt_now_ns());
        pthread_mutex_lock(&tlock);
    }
    pthread_mutex_unlock(&tlock);
    return NULL;
}

void rt_place_start(void)
{
    if (!tier->start || !tier->start(atomic_load(&rt_place_on)))
        return;
    if (!atomic_load(&rt_place_on)) { /* residency only: the plan set-up did not run */
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&tcond, &ca);
    }
    tstop = 0;
    thread_started = pthread_create(&thread, NULL, place_loop, NULL) == 0;
    if (!thread_started)
        rt_log(1, "cannot start the placement thread; no periodic advice or residency");
}

void rt_place_finish(void)
{
    if (tier->stop)
        tier->stop();
    rt_thread_stop(thread, &tlock, &tcond, &tstop, &thread_started);
    if (tier->finish)
        tier->finish();
    if (!atomic_load(&rt_place_on))
        return;
    pthread_mutex_lock(&rt_planned_lock);
    rt_planned_flush();
    if (matched == 0 && rt_plan_in_force.n_sites == 0) /* sites: arena_site.c counts them */
        /* following forks, a process of another binary (a launcher, a shell) matching nothing
         * is expected: said only with OBJTIER_LOG=1 */
        rt_log(!follow_forks || rt_plan_in_force.binary_mine || rt_plan_in_force.n_programs,
               "plan matched no allocation (another binary, other inputs, another "
               "OBJTIER_STACK_DEPTH or OBJTIER_MIN_SIZE?)");
    pthread_mutex_unlock(&rt_planned_lock);
}

void rt_place_fork_prepare(void)
{
    pthread_mutex_lock(&rt_planned_lock);
}

void rt_place_fork_parent(void)
{
    pthread_mutex_unlock(&rt_planned_lock);
}

void rt_place_fork_child(int follow)
{
    int planned = atomic_load(&rt_place_on);
    rt_planned_fork_child(planned);
    pthread_mutex_init(&tlock, NULL);
    thread_started = 0;
    if (tier->fork_child)
        tier->fork_child(follow);
    if (planned) {
        matched = 0;
        rt_plankey_reset();
    }
    if (follow)
        rt_place_start();
    else /* a passive child: nothing is tracked or written */
        atomic_store(&rt_place_on, 0);
}
