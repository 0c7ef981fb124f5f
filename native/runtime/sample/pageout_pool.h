/*
 * The pageout sampler's open windows: every armed window stays open until each of its armed
 * pages was touched, or it is RT_POOL_HORIZON_NS old, or the pool needs its slot.
 *
 * A page the pageout sampler armed stays in swap until the program touches it again (the
 * kernel swaps it in at that major fault and at no other time), so its first touch after
 * arming is seen whenever it comes, not only within a short dwell: the forward recurrence
 * time of a page reused every few seconds is measured, not censored at the dwell. A window's
 * WINDOW record is written when it closes, with dwell = close - arm.
 *
 * Invariants
 *   - One thread (the pageout scanner) uses the pool; nothing here is async-signal-safe.
 *   - Slots are kept in arm order (a ring); the oldest closes first when the pool is full.
 *   - A page armed by two open windows (the same page in two passes, still untouched since
 *     the first) counts as touched in both at its fault: each window's delay is the time from
 *     its own arming to that page's next reference, which is what a window measures.
 *   - pending bit i of a slot: armed page i of its window not touched yet.
 */
#ifndef OBJTIER_PAGEOUT_POOL_H
#define OBJTIER_PAGEOUT_POOL_H

#include <stdint.h>

#include "sampler_scan.h"
#include "window_log.h"

#define RT_POOL_SLOTS      4096           /* open windows at most */
#define RT_POOL_HORIZON_NS 30000000000ULL /* a window closes 30 s after its arming */

typedef struct rt_pool_slot {
    rt_scan_window w;
    uint64_t arm_ns;
    uint64_t ready_ns;   /* pagemap read done: a fault before it on a page not pending is a
                          * touch that beat the read (armed and touched); UINT64_MAX before */
    uint64_t touched_ns; /* sum over touched pages of (first touch - arm) [ns] */
    uint32_t armed, touched;
    uint64_t *pending; /* (w.pages + 63) / 64 words */
} rt_pool_slot;

typedef struct rt_pool {
    rt_window_log *log;
    rt_pool_slot *slot; /* RT_POOL_SLOTS, rt_sys_mmap'd */
    uint64_t *bits;     /* RT_POOL_SLOTS * words_per_slot, rt_sys_mmap'd */
    uint64_t words_per_slot;
    uint32_t head, n; /* oldest open slot, open slots */
} rt_pool;

/* 0, or -ENOMEM; window_pages: the most pages a window arms. */
int rt_pool_init(rt_pool *p, rt_window_log *log, uint64_t window_pages);
void rt_pool_free(rt_pool *p);

/* A new open window (its pending bits cleared), closing the oldest when the pool is full. */
rt_pool_slot *rt_pool_open(rt_pool *p, const rt_scan_window *w, uint64_t arm_ns);

/* Armed page i of slot s: pending from now on. */
static inline void rt_pool_arm_page(rt_pool_slot *s, uint64_t i)
{
    uint64_t bit = 1ULL << (i & 63);
    if (!(s->pending[i / 64] & bit)) {
        s->pending[i / 64] |= bit;
        s->armed++;
    }
}

/* The pagemap read of slot s is done at `now`. */
static inline void rt_pool_ready(rt_pool_slot *s, uint64_t now)
{
    s->ready_ns = now;
}

/* A major fault at page `page_addr` at time t: one SAMPLE per open window that had the page
 * pending (the page is no longer pending there). The count of those windows. */
unsigned rt_pool_touch(rt_pool *p, uint64_t addr, uint64_t page_addr, uint64_t page_bytes,
                       uint32_t tid, uint64_t t);

/* Closes the windows with nothing pending or older than the horizon at `now`: their WINDOW
 * records. Closes all when `all`. */
void rt_pool_close(rt_pool *p, uint64_t now, int all);

#endif
