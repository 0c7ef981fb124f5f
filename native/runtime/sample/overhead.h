/*
 * The sampler's cost budget (OBJTIER_OVERHEAD_BP): the scanner of a window sampler measures
 * what sampling costs and paces its page rate so that the cost stays within a share of the
 * program's own CPU time.
 *
 * Cost [ns] = the scanner thread's CPU time (CLOCK_THREAD_CPUTIME_ID: arming, the swap
 * compressions MADV_PAGEOUT does in its context, pagemap reads, ring drains, its wake-ups)
 * + sampled faults x fault_ns, where sampled faults = the program's major faults the sampler
 * saw (first touches in windows and faults outside them: an upper bound, since a program's own
 * file-page faults are counted too) and fault_ns = the measured cost of one such fault
 * (rt_overhead_calibrate: the scanner swaps out pages of its own and times their swap-in,
 * perf event included). Not counted: TLB shootdowns on the program's CPUs and the cache misses
 * of a swapped-in page.
 * Program CPU [ns] = CLOCK_PROCESS_CPUTIME_ID - cost - the small blocks' SITE_ALLOC time
 * (site_pace.h) (every thread of the process, the runtime's others included, which cost far
 * less than the scanner). The budget less the small blocks' share so far (at most half of it)
 * is the scanner's.
 *
 * Pacing: every RT_OVERHEAD_STEP_NS (RT_OVERHEAD_EARLY_NS during the first second, so that
 * a short run is paced too) the rate (pages armed per second) becomes
 *     budget x program CPU per second of the last step / cost per armed page
 * (cost per page from the whole run so far), times budget / spent when the run so far has
 * spent more than the budget, moved at most x2 up and /4 down a step, within
 * [RT_OVERHEAD_MIN_RATE, OBJTIER_RATE]. OBJTIER_OVERHEAD_BP = 0: no pacing, costs still measured.
 *
 * Counters written to the process trace at each step and at stop (COUNTER_DEF + COUNTERS,
 * ids from RT_OVERHEAD_COUNTER_ID; values cumulative since the sampler started):
 *   recorder.cost_ns           estimated cost, ns
 *   recorder.sampler_cpu_ns    the scanner thread's CPU time, ns
 *   recorder.sampled_faults    sampled major faults, events
 *   recorder.fault_cost_ns     fault_ns, ns per fault
 *   recorder.program_cpu_ns    program CPU, ns
 *   recorder.rate              the rate in force, pages per second
 *   recorder.rate_max          OBJTIER_RATE, pages per second
 *   recorder.overhead_bp       the budget, basis points (0 = none)
 * Only the scanner thread uses an rt_overhead.
 */
#ifndef OBJTIER_OVERHEAD_H
#define OBJTIER_OVERHEAD_H

#include <stdint.h>

#include "config.h"

#define RT_OVERHEAD_STEP_NS     200000000ULL /* pacing period, 200 ms */
#define RT_OVERHEAD_EARLY_NS    50000000ULL  /* pacing period in the first second, 50 ms */
#define RT_OVERHEAD_MIN_RATE    16.0         /* pages per second: one cluster */
#define RT_OVERHEAD_COUNTER_ID  0x4f540000u  /* first counter id ("OT"); 8 ids follow */
#define RT_OVERHEAD_FAULT_GUESS 5000ULL      /* ns per fault when calibration swapped nothing */

typedef struct rt_overhead {
    uint64_t bp;        /* budget, basis points of program CPU; 0 = no pacing */
    double max_rate;    /* OBJTIER_RATE, pages per second */
    double rate;        /* the rate in force, pages per second */
    uint64_t fault_ns;  /* cost of one sampled fault, ns */
    uint64_t step_ns;   /* CLOCK_MONOTONIC of the last step */
    uint64_t start_ns;  /* CLOCK_MONOTONIC when pacing started (after calibration) */
    uint64_t cpu0_ns;   /* scanner thread CPU at start (calibration excluded) */
    uint64_t last_prog; /* program CPU at the last step, ns */
    uint64_t pages;     /* pages armed so far */
    uint64_t faults;    /* sampled faults so far (set by the sampler before each step) */
    uint64_t cost_ns, sampler_ns, prog_ns; /* at the last step */
    uint8_t defined;                       /* COUNTER_DEFs written */
} rt_overhead;

/* On the scanner thread, before it arms anything. */
void rt_overhead_init(rt_overhead *o, const rt_config *cfg);

/* Measures fault_ns: swaps out a few pages of random contents of its own (MADV_PAGEOUT),
 * checks with pagemap_fd that they went, and times the touch that brings each back; the
 * median. The scanner thread's CPU spent here is not charged to the program. */
void rt_overhead_calibrate(rt_overhead *o, int pagemap_fd);

/* Once per pacing period (earlier calls return at once) and with force at stop:
 * updates the costs from o->pages and o->faults, writes the counters, and returns the rate
 * to use, pages per second. */
double rt_overhead_step(rt_overhead *o, int force);

#endif
