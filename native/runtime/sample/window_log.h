/*
 * What the window samplers (sampler_fault.c, sampler_pageout.c, sampler_wp.c) record alike:
 * each first touch of an armed page as one SAMPLE (latency = touch - arm, in microseconds),
 * each ended window as one WINDOW record (batched, RT_WINDOW_BATCH records a block), and the
 * counts of their SAMPLER_STATS record.
 *
 * Invariants
 *   - rt_window_log_touch is async-signal-safe (atomics and the writer's try-once append).
 *   - begin, end and flush run on one thread at a time: the sampler's scanner, or under the
 *     sampler's own lock; a window's touches fall between its begin and its end.
 *   - samples + lost = first touches reported; pages_armed and windows count the WINDOW
 *     records added (pages_armed = the sum of their pages).
 */
#ifndef OBJTIER_WINDOW_LOG_H
#define OBJTIER_WINDOW_LOG_H

#include <stdatomic.h>
#include <stdint.h>

#include "objtier/trace_format.h"

#define RT_WINDOW_BATCH 256 /* WINDOW records per block */

typedef struct rt_window_log {
    uint16_t source; /* enum ot_sample_source of the samples and of the stats record */
    _Atomic uint64_t samples, lost, pages_armed, windows;
    _Atomic uint64_t touched_ns; /* the window under way: sum of (first touch - arm) [ns] */
    uint32_t batch_n;            /* WINDOW records in batch not yet written */
    unsigned char batch[sizeof(ot_block_header) + RT_WINDOW_BATCH * sizeof(ot_window_record)];
} rt_window_log;

/* A window was armed: its touch times start from zero. */
void rt_window_log_begin(rt_window_log *l);

/* The first touch of an armed page at `addr`, at time `now`, of a window armed at `arm_ns`:
 * one SAMPLE (tid 0 when the toucher is not known; flags OT_SAMPLE_*). */
void rt_window_log_touch(rt_window_log *l, uint64_t addr, uint32_t tid, uint16_t flags,
                         uint64_t now, uint64_t arm_ns, int in_signal);

/* The same SAMPLE without adding to the window under way's touched_ns (a sampler that keeps
 * each window's sum itself). */
void rt_window_log_sample(rt_window_log *l, uint64_t addr, uint32_t tid, uint16_t flags,
                          uint64_t now, uint64_t arm_ns, int in_signal);

/* The window [start, ...) of object `seq`, armed at arm_ns and ended at end_ns, had `pages`
 * armed pages of which `touched` were touched: its WINDOW record (written when the batch is
 * full) and its counts. */
void rt_window_log_end(rt_window_log *l, uint64_t seq, uint64_t start, uint64_t arm_ns,
                       uint64_t end_ns, uint32_t pages, uint32_t touched);

/* The same with the window's own sum of (first touch - arm) over its touched pages [ns]. */
void rt_window_log_end_sum(rt_window_log *l, uint64_t seq, uint64_t start, uint64_t arm_ns,
                           uint64_t end_ns, uint32_t pages, uint32_t touched, uint64_t touched_ns);

/* Writes the WINDOW records not yet written (dropped when the runtime is not active). */
void rt_window_log_flush(rt_window_log *l);

/* The stats record of the sampler (time_ns left 0 for the caller). */
void rt_window_log_stats(rt_window_log *l, ot_sampler_stats_record *out);

/* A forked child: the parent's counts and pending windows stay the parent's. */
void rt_window_log_reset(rt_window_log *l);

#endif
