/*
 * Registry of live tracked objects.
 *
 * Heap objects (malloc family, operator new) live in a sharded open-addressing hash keyed
 * by their start address: 64 shards, each a linear-probing table behind its own mutex,
 * so unrelated threads rarely meet. Anonymous mappings live in the map list (maps.h),
 * which also answers "which objects overlap this range" for munmap/mremap.
 *
 * Invariants
 *   - addr 0 marks an empty slot, addr 1 a deleted one (no object starts at 0 or 1).
 *   - Each shard's load (live + deleted) stays below 1/2; it grows by doubling.
 *   - rt_reg_live is the number of live heap objects (a cheap "anything tracked?" test).
 */
#ifndef OBJTIER_REGISTRY_H
#define OBJTIER_REGISTRY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rt_obj {
    uint64_t addr; /* first byte returned to the program */
    uint64_t size; /* bytes requested (heap) or mapped (mappings) */
    uint64_t seq;  /* ot_alloc_record.seq of the ALLOC */
    uint32_t prot; /* PROT_* bits the program expects on its pages */
    uint32_t kind; /* enum ot_alloc_kind */
} rt_obj;

extern _Atomic uint64_t rt_reg_live;

/* The highest ALLOC seq of an object put in the registry or the map list so far (0: none);
 * the fault sampler compares it with its snapshot's to notice objects allocated since. */
extern _Atomic uint64_t rt_newest_tracked_seq;

/* Raises rt_newest_tracked_seq to seq (never lowers it): an object of seq is now tracked. */
void rt_reg_note_tracked(uint64_t seq);

/* One observer may follow what is tracked (the trace sampler's object index). The registry
 * and the map list call it after a change, with their locks released, from the thread that
 * made the change:
 *   added(addr, len, seq)  [addr, addr+len) is now the tracked object of ALLOC seq (a heap
 *                          block of size 0 is reported as 1 byte: it still has an address);
 *   removed(addr, len)     nothing in [addr, addr+len) is tracked any more.
 * Set once at start-up, before the runtime is ACTIVE; NULL (the default) for none. */
typedef struct rt_track_observer {
    void (*added)(uint64_t addr, uint64_t len, uint64_t seq);
    void (*removed)(uint64_t addr, uint64_t len);
} rt_track_observer;

void rt_track_set_observer(const rt_track_observer *obs);
const rt_track_observer *rt_track_observer_now(void); /* NULL: none */

int rt_reg_init(void);                         /* 0 or -ENOMEM */
int rt_reg_insert(const rt_obj *o);            /* 0, or -ENOMEM (object not tracked) */
int rt_reg_remove(uint64_t addr, rt_obj *out); /* 1 if it was there (copied to out) */
int rt_reg_lookup(uint64_t addr, rt_obj *out); /* 1 if present */

/* Copies up to cap live objects into out (for the fault scanner); returns how many. */
size_t rt_reg_snapshot(rt_obj *out, size_t cap);

/* Forked child: the shard locks may have been held by threads that do not exist here. */
void rt_reg_lock_all(void);
void rt_reg_unlock_all(void);
void rt_reg_reinit_locks(void);

#endif
