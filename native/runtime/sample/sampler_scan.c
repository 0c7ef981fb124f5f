/* The scan pattern of the window samplers; see sampler_scan.h. */
#define _GNU_SOURCE
#include "sampler_scan.h"
#include "arena_watch.h"
#include "maps.h"
#include "rt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PASS_WINDOWS 5 /* windows per pass at most */

static inline uint64_t page_down(uint64_t a)
{
    return a & ~(uint64_t)(rt_page_bytes - 1);
}
static inline uint64_t page_up(uint64_t a)
{
    return page_down(a + rt_page_bytes - 1);
}

void rt_scan_init(rt_scan *s, const rt_config *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->period = s->cluster = 1;
    s->rate = cfg->rate;
}

void rt_scan_free(rt_scan *s)
{
    if (s->snap)
        rt_sys_munmap(s->snap, s->snap_cap * sizeof(rt_obj));
    s->snap = NULL;
    s->snap_cap = s->snap_n = s->snap_i = 0;
}

static int smaller_first(const void *a, const void *b)
{
    const rt_obj *x = a, *y = b;
    return (x->size > y->size) - (x->size < y->size);
}

static void take_snapshot(rt_scan *s)
{
    uint64_t watched = s->sites ? rt_sarena_watch_count() : 0;
    uint64_t need = atomic_load(&rt_reg_live) + atomic_load(&rt_maps_live) + watched + 64;
    if (need > s->snap_cap) {
        rt_scan_free(s);
        s->snap_cap = need * 2;
        s->snap = rt_sys_mmap(s->snap_cap * sizeof(rt_obj));
        if (!s->snap) {
            s->snap_cap = 0;
            return;
        }
    }
    s->snap_n = rt_reg_snapshot(s->snap, s->snap_cap);
    s->snap_n += rt_maps_snapshot(s->snap + s->snap_n, s->snap_cap - s->snap_n);
    if (s->sites)
        s->snap_n += rt_sarena_watch_snapshot(s->snap + s->snap_n, s->snap_cap - s->snap_n);
    qsort(s->snap, s->snap_n, sizeof(rt_obj), smaller_first);
    s->snap_i = 0;
    s->cursor = 0;
    uint64_t pages = 0;
    for (uint64_t i = 0; i < s->snap_n; i++) {
        uint64_t first = page_up(s->snap[i].addr);
        uint64_t last = page_down(s->snap[i].addr + s->snap[i].size);
        if (last > first)
            pages += (last - first) / rt_page_bytes;
    }
    uint64_t by_rate = s->rate ? s->rate : 1;
    uint64_t by_time = (uint64_t)PASS_WINDOWS * s->cfg->window_pages;
    uint64_t per_pass = by_rate < by_time ? by_rate : by_time;
    uint64_t fraction = (pages + per_pass - 1) / per_pass;
    if (fraction <= 1) {
        s->period = s->cluster = 1;
        s->phase = 0;
        return;
    }
    if (fraction > 65536)
        fraction = 65536;
    s->cluster = RT_SCAN_CLUSTER_PAGES;
    s->period = fraction * RT_SCAN_CLUSTER_PAGES;
    uint64_t z = (++s->pass_count * 0x9E3779B97F4A7C15ULL) ^ rt_now_ns(); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    s->phase = (z ^ (z >> 31)) % s->period;
}

static int still_live(const rt_obj *o, uint64_t start, uint64_t len)
{
    rt_obj now;
    if (o->kind == RT_OBJ_SITE_REGION) /* arena chunks are never returned */
        return 1;
    if (rt_reg_lookup(o->addr, &now) && now.seq == o->seq)
        return 1;
    return rt_maps_contains(start, len, o->seq);
}

int rt_scan_next(rt_scan *s, uint64_t budget, rt_scan_window *w)
{
    if (s->snap_i >= s->snap_n)
        take_snapshot(s);
    if (budget > s->cfg->window_pages)
        budget = s->cfg->window_pages;
    uint64_t period = s->period, cluster = s->cluster;
    while (s->snap_i < s->snap_n) {
        const rt_obj *o = &s->snap[s->snap_i];
        uint64_t first = page_up(o->addr), last = page_down(o->addr + o->size);
        if (s->cursor < first)
            s->cursor = first;
        /* start of the next cluster at or after cursor: (page - phase) mod period == 0 */
        uint64_t r = (s->cursor / rt_page_bytes + period - s->phase % period) % period;
        if (r != 0)
            s->cursor += (period - r) * rt_page_bytes;
        if (s->cursor >= last) {
            s->snap_i++;
            s->cursor = 0;
            continue;
        }
        uint64_t avail = (last - s->cursor) / rt_page_bytes;
        uint64_t m = period == 1 ? 1 : budget / cluster;
        uint64_t clusters = (avail + period - 1) / period;
        if (m > clusters)
            m = clusters;
        uint64_t tail = avail - (m ? m - 1 : 0) * period;
        uint64_t last_pages =
            period == 1 ? (avail < budget ? avail : budget) : (tail < cluster ? tail : cluster);
        if (m == 0 || last_pages == 0)
            return 0;
        uint64_t len = ((m - 1) * period + last_pages) * rt_page_bytes;
        if (!still_live(o, s->cursor, len)) {
            s->snap_i++;
            s->cursor = 0;
            continue;
        }
        *w = (rt_scan_window){.start = s->cursor,
                              .len = len,
                              .pages = (m - 1) * cluster + last_pages,
                              .m = m,
                              .last_pages = last_pages,
                              .period = period,
                              .cluster = cluster,
                              .seq = o->seq,
                              .obj = o->addr};
        s->cursor += len;
        return 1;
    }
    return 0;
}

int64_t rt_scan_armed_index(const rt_scan_window *w, uint64_t page_addr, uint64_t page)
{
    if (page_addr < w->start || page_addr >= w->start + w->len)
        return -1;
    uint64_t off = (page_addr - w->start) / page;
    if (off % w->period >= w->cluster)
        return -1;
    return (int64_t)(off / w->period * w->cluster + off % w->period);
}

/* per_ns and cap at OBJTIER_RATE */
static void rt_scan_budget_init_rate(rt_scan_budget *b, const rt_config *cfg)
{
    b->per_ns = (double)cfg->rate / 1e9;
    b->cap = (double)cfg->window_pages > (double)cfg->rate ? (double)cfg->window_pages
                                                           : (double)cfg->rate;
}

void rt_scan_budget_init(rt_scan_budget *b, const rt_config *cfg)
{
    rt_scan_budget_init_rate(b, cfg);
    b->last = rt_now_ns();
    b->tokens = (double)cfg->rate / 10.0;
}

void rt_scan_budget_refill(rt_scan_budget *b)
{
    uint64_t now = rt_now_ns();
    b->tokens += (double)(now - b->last) * b->per_ns;
    if (b->tokens > b->cap)
        b->tokens = b->cap;
    b->last = now;
}

void rt_scan_budget_set_rate(rt_scan_budget *b, const rt_config *cfg, double rate)
{
    if (rate >= (double)cfg->rate) {
        rt_scan_budget_init_rate(b, cfg);
        return;
    }
    b->per_ns = rate / 1e9;
    b->cap = rate > RT_SCAN_CLUSTER_PAGES ? rate : RT_SCAN_CLUSTER_PAGES;
    if (b->tokens > b->cap)
        b->tokens = b->cap;
}

void rt_scan_sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
