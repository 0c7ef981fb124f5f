/*
 * Online placement on the swap tier (online.c): OBJTIER_ONLINE_MS > 0 starts a thread that
 * every OBJTIER_ONLINE_MS ms ranks ranges of the tracked objects by their recent accesses, as
 * the fault sampler saw them (sample/recent.h), and keeps the hottest mlocked within the lock
 * budget (OBJTIER_MLOCK_LIMIT and the memory cgroup limit less the swap tier's margin), its
 * system calls within the shared advice-call budget (advice.h, OBJTIER_ADVICE_RATE). Counts
 * go to OBJTIER_ONLINE_STATS at exit.
 *
 * Off unless OBJTIER_ONLINE_MS is set: then every hook is a no-op. Hooks never fail the
 * program: a failed call is counted.
 */
#ifndef OBJTIER_ONLINE_H
#define OBJTIER_ONLINE_H

#include <stdint.h>

#include "config.h"

/* 1 when cfg asks for the online placement and it can run: the swap tier, the fault sampler,
 * no plan and no schedule (one placement at a time). Logs why not, once. */
int rt_online_wanted(const rt_config *cfg);

/* Start-up, after the sampler started, when rt_online_wanted said 1: starts the thread. */
void rt_online_init(const rt_config *cfg);

/* The object at addr is freed or moved (munlocks what this module locked of it, before the
 * memory goes back); [addr, addr+len) is unmapped. */
void rt_online_release(uint64_t addr);
void rt_online_unmap(uint64_t addr, uint64_t len);

/* The phase in force changed to `phase` (a name id of phase.c; 0 = none) in the calling
 * thread (objtier_phase / objtier_phase_end): counted, and the thread ticks at once. Never
 * waits for the thread. */
void rt_online_switch(uint32_t phase);

/* Process exit: stops the thread, writes the counts. */
void rt_online_finish(void);

/* fork() child: the parent's placement; the child runs without it. */
void rt_online_fork_child(void);

#endif
