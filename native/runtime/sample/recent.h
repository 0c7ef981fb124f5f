/*
 * Recent accesses, handed from the fault sampler (sampler_fault.c) down the call graph's
 * other side to the online placement (place/online.c), which calls in here: each window the
 * sampler ends is noted as its span, its armed pages and how many of them were touched.
 * Nothing is noted until rt_recent_enable; a run without the online placement is unchanged.
 *
 * Invariants
 *   - One producer at a time (the sampler ends windows under its arm lock) and one consumer
 *     (the online thread): a ring of RT_RECENT_SLOTS slots with atomic head and tail,
 *     written at head, read at tail; a full ring drops the window and counts it.
 *   - rt_recent_note never blocks and makes no system call.
 */
#ifndef OBJTIER_RECENT_H
#define OBJTIER_RECENT_H

#include <stdint.h>

#define RT_RECENT_SLOTS 4096

typedef struct rt_recent_window {
    uint64_t start, end; /* the window's span [start, end), page aligned */
    uint64_t end_ns;     /* when it ended (CLOCK_MONOTONIC) */
    uint32_t pages;      /* armed pages in the span */
    uint32_t touched;    /* of them, touched while armed */
} rt_recent_window;

/* From now on, ended windows are noted. */
void rt_recent_enable(void);

/* The sampler ended a window. */
void rt_recent_note(uint64_t start, uint64_t end, uint32_t pages, uint32_t touched,
                    uint64_t end_ns);

/* Moves up to cap noted windows, oldest first, into out; returns how many. */
uint32_t rt_recent_take(rt_recent_window *out, uint32_t cap);

/* Windows dropped because the ring was full. */
uint64_t rt_recent_dropped(void);

/* fork() child: off, empty. */
void rt_recent_fork_child(void);

#endif
