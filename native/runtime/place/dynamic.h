/*
 * Dynamic placement on the swap tier (dynamic.c): a schedule of steps (OBJTIER_DYNAMIC, the
 * text form written by objtier.plan.dynamic_file) applied at the k-th change of the phase in
 * force (objtier_phase markers), plus an offset in ms. A step munlocks, pages out
 * (MADV_PAGEOUT), prefetches (MADV_WILLNEED) and mlocks page ranges of objects identified by
 * context key, occurrence and size. System calls are limited to OBJTIER_ADVICE_RATE per
 * second (the token bucket of advice.h; what does not fit waits for the background thread, and is dropped
 * when a newer step is due). Counts go to OBJTIER_DYNAMIC_STATS at exit.
 *
 * Every hook is a no-op unless a schedule was loaded; hooks never fail the program: a failed
 * call is counted.
 */
#ifndef OBJTIER_DYNAMIC_H
#define OBJTIER_DYNAMIC_H

#include <stdint.h>

#include "config.h"
#include "registry.h"

/* Start-up, after the runtime became ACTIVE: loads cfg->dynamic (a bad file is one warning and
 * no schedule), applies the steps due at the start and starts the thread. */
void rt_dyn_init(const rt_config *cfg);

/* A new tracked object of context ctx (from track_alloc). */
void rt_dyn_on_alloc(const rt_obj *o, uint32_t ctx);

/* The heap object at addr is freed or moved; [addr, addr+len) is unmapped. */
void rt_dyn_release(uint64_t addr);
void rt_dyn_unmap(uint64_t addr, uint64_t len);

/* The phase in force changed (objtier_phase / objtier_phase_end). */
void rt_dyn_switch(void);

/* Process exit: stops the thread, writes the counts. */
void rt_dyn_finish(void);

/* fork() child: the schedule is the parent's; the child runs without it. */
void rt_dyn_fork_child(void);

#endif
