/*
 * Samplers: one ops table per sampler, one file each (sampler_fault.c, sampler_perf.c).
 *
 * Contract
 *   - init() checks the machine and prepares state; start() launches the sampler's
 *     threads. Either returns 0 or -errno after logging the reason once; the runtime
 *     then continues with no samples (a sampler never fails the program).
 *   - stop() is idempotent and leaves no PROT_NONE page, no thread and no fd behind.
 *   - Samples go through rt_sample_emit (async-signal-safe).
 *   - fork_prepare/parent/child bracket fork(); in the child the sampler's threads are
 *     gone and child() must leave memory as the program expects (and restart when the
 *     runtime follows forks: `restart` = 1). prepare and parent may be NULL (nothing to
 *     hold across fork); child may not.
 */
#ifndef OBJTIER_SAMPLER_H
#define OBJTIER_SAMPLER_H

#include <stdint.h>

#include "config.h"
#include "objtier/trace_format.h"

typedef struct rt_sampler_ops {
    const char *name;
    uint16_t source; /* enum ot_sample_source of its samples (stats record) */
    int (*init)(const rt_config *cfg);
    int (*start)(void);
    void (*stop)(void);
    void (*stats)(ot_sampler_stats_record *out);
    void (*fork_prepare)(void);
    void (*fork_parent)(void);
    void (*fork_child)(int restart);
} rt_sampler_ops;

extern const rt_sampler_ops rt_sampler_fault_ops;
extern const rt_sampler_ops rt_sampler_perf_ops;
extern const rt_sampler_ops rt_sampler_trace_ops;   /* sampler_trace.c: exact, instrumented */
extern const rt_sampler_ops rt_sampler_pageout_ops; /* sampler_pageout.c: swap major faults */
extern const rt_sampler_ops rt_sampler_wp_ops; /* sampler_wp.c: userfaultfd async write-protect */

/* The ordered access stream's counter: the order the calling thread's next ACCESS record
 * takes (0 when the stream is off). For the code-region markers (place/region.c). */
uint64_t rt_trace_stream_order(void);

/* The ops table for enum rt_sampler_kind, NULL for none. */
const rt_sampler_ops *rt_sampler_for(int kind);

/* What OBJTIER_SAMPLER=auto, the default, resolves to, in the order `objtier record`'s auto
 * takes (objtier.record.sampler_choice): perf with PEBS/IBS; else pageout when a swap device
 * has free space; else perf's software page-fault events (the runtime never adds a swap device
 * itself); none (allocations only) when perf_event_open is not permitted, never fault (the
 * program could notice it). Writes one line saying why to reason (OBJTIER_SAMPLER_REASON). */
int rt_sampler_auto(char *reason, size_t cap);
/* 1 when /proc/swaps lists a swap device or file with free space (the pageout sampler's need). */
int rt_swap_available(void);

/* Fault-sampler hooks used by the interposers (no-ops when it is not running). */
void rt_fault_disarm(uint64_t addr, uint64_t len);          /* before memory is released */
void rt_fault_touch(const void *buf, uint64_t len);         /* before a syscall uses buf */
int rt_fault_recently_armed(const void *buf, uint64_t len); /* EFAULT may be ours */
void rt_fault_phase_changed(void);                          /* objtier_phase entered another */
/* Brackets a system call that uses buf: restores armed pages and keeps the scanner off
 * the range until io_end. Returns a slot for io_end (-1: nothing to end). */
int rt_fault_io_begin(const void *buf, uint64_t len);
void rt_fault_io_end(int slot);

/* The runtime's SIGSEGV ownership, which lives with the sigaction interposer
 * (interpose/interpose_signal.c): runtime.c hands it to the fault sampler before any sampler
 * starts, so that sample/ never calls up into interpose/. install(handler) puts the fault
 * handler in place (0, or -1); chain(sig, info, uctx) passes a fault that is not the sampler's
 * to the program's own disposition. */
#include <signal.h>
typedef struct rt_signal_ops {
    int (*install)(void (*handler)(int, siginfo_t *, void *));
    void (*chain)(int sig, siginfo_t *info, void *uctx);
} rt_signal_ops;
void rt_fault_set_signal_ops(const rt_signal_ops *ops);

#endif
