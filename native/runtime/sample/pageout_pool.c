/* The pageout sampler's open windows; see pageout_pool.h. */
#define _GNU_SOURCE
#include "pageout_pool.h"
#include "rt.h"

#include <errno.h>
#include <string.h>

static inline rt_pool_slot *nth(rt_pool *p, uint32_t k)
{
    return &p->slot[(p->head + k) % RT_POOL_SLOTS];
}

int rt_pool_init(rt_pool *p, rt_window_log *log, uint64_t window_pages)
{
    memset(p, 0, sizeof *p);
    p->log = log;
    p->words_per_slot = (window_pages + 63) / 64;
    p->slot = rt_sys_mmap(RT_POOL_SLOTS * sizeof(rt_pool_slot));
    /* untouched bitmap pages cost nothing: only the slots in use get resident */
    p->bits = rt_sys_mmap(RT_POOL_SLOTS * p->words_per_slot * 8);
    if (!p->slot || !p->bits) {
        rt_pool_free(p);
        return -ENOMEM;
    }
    for (uint32_t k = 0; k < RT_POOL_SLOTS; k++)
        p->slot[k].pending = p->bits + (uint64_t)k * p->words_per_slot;
    return 0;
}

void rt_pool_free(rt_pool *p)
{
    if (p->slot)
        rt_sys_munmap(p->slot, RT_POOL_SLOTS * sizeof(rt_pool_slot));
    if (p->bits)
        rt_sys_munmap(p->bits, RT_POOL_SLOTS * p->words_per_slot * 8);
    p->slot = NULL;
    p->bits = NULL;
    p->head = p->n = 0;
}

static void close_slot(rt_pool *p, rt_pool_slot *s, uint64_t now)
{
    if (s->armed)
        rt_window_log_end_sum(p->log, s->w.seq, s->w.start, s->arm_ns, now, s->armed, s->touched,
                              s->touched_ns);
    s->w.pages = 0;
    s->w.len = 0; /* matches no address any more */
}

rt_pool_slot *rt_pool_open(rt_pool *p, const rt_scan_window *w, uint64_t arm_ns)
{
    if (p->n == RT_POOL_SLOTS) {
        close_slot(p, nth(p, 0), arm_ns);
        p->head = (p->head + 1) % RT_POOL_SLOTS;
        p->n--;
    }
    rt_pool_slot *s = nth(p, p->n++);
    uint64_t *pending = s->pending;
    memset(pending, 0, (w->pages + 63) / 64 * 8);
    *s = (rt_pool_slot){.w = *w, .arm_ns = arm_ns, .ready_ns = UINT64_MAX, .pending = pending};
    return s;
}

unsigned rt_pool_touch(rt_pool *p, uint64_t addr, uint64_t page_addr, uint64_t page_bytes,
                       uint32_t tid, uint64_t t)
{
    unsigned hits = 0;
    for (uint32_t k = 0; k < p->n; k++) {
        rt_pool_slot *s = nth(p, k);
        if (page_addr - s->w.start >= s->w.len || t < s->arm_ns)
            continue;
        int64_t i = rt_scan_armed_index(&s->w, page_addr, page_bytes);
        if (i < 0)
            continue;
        uint64_t bit = 1ULL << (i & 63);
        if (s->pending[i / 64] & bit)
            s->pending[i / 64] &= ~bit;
        else if (t < s->ready_ns)
            s->armed++; /* touched before pagemap was read: armed, and touched now */
        else
            continue; /* touched already in this window, or never armed */
        s->touched++;
        s->touched_ns += t - s->arm_ns;
        rt_window_log_sample(p->log, addr, tid, 0, t, s->arm_ns, 0);
        hits++;
    }
    return hits;
}

void rt_pool_close(rt_pool *p, uint64_t now, int all)
{
    /* oldest first; a slot in the middle with nothing pending closes where it is and is
     * skipped (w.pages == 0) until it reaches the head */
    for (uint32_t k = 0; k < p->n; k++) {
        rt_pool_slot *s = nth(p, k);
        if (s->w.pages &&
            (all || (s->ready_ns != UINT64_MAX &&
                     (s->touched >= s->armed || now - s->arm_ns >= RT_POOL_HORIZON_NS))))
            close_slot(p, s, now);
    }
    while (p->n && nth(p, 0)->w.pages == 0) {
        p->head = (p->head + 1) % RT_POOL_SLOTS;
        p->n--;
    }
}
