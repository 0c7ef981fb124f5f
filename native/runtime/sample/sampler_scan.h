/*
 * The scan pattern shared by the window samplers that watch pages without catching faults
 * themselves (sampler_pageout.c, sampler_wp.c): which pages of the tracked objects the next
 * window arms.
 *
 * A pass snapshots the tracked objects (heap objects and mappings; with `sites`, the arena
 * chunks of watched allocation sites too, each site's chunks one region), smallest first, and arms
 * 1 page in S of them, S = max(1, tracked pages / min(OBJTIER_RATE, PASS_WINDOWS * window
 * pages)): clusters of CLUSTER_PAGES consecutive pages, one every period P = S * CLUSTER_PAGES
 * pages at a random phase that changes each pass (with S = 1 a window is one contiguous
 * range). So a pass covers about OBJTIER_RATE pages spread evenly over every object. This is
 * the fault sampler's pattern (sampler_fault.c), without its fresh-object and phase handling.
 * Only the scanner thread that owns an rt_scan uses it.
 */
#ifndef OBJTIER_SAMPLER_SCAN_H
#define OBJTIER_SAMPLER_SCAN_H

#include <stdint.h>

#include "config.h"
#include "registry.h"

#define RT_SCAN_CLUSTER_PAGES 16 /* armed pages per cluster when arming sparsely */

typedef struct rt_scan {
    const rt_config *cfg;
    rt_obj *snap; /* this pass's objects (rt_sys_mmap'd array of snap_cap) */
    uint64_t snap_cap, snap_n, snap_i;
    uint64_t cursor;                 /* next page to arm in snap[snap_i]; 0 = start of object */
    uint64_t period, cluster, phase; /* this pass's pattern [pages] */
    uint64_t pass_count;
    uint64_t rate; /* pages a pass arms: OBJTIER_RATE, or the paced rate (overhead.h) */
    int sites;     /* 1: watched sites' arena chunks are scanned too (arena_watch.h); set by
                      the sampler after rt_scan_init */
} rt_scan;

/* One window: m clusters one period apart from `start`, the last one last_pages long;
 * armed page i of it is cluster i / cluster, page i % cluster. */
typedef struct rt_scan_window {
    uint64_t start, len; /* [start, start + len): first to last armed byte, page aligned */
    uint64_t pages;      /* armed pages: (m - 1) * cluster + last_pages */
    uint64_t m, last_pages, period, cluster;
    uint64_t seq; /* ALLOC seq of the object */
    uint64_t obj; /* the object's first byte (its region's, for a watched site) */
} rt_scan_window;

void rt_scan_init(rt_scan *s, const rt_config *cfg);
void rt_scan_free(rt_scan *s);

/* The next window of at most `budget` pages in a live object (a new pass starts when the
 * last one is done); 1 with *w set, 0 when nothing can be armed now. */
int rt_scan_next(rt_scan *s, uint64_t budget, rt_scan_window *w);

/* Start of cluster k of w and its length in pages. */
static inline uint64_t rt_scan_cluster_at(const rt_scan_window *w, uint64_t k, uint64_t page)
{
    return w->start + k * w->period * page;
}
static inline uint64_t rt_scan_cluster_pages(const rt_scan_window *w, uint64_t k)
{
    return k + 1 < w->m ? w->cluster : w->last_pages;
}

/* Index of the page at `page_addr` among w's armed pages, or -1 when it is not one. */
int64_t rt_scan_armed_index(const rt_scan_window *w, uint64_t page_addr, uint64_t page);

/* The scanner's page budget (every window sampler's: fault, pageout, wp): `tokens` pages may be
 * armed now; they accrue at OBJTIER_RATE per second up to max(OBJTIER_WINDOW_PAGES, OBJTIER_RATE)
 * and start at a tenth of a second's worth. Arming n pages takes n tokens (a sampler may refund
 * untouched pages). The sampler serializes every use: its scanner thread alone, or a lock of its
 * own (the fault sampler's arm lock, since its disarm refunds on any thread). */
typedef struct rt_scan_budget {
    double tokens; /* pages */
    double per_ns; /* pages per ns */
    double cap;    /* pages */
    uint64_t last; /* CLOCK_MONOTONIC ns of the last refill */
} rt_scan_budget;
void rt_scan_budget_init(rt_scan_budget *b, const rt_config *cfg);
void rt_scan_budget_refill(rt_scan_budget *b);
/* A paced rate (pages per second, at most OBJTIER_RATE): tokens accrue at `rate`, up to the
 * usual cap at OBJTIER_RATE, else up to max(rate, RT_SCAN_CLUSTER_PAGES). */
void rt_scan_budget_set_rate(rt_scan_budget *b, const rt_config *cfg, double rate);

/* Sleeps ns nanoseconds, resuming after signals. */
void rt_scan_sleep_ns(uint64_t ns);

#endif
