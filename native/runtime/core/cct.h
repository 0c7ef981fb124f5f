/*
 * Calling-context tree (CCT) of one thread, fed by function entry/exit, plus the exact
 * access counters of each (node, object) pair.
 *
 * A node is a (parent node, function entry address, call site) triple: the call site is
 * the return address into the caller, so main->foo->bar and main->bar are different nodes,
 * and so are two calls of bar from different lines of foo (the seed's Listing 1 / Figure 2).
 *
 * Invariants
 *   - nodes[0] is the root (fn = site = 0, id 0); every other node has index >= 1 and a
 *     process-wide id >= 1 from one atomic counter (ids are unique across threads' trees).
 *   - stack[0 .. depth) are the open calls, innermost last; the current node is the top's
 *     node, or the root when depth == 0. Calls beyond RT_CCT_MAX_DEPTH are not pushed:
 *     `overflow` counts them and their exits pop nothing.
 *   - An exit pops down to the innermost open call of (fn, site) when one of the top
 *     RT_CCT_MATCH_DEPTH calls matches (frames skipped by longjmp or exceptions are closed
 *     at the same time); otherwise it is ignored.
 *   - calls counts entries; incl_ns (CLOCK_MONOTONIC ns) adds exit - entry at each exit, so
 *     recursion through different nodes never counts time twice on one node.
 *   - Counters live in fixed chunks and never move: a pointer from rt_cct_counter stays
 *     valid for the tree's life.
 *   - Memory comes from rt_sys_mmap; a tree belongs to one thread (no locking).
 */
#ifndef OBJTIER_CCT_H
#define OBJTIER_CCT_H

#include <stdint.h>

#define RT_CCT_MAX_DEPTH   4096
#define RT_CCT_MATCH_DEPTH 64

typedef struct rt_cct_node {
    uint64_t fn;   /* function entry address (absolute) */
    uint64_t site; /* call site: return address into the caller (absolute) */
    uint64_t calls;
    uint64_t incl_ns;
    uint32_t parent; /* index in nodes[] (0 = root) */
    uint32_t id;     /* process-wide id; 0 for the root */
} rt_cct_node;

typedef struct rt_cct_counter {
    uint64_t seq;  /* object: ot_alloc_record.seq */
    uint32_t node; /* index in nodes[] */
    uint32_t reserved;
    uint64_t loads, stores, misses;
} rt_cct_counter;

typedef struct rt_cct_frame {
    uint32_t node;
    uint32_t reserved;
    uint64_t enter_ns;
} rt_cct_frame;

#define RT_CCT_CHUNK      4096 /* counters per chunk */
#define RT_CCT_MAX_CHUNKS 4096 /* at most 16 Mi counters per thread */

typedef struct rt_cct {
    rt_cct_node *nodes;
    uint32_t count, cap;    /* nodes in use (root included) / allocated */
    uint32_t *node_hash;    /* node indices keyed by (parent, fn, site); 0 = empty */
    uint32_t node_hash_cap; /* power of two, load < 1/2 */
    rt_cct_frame *stack;    /* RT_CCT_MAX_DEPTH frames */
    uint32_t depth, overflow;
    rt_cct_counter **chunks; /* RT_CCT_MAX_CHUNKS pointers */
    uint64_t counters;       /* counters in use */
    uint32_t *ctr_hash;      /* counter index + 1 keyed by (node, seq); 0 = empty */
    uint64_t ctr_hash_cap;   /* power of two, load < 1/2 */
    uint64_t dropped;        /* nodes or counters not created (out of memory / cap) */
} rt_cct;

int rt_cct_init(rt_cct *t); /* 0 or -ENOMEM */
void rt_cct_destroy(rt_cct *t);

static inline uint32_t rt_cct_current(const rt_cct *t)
{
    return t->depth ? t->stack[t->depth - 1].node : 0;
}

/* Entry of fn called from site at time now; returns the new current node. */
uint32_t rt_cct_enter(rt_cct *t, uint64_t fn, uint64_t site, uint64_t now);
/* Exit of fn (called from site) at time now; returns the new current node. */
uint32_t rt_cct_exit(rt_cct *t, uint64_t fn, uint64_t site, uint64_t now);
/* Adds now - entry to every open call's node (process exit with calls still open);
 * the stack is left as it is. */
void rt_cct_close_open(rt_cct *t, uint64_t now);

/* The counter of (node, seq), created zeroed on first use; NULL when out of memory. */
rt_cct_counter *rt_cct_counter_get(rt_cct *t, uint32_t node, uint64_t seq);
/* Counter i (0 <= i < t->counters). */
static inline rt_cct_counter *rt_cct_counter_at(const rt_cct *t, uint64_t i)
{
    return &t->chunks[i / RT_CCT_CHUNK][i % RT_CCT_CHUNK];
}

#endif
