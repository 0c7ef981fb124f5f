/*
 * The `trace` sampler: exact access counts from compiler instrumentation.
 *
 * A program built with `objtier cc` / `objtier c++` (clang -fsanitize-coverage=func,
 * trace-loads,trace-stores -finstrument-functions) calls __sanitizer_cov_load{1,2,4,8,16} /
 * __sanitizer_cov_store{...} before every load and store, and __cyg_profile_func_enter/exit
 * around every function. This file defines those callbacks. They are cheap no-ops (one
 * relaxed load and a branch) unless this sampler was chosen and the runtime is recording.
 *
 * Per access (the hot path, per thread, no locks):
 *   1. the thread's last-level-cache model (cache_model.h) sees the line(s) touched;
 *   2. the object holding the address is found in a 4-entry per-thread cache of recent
 *      objects, else in a per-thread cache of pages known to hold no object, else (slow
 *      path) in the shared object index under a read lock;
 *   3. the (object, calling-context node) counter is bumped: loads or stores, and misses
 *      when the model missed. Optionally one SAMPLE record (source TRACE) is written, until
 *      OBJTIER_TRACE_LIMIT records were written.
 * At exit the sampler writes CONTEXT records naming each node's (function, call site),
 * CCT_NODE records and ACCESS_COUNT records (trace_format.h).
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
 * The object index is the registry's and the map list's observer (rt_track_set_observer,
 * registry.h), so it sees exactly the objects the runtime records, with their ALLOC seq,
 * without a hook in the interposers.
 *
 * Invariants
 *   - idx (tr_obj elements) is sorted by start and non-overlapping; idx_gen changes (under the
 *     write lock) whenever idx changes. A thread's caches are valid only while its gen
 *     equals idx_gen; it drops them when it sees a new value.
 *   - Function-context ids (ot_cct_node_record.function) are RT_FN_CTX_BASE + n, above the
 *     allocation contexts' ids (1, 2, ... from context.c), so the two never collide.
 *   - Thread states are never freed while the process records (their trees are written at
 *     exit); a finished thread's cache model is released by its key destructor.
 */
#define _GNU_SOURCE
#include "cache_model.h"
#include "cct.h"
#include "context.h"
#include "maps.h"
#include "modules.h"
#include "range_array.h"
#include "registry.h"
#include "rt.h"
#include "writer.h"
#include "sampler.h"
#include "statics.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#define RT_FN_CTX_BASE  0x80000000U
#define OBJ_SLOTS       4  /* per-thread cache of recent objects */
#define NEG_PAGES       64 /* per-thread direct-mapped cache of object-free pages */
#define NEG_SHIFT       12 /* 4 KiB pages for the negative cache (any page size is correct) */
#define STREAM_CHUNK    (OT_BLOCK_TARGET_BYTES / sizeof(ot_access_record)) /* records per block */
#define STREAM_VALUES   4    /* loaded values kept per kind: pointers, indices */
#define STREAM_DEP_SPAN 4096 /* an address this far above a loaded value depends on it */
#define STREAM_SHIFTS   7    /* index dependences: element sizes 1, 2, 4, ... 64 bytes */
#define STREAM_IDX_MAX  (UINT64_C(1) << 40) /* an 8-byte value below this may be an index */
#define STREAM_GRID     16                  /* windows per grid step before the step doubles */
#define STREAM_BATCH    1024        /* accesses a thread counts before adding them to stream_seen */
#define STREAM_CTR_G    0xFFFF0001U /* COUNTER_DEF ids of the window records (above the ids */
#define STREAM_CTR_O    0xFFFF0002U /* region_pmu.c gives: phase * events + term) */
#define STREAM_CTR_S    0xFFFF0003U
/* Never instrument the callbacks themselves (should this file be built by an instrumenting
 * compiler): they would call themselves. */
#if defined(__clang__)
#define NOINST __attribute__((no_instrument_function, no_sanitize("coverage")))
#else
#define NOINST __attribute__((no_instrument_function))
#endif

typedef struct tr_obj {
    uint64_t start, end; /* [start, end) */
    uint64_t seq;        /* ot_alloc_record.seq */
} tr_obj;

typedef struct tr_slot {
    uint64_t start, len; /* hit when addr - start < len (len 0 = empty slot) */
    uint64_t seq;
    uint32_t node; /* cct node index the counter belongs to */
    uint32_t reserved;
    rt_cct_counter *ctr; /* counter of (node, seq) */
} tr_slot;

typedef struct tr_thread {
    struct tr_thread *next; /* list of all states, written once before publication */
    uint64_t gen;           /* idx_gen the caches below belong to */
    uint32_t node;          /* current cct node (index) */
    uint32_t next_slot;     /* round-robin victim in slots[] */
    int busy;               /* in a slow path: a nested call (signal handler) skips */
    int exited;
    tr_slot slots[OBJ_SLOTS];
    tr_slot outside[3];   /* counters outside every object: stack, TLS, other (OT_SEQ_OUTSIDE_*) */
    rt_thread_memory mem; /* this thread's stack and static TLS */
    uint64_t neg[NEG_PAGES]; /* page numbers that hold no tracked byte; UINT64_MAX = empty */
    rt_llc llc;
    rt_cct cct;
    /* ordered access stream (OBJTIER_TRACE_STREAM) */
    unsigned char *sbuf; /* block header + STREAM_CHUNK records; NULL until first use */
    uint32_t sn, scap;   /* records in sbuf / records claimed for it from the budget */
    int sdone;           /* the budget is spent: record nothing more */
    uint32_t vpos[2];    /* next slot of values[kind] */
    uint64_t nacc;       /* this thread's stream index of the next record */
    /* last loaded values (0 = none): [0] pointers (8-byte loads, at least STREAM_DEP_SPAN),
     * [1] index candidates (4-byte loads, and 8-byte loads below STREAM_IDX_MAX: not a
     * pointer nor a double's bits), kept apart so that a loop of float loads does not push
     * the row pointer it reads through out of [0] */
    uint64_t values[2][STREAM_VALUES];
    uint64_t value_at[2][STREAM_VALUES]; /* their stream indices */
    uint64_t sseen;                      /* windows: accesses not yet added to stream_seen */
    uint64_t swin;                       /* windows: stream_gen of the records claimed in sbuf */
    int sclosed;                         /* windows: window swin had no records left to claim */
} tr_thread;

/* ---- shared state ------------------------------------------------------------------ */

static _Atomic int tr_on;  /* 1 while callbacks count (start .. stop) */
static _Atomic int idx_on; /* 1 while the index follows the registry (init .. stop) */
static _Atomic uint64_t idx_gen;
static pthread_rwlock_t idx_lock = PTHREAD_RWLOCK_INITIALIZER;
static rt_range_array idx = RT_RANGE_ARRAY_INIT(tr_obj, 1024);

static _Atomic(tr_thread *) threads;
static RT_TLS tr_thread *tls_tr;
static RT_TLS int tls_done; /* this thread's state was released: count nothing more */
static pthread_key_t tr_key;

static uint64_t llc_bytes;
static uint32_t llc_ways, llc_line;
static _Atomic int64_t trace_left; /* address-trace records still allowed */
static int trace_on;
static _Atomic uint64_t trace_written, trace_lost;
static int stream_on;                 /* OBJTIER_TRACE_STREAM > 0 */
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

/* ---- the object index ---------------------------------------------------------------- */

static NOINST uint64_t idx_end_of(const void *e)
{
    return ((const tr_obj *)e)->end;
}

/* First index whose end > addr (entries before it lie wholly below addr). */
static NOINST uint64_t idx_first_after(uint64_t addr)
{
    return rt_range_array_first_after(&idx, addr, idx_end_of);
}

static NOINST tr_obj *idx_at(uint64_t i)
{
    return (tr_obj *)idx.items + i;
}

/* Removes [start, end) from every entry (trimming or splitting). Write lock held. */
static void idx_cut(uint64_t start, uint64_t end)
{
    uint64_t i = idx_first_after(start);
    while (i < idx.n && idx_at(i)->start < end) {
        tr_obj *o = idx_at(i);
        if (o->start < start && o->end > end) { /* split: keep both sides */
            tr_obj right = *o;
            if (rt_range_array_reserve(&idx, idx.n + 1) != 0)
                return;
            right.start = end;
            idx_at(i)->end = start;
            rt_range_array_insert(&idx, i + 1, &right);
            return;
        }
        if (o->start < start) {
            o->end = start;
            i++;
        } else if (o->end > end) {
            o->start = end;
            i++;
        } else {
            rt_range_array_erase(&idx, i);
        }
    }
}

static void idx_update(uint64_t start, uint64_t len, uint64_t seq, int add)
{
    if (!atomic_load_explicit(&idx_on, memory_order_relaxed) || len == 0)
        return;
    uint64_t end = start + len < start ? UINT64_MAX : start + len;
    pthread_rwlock_wrlock(&idx_lock);
    idx_cut(start, end);
    if (add && rt_range_array_reserve(&idx, idx.n + 1) == 0) {
        tr_obj o = {start, end, seq};
        rt_range_array_insert(&idx, idx_first_after(start), &o);
    }
    atomic_fetch_add_explicit(&idx_gen, 1, memory_order_release);
    pthread_rwlock_unlock(&idx_lock);
}

/* The index follows the registry and the map list as their observer (set at init). */
static NOINST void idx_added(uint64_t addr, uint64_t len, uint64_t seq)
{
    idx_update(addr, len, seq, 1);
}

static NOINST void idx_removed(uint64_t addr, uint64_t len)
{
    idx_update(addr, len, 0, 0);
}

static const rt_track_observer idx_observer = {.added = idx_added, .removed = idx_removed};

/* ---- per-thread state ---------------------------------------------------------------- */

/* Writes t's buffered ACCESS records as one block. Called by the owner, or at stop. */
static NOINST void stream_flush(tr_thread *t)
{
    if (t->sbuf && t->sn) {
        uint32_t n = t->sn;
        t->sn = 0;
        t->scap -= n;
        rt_write_block(&rt_w, t->sbuf, OT_TAG_ACCESS, sizeof(ot_access_record),
                       n * (uint32_t)sizeof(ot_access_record), n);
    }
}

static NOINST void thread_release(void *arg)
{
    tr_thread *t = arg;
    if (t && t == tls_tr) {
        stream_flush(t);
        tls_tr = NULL;
        tls_done = 1;
        t->exited = 1;
        rt_llc_destroy(&t->llc);
    }
}

static NOINST void drop_caches(tr_thread *t, uint64_t gen)
{
    memset(t->slots, 0, sizeof t->slots);
    memset(t->neg, 0xff, sizeof t->neg);
    t->gen = gen;
}

static NOINST __attribute__((noinline)) tr_thread *thread_state(void)
{
    if (tls_done || rt_guard || !atomic_load(&tr_on))
        return NULL;
    tls_done = 1; /* until set up: a nested callback (signal handler) counts nothing */
    tr_thread *t = rt_sys_mmap(sizeof *t);
    if (!t)
        return NULL;
    if (rt_llc_init(&t->llc, llc_bytes, llc_ways, llc_line) != 0 || rt_cct_init(&t->cct) != 0) {
        rt_llc_destroy(&t->llc);
        rt_sys_munmap(t, sizeof *t);
        return NULL;
    }
    drop_caches(t, atomic_load(&idx_gen));
    rt_threadmem_ranges(&t->mem);
    static const uint64_t outside_seq[3] = {OT_SEQ_OUTSIDE_STACK, OT_SEQ_OUTSIDE_TLS,
                                            OT_SEQ_OUTSIDE_OTHER};
    for (int k = 0; k < 3; k++)
        t->outside[k] = (tr_slot){.seq = outside_seq[k], .node = UINT32_MAX};
    t->next = atomic_load(&threads);
    while (!atomic_compare_exchange_weak(&threads, &t->next, t))
        ;
    rt_guard++;
    pthread_setspecific(tr_key, t);
    rt_guard--;
    tls_tr = t;
    tls_done = 0;
    return t;
}

/* ---- the hot path -------------------------------------------------------------------- */

/* The object holding addr, or NULL; fills a slot. Takes the index's read lock. */
static NOINST __attribute__((noinline)) tr_slot *lookup(tr_thread *t, uint64_t addr)
{
    uint64_t page = addr >> NEG_SHIFT;
    if (t->neg[page % NEG_PAGES] == page || t->busy || rt_guard)
        return NULL;
    t->busy = 1;
    tr_slot *s = NULL;
    pthread_rwlock_rdlock(&idx_lock);
    uint64_t i = idx_first_after(addr);
    if (i < idx.n && idx_at(i)->start <= addr) {
        s = &t->slots[t->next_slot++ % OBJ_SLOTS];
        *s = (tr_slot){.start = idx_at(i)->start,
                       .len = idx_at(i)->end - idx_at(i)->start,
                       .seq = idx_at(i)->seq,
                       .node = UINT32_MAX};
    } else {
        uint64_t page_end = (page + 1) << NEG_SHIFT;
        int clean = i == idx.n || idx_at(i)->start >= page_end;
        if (clean && i > 0 && idx_at(i - 1)->end > (page << NEG_SHIFT))
            clean = 0;
        if (clean)
            t->neg[page % NEG_PAGES] = page;
    }
    uint64_t gen = atomic_load_explicit(&idx_gen, memory_order_relaxed);
    pthread_rwlock_unlock(&idx_lock);
    if (gen != t->gen) { /* the index moved on since the caches were checked */
        drop_caches(t, gen);
        s = NULL;
    }
    t->busy = 0;
    return s;
}

static NOINST __attribute__((noinline)) void trace_record(tr_thread *t, uint64_t addr, int store,
                                                          uint32_t miss)
{
    (void)t;
    if (atomic_fetch_sub_explicit(&trace_left, 1, memory_order_relaxed) <= 0) {
        trace_on = 0;
        return;
    }
    ot_sample_record r = {.time_ns = rt_now_ns(),
                          .addr = addr,
                          .tid = rt_tid(),
                          .source = OT_SRC_TRACE,
                          .level = miss ? OT_LVL_DRAM_LOCAL : OT_LVL_L3,
                          .flags = (uint16_t)(OT_SAMPLE_RW_KNOWN | (store ? OT_SAMPLE_WRITE : 0)),
                          .node = 0xFFFF,
                          .weight = 1};
    if (rt_sample_emit(&r, 0))
        atomic_fetch_add_explicit(&trace_written, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&trace_lost, 1, memory_order_relaxed);
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
static NOINST __attribute__((noinline)) void stream_record(tr_thread *t, uint64_t a, uint64_t size,
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
            stream_flush(t); /* a later window opened: the rest of this claim is dropped */
            t->sn = t->scap = 0;
        }
    }
    if (t->sn == t->scap) { /* buffer full or budget of this chunk spent: write, claim more */
        stream_flush(t);
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
        stream_flush(t);
}

static inline __attribute__((always_inline)) void on_access(uint64_t a, uint64_t size, int store)
{
    if (RT_LIKELY(!atomic_load_explicit(&tr_on, memory_order_relaxed)))
        return;
    tr_thread *t = tls_tr;
    if (RT_UNLIKELY(!t) && !(t = thread_state()))
        return;
    /* 1. cache model: the line, and the next one when the access straddles both */
    uint32_t shift = t->llc.line_shift;
    uint64_t line = a >> shift;
    uint32_t miss = (uint32_t)rt_llc_access(&t->llc, line);
    if (RT_UNLIKELY(((a + size - 1) >> shift) != line))
        miss |= (uint32_t)rt_llc_access(&t->llc, line + 1);
    /* 2. object (then the stream record, which needs the object's start) */
    uint64_t gen = atomic_load_explicit(&idx_gen, memory_order_relaxed);
    if (RT_UNLIKELY(gen != t->gen))
        drop_caches(t, gen);
    tr_slot *s = t->slots;
    if (a - s[0].start < s[0].len)
        s = &s[0];
    else if (a - s[1].start < s[1].len)
        s = &s[1];
    else if (a - s[2].start < s[2].len)
        s = &s[2];
    else if (a - s[3].start < s[3].len)
        s = &s[3];
    else if (!(s = lookup(t, a))) {
        if (t->busy || rt_guard) {
            if (RT_UNLIKELY(stream_on))
                stream_record(t, a, size, store, 0);
            return;
        }
        /* outside every object (or, rarely, an object the index gained during the lookup):
         * counted by where it fell, TLS first (a thread's TLS lies inside its stack block) */
        const rt_thread_memory *m = &t->mem;
        s = &t->outside[a - m->tls_lo < m->tls_hi - m->tls_lo         ? 1
                        : a - m->stack_lo < m->stack_hi - m->stack_lo ? 0
                                                                      : 2];
    }
    if (RT_UNLIKELY(stream_on))
        stream_record(t, a, size, store, s->len ? s->start : 0);
    /* 3. counter of (current node, object) */
    if (RT_UNLIKELY(s->node != t->node)) {
        s->ctr = rt_cct_counter_get(&t->cct, t->node, s->seq);
        s->node = t->node;
    }
    rt_cct_counter *c = s->ctr;
    if (RT_UNLIKELY(!c))
        return;
    c->stores += (uint64_t)store;
    c->loads += (uint64_t)!store;
    c->misses += miss;
    /* the address trace holds accesses to tracked objects only (not the outside counters) */
    if (RT_UNLIKELY(trace_on) && s >= t->slots && s < t->slots + OBJ_SLOTS)
        trace_record(t, a, store, miss);
}

#define LOAD_STORE(n, type)                                                                        \
    NOINST void __sanitizer_cov_load##n(type *p)                                                   \
    {                                                                                              \
        on_access((uint64_t)(uintptr_t)p, n, 0);                                                   \
    }                                                                                              \
    NOINST void __sanitizer_cov_store##n(type *p)                                                  \
    {                                                                                              \
        on_access((uint64_t)(uintptr_t)p, n, 1);                                                   \
    }
LOAD_STORE(1, uint8_t)
LOAD_STORE(2, uint16_t)
LOAD_STORE(4, uint32_t)
LOAD_STORE(8, uint64_t)
LOAD_STORE(16, __int128)
#undef LOAD_STORE

NOINST void __cyg_profile_func_enter(void *fn, void *site)
{
    if (RT_LIKELY(!atomic_load_explicit(&tr_on, memory_order_relaxed)))
        return;
    tr_thread *t = tls_tr;
    if (RT_UNLIKELY(!t) && !(t = thread_state()))
        return;
    if (RT_UNLIKELY(t->busy))
        return;
    t->busy = 1;
    t->node =
        rt_cct_enter(&t->cct, (uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)site, rt_now_ns());
    t->busy = 0;
}

NOINST void __cyg_profile_func_exit(void *fn, void *site)
{
    if (RT_LIKELY(!atomic_load_explicit(&tr_on, memory_order_relaxed)))
        return;
    tr_thread *t = tls_tr;
    if (RT_UNLIKELY(!t) || RT_UNLIKELY(t->busy))
        return;
    t->busy = 1;
    t->node = rt_cct_exit(&t->cct, (uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)site, rt_now_ns());
    t->busy = 0;
}

/* ---- exit: CONTEXT, CCT_NODE and ACCESS_COUNT records ---------------------------------- */

/* Function contexts: (fn, site) -> id, open addressing over an mmap'd table. */
typedef struct fn_ctx {
    uint64_t fn, site;
    uint32_t id; /* 0 = empty */
    uint32_t reserved;
} fn_ctx;

typedef struct emitter {
    fn_ctx *tab;
    uint64_t cap, used;
    unsigned char *blk; /* one block: header + OT_BLOCK_TARGET_BYTES of payload */
    uint32_t bytes, count;
    uint16_t tag, record_size;
} emitter;

static void em_flush(emitter *e)
{
    uint32_t bytes = (e->bytes + 7) & ~7U; /* payloads are multiples of 8 */
    memset(e->blk + sizeof(ot_block_header) + e->bytes, 0, bytes - e->bytes);
    if (e->count)
        rt_write_block(&rt_w, e->blk, e->tag, e->record_size, bytes, e->count);
    e->bytes = e->count = 0;
}

/* Appends one record (record_size 0: u32 length prefix, then the body padded to 8, as the
 * readers expect within a block of several variable records). */
static void em_put(emitter *e, uint16_t tag, uint16_t record_size, const void *rec, uint32_t len)
{
    uint32_t need = record_size ? len : 4 + (len + 7) / 8 * 8;
    if (e->tag != tag || e->bytes + need + 8 > OT_BLOCK_TARGET_BYTES)
        em_flush(e);
    e->tag = tag;
    e->record_size = record_size;
    unsigned char *p = e->blk + sizeof(ot_block_header) + e->bytes;
    if (record_size)
        memcpy(p, rec, len);
    else {
        memset(p, 0, need);
        memcpy(p, &len, 4);
        memcpy(p + 4, rec, len);
    }
    e->bytes += need;
    e->count++;
}

static void frame_of(uint64_t ip, ot_frame *f)
{
    uint64_t base = 0;
    rt_context_lock();
    uint32_t module = rt_modules_map(&rt_w, ip, &base);
    rt_context_unlock();
    f->module = module;
    f->reserved = 0;
    f->offset = module ? ip - base : ip;
}

/* The function-context id of (fn, site), writing its CONTEXT record the first time. The
 * record's frames are (fn + 1, site): symbolizers look up offset - 1 of every frame (a
 * return address), which for frame 0 is then the function's first byte. */
static uint32_t fn_context(emitter *e, uint64_t fn, uint64_t site)
{
    if ((e->used + 1) * 2 > e->cap)
        return 0;
    uint64_t i = (fn * 0x9E3779B97F4A7C15ULL ^ site * 0xC2B2AE3D27D4EB4FULL) & (e->cap - 1);
    while (e->tab[i].id && (e->tab[i].fn != fn || e->tab[i].site != site))
        i = (i + 1) & (e->cap - 1);
    if (e->tab[i].id)
        return e->tab[i].id;
    e->tab[i] = (fn_ctx){fn, site, RT_FN_CTX_BASE + (uint32_t)++e->used, 0};
    struct {
        ot_context_record h;
        ot_frame f[2];
    } rec = {{e->tab[i].id, 2}, {{0}, {0}}};
    frame_of(fn + 1, &rec.f[0]); /* MODULE records go out here, before the CONTEXT block */
    frame_of(site, &rec.f[1]);
    em_put(e, OT_TAG_CONTEXT, 0, &rec, sizeof rec);
    return e->tab[i].id;
}

static void emit_all(void)
{
    emitter e = {0};
    uint64_t nodes = 0;
    for (tr_thread *t = atomic_load(&threads); t; t = t->next)
        nodes += t->cct.count;
    for (e.cap = 1024; e.cap < nodes * 2 + 2; e.cap *= 2)
        ;
    e.tab = rt_sys_mmap(e.cap * sizeof(fn_ctx));
    e.blk = rt_sys_mmap(sizeof(ot_block_header) + OT_BLOCK_TARGET_BYTES);
    uint32_t *fn_ids = rt_sys_mmap((nodes + 1) * sizeof(uint32_t));
    if (!e.tab || !e.blk || !fn_ids) {
        rt_log(1, "trace sampler: out of memory at exit; context tree not written");
        return;
    }
    uint64_t now = rt_now_ns();
    /* CONTEXT records of every node's function first, so node records can name them */
    uint64_t k = 0;
    for (tr_thread *t = atomic_load(&threads); t; t = t->next) {
        rt_cct_close_open(&t->cct, now);
        for (uint32_t i = 1; i < t->cct.count; i++)
            fn_ids[k++] = fn_context(&e, t->cct.nodes[i].fn, t->cct.nodes[i].site);
    }
    em_flush(&e);
    k = 0;
    for (tr_thread *t = atomic_load(&threads); t; t = t->next) {
        const rt_cct_node *n = t->cct.nodes;
        for (uint32_t i = 1; i < t->cct.count; i++) {
            ot_cct_node_record r = {.id = n[i].id,
                                    .parent = n[n[i].parent].id,
                                    .function = fn_ids[k++],
                                    .calls = n[i].calls,
                                    .inclusive_ns = n[i].incl_ns};
            em_put(&e, OT_TAG_CCT_NODE, sizeof r, &r, sizeof r);
        }
    }
    em_flush(&e);
    for (tr_thread *t = atomic_load(&threads); t; t = t->next) {
        for (uint64_t i = 0; i < t->cct.counters; i++) {
            const rt_cct_counter *c = rt_cct_counter_at(&t->cct, i);
            if (!c->loads && !c->stores)
                continue;
            ot_access_count_record r = {.alloc_seq = c->seq,
                                        .cct_node = t->cct.nodes[c->node].id,
                                        .loads = c->loads,
                                        .stores = c->stores,
                                        .llc_misses = c->misses};
            em_put(&e, OT_TAG_ACCESS_COUNT, sizeof r, &r, sizeof r);
        }
    }
    em_flush(&e);
    rt_sys_munmap(e.tab, e.cap * sizeof(fn_ctx));
    rt_sys_munmap(e.blk, sizeof(ot_block_header) + OT_BLOCK_TARGET_BYTES);
    rt_sys_munmap(fn_ids, (nodes + 1) * sizeof(uint32_t));
}

/* ---- ops ----------------------------------------------------------------------------- */

static int trace_init(const rt_config *cfg)
{
    uint64_t size;
    uint32_t ways, line;
    rt_llc_machine(&size, &ways, &line);
    llc_bytes = cfg->llc_bytes ? cfg->llc_bytes : size;
    llc_ways = cfg->llc_ways ? cfg->llc_ways : ways;
    llc_line = cfg->llc_line ? cfg->llc_line : line;
    rt_llc probe;
    int r = rt_llc_init(&probe, llc_bytes, llc_ways, llc_line);
    if (r != 0) {
        rt_log(1,
               "trace sampler: cache model of %llu bytes, %u ways, %u-byte lines is not "
               "usable (the line must be a power of two, ways 1..64); no access counts",
               (unsigned long long)llc_bytes, llc_ways, llc_line);
        return r;
    }
    rt_llc_destroy(&probe);
    rt_threadmem_init();
    if (pthread_key_create(&tr_key, thread_release) != 0)
        return -EAGAIN;
    atomic_store(&trace_left, (int64_t)cfg->trace_limit);
    trace_on = cfg->trace_limit > 0;
    atomic_store(&stream_left, (int64_t)cfg->trace_stream);
    stream_on = cfg->trace_stream > 0;
    stream_window = cfg->trace_stream_window;
    /* follow the registry from here on: objects allocated before start() are known */
    rt_track_set_observer(&idx_observer);
    atomic_store(&idx_on, 1);
    return 0;
}

static int trace_start(void)
{
    atomic_store(&tr_on, 1);
    return 0;
}

static void trace_stop(void)
{
    if (!atomic_exchange(&tr_on, 0))
        return;
    atomic_store(&idx_on, 0);
    for (tr_thread *t = atomic_load(&threads); t; t = t->next)
        if (!t->exited)
            stream_flush(t);
    emit_all();
}

static void trace_stats(ot_sampler_stats_record *out)
{
    memset(out, 0, sizeof *out);
    out->source = OT_SRC_TRACE;
    out->samples = atomic_load(&trace_written);
    out->lost = atomic_load(&trace_lost);
    for (tr_thread *t = atomic_load(&threads); t; t = t->next)
        out->lost += t->cct.dropped;
}

static void trace_fork_prepare(void)
{
    pthread_rwlock_wrlock(&idx_lock);
}

static void trace_fork_parent(void)
{
    pthread_rwlock_unlock(&idx_lock);
}

static void trace_fork_child(int restart)
{
    pthread_rwlock_init(&idx_lock, NULL);
    /* the parent's counts stay in the parent's trace; the child counts nothing */
    atomic_store(&tr_on, 0);
    atomic_store(&idx_on, 0);
    stream_on = 0;
    if (restart)
        rt_log(0, "trace sampler: forked children are not traced");
}

const rt_sampler_ops rt_sampler_trace_ops = {
    .name = "trace",
    .source = OT_SRC_TRACE,
    .init = trace_init,
    .start = trace_start,
    .stop = trace_stop,
    .stats = trace_stats,
    .fork_prepare = trace_fork_prepare,
    .fork_parent = trace_fork_parent,
    .fork_child = trace_fork_child,
};
