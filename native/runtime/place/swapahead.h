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

#include <stdint.h>

/* Starts the fault sampling and the readahead thread; window_bytes ahead of each stream
 * (whole pages). A failure (no perf_event_open, no thread) is logged once; the program runs
 * on without readahead. */
void rt_ahead_start(uint64_t window_bytes);

/* Stops the thread and closes the events; logs what was advised. Idempotent. */
void rt_ahead_stop(void);

/* fork() child: the thread does not exist there and the events watch the parent; forget
 * both (rt_ahead_start may be called again). */
void rt_ahead_fork_child(void);

#endif
