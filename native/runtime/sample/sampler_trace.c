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
 * The ordered access stream (OBJTIER_TRACE_STREAM) is trace_stream.c's, the records written
 * at exit are trace_emit.c's; trace_internal.h is what the three share.
 *
 * The object index is the registry's and the map list's observer (rt_track_set_observer,
 * registry.h), so it sees exactly the objects the runtime records, with their ALLOC seq,
 * without a hook in the interposers.
 *
 * Invariants
 *   - idx (tr_obj elements) is sorted by start and non-overlapping; idx_gen changes (under the
 *     write lock) whenever idx changes. A thread's caches are valid only while its gen
 *     equals idx_gen; it drops them when it sees a new value.
 *   - Thread states are never freed while the process records (their trees are written at
 *     exit); a finished thread's cache model is released by its key destructor.
 */
#define _GNU_SOURCE
#include "trace_internal.h"
#include "maps.h"
#include "range_array.h"
#include "registry.h"
#include "writer.h"
#include "sampler.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#define NEG_SHIFT 12 /* 4 KiB pages for the negative cache (any page size is correct) */

typedef struct tr_obj {
    uint64_t start, end; /* [start, end) */
    uint64_t seq;        /* ot_alloc_record.seq */
} tr_obj;

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
static int stream_on; /* OBJTIER_TRACE_STREAM > 0: the hot path calls tr_stream_record */

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

static NOINST void thread_release(void *arg)
{
    tr_thread *t = arg;
    if (t && t == tls_tr) {
        tr_stream_flush(t);
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
                tr_stream_record(t, a, size, store, 0);
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
        tr_stream_record(t, a, size, store, s->len ? s->start : 0);
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
    tr_stream_init(cfg->trace_stream, cfg->trace_stream_window);
    stream_on = cfg->trace_stream > 0;
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
            tr_stream_flush(t);
    tr_emit_all(atomic_load(&threads));
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
