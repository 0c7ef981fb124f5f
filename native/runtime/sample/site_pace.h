/*
 * The sampled small blocks' share of the recorder's cost budget (OBJTIER_OVERHEAD_BP).
 *
 * A SITE_ALLOC costs a calling-context capture (an unwind of the program's stack, 0.3-1 us),
 * and how many blocks are sampled is the program's doing: a block freed and allocated again at
 * one address that hashes below the threshold is sampled every time (trace_format.h,
 * "Allocation sites"), so a loop of malloc/free can be sampled millions of times. Each
 * SITE_ALLOC is timed whole (capture, record, arena learning; the SITE_FREEs, which capture
 * nothing, are not) and paced: about every RT_SITE_PACE_NS of wall time, the first capturing
 * thread that sees the interval passed compares the SITE_ALLOCs' time over the interval with the
 * process's CPU time over it (without theirs); above RT_SITE_PACE_SHARE of the budget it
 * doubles the period (at most RT_SITE_PERIOD_MAX). The period never falls back. Where every
 * block is sampled (period 1) the records cost far more than the program's malloc: the period
 * doubles every interval until their share is within the budget.
 *
 * Invariant: thresholds only fall, so an address sampled at any time hashes below the first
 * threshold; free() tests against that one (rt_site_free_threshold) and so writes the
 * SITE_FREE of every sampled block (and some of blocks never sampled, which close nothing).
 * Each SITE_ALLOC carries the period in force when it was taken, and the estimates weight each
 * block by its own period, so they stay unbiased.
 *
 * Counters (written by rt_site_pace_write_counters at stop; ids from RT_SITE_PACE_COUNTER_ID;
 * cumulative over the process's recording):
 *   recorder.site_cost_ns      time spent writing SITE_ALLOC records (captures included), ns
 *   recorder.site_captures     SITE_ALLOC records, events
 *   recorder.site_period_first OBJTIER_SITE_PERIOD, blocks
 *   recorder.site_period       the period in force at stop, blocks
 */
#ifndef OBJTIER_SITE_PACE_H
#define OBJTIER_SITE_PACE_H

#include <stdatomic.h>
#include <stdint.h>

#define RT_SITE_PACE_NS         100000000ULL /* pacing interval, 100 ms of wall time */
#define RT_SITE_PACE_SHARE      0.5          /* the sites' part of OBJTIER_OVERHEAD_BP */
#define RT_SITE_PERIOD_MAX      65536u       /* blocks: the largest period pacing goes to */
#define RT_SITE_PACE_COUNTER_ID 0x4f540010u  /* after the overhead counters (overhead.h) */

/* Alloc test: a block returned at address a is sampled iff ot_site_hash(a) < this; 0 while not
 * recording or with OBJTIER_SITE_PERIOD=0. */
extern _Atomic uint64_t rt_site_threshold;
/* Free test: the recording's first threshold (see the invariant above); 0 when not recording. */
extern _Atomic uint64_t rt_site_free_threshold;

/* At start (period = OBJTIER_SITE_PERIOD, 0 = none; budget_bp = OBJTIER_OVERHEAD_BP, 0 = no
 * pacing, costs still measured): sets both thresholds. */
void rt_site_pace_start(uint32_t period, uint32_t budget_bp);

/* Stops sampling (at finish, or in a child that does not follow): both thresholds 0. */
void rt_site_pace_stop(void);

/* The period a block tested against threshold `threshold` was sampled at. */
static inline uint32_t rt_site_period_of(uint64_t threshold)
{
    /* exact: ot_site_threshold(p) = UINT64_MAX / p and p <= 2^30 (trace_format.h) */
    return threshold ? (uint32_t)(UINT64_MAX / threshold) : 0;
}

/* One SITE_ALLOC took [t0_ns, t1_ns) (CLOCK_MONOTONIC); may pace. */
void rt_site_pace_note(uint64_t t0_ns, uint64_t t1_ns);

/* The SITE_ALLOCs' time so far, ns (the pageout sampler's budget leaves this part out). */
uint64_t rt_site_pace_cost_ns(void);

/* Writes the recorder.site_* counters (COUNTER_DEF + COUNTERS) to the process trace. */
void rt_site_pace_write_counters(void);

/* In a forked child that goes on recording: its own totals start from zero. */
void rt_site_pace_fork_child(void);

#endif
