/*
 * belady: Belady's MIN, the offline optimum of demand paging (swap mode only). Pages enter
 * fast memory on their first access (a zero-fill) or by a swap-in, never at allocation; when a
 * fault finds fast memory full, the page swapped out is the one whose next access lies furthest
 * ahead (a page never accessed again first). On the trace's reference string no policy, static
 * or dynamic, page- or object-level, has fewer swap-ins with the same fast capacity: it is the
 * ceiling against which a placement's gain can be judged.
 *
 * Input: every ACCESS event carries in `next` how many ACCESS events ahead the next access to
 * the same page is (0 = none); the driver computes it from the whole trace. A page address
 * reused by a later allocation counts as the same page, so when large objects are freed and
 * their addresses reused the result is an achievable count, no longer the guaranteed minimum.
 *
 * Invariants:
 *   - pg->stamp (low 32 bits) and pg->count (high 32 bits) hold the page's next access as an
 *     absolute ACCESS-event number (SIM_C_SAMPLES numbering, 1-based), NEVER when none.
 *   - The heap holds (next, pool index) entries of fast pages, at least one per fast page with
 *     its current next; an entry whose page is gone, slow, or has another next is stale and is
 *     dropped when it reaches the top. It is rebuilt from the pool when stale entries make it
 *     grow past REBUILD_FACTOR times the fast capacity.
 */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define NEVER          UINT64_MAX
#define REBUILD_FACTOR 4

typedef struct heap_entry {
    uint64_t next;
    uint32_t idx;
    uint32_t pad;
} heap_entry;

typedef struct belady_state {
    heap_entry *heap; /* max-heap by next */
    size_t size, cap;
} belady_state;

static uint64_t page_next(const sim_page *pg)
{
    return (uint64_t)pg->stamp | ((uint64_t)pg->count << 32);
}

static void set_page_next(sim_page *pg, uint64_t next)
{
    pg->stamp = (uint32_t)next;
    pg->count = (uint32_t)(next >> 32);
}

static void sift_up(heap_entry *h, size_t i)
{
    heap_entry e = h[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h[parent].next >= e.next)
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = e;
}

static void sift_down(heap_entry *h, size_t n, size_t i)
{
    heap_entry e = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1].next > h[c].next)
            c++;
        if (h[c].next <= e.next)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

static bool live_fast(sim_t *s, uint32_t idx)
{
    const sim_page *pg = sim_page_at(s, idx);
    return pg && pg->tier == SIM_FAST && !(pg->flags & SIM_PG_PINNED);
}

/* Replace the heap by one entry per unpinned fast page (drops every stale entry). */
static void rebuild(sim_t *s, belady_state *st)
{
    st->size = 0;
    for (uint32_t idx = 0; idx < s->pool_used && st->size < st->cap; idx++)
        if (live_fast(s, idx))
            st->heap[st->size++] = (heap_entry){page_next(&s->pool[idx]), idx, 0};
    for (size_t i = st->size / 2; i-- > 0;)
        sift_down(st->heap, st->size, i);
}

static void push(sim_t *s, belady_state *st, uint64_t next, uint32_t idx)
{
    if (st->size == st->cap) {
        if (st->cap >= REBUILD_FACTOR * (s->fast_cap + 1024)) {
            rebuild(s, st);
        } else {
            size_t cap = st->cap ? 2 * st->cap : 4096;
            heap_entry *h = realloc(st->heap, cap * sizeof *h);
            if (!h) { /* keep going on what there is; faults may then fail (pgmigrate_fail) */
                rebuild(s, st);
            } else {
                st->heap = h;
                st->cap = cap;
            }
        }
        if (st->size == st->cap)
            return; /* only after a failed allocation: the page is not a candidate */
    }
    st->heap[st->size] = (heap_entry){next, idx, 0};
    sift_up(st->heap, st->size++);
}

static int belady_init(sim_t *s)
{
    if (!s->cfg.swap) {
        snprintf(s->error, sizeof s->error,
                 "policy belady needs the swap tier (a swap preset or --param swap=1)");
        return -1;
    }
    return 0;
}

static int belady_alloc(sim_t *s, sim_page *pg, uint32_t obj, uint64_t offset)
{
    (void)s, (void)obj, (void)offset;
    set_page_next(pg, NEVER);
    return SIM_SLOW; /* demand paging: resident from the first access */
}

static void belady_access(sim_t *s, sim_page *pg, uint64_t now, uint64_t weight, bool store)
{
    (void)now, (void)weight, (void)store;
    belady_state *st = s->state;
    uint32_t ahead = s->event ? s->event->next : 0;
    uint64_t next = ahead ? s->counter[SIM_C_SAMPLES] + ahead : NEVER;
    set_page_next(pg, next);
    if (pg->tier == SIM_FAST && !(pg->flags & SIM_PG_PINNED))
        push(s, st, next, sim_page_index(s, pg));
}

static sim_page *belady_evict(sim_t *s)
{
    belady_state *st = s->state;
    while (st->size > 0) {
        heap_entry top = st->heap[0];
        st->heap[0] = st->heap[--st->size];
        if (st->size)
            sift_down(st->heap, st->size, 0);
        if (live_fast(s, top.idx) && page_next(&s->pool[top.idx]) == top.next)
            return &s->pool[top.idx];
    }
    return NULL;
}

static void belady_fini(sim_t *s)
{
    belady_state *st = s->state;
    free(st->heap);
    st->heap = NULL;
}

static const sim_param_def belady_params[] = {{NULL, 0}};

const sim_policy_ops sim_policy_belady = {
    .name = "belady",
    .params = belady_params,
    .state_bytes = sizeof(belady_state),
    .init = belady_init,
    .on_alloc = belady_alloc,
    .on_access = belady_access,
    .evict = belady_evict,
    .fini = belady_fini,
};
