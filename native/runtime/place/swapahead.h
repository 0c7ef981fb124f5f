/*
 * Readahead through the swap cache for planned-slow memory (swap tier). docs/runtime.md,
 * "Readahead on the swap tier".
 *
 * On a synchronous swap device (zram) a page fault reads its page back without the swap
 * cache and frees the page's swap slot, so the page is dirty anonymous memory again and its
 * next eviction compresses it anew. A page brought in by MADV_WILLNEED goes through the swap
 * cache and keeps its slot: as long as the program only reads it, reclaim drops it without a
 * write. This module follows ascending streams of page faults inside planned objects and
 * advises the pages ahead of each stream MADV_WILLNEED from a thread of its own.
 */
#ifndef OBJTIER_SWAPAHEAD_H
#define OBJTIER_SWAPAHEAD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* A page range [lo, hi), in pages (address / page size). */
typedef struct {
    uint64_t lo, hi;
} rt_extent;

/* What readahead needs to know of the plan, from whoever enforces it. */
typedef struct rt_ahead_source {
    /* Changes whenever the set of planned objects or the phase in force changes (slow_objects
     * is re-read then). */
    const _Atomic uint64_t *generation;
    /* The whole-page extents of the planned objects that have a planned-slow part in the
     * phase in force, in address order (disjoint); at most cap of them; returns the count. */
    size_t (*slow_objects)(rt_extent *out, size_t cap);
} rt_ahead_source;

/* Starts the fault sampling and the readahead thread; window_bytes ahead of each stream
 * (whole pages), within the extents src names (src is kept). A failure (no perf_event_open,
 * no thread) is logged once; the program runs on without readahead. */
void rt_ahead_start(uint64_t window_bytes, const rt_ahead_source *src);

/* Stops the thread and closes the events; logs what was advised. Idempotent. */
void rt_ahead_stop(void);

/* fork() child: the thread does not exist there and the events watch the parent; forget
 * both (rt_ahead_start may be called again). */
void rt_ahead_fork_child(void);

#endif
