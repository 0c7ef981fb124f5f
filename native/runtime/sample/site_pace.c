/* Pacing of the sampled small blocks' SITE_ALLOC records; see site_pace.h. */
#define _GNU_SOURCE
#include "site_pace.h"
#include "rt.h"
#include "writer.h"

#include "objtier/trace_format.h"

#define N_COUNTERS 4

_Atomic uint64_t rt_site_threshold;      /* 0 = no small block sampled */
_Atomic uint64_t rt_site_free_threshold; /* 0 = no SITE_FREE written */

static uint32_t first_period;              /* OBJTIER_SITE_PERIOD */
static uint32_t budget_bp;                 /* OBJTIER_OVERHEAD_BP */
static double budget;                      /* the sites' share of program CPU; 0 = no pacing */
static _Atomic uint32_t period_now;        /* the period in force (kept after stop) */
static _Atomic uint64_t cost_ns, captures; /* cumulative */
static _Atomic uint64_t next_check_ns;     /* CLOCK_MONOTONIC of the next pacing check */
/* at the last check, written by the checking thread only */
static uint64_t last_cost, last_cpu_ns;

void rt_site_pace_start(uint32_t period, uint32_t bp)
{
    first_period = period;
    budget_bp = bp;
    budget = (double)bp / 1e4 * RT_SITE_PACE_SHARE;
    atomic_store(&period_now, period);
    atomic_store(&cost_ns, 0);
    atomic_store(&captures, 0);
    last_cost = 0;
    last_cpu_ns = rt_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    atomic_store(&next_check_ns, rt_now_ns() + RT_SITE_PACE_NS);
    uint64_t threshold = ot_site_threshold(period);
    atomic_store(&rt_site_free_threshold, threshold);
    atomic_store(&rt_site_threshold, threshold);
}

void rt_site_pace_stop(void)
{
    atomic_store(&rt_site_threshold, 0);
    atomic_store(&rt_site_free_threshold, 0);
}

/* One thread at a time (the one that moved next_check_ns): the interval's share. */
static void check(void)
{
    uint64_t cpu = rt_clock_ns(CLOCK_PROCESS_CPUTIME_ID), spent = atomic_load(&cost_ns);
    uint64_t d_spent = spent - last_cost;
    uint64_t d_cpu = cpu > last_cpu_ns ? cpu - last_cpu_ns : 0;
    last_cost = spent;
    last_cpu_ns = cpu;
    /* the records are timed on the wall clock: on a loaded machine they can take longer than
     * the process's CPU time over the interval, which leaves the program nothing (over) */
    uint64_t program = d_cpu > d_spent ? d_cpu - d_spent : 0;
    uint64_t threshold = atomic_load(&rt_site_threshold);
    if (!threshold || d_spent == 0 || (double)d_spent <= budget * (double)program)
        return;
    /* one doubling a check: a churned address that hashes below the threshold usually falls
     * out of it within a doubling or two (its hash is uniform below the first threshold), and
     * a larger step would cost the estimates samples the budget does not ask for */
    uint64_t period = rt_site_period_of(threshold), next = 2 * period;
    if (next > RT_SITE_PERIOD_MAX)
        next = RT_SITE_PERIOD_MAX;
    if (next > period) { /* a lower threshold: its addresses are a subset (site_pace.h) */
        atomic_store(&period_now, (uint32_t)next);
        atomic_store(&rt_site_threshold, ot_site_threshold(next));
    }
}

void rt_site_pace_note(uint64_t t0_ns, uint64_t t1_ns)
{
    atomic_fetch_add_explicit(&cost_ns, t1_ns - t0_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&captures, 1, memory_order_relaxed);
    uint64_t due = atomic_load_explicit(&next_check_ns, memory_order_relaxed);
    if (budget <= 0 || t1_ns < due)
        return;
    if (atomic_compare_exchange_strong(&next_check_ns, &due, t1_ns + RT_SITE_PACE_NS))
        check();
}

uint64_t rt_site_pace_cost_ns(void)
{
    return atomic_load_explicit(&cost_ns, memory_order_relaxed);
}

void rt_site_pace_write_counters(void)
{
    static const char *const names[N_COUNTERS] = {"recorder.site_cost_ns", "recorder.site_captures",
                                                  "recorder.site_period_first",
                                                  "recorder.site_period"};
    static const char *const units[N_COUNTERS] = {"ns", "events", "blocks", "blocks"};
    if (!first_period)
        return;
    int64_t values[N_COUNTERS] = {(int64_t)atomic_load(&cost_ns), (int64_t)atomic_load(&captures),
                                  (int64_t)first_period, (int64_t)atomic_load(&period_now)};
    rt_write_counters(&rt_w, RT_SITE_PACE_COUNTER_ID, names, units, values, N_COUNTERS, 1);
}

void rt_site_pace_fork_child(void)
{
    rt_site_pace_start(first_period, budget_bp);
}
