/*
 * Plan enforcement (OBJTIER_PLAN): matching tracked objects to plan entries and applying
 * them through the tier in force (tier.h) — mlock / munlock / MADV_COLD / MADV_PAGEOUT on the
 * swap tier, mbind on the NUMA tier — with one PLACEMENT record per action; phase changes;
 * the background thread that re-advises slow ranges and samples residency. docs/runtime.md,
 * "Plan enforcement".
 *
 * Every hook is a no-op unless rt_place_on is set; hooks run with rt_guard > 0 (the caller
 * is the runtime) and never fail the program: a failed action is a record with -errno.
 */
#ifndef OBJTIER_PLACEMENT_H
#define OBJTIER_PLACEMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "registry.h"

/* 1 while a plan is enforced in this process. */
extern _Atomic int rt_place_on;

/* Start-up, before the runtime is ACTIVE: loads cfg->plan (a bad file is one warning and
 * no plan), reads the mlock limits, parses node lists. Returns 1 when a plan is enforced,
 * 0 otherwise. `tracing`: a trace file is written (residency needs one). */
int rt_place_init(const rt_config *cfg, int tracing);

/* KEY=VALUE lines for the PROCESS record, after rt_place_init: OBJTIER_RANK=N when an
 * MPI-style rank variable is set; with a plan, OBJTIER_PLAN_SECTION=I (the index of the
 * first `program` section in force), all (a plan with no sections) or none (no section for
 * this program: nothing placed). Returns the bytes written (< cap). */
size_t rt_place_process_notes(char *out, size_t cap);

/* After the runtime became ACTIVE: starts the background thread when there is work for it
 * (swap tier: slow-range advice every OBJTIER_ADVISE_MS and, while the memory cgroup is at
 * its limit, every OBJTIER_PRESSURE_MS; NUMA tier: residency every
 * OBJTIER_RESIDENCY_MS). */
void rt_place_start(void);

/* A new tracked object (called from rt_on_alloc right after its context was captured;
 * ctx = its context id). Matches it and applies the entry of the phase in force. */
void rt_place_on_alloc(const rt_obj *o, uint32_t ctx);

/* The heap object starting at addr is about to be freed or realloc'd: munlock it and
 * forget it. */
void rt_place_release(uint64_t addr);

/* [addr, addr+len) of a tracked mapping is about to be unmapped: every planned object it
 * overlaps is munlocked and forgotten. */
void rt_place_unmap(uint64_t addr, uint64_t len);

/* The phase named name[0..len) was entered (name NULL: back to the root phase "*"):
 * applies its target's entries to every planned object. */
void rt_place_phase(const char *name, size_t len);

/* Process exit, before END: stops the thread, writes the last residency records, warns
 * when the plan matched nothing. */
void rt_place_finish(void);

/* fork(): the lock is held across it; the child forgets every object (mlocks are not
 * inherited) and restarts the thread when it writes its own trace (follow = 1). */
void rt_place_fork_prepare(void);
void rt_place_fork_parent(void);
void rt_place_fork_child(int follow);

#endif
