/* The window samplers' samples, WINDOW records and counts; see window_log.h. */
#include "window_log.h"
#include "rt.h"
#include "writer.h"

#include <string.h>

void rt_window_log_begin(rt_window_log *l)
{
    atomic_store(&l->touched_ns, 0);
}

void rt_window_log_touch(rt_window_log *l, uint64_t addr, uint32_t tid, uint16_t flags,
                         uint64_t now, uint64_t arm_ns, int in_signal)
{
    atomic_fetch_add_explicit(&l->touched_ns, now > arm_ns ? now - arm_ns : 0,
                              memory_order_relaxed);
    rt_window_log_sample(l, addr, tid, flags, now, arm_ns, in_signal);
}

void rt_window_log_sample(rt_window_log *l, uint64_t addr, uint32_t tid, uint16_t flags,
                          uint64_t now, uint64_t arm_ns, int in_signal)
{
    uint64_t lat_ns = now > arm_ns ? now - arm_ns : 0;
    uint64_t us = lat_ns / 1000;
    ot_sample_record s = {.time_ns = now,
                          .addr = addr,
                          .tid = tid,
                          .latency = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us,
                          .source = l->source,
                          .level = OT_LVL_UNKNOWN,
                          .tlb = OT_TLB_UNKNOWN,
                          .flags = flags,
                          .node = 0xFFFF,
                          .weight = 1};
    if (rt_sample_emit(&s, in_signal))
        atomic_fetch_add_explicit(&l->samples, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&l->lost, 1, memory_order_relaxed);
}

void rt_window_log_end(rt_window_log *l, uint64_t seq, uint64_t start, uint64_t arm_ns,
                       uint64_t end_ns, uint32_t pages, uint32_t touched)
{
    rt_window_log_end_sum(l, seq, start, arm_ns, end_ns, pages, touched,
                          atomic_load(&l->touched_ns));
}

void rt_window_log_end_sum(rt_window_log *l, uint64_t seq, uint64_t start, uint64_t arm_ns,
                           uint64_t end_ns, uint32_t pages, uint32_t touched, uint64_t touched_ns)
{
    ot_window_record r = {.arm_ns = arm_ns,
                          .alloc_seq = seq,
                          .start = start,
                          .dwell_ns = end_ns > arm_ns ? end_ns - arm_ns : 0,
                          .touched_ns = touched_ns,
                          .pages = pages,
                          .touched = touched};
    memcpy(l->batch + sizeof(ot_block_header) + l->batch_n * sizeof r, &r, sizeof r);
    if (++l->batch_n == RT_WINDOW_BATCH)
        rt_window_log_flush(l);
    atomic_fetch_add(&l->pages_armed, pages);
    atomic_fetch_add(&l->windows, 1);
}

void rt_window_log_flush(rt_window_log *l)
{
    if (l->batch_n && rt_active())
        rt_write_block(&rt_w, l->batch, OT_TAG_WINDOW, sizeof(ot_window_record),
                       l->batch_n * (uint32_t)sizeof(ot_window_record), l->batch_n);
    l->batch_n = 0;
}

void rt_window_log_stats(rt_window_log *l, ot_sampler_stats_record *out)
{
    memset(out, 0, sizeof *out);
    out->source = l->source;
    out->samples = atomic_load(&l->samples);
    out->lost = atomic_load(&l->lost);
    out->pages_armed = atomic_load(&l->pages_armed);
    out->windows = atomic_load(&l->windows);
}

void rt_window_log_reset(rt_window_log *l)
{
    l->batch_n = 0;
    atomic_store(&l->samples, 0);
    atomic_store(&l->lost, 0);
    atomic_store(&l->pages_armed, 0);
    atomic_store(&l->windows, 0);
    atomic_store(&l->touched_ns, 0);
}
