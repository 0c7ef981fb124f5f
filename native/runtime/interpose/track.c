/*
 * What the interposers do with an object the program allocates or releases: track it in the
 * registry (heap blocks) or the map list (anonymous mappings), apply the plan to it, tell the
 * fault sampler before its memory goes, and write its ALLOC or FREE record.
 *
 * Invariant: seq numbers ALLOC and FREE records in one order per process, from 1.
 */
#define _GNU_SOURCE
#include "track.h"
#include "arena_watch.h"
#include "context.h"
#include "maps.h"
#include "placement.h"
#include "registry.h"
#include "rt.h"
#include "sampler.h"
#include "site_pace.h"
#include "writer.h"

#include <sys/mman.h>

_Atomic uint64_t rt_min_size = UINT64_MAX;
static _Atomic uint64_t seq_counter; /* ALLOC and FREE order, from 1 */
static _Atomic uint64_t site_seq;    /* SITE_ALLOC and SITE_FREE order, from 1 */

/* ---- records ------------------------------------------------------------------- */

static void put_free(uint64_t addr, uint64_t size, uint16_t kind)
{
    ot_free_record r = {.time_ns = rt_now_ns(),
                        .seq = atomic_fetch_add(&seq_counter, 1) + 1,
                        .addr = addr,
                        .size = size,
                        .tid = rt_tid(),
                        .kind = kind};
    rt_tbuf *t = rt_thread_buffers(0);
    if (t)
        rt_append(&rt_w, t, RT_BUF_FREE, &r, 0);
}

/* Tracks [addr, addr+size) as a new object of context ctx and writes its ALLOC record. */
static void track_alloc(void *addr, uint64_t size, uint16_t kind, uint32_t prot, int is_map,
                        uint32_t ctx)
{
    rt_obj o = {.addr = (uint64_t)(uintptr_t)addr,
                .size = size,
                .seq = atomic_fetch_add(&seq_counter, 1) + 1,
                .prot = prot,
                .kind = kind};
    rt_place_on_alloc(&o, ctx); /* plan: mlock/mbind before the sampler can arm it */
    if ((is_map ? rt_maps_add(&o) : rt_reg_insert(&o)) == 0)
        rt_reg_note_tracked(o.seq);
    ot_alloc_record r = {.time_ns = rt_now_ns(),
                         .seq = o.seq,
                         .addr = o.addr,
                         .size = size,
                         .tid = rt_tid(),
                         .context = ctx,
                         .kind = kind};
    rt_tbuf *t = rt_thread_buffers(0);
    if (t)
        rt_append(&rt_w, t, RT_BUF_ALLOC, &r, 0);
}

void rt_on_alloc(void *addr, uint64_t size, uint16_t kind, uint32_t prot, int is_map)
{
    if (!rt_active())
        return;
    rt_guard++;
    track_alloc(addr, size, kind, prot, is_map, rt_context_capture(&rt_w));
    rt_guard--;
}

void rt_on_site_alloc(void *addr, uint64_t size, uint16_t kind)
{
    if (!rt_active())
        return;
    rt_guard++;
    /* the period of the threshold in force now; a block tested just before pacing lowered it
     * is weighted by the new one (rare, and an estimate either way) */
    uint32_t period = rt_site_period_of(atomic_load(&rt_site_threshold));
    if (!period) { /* recording stopped since the caller's test */
        rt_guard--;
        return;
    }
    uint64_t t0 = rt_now_ns();
    uint32_t context = rt_context_capture(&rt_w);
    uint64_t t1 = rt_now_ns();
    ot_site_alloc_record r = {.context = context,
                              .time_ns = t1,
                              .seq = atomic_fetch_add(&site_seq, 1) + 1,
                              .addr = (uint64_t)(uintptr_t)addr,
                              .size = size,
                              .tid = rt_tid(),
                              .period = period,
                              .kind = kind};
    rt_tbuf *t = rt_thread_buffers(0);
    if (t)
        rt_append(&rt_w, t, RT_BUF_SITE_ALLOC, &r, 0);
    /* a realloc's new block is never served from an arena (its site cannot be watched) */
    if (RT_UNLIKELY(atomic_load_explicit(&rt_sarena_learning, memory_order_relaxed)) &&
        kind != OT_ALLOC_REALLOC)
        rt_sarena_learn(r.context, size * period); /* arena_watch.h */
    rt_site_pace_note(t0, rt_now_ns());
    rt_guard--;
}

void rt_on_site_free(void *addr, uint16_t kind)
{
    if (!rt_active())
        return;
    rt_guard++;
    ot_site_free_record r = {.time_ns = rt_now_ns(),
                             .seq = atomic_fetch_add(&site_seq, 1) + 1,
                             .addr = (uint64_t)(uintptr_t)addr,
                             .tid = rt_tid(),
                             .kind = kind};
    rt_tbuf *t = rt_thread_buffers(0);
    if (t)
        rt_append(&rt_w, t, RT_BUF_SITE_FREE, &r, 0);
    rt_guard--;
}

void rt_on_static(uint64_t addr, uint64_t size)
{
    if (!rt_active())
        return;
    rt_guard++;
    track_alloc((void *)(uintptr_t)addr, size, OT_ALLOC_STATIC, PROT_READ | PROT_WRITE, 0,
                rt_context_of_address(&rt_w, addr));
    rt_guard--;
}

int rt_on_free(void *addr, uint16_t kind)
{
    rt_obj o;
    rt_guard++;
    int tracked = rt_reg_remove((uint64_t)(uintptr_t)addr, &o);
    if (tracked) {
        rt_fault_disarm(o.addr, o.size);
        rt_place_release(o.addr);
        if (rt_active())
            put_free(o.addr, 0, kind);
    }
    rt_guard--;
    return tracked;
}

void rt_on_unmap_free_record(uint64_t addr, uint16_t kind)
{
    if (rt_active())
        put_free(addr, 0, kind);
}

void rt_reinsert(const void *obj)
{
    rt_reg_insert((const rt_obj *)obj);
}

struct unmap_ctx {
    uint16_t kind;
    int first;
    uint32_t prot;
};

static void on_piece(uint64_t start, uint64_t len, uint64_t seq, uint32_t prot, void *arg)
{
    (void)seq;
    struct unmap_ctx *c = arg;
    if (c->first)
        c->prot = prot;
    rt_place_unmap(start, len);
    if (rt_active())
        put_free(start, len, c->kind);
    c->first = 0;
}

int rt_on_unmap(uint64_t addr, uint64_t len, uint16_t kind, uint32_t *prot)
{
    rt_guard++;
    rt_fault_disarm(addr, len);
    struct unmap_ctx c = {kind, 1, PROT_READ | PROT_WRITE};
    int n = 0;
    if (atomic_load(&rt_maps_live)) {
        n = rt_maps_remove(addr, len, on_piece, &c);
    }
    if (prot)
        *prot = c.prot;
    rt_guard--;
    return n;
}
