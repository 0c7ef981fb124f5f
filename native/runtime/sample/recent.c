/* The ring of recently ended sampler windows; see recent.h. */
#include "recent.h"

#include <stdatomic.h>

static _Atomic int enabled;
static _Atomic uint64_t head, tail, dropped;
static rt_recent_window ring[RT_RECENT_SLOTS];

void rt_recent_enable(void)
{
    atomic_store(&enabled, 1);
}

void rt_recent_note(uint64_t start, uint64_t end, uint32_t pages, uint32_t touched, uint64_t end_ns)
{
    if (!atomic_load_explicit(&enabled, memory_order_relaxed))
        return;
    uint64_t h = atomic_load_explicit(&head, memory_order_relaxed);
    if (h - atomic_load_explicit(&tail, memory_order_acquire) >= RT_RECENT_SLOTS) {
        atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
        return;
    }
    ring[h % RT_RECENT_SLOTS] = (rt_recent_window){
        .start = start, .end = end, .end_ns = end_ns, .pages = pages, .touched = touched};
    atomic_store_explicit(&head, h + 1, memory_order_release);
}

uint32_t rt_recent_take(rt_recent_window *out, uint32_t cap)
{
    uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
    uint64_t h = atomic_load_explicit(&head, memory_order_acquire);
    uint32_t n = 0;
    for (; t < h && n < cap; t++)
        out[n++] = ring[t % RT_RECENT_SLOTS];
    atomic_store_explicit(&tail, t, memory_order_release);
    return n;
}

uint64_t rt_recent_dropped(void)
{
    return atomic_load(&dropped);
}

void rt_recent_fork_child(void)
{
    atomic_store(&enabled, 0);
    atomic_store(&head, 0);
    atomic_store(&tail, 0);
}
