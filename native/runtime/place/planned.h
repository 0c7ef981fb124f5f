/*
 * The planned objects: the tracked objects that an entry of the plan matches, in a table
 * keyed by address, with the page geometry a tier acts on (placement.c explains it), and
 * the PLACEMENT records of those actions. Shared by the dispatch (placement.c) and the
 * tiers (tier.h).
 *
 * Invariants (all under rt_planned_lock; every function here but rt_planned_slow_extents
 * expects it held)
 *   - The table is open addressing keyed by addr (RT_POBJ_EMPTY, RT_POBJ_DELETED mark free
 *     slots), load (live + deleted) below 1/2. An object is in it from its allocation until
 *     its release; only objects matching an entry of some phase are kept.
 *   - rt_planned_generation changes whenever the set of planned objects or the phase in
 *     force changes.
 *   - Every action leaves one PLACEMENT record (offset/length relative to the object).
 */
#ifndef OBJTIER_PLANNED_H
#define OBJTIER_PLANNED_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "objtier/trace_format.h" /* PLACEMENT records: OT_PLACE_* actions */
#include "plan.h"
#include "swapahead.h" /* rt_extent */

#define RT_POBJ_EMPTY    0
#define RT_POBJ_DELETED  1
#define RT_POBJ_UNBOUND  UINT64_MAX /* bound_split before the first mbind */
#define RT_PLANNED_BATCH 1024       /* PLACEMENT records per block */

typedef struct rt_pobj {
    uint64_t addr, size, seq; /* as rt_obj; addr 0/1 = empty/deleted slot */
    uint64_t key, occurrence; /* stable context key; 0-based count among the key's objects */
    uint64_t lo, hi;          /* inner pages, page-aligned addresses */
    uint64_t split;           /* planned split for the phase in force (lo..hi) */
    uint64_t locked_end;      /* swap: [lo, locked_end) mlocked by us */
    uint64_t pages;           /* "pages" entry in force, or RT_PLAN_NONE */
    uint64_t locked_entry;    /* swap: "pages" entry whose ranges we locked, or RT_PLAN_NONE */
    uint64_t locked_n;        /* swap: how many of its ranges (a prefix of the list) */
    uint64_t bound_split;     /* numa: split applied by mbind, or RT_POBJ_UNBOUND */
    uint32_t planned;         /* an entry of the phase in force (or of "*") matches */
    uint32_t is_map;          /* a mapping (released by rt_place_unmap) */
} rt_pobj;

/* The plan being enforced: loaded at start-up, read-only after. */
extern rt_plan rt_plan_in_force;

extern pthread_mutex_t rt_planned_lock;
extern _Atomic uint64_t rt_planned_generation;

/* 1 when slot o holds no object (empty or deleted). */
static inline int rt_pobj_free(const rt_pobj *o)
{
    return o->addr <= RT_POBJ_DELETED;
}

/* A system call's result as a PLACEMENT record keeps it: 0 or -errno. */
static inline int rt_place_result(long r)
{
    return r == 0 ? 0 : -errno;
}

/* The table: 0, or -1 when out of memory (start-up). */
int rt_planned_init(void);
/* A forked child: the lock re-made, no records pending and, when a plan is enforced
 * (`planned`), no object (mlocks are not inherited). */
void rt_planned_fork_child(int planned);

/* Occurrence of key: how many tracked objects of this key came before (0-based). */
uint64_t rt_planned_next_occurrence(uint64_t key);
/* The live object at addr, or NULL. */
rt_pobj *rt_planned_find(uint64_t addr);
/* The slot for a new object at addr (it may hold a stale object there: the caller forgets
 * it first), or NULL when the table cannot grow. */
rt_pobj *rt_planned_slot_for(uint64_t addr);
/* Puts o into slot d (from rt_planned_slot_for). */
void rt_planned_put(rt_pobj *d, const rt_pobj *o);
/* Takes o out of the table (what a tier did to it is undone already). */
void rt_planned_remove(rt_pobj *o);
void rt_planned_changed(void); /* advances rt_planned_generation */
/* The table's slots, for a walk over every object: slot i of rt_planned_slots(). */
uint64_t rt_planned_slots(void);
rt_pobj *rt_planned_slot(uint64_t i);
uint64_t rt_planned_maps(void); /* live objects that are mappings */

/* The phase whose entries are in force (index into rt_plan_in_force.phases), and a change
 * of it; then every object is planned anew with rt_planned_replan. */
uint32_t rt_planned_phase(void);
void rt_planned_set_phase(uint32_t ph);
/* Sets o->split, o->pages and o->planned for the phase in force (its entries, else the
 * root's). */
void rt_planned_replan(rt_pobj *o);
/* Range i of "pages" entry e on o, clipped to its whole pages: [*start, *end); 0 when the
 * range lies beyond the object (a smaller object than profiled, or other alignment). */
int rt_planned_pages_range(const rt_pobj *o, uint64_t e, uint64_t i, uint64_t *start,
                           uint64_t *end);
/* The whole-page extents of the planned objects that have a planned-slow part in the phase
 * in force, in address order (disjoint); at most cap of them; returns the count. Takes the
 * lock (readahead's rt_ahead_source). */
size_t rt_planned_slow_extents(rt_extent *out, size_t cap);

/* A PLACEMENT record of an action on [start, end) of o (batched: RT_PLANNED_BATCH a
 * block), its result (0 or -errno) and, for mbind, the node mask. */
void rt_planned_record(const rt_pobj *o, uint64_t start, uint64_t end, uint16_t action, int result,
                       uint64_t nodemask);
void rt_planned_flush(void);       /* writes the records batched so far */
uint32_t rt_planned_pending(void); /* records batched, not written yet */

#endif
