/*
 * The `trace` sampler's ordered access stream: ACCESS records in program order.
 *
 * With OBJTIER_TRACE_STREAM=N, the first N loads and stores of the process (any address)
 * also become ACCESS records, in a per-thread buffer of STREAM_CHUNK records written as one
 * block when full, at thread exit and at stop. A thread claims its records from the shared
 * budget a chunk at a time, so the hot path takes one atomic (the order counter) per record.
 * With OBJTIER_TRACE_STREAM_WINDOW=B as well, the stream is windows of B records spread over
 * the whole run instead of its first N accesses (the same budget N): window positions are a
 * grid over the process's accesses (counted in batches of STREAM_BATCH per thread), in units of
 * B: grid index g = 0, 1, ... STREAM_GRID - 1, then every 2nd up to 2 * STREAM_GRID, every 4th
 * up to 4 * STREAM_GRID, and so on. The windows whose index is a multiple of the spacing of
 * the last two are then evenly spaced over the run (STREAM_GRID / 2 to STREAM_GRID of them),
 * whatever its length; the others were written before the step doubled. Each opening is a pair
 * of COUNTERS records, "trace.stream.window" (g) and "trace.stream.window_order" (the order
 * counter at the opening: the window's records follow it); the first window that comes due
 * after the budget is spent is one "trace.stream.window_skipped" record (its g: the stream
 * covers the run up to there), and none is written when the run ends first. A thread holding
 * records claimed in a window drops them when the next window opens, so the records of a
 * window lie between its opening and the next (up to a record in flight at the opening).
 *
 * For 4- and 8-byte loads the value about to be loaded is read first (the program reads the
 * same bytes next), to name the data dependence of later accesses on it
 * (ot_access_record.dep): through a pointer (the address lies within STREAM_DEP_SPAN above
 * one of the last STREAM_VALUES 8-byte values of at least that much) or, for a load, through
 * an index (one of the last STREAM_VALUES other values; tr_thread.values), when the address
 * is element v of the tracked object holding it, for an element size 2^j, j < STREAM_SHIFTS:
 * (addr - start) >> j == v. Stores
 * take no index dependence: a store waiting for its address holds up no later access in an
 * out-of-order core, and the stores of `a[i] = f(a[i])` loops over identity-filled arrays would
 * match their own index.
 *
 * Invariants
 *   - stream_order only grows: ot_access_record.order is unique in the process, and a
 *     record's order is taken when it is written to the thread's buffer.
 *   - Records claimed from stream_left never exceed OBJTIER_TRACE_STREAM in all; with
 *     windows, records claimed from window_left never exceed the window size per window.
 */
#define _GNU_SOURCE
#include "trace_internal.h"
#include "writer.h"
#include "sampler.h"

#include <string.h>

#define STREAM_CHUNK    (OT_BLOCK_TARGET_BYTES / sizeof(ot_access_record)) /* records per block */
#define STREAM_DEP_SPAN 4096 /* an address this far above a loaded value depends on it */
#define STREAM_SHIFTS   7    /* index dependences: element sizes 1, 2, 4, ... 64 bytes */
#define STREAM_IDX_MAX  (UINT64_C(1) << 40) /* an 8-byte value below this may be an index */
#define STREAM_GRID     16                  /* windows per grid step before the step doubles */
#define STREAM_BATCH    1024        /* accesses a thread counts before adding them to stream_seen */
#define STREAM_CTR_G    0xFFFF0001U /* COUNTER_DEF ids of the window records (above the ids */
#define STREAM_CTR_O    0xFFFF0002U /* region_pmu.c gives: phase * events + term) */
#define STREAM_CTR_S    0xFFFF0003U

static _Atomic int64_t stream_left;   /* ACCESS records not yet claimed by a thread */
static _Atomic uint64_t stream_order; /* next ot_access_record.order */
static uint64_t stream_window;        /* OBJTIER_TRACE_STREAM_WINDOW; 0 = the first N accesses */
static _Atomic uint64_t stream_seen;  /* windows: accesses of the process (batched per thread) */
static _Atomic uint64_t stream_grid;  /* windows: grid index of the next window to open */
static _Atomic uint64_t stream_gen;   /* windows: windows opened so far */
static _Atomic int64_t window_left;   /* windows: records of the open window not yet claimed */
static _Atomic int window_defs;       /* windows: COUNTER_DEF records written */
static _Atomic int window_skipped;    /* windows: a window came due after the budget was spent */

uint64_t rt_trace_stream_order(void)
{
    return atomic_load_explicit(&stream_order, memory_order_relaxed);
}

void tr_stream_init(uint64_t budget, uint64_t window)
{
    atomic_store(&stream_left, (int64_t)budget);
    stream_window = window;
}

/* Writes t's buffered ACCESS records as one block. Called by the owner, or at stop. */
NOINST void tr_stream_flush(tr_thread *t)
{
    if (t->sbuf && t->sn) {
        uint32_t n = t->sn;
        t->sn = 0;
        t->scap -= n;
        rt_write_block(&rt_w, t->sbuf, OT_TAG_ACCESS, sizeof(ot_access_record),
                       n * (uint32_t)sizeof(ot_access_record), n);
    }
}

/* Grid step at window index g: 1 below STREAM_GRID, then doubling every time g doubles. */
static NOINST uint64_t grid_step(uint64_t g)
{
    uint64_t step = 1;
    while (g >= STREAM_GRID * step && step < (UINT64_C(1) << 40))
        step <<= 1;
    return step;
}

static NOINST void window_counter_defs(void)
{
    static const char unit[] = "index";
    static const char *const names[3] = {"trace.stream.window", "trace.stream.window_order",
                                         "trace.stream.window_skipped"};
    static const uint32_t ids[3] = {STREAM_CTR_G, STREAM_CTR_O, STREAM_CTR_S};
    for (int k = 0; k < 3; k++) {
        ot_counter_def_record d = {
            .id = ids[k], .unit_len = sizeof unit - 1, .name_len = (uint16_t)strlen(names[k])};
        rt_write_var_record(&rt_w, OT_TAG_COUNTER_DEF, &d, sizeof d, names[k], d.name_len, unit,
                            sizeof unit - 1, NULL, 0);
    }
}

/* Adds the thread's counted accesses to stream_seen and opens the next window when the
 * process has reached its grid position (one thread wins the compare-and-swap). */
static NOINST __attribute__((noinline)) void window_tick(tr_thread *t)
{
    uint64_t seen =
        atomic_fetch_add_explicit(&stream_seen, t->sseen, memory_order_relaxed) + t->sseen;
    t->sseen = 0;
    uint64_t g = atomic_load_explicit(&stream_grid, memory_order_relaxed);
    /* window g opens at g * B accesses after the first tick (so that back-to-back windows,
     * g < STREAM_GRID, each get their B records before the next one opens) */
    if (seen < g * stream_window + STREAM_BATCH ||
        !atomic_compare_exchange_strong(&stream_grid, &g, g + grid_step(g)))
        return;
    if (!atomic_exchange(&window_defs, 1))
        window_counter_defs();
    unsigned char blk[sizeof(ot_block_header) + 2 * sizeof(ot_counter_record)];
    uint64_t now = rt_now_ns();
    if (atomic_load_explicit(&stream_left, memory_order_relaxed) <= 0) {
        /* the budget is spent: the first window that comes due is named (where the stream
         * stops covering the run), then every thread stops counting */
        if (!atomic_exchange(&window_skipped, 1)) {
            ot_counter_record r = {.time_ns = now, .id = STREAM_CTR_S, .value = (int64_t)g};
            memcpy(blk + sizeof(ot_block_header), &r, sizeof r);
            rt_write_block(&rt_w, blk, OT_TAG_COUNTERS, sizeof r, sizeof r, 1);
        }
        return;
    }
    uint64_t order = atomic_load_explicit(&stream_order, memory_order_relaxed);
    atomic_store(&window_left, (int64_t)stream_window);
    atomic_fetch_add(&stream_gen, 1);
    ot_counter_record r[2] = {{.time_ns = now, .id = STREAM_CTR_G, .value = (int64_t)g},
                              {.time_ns = now, .id = STREAM_CTR_O, .value = (int64_t)order}};
    memcpy(blk + sizeof(ot_block_header), r, sizeof r);
    rt_write_block(&rt_w, blk, OT_TAG_COUNTERS, sizeof r[0], sizeof r, 2);
}

/* Claims records for t's buffer (empty, sn == scap == 0): from the budget, and with windows
 * from the open window too. 1 when t may record, 0 when not (t->sdone once the budget is
 * spent). */
static NOINST int stream_claim(tr_thread *t)
{
    int64_t want = (int64_t)STREAM_CHUNK;
    if (stream_window) {
        uint64_t gen = atomic_load(&stream_gen);
        if (t->swin != gen) { /* a new window: values of the last one feed no dependence */
            memset(t->values, 0, sizeof t->values);
            t->swin = gen;
            t->sclosed = 0;
        }
        if (t->sclosed) /* this window is fully claimed: wait for the next one */
            return 0;
        int64_t open = atomic_fetch_sub_explicit(&window_left, want, memory_order_relaxed);
        if (open <= 0) {
            t->sclosed = 1;
            return 0;
        }
        want = open < want ? open : want;
    }
    int64_t left = atomic_fetch_sub_explicit(&stream_left, want, memory_order_relaxed);
    if (left <= 0) {
        t->sdone = !stream_window; /* windows: keep counting until a window comes due */
        return 0;
    }
    t->sn = 0;
    t->scap = left < want ? (uint32_t)left : (uint32_t)want;
    return 1;
}

/* One ACCESS record of the ordered stream (OBJTIER_TRACE_STREAM). base: start of the tracked
 * object holding a, 0 when a lies outside every tracked object (no index dependence then). */
NOINST __attribute__((noinline)) void tr_stream_record(tr_thread *t, uint64_t a, uint64_t size,
                                                       int store, uint64_t base)
{
    if (t->sdone)
        return;
    if (stream_window) {
        if (++t->sseen >= STREAM_BATCH) {
            window_tick(t);
            if (atomic_load_explicit(&window_skipped, memory_order_relaxed)) {
                t->sdone = 1; /* the stream's end is recorded: nothing more to count */
                return;
            }
        }
        if (t->scap && t->swin != atomic_load_explicit(&stream_gen, memory_order_relaxed)) {
            tr_stream_flush(t); /* a later window opened: the rest of this claim is dropped */
            t->sn = t->scap = 0;
        }
    }
    if (t->sn == t->scap) { /* buffer full or budget of this chunk spent: write, claim more */
        tr_stream_flush(t);
        if (!t->sbuf && !(t->sbuf = rt_sys_mmap(sizeof(ot_block_header) + OT_BLOCK_TARGET_BYTES))) {
            t->sdone = 1;
            return;
        }
        if (!stream_claim(t))
            return;
    }
    uint64_t me = t->nacc++;
    /* dep: the newest kept load whose value gave the address; then the oldest kept load of
     * that same value, so that a value reloaded from a stack slot (an unoptimised build) leads
     * back to the load that first returned it */
    uint64_t dep = 0, off = a - base, dv = 0;
    for (int kind = 0; kind < 2; kind++)
        for (int k = 0; k < STREAM_VALUES; k++) {
            uint64_t v = t->values[kind][k], back = me - t->value_at[kind][k];
            if (!v || back > UINT16_MAX || (dep && back >= dep))
                continue;
            int hit = 0;
            if (kind == 0) /* through a pointer */
                hit = a - v < STREAM_DEP_SPAN;
            for (int j = 0; kind == 1 && base && !store && !hit && j < STREAM_SHIFTS; j++)
                hit = (off >> j) == v; /* through an index: element v of 2^j bytes */
            if (hit)
                dep = back, dv = v;
        }
    for (int kind = 0; dep && kind < 2; kind++)
        for (int k = 0; k < STREAM_VALUES; k++) {
            uint64_t back = me - t->value_at[kind][k];
            if (t->values[kind][k] == dv && back > dep && back <= UINT16_MAX)
                dep = back;
        }
    if (!store && (size == 8 || size == 4)) {
        uint64_t v; /* the bytes the program loads next */
        if (size == 8) {
            memcpy(&v, (const void *)(uintptr_t)a, 8);
        } else {
            uint32_t w;
            memcpy(&w, (const void *)(uintptr_t)a, 4);
            v = w;
        }
        for (int kind = 0; kind < 2; kind++) {
            int keep = kind == 0 ? size == 8 && v >= STREAM_DEP_SPAN
                                 : v && (size == 4 || v < STREAM_IDX_MAX);
            if (keep) {
                uint32_t at = t->vpos[kind];
                t->values[kind][at] = v;
                t->value_at[kind][at] = me;
                t->vpos[kind] = (at + 1) % STREAM_VALUES;
            }
        }
    }
    ot_access_record *r = (ot_access_record *)(t->sbuf + sizeof(ot_block_header)) + t->sn++;
    *r = (ot_access_record){.order =
                                atomic_fetch_add_explicit(&stream_order, 1, memory_order_relaxed),
                            .time_ns = rt_now_ns(),
                            .addr = a,
                            .tid = rt_tid(),
                            .cct_node = t->cct.nodes[t->node].id,
                            .size = (uint16_t)size,
                            .flags = (uint16_t)(store ? OT_ACCESS_WRITE : 0),
                            .dep = (uint16_t)dep};
    if (t->sn == t->scap)
        tr_stream_flush(t);
}
