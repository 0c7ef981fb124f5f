/*
 * Plan enforcement; see placement.h.
 *
 * Granularity: an object's plan acts on its inner pages [lo, hi) — the whole pages inside
 * [addr, addr + size), so that no action touches a page shared with another heap block. A
 * split at fast_bytes f puts [lo, split) fast with split = round_down(addr + f) clamped to
 * [lo, hi) (split = hi when f >= size); [split, hi) is the planned-slow part. A "pages" entry
 * (plan.h) puts its ranges fast, each clipped to [lo, hi), and has split = lo; its planned-slow
 * part is the gaps between its ranges (slow_run). Advice must skip the ranges: madvise
 * MADV_COLD/MADV_PAGEOUT fails with EINVAL on a range that holds an mlocked VMA.
 *
 * Invariants (all under `lock`)
 *   - objs is an open-addressing table of planned objects keyed by addr (0 empty, 1 deleted),
 *     load (live + deleted) below 1/2. An object is in it from its allocation until its
 *     release; only objects matching an entry of some phase are kept.
 *   - Swap tier: [lo, locked_end) of each object is mlocked by us, and so are the first
 *     locked_n ranges of plan entry locked_entry (RT_PLAN_NONE: none), clipped; locked_total
 *     is the sum of all those lengths [bytes]; locked_total <= lock_limit.
 *   - NUMA tier: bound_split is the split last applied with mbind (NOT_APPLIED before).
 *   - Every action leaves one PLACEMENT record (offset/length relative to the object).
 */
#define _GNU_SOURCE
#include "placement.h"
#include "memcg.h"
#include "plan.h"
#include "plankey.h"
#include "rt.h"
#include "runtime.h"
#include "swapahead.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define EMPTY           0
#define DELETED         1
#define NOT_APPLIED     UINT64_MAX
#define MIN_MARGIN      (32ull << 20) /* mlock margin without OBJTIER_MLOCK_LIMIT: max(10%, 32 MiB) */
#define MIN_UNLOCKED    (4ull << 20) /* with OBJTIER_MLOCK_LIMIT: at least this stays unlocked */
#define BATCH           1024         /* PLACEMENT records per block */
#define MIN_HEADROOM    (4ull << 20) /* pressure: usage within max(limit / 32, 4 MiB) of the limit */
#define RECORD_EVERY_NS 1000000000ull /* pressure passes leave records at most once a second */
#define MIN_ROOM        (8ull << 20)  /* evictable room the guard keeps in the cgroup, at least */
#define ROOM_PER_THREAD (2ull << 20)  /* and per thread of the program (a THP charge each) */

typedef struct pobj {
    uint64_t addr, size, seq; /* as rt_obj; addr 0/1 = empty/deleted slot */
    uint64_t key, occurrence; /* stable context key; 0-based count among the key's objects */
    uint64_t lo, hi;          /* inner pages, page-aligned addresses */
    uint64_t split;           /* planned split for the phase in force (lo..hi) */
    uint64_t locked_end;      /* swap: [lo, locked_end) mlocked by us */
    uint64_t pages;           /* "pages" entry in force, or RT_PLAN_NONE */
    uint64_t locked_entry;    /* swap: "pages" entry whose ranges we locked, or RT_PLAN_NONE */
    uint64_t locked_n;        /* swap: how many of its ranges (a prefix of the list) */
    uint64_t bound_split;     /* numa: split applied by mbind, or NOT_APPLIED */
    uint32_t planned;         /* an entry of the phase in force (or of "*") matches */
    uint32_t is_map;          /* a mapping (released by rt_place_unmap) */
} pobj;

typedef struct {
    uint64_t key, count;
} occ_slot; /* count 0 = empty */

_Atomic int rt_place_on;
_Atomic uint64_t rt_place_generation;
static rt_plan plan;
static int tier; /* enum rt_tier_kind */
static int pageout;
static uint32_t advise_ms, pressure_ms, inactive_pct, residency_ms;
static uint64_t readahead_bytes; /* swap tier: OBJTIER_READAHEAD_KB, bytes; 0 = none */
static int large_folios;         /* swap tier: OBJTIER_LARGE_FOLIOS: honour `folio` records */
static rt_memcg memcg;           /* swap tier: the cgroup whose limit makes the fast tier */
static int residency_on;
static int numa_strict;
static uint64_t fast_mask, slow_mask;    /* NUMA node bit masks (nodes < 64) */
static uint64_t lock_limit = UINT64_MAX; /* bytes we may mlock in all */
static uint64_t locked_total;
static uint32_t phase_now; /* index of the phase whose entries are in force */
static uint64_t matched;   /* objects that matched an entry at allocation */
static int warned_limit;
static uint64_t pressure_passes; /* advice passes made because the cgroup was at its limit */
static uint64_t pressure_bytes;  /* bytes those passes advised */
static uint64_t relieved_bytes;  /* bytes of our locks given up to keep reclaim room */
static int follow_forks;         /* OBJTIER_FOLLOW_FORKS */
static rt_plan_self who;         /* this process, for the plan's sections */
enum { SECTION_ALL = -1, SECTION_NONE = -2, SECTION_NO_PLAN = -3 };
static int section_note = SECTION_NO_PLAN; /* the section in force: index or one of those */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pobj *objs;
static uint64_t objs_cap, objs_used, objs_live, maps_live;
static occ_slot *occ;
static uint64_t occ_cap, occ_used;
static unsigned char batch[sizeof(ot_block_header) + BATCH * sizeof(ot_placement_record)];
static uint32_t batch_n;

static pthread_t thread;
static int thread_started;
static pthread_mutex_t tlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tcond;
static int tstop;

/* ---- records ------------------------------------------------------------------- */

static void flush_records(void)
{
    if (batch_n && rt_active())
        rt_write_block(&rt_w, batch, OT_TAG_PLACEMENT, sizeof(ot_placement_record),
                       batch_n * (uint32_t)sizeof(ot_placement_record), batch_n);
    batch_n = 0;
}

static void record(const pobj *o, uint64_t start, uint64_t end, uint16_t action, int result,
                   uint64_t nodemask)
{
    ot_placement_record r = {.time_ns = rt_now_ns(),
                             .alloc_seq = o->seq,
                             .offset = start - o->addr,
                             .length = end - start,
                             .action = action,
                             .result = result,
                             .nodemask = nodemask};
    memcpy(batch + sizeof(ot_block_header) + batch_n * sizeof r, &r, sizeof r);
    if (++batch_n == BATCH)
        flush_records();
}

static int sys_result(long r)
{
    return r == 0 ? 0 : -errno;
}

/* ---- settings -------------------------------------------------------------------- */

/* "0", "0-1,3" -> bit mask; -1 when malformed or a node >= 64. */
static int parse_nodes(const char *s, uint64_t *mask)
{
    uint64_t m = 0;
    if (!*s)
        return -1;
    while (*s) {
        unsigned a = 0, b;
        if (*s < '0' || *s > '9')
            return -1;
        for (; *s >= '0' && *s <= '9'; s++)
            if ((a = a * 10 + (unsigned)(*s - '0')) >= 64)
                return -1;
        b = a;
        if (*s == '-') {
            s++;
            if (*s < '0' || *s > '9')
                return -1;
            for (b = 0; *s >= '0' && *s <= '9'; s++)
                if ((b = b * 10 + (unsigned)(*s - '0')) >= 64)
                    return -1;
        }
        if (b < a)
            return -1;
        for (unsigned n = a; n <= b; n++)
            m |= 1ull << n;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    *mask = m;
    return 0;
}

size_t rt_place_process_notes(char *out, size_t cap)
{
    size_t n = 0;
    int w = 0;
    if (who.rank != RT_PLAN_NO_RANK)
        w = snprintf(out, cap, "OBJTIER_RANK=%llu\n", (unsigned long long)who.rank);
    n = w > 0 && (size_t)w < cap ? (size_t)w : 0;
    if (section_note == SECTION_NO_PLAN)
        return n;
    if (section_note >= 0)
        w = snprintf(out + n, cap - n, "OBJTIER_PLAN_SECTION=%d\n", section_note);
    else
        w = snprintf(out + n, cap - n, "OBJTIER_PLAN_SECTION=%s\n",
                     section_note == SECTION_ALL ? "all" : "none");
    return w > 0 && (size_t)w < cap - n ? n + (size_t)w : n;
}

int rt_place_init(const rt_config *cfg, int tracing)
{
    rt_plan_self_read(&who);
    rt_plan_set_self(&who);
    section_note = SECTION_NO_PLAN;
    tier = cfg->tier;
    residency_on = tracing && tier == RT_TIER_NUMA;
    residency_ms = cfg->residency_ms;
    if (residency_on && rt_residency_init() != 0)
        residency_on = 0;
    if (!cfg->plan[0])
        return 0;
    char err[400];
    section_note = SECTION_NONE;
    if (rt_plan_load(&plan, cfg->plan, err, sizeof err) != 0) {
        rt_log(1, "%s; running without a plan", err);
        return 0;
    }
    if (plan.n_programs && plan.program_mine == RT_PLAN_NONE) {
        /* a multi-program plan with no section for this program (a launcher, a shell) */
        rt_log(0, "plan %s: no section for %s (build id %s); nothing to place", cfg->plan,
               who.exe_base, who.build_id[0] ? who.build_id : "none");
        rt_plan_free(&plan);
        return 0;
    }
    section_note = plan.n_programs ? (int)plan.program_mine : SECTION_ALL;
    if (tier == RT_TIER_NUMA && (parse_nodes(cfg->fast_nodes, &fast_mask) != 0 ||
                                 parse_nodes(cfg->slow_nodes, &slow_mask) != 0)) {
        rt_log(1, "OBJTIER_TIER=numa needs OBJTIER_FAST_NODES and OBJTIER_SLOW_NODES as node "
                  "lists such as 0 or 0-1,3 (nodes below 64); running without a plan");
        rt_plan_free(&plan);
        return 0;
    }
    pageout = cfg->pageout;
    follow_forks = cfg->follow_forks;
    advise_ms = cfg->advise_ms;
    pressure_ms = cfg->pressure_ms;
    readahead_bytes = (uint64_t)cfg->readahead_kb << 10;
    large_folios = cfg->large_folios;
    inactive_pct = cfg->inactive_pct;
    numa_strict = cfg->numa_strict;
    if (tier == RT_TIER_SWAP) {
        rt_memcg_open(&memcg);
        uint64_t cg = memcg.limit;
        if (cfg->mlock_limit)
            lock_limit = cfg->mlock_limit;
        if (cg != UINT64_MAX) {
            /* an explicit limit was chosen with its own margin (objtier run/compare
             * --mlock-margin); without one, keep max(10%, 32 MiB) of the cgroup unlocked */
            uint64_t margin =
                cfg->mlock_limit ? MIN_UNLOCKED : (cg / 10 > MIN_MARGIN ? cg / 10 : MIN_MARGIN);
            uint64_t room = cg > margin ? cg - margin : 0;
            lock_limit = room < lock_limit ? room : lock_limit;
        }
    }
    objs_cap = 1024;
    occ_cap = 1024;
    objs = rt_sys_mmap(objs_cap * sizeof *objs);
    occ = rt_sys_mmap(occ_cap * sizeof *occ);
    if (!objs || !occ) {
        rt_log(1, "out of memory loading the plan; running without a plan");
        rt_plan_free(&plan);
        return 0;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&tcond, &ca);
    phase_now = 0;
    rt_log(0, "plan %s: %llu entries, %u phases, tier %s", cfg->plan,
           (unsigned long long)plan.n_entries, plan.n_phases, tier ? "numa" : "swap");
    atomic_store(&rt_place_on, 1);
    return 1;
}

/* ---- tables ---------------------------------------------------------------------- */

static uint64_t mix(uint64_t a)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdULL;
    a ^= a >> 33;
    return a;
}

static pobj *find_obj(uint64_t addr, int for_insert)
{
    uint64_t mask = objs_cap - 1, i = mix(addr >> 4) & mask;
    pobj *tomb = NULL;
    for (;;) {
        pobj *o = &objs[i];
        if (o->addr == addr)
            return o;
        if (o->addr == EMPTY)
            return for_insert ? (tomb ? tomb : o) : NULL;
        if (o->addr == DELETED && !tomb)
            tomb = o;
        i = (i + 1) & mask;
    }
}

static int grow_objs(void)
{
    uint64_t cap = objs_live * 4 < objs_cap ? objs_cap : objs_cap * 2;
    pobj *old = objs, *n = rt_sys_mmap(cap * sizeof *n);
    if (!n)
        return -1;
    uint64_t old_cap = objs_cap;
    objs = n;
    objs_cap = cap;
    objs_used = 0;
    for (uint64_t i = 0; i < old_cap; i++)
        if (old[i].addr > DELETED) {
            *find_obj(old[i].addr, 1) = old[i];
            objs_used++;
        }
    rt_sys_munmap(old, old_cap * sizeof *old);
    return 0;
}

/* Occurrence of key: how many tracked objects of this key came before (0-based). */
static uint64_t next_occurrence(uint64_t key)
{
    if ((occ_used + 1) * 2 > occ_cap) {
        uint64_t cap = occ_cap * 2;
        occ_slot *n = rt_sys_mmap(cap * sizeof *n);
        if (!n)
            return RT_PLAN_ANY;
        for (uint64_t i = 0; i < occ_cap; i++) {
            if (!occ[i].count)
                continue;
            uint64_t j = mix(occ[i].key) & (cap - 1);
            while (n[j].count)
                j = (j + 1) & (cap - 1);
            n[j] = occ[i];
        }
        rt_sys_munmap(occ, occ_cap * sizeof *occ);
        occ = n;
        occ_cap = cap;
    }
    uint64_t j = mix(key) & (occ_cap - 1);
    while (occ[j].count && occ[j].key != key)
        j = (j + 1) & (occ_cap - 1);
    if (!occ[j].count) {
        occ[j].key = key;
        occ_used++;
    }
    return occ[j].count++;
}

/* ---- applying a plan ------------------------------------------------------------- */

/* Sets o->split and o->planned for the phase in force (its entries, else the root's). */
static void plan_for_phase(pobj *o)
{
    uint32_t ph = plan.phases[phase_now].target;
    uint64_t e = rt_plan_match(&plan, o->key, o->occurrence, o->size, ph);
    if (e == RT_PLAN_NONE && ph != 0)
        e = rt_plan_match(&plan, o->key, o->occurrence, o->size, 0);
    o->planned = e != RT_PLAN_NONE;
    o->pages = RT_PLAN_NONE;
    if (!o->planned) {
        o->split = o->lo;
        return;
    }
    if (plan.entries[e].tier == RT_PLAN_PAGES) {
        o->pages = e;
        o->split = o->lo;
        return;
    }
    uint64_t f = plan.entries[e].fast_bytes, pg = rt_page_bytes;
    if (f >= o->size)
        o->split = o->hi;
    else {
        uint64_t s = (o->addr + f) & ~(pg - 1);
        o->split = s < o->lo ? o->lo : (s > o->hi ? o->hi : s);
    }
}

/* Range i of "pages" entry e on o, clipped to its whole pages: [*start, *end); 0 when the
 * range lies beyond the object (a smaller object than profiled, or other alignment). */
static int pages_range(const pobj *o, uint64_t e, uint64_t i, uint64_t *start, uint64_t *end)
{
    const rt_plan_range *r = &plan.ranges[plan.entries[e].range0 + i];
    uint64_t span = o->hi - o->lo;
    if (r->off >= span)
        return 0;
    *start = o->lo + r->off;
    *end = r->len > span - r->off ? o->hi : *start + r->len;
    return 1;
}

/* The planned-slow run of o that starts at or after address `at`: [*start, *end), page
 * aligned; 0 when none is left. For a split object [max(at, split), hi); for a "pages" object
 * the first gap between its ranges (locked or not) at or after `at`. */
static int slow_run(const pobj *o, uint64_t at, uint64_t *start, uint64_t *end)
{
    if (!o->planned || at >= o->hi)
        return 0;
    if (at < o->lo)
        at = o->lo;
    if (o->pages == RT_PLAN_NONE) {
        *start = at > o->split ? at : o->split;
        *end = o->hi;
        return *start < o->hi;
    }
    const rt_plan_entry *e = &plan.entries[o->pages];
    const rt_plan_range *r = &plan.ranges[e->range0];
    uint64_t off = at - o->lo, lo = 0, hi = e->n_ranges;
    while (lo < hi) { /* first range ending after off */
        uint64_t mid = lo + (hi - lo) / 2;
        if (r[mid].off + r[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint64_t i = lo; i < e->n_ranges && off < o->hi - o->lo; i++) {
        if (r[i].off > off) {
            *start = o->lo + off;
            *end = r[i].off < o->hi - o->lo ? o->lo + r[i].off : o->hi;
            return 1;
        }
        off = r[i].off + r[i].len; /* inside range i: skip it */
    }
    if (off >= o->hi - o->lo)
        return 0;
    *start = o->lo + off;
    *end = o->hi;
    return 1;
}

/* The locks of o no longer match the plan in force (they must go before new ones come). */
static int swap_stale(const pobj *o)
{
    uint64_t want = o->planned ? o->split : o->lo;
    return o->locked_end != want ||
           (o->locked_entry != RT_PLAN_NONE && o->locked_entry != o->pages);
}

static void swap_unlock(pobj *o)
{
    for (uint64_t i = 0; o->locked_entry != RT_PLAN_NONE && i < o->locked_n; i++) {
        uint64_t a, b;
        if (!pages_range(o, o->locked_entry, i, &a, &b))
            continue;
        long r = syscall(SYS_munlock, (void *)(uintptr_t)a, b - a);
        record(o, a, b, OT_PLACE_MUNLOCK, sys_result(r), 0);
        locked_total -= b - a;
    }
    o->locked_entry = RT_PLAN_NONE;
    o->locked_n = 0;
    if (o->locked_end <= o->lo)
        return;
    long r = syscall(SYS_munlock, (void *)(uintptr_t)o->lo, o->locked_end - o->lo);
    record(o, o->lo, o->locked_end, OT_PLACE_MUNLOCK, sys_result(r), 0);
    locked_total -= o->locked_end - o->lo;
    o->locked_end = o->lo;
}

static void warn_limit(void)
{
    if (!warned_limit) {
        warned_limit = 1;
        rt_log(1,
               "the plan asks to mlock more than the limit of %llu MiB "
               "(OBJTIER_MLOCK_LIMIT, memory cgroup limit minus margin); locking less",
               (unsigned long long)(lock_limit >> 20));
    }
}

/* Set while a phase change locks the new phase's fast set (under `lock`). */
static int locking_at_phase_change;

/* mlock [a, a + len). At a phase change with MLOCK_ONFAULT: the pages of the new fast set
 * that are swapped out are locked when the program next touches them instead of all swapped
 * in by the change itself — a burst that made Kronecker BFS with one plan per phase 14 %
 * slower than with one plan for the run (docs/benchmarks.md). Pages already present are
 * locked at once either way. At allocation, plain mlock (the pages are populated: the measured
 * behaviour of every whole-run plan). Falls back to mlock where mlock2 is missing (< 4.4). */
static long lock_range(uint64_t a, uint64_t len)
{
#ifdef SYS_mlock2
    if (locking_at_phase_change) {
        long r = syscall(SYS_mlock2, (void *)(uintptr_t)a, len, MLOCK_ONFAULT);
        if (r == 0 || (errno != ENOSYS && errno != EINVAL))
            return r;
    }
#endif
    return syscall(SYS_mlock, (void *)(uintptr_t)a, len);
}

/* mlock the ranges of o's "pages" entry not yet locked, in order, while they fit whole. */
static void swap_lock_pages(pobj *o)
{
    if (o->locked_entry != RT_PLAN_NONE && o->locked_entry != o->pages)
        return; /* the caller unlocks stale ranges first */
    o->locked_entry = o->pages;
    const rt_plan_entry *e = &plan.entries[o->pages];
    for (uint64_t i = o->locked_n; i < e->n_ranges; i++) {
        uint64_t a, b;
        if (!pages_range(o, o->pages, i, &a, &b)) {
            o->locked_n = i + 1;
            continue;
        }
        if (b - a > (lock_limit > locked_total ? lock_limit - locked_total : 0)) {
            warn_limit();
            return;
        }
        long r = lock_range(a, b - a);
        int res = sys_result(r);
        record(o, a, b, OT_PLACE_MLOCK, res, 0);
        if (res != 0)
            return;
        locked_total += b - a;
        o->locked_n = i + 1;
    }
}

static void swap_lock(pobj *o)
{
    if (o->planned && o->pages != RT_PLAN_NONE) {
        swap_lock_pages(o);
        return;
    }
    uint64_t want = o->planned ? o->split : o->lo;
    if (want <= o->lo || o->locked_end == want)
        return;
    uint64_t room = lock_limit > locked_total ? lock_limit - locked_total : 0;
    if (want - o->lo > room) {
        warn_limit();
        want = o->lo + (room & ~(uint64_t)(rt_page_bytes - 1));
        if (want <= o->lo)
            return;
    }
    long r = lock_range(o->lo, want - o->lo);
    int res = sys_result(r);
    record(o, o->lo, want, OT_PLACE_MLOCK, res, 0);
    if (res == 0) {
        o->locked_end = want;
        locked_total += want - o->lo;
    }
}

static long sys_mbind(uint64_t start, uint64_t len, int mode, uint64_t mask, unsigned flags)
{
    unsigned long m[1] = {(unsigned long)mask};
    return syscall(SYS_mbind, (void *)(uintptr_t)start, len, mode, mask ? m : NULL, mask ? 65 : 0,
                   flags);
}

/* mbind [start, end) to the fast nodes (preferred unless OBJTIER_NUMA_STRICT). */
static void numa_bind_fast(pobj *o, uint64_t start, uint64_t end)
{
    int mode = MPOL_BIND;
    uint64_t mask = fast_mask;
    if (!numa_strict)
        mode = (mask & (mask - 1)) ? MPOL_PREFERRED_MANY : MPOL_PREFERRED;
    long r = sys_mbind(start, end - start, mode, mask, MPOL_MF_MOVE);
    if (r != 0 && mode == MPOL_PREFERRED_MANY) /* kernels before 5.15 */
        r = sys_mbind(start, end - start, MPOL_PREFERRED, mask & -mask, MPOL_MF_MOVE);
    record(o, start, end, OT_PLACE_MBIND, sys_result(r), mask);
}

static void numa_bind_slow(pobj *o, uint64_t start, uint64_t end)
{
    long r = sys_mbind(start, end - start, MPOL_BIND, slow_mask, MPOL_MF_MOVE);
    record(o, start, end, OT_PLACE_MBIND, sys_result(r), slow_mask);
}

/* A "pages" entry on the NUMA tier: its ranges fast, the gaps between them slow. bound_split
 * cannot tell one pages entry from another, so a phase change always rebinds. */
static void numa_bind_pages(pobj *o)
{
    uint64_t at = o->lo, a, b;
    for (uint64_t i = 0; i < plan.entries[o->pages].n_ranges; i++) {
        if (!pages_range(o, o->pages, i, &a, &b))
            break;
        if (a > at)
            numa_bind_slow(o, at, a);
        numa_bind_fast(o, a, b);
        at = b;
    }
    if (at < o->hi)
        numa_bind_slow(o, at, o->hi);
    o->bound_split = NOT_APPLIED;
}

static void numa_bind(pobj *o)
{
    if (o->planned && o->pages != RT_PLAN_NONE) {
        numa_bind_pages(o);
        return;
    }
    if (!o->planned || o->bound_split == o->split)
        return;
    /* MPOL_MF_MOVE: pages already touched (reused heap memory, realloc, a phase change)
     * migrate; untouched ones are placed at first touch. */
    if (o->split > o->lo)
        numa_bind_fast(o, o->lo, o->split);
    if (o->split < o->hi)
        numa_bind_slow(o, o->split, o->hi);
    o->bound_split = o->split;
}

static void changed(void)
{
    atomic_fetch_add_explicit(&rt_place_generation, 1, memory_order_release);
}

static void forget(pobj *o)
{
    if (tier == RT_TIER_SWAP)
        swap_unlock(o);
    if (o->is_map)
        maps_live--;
    o->addr = DELETED;
    objs_live--;
    changed();
}

/* ---- hooks ----------------------------------------------------------------------- */

/* MADV_HUGEPAGE on every planned-slow run of o, at allocation: after the fast part is locked
 * (populated with base pages) and before the program touches the rest, so the slow runs are
 * faulted in, swapped out and swapped back in as folios of the large sizes the machine
 * enables for madvised memory (transparent_hugepage/hugepages-<size>kB/enabled). Pages that
 * only a later phase's plan leaves slow keep base pages. One HUGEPAGE record per run. */
static void advise_large_folios(pobj *o)
{
    uint64_t s, e;
    for (uint64_t at = o->lo; slow_run(o, at, &s, &e); at = e)
        record(o, s, e, OT_PLACE_HUGEPAGE,
               sys_result(syscall(SYS_madvise, (void *)(uintptr_t)s, e - s, MADV_HUGEPAGE)), 0);
}

void rt_place_on_alloc(const rt_obj *ob, uint32_t ctx)
{
    if (!atomic_load_explicit(&rt_place_on, memory_order_acquire) || ctx == 0)
        return;
    pthread_mutex_lock(&lock);
    uint64_t key = rt_plankey_of(ctx);
    if (!rt_plan_has_key(&plan, key)) {
        next_occurrence(key);
        pthread_mutex_unlock(&lock);
        return;
    }
    pobj o = {.addr = ob->addr,
              .size = ob->size,
              .seq = ob->seq,
              .key = key,
              .occurrence = next_occurrence(key),
              .bound_split = NOT_APPLIED,
              .pages = RT_PLAN_NONE,
              .locked_entry = RT_PLAN_NONE,
              .is_map = ob->kind == OT_ALLOC_MMAP || ob->kind == OT_ALLOC_MREMAP};
    uint64_t pg = rt_page_bytes;
    o.lo = (o.addr + pg - 1) & ~(pg - 1);
    o.hi = (o.addr + o.size) & ~(pg - 1);
    if (o.hi < o.lo)
        o.hi = o.lo;
    o.locked_end = o.lo;
    int any = 0;
    for (uint32_t ph = 0; ph < plan.n_phases && !any; ph++)
        any = rt_plan_match(&plan, key, o.occurrence, o.size, ph) != RT_PLAN_NONE;
    if (!any || o.hi == o.lo || ((objs_used + 1) * 2 > objs_cap && grow_objs() != 0)) {
        matched += any;
        pthread_mutex_unlock(&lock);
        return;
    }
    matched++;
    pobj *d = find_obj(o.addr, 1);
    if (d->addr == EMPTY)
        objs_used++;
    if (d->addr > DELETED) /* a stale entry at this address: its memory was reused */
        forget(d);
    *d = o;
    objs_live++;
    maps_live += o.is_map;
    plan_for_phase(d);
    if (tier == RT_TIER_SWAP) {
        swap_lock(d);
        if (large_folios && rt_plan_large_folio(&plan, key, d->occurrence, d->size))
            advise_large_folios(d);
    } else
        numa_bind(d);
    changed();
    flush_records();
    pthread_mutex_unlock(&lock);
}

void rt_place_release(uint64_t addr)
{
    if (!atomic_load_explicit(&rt_place_on, memory_order_acquire))
        return;
    pthread_mutex_lock(&lock);
    pobj *o = objs_live ? find_obj(addr, 0) : NULL;
    if (o) {
        forget(o);
        flush_records();
    }
    pthread_mutex_unlock(&lock);
}

void rt_place_unmap(uint64_t addr, uint64_t len)
{
    if (!atomic_load_explicit(&rt_place_on, memory_order_acquire))
        return;
    pthread_mutex_lock(&lock);
    for (uint64_t i = 0; maps_live && i < objs_cap; i++) {
        pobj *o = &objs[i];
        if (o->addr > DELETED && o->is_map && o->addr < addr + len && addr < o->addr + o->size)
            forget(o);
    }
    flush_records();
    pthread_mutex_unlock(&lock);
}

static uint64_t advise_runs(const pobj *o, uint64_t *at, uint64_t bytes, int advice,
                            uint16_t action, int keep_records);

void rt_place_phase(const char *name, size_t len)
{
    if (!atomic_load_explicit(&rt_place_on, memory_order_acquire))
        return;
    uint32_t ph = name ? rt_plan_phase_index(&plan, name, len) : 0;
    if (ph == RT_PLAN_NONE)
        ph = 0; /* a phase the plan does not know: the whole-program entries apply */
    pthread_mutex_lock(&lock);
    if (plan.phases[ph].target != plan.phases[phase_now].target) {
        phase_now = ph;
        changed();
        /* unlock what is no longer fast first, so that the new fast set has the room; and
         * advise the unlocked pages cold, so that they are the first that reclaim takes when
         * the faults of the mlock that follows charge the cgroup. Without the advice a phase
         * change that swapped one locked 26 MiB array for another under a 40 MiB cgroup v1
         * limit ended in the cgroup's OOM killer in 2 of 2 runs (kernel 6.18; with it, 0 of
         * 6) — presumably reclaim found the just-unlocked pages still active and too few
         * inactive ones (see the pressure guard below). */
        for (int step = 0; step < 2; step++)
            for (uint64_t i = 0; i < objs_cap; i++) {
                pobj *o = &objs[i];
                if (o->addr <= DELETED)
                    continue;
                if (step == 0)
                    plan_for_phase(o);
                if (tier == RT_TIER_NUMA) {
                    if (step == 0)
                        numa_bind(o);
                } else if (step == 0 && swap_stale(o)) {
                    swap_unlock(o);
                    for (uint64_t at = 0;
                         advise_runs(o, &at, UINT64_MAX, MADV_COLD, OT_PLACE_COLD, 1);)
                        ;
                } else if (step == 1) {
                    locking_at_phase_change = 1;
                    swap_lock(o);
                    locking_at_phase_change = 0;
                }
            }
        flush_records();
    } else
        phase_now = ph;
    pthread_mutex_unlock(&lock);
}

static int by_lo(const void *a, const void *b)
{
    const rt_extent *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

size_t rt_place_slow_objects(rt_extent *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (uint64_t i = 0; i < objs_cap && n < cap; i++) {
        const pobj *o = &objs[i];
        if (o->addr > DELETED && o->planned && o->hi > o->lo &&
            (o->pages != RT_PLAN_NONE || o->split < o->hi))
            out[n++] = (rt_extent){o->lo / rt_page_bytes, o->hi / rt_page_bytes};
    }
    pthread_mutex_unlock(&lock);
    qsort(out, n, sizeof *out, by_lo);
    return n;
}

/* ---- advice on the planned-slow runs ------------------------------------------------ */

#define ADVISE_VEC 256 /* slow runs per process_madvise call */

/* A pidfd of this process for process_madvise (-1: not opened yet or unusable), and the pid
 * it was opened for (a forked child opens its own). Background thread only. */
static int self_pidfd = -1, vec_unusable;
static pid_t self_pidfd_pid;

static int pidfd_self(void)
{
    pid_t pid = getpid();
    if (self_pidfd >= 0 && self_pidfd_pid == pid)
        return self_pidfd;
    /* A parent's pidfd inherited across fork is left open, not closed: the program may have
     * closed it and reused the number. pidfd_open sets O_CLOEXEC, so exec drops it. */
    self_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    self_pidfd_pid = pid;
    if (self_pidfd < 0)
        vec_unusable = 1;
    return self_pidfd;
}

/* `advice` on the next planned-slow runs of o from address *at on: up to ADVISE_VEC runs and
 * about `bytes` (whole pages; UINT64_MAX: no bound) in one process_madvise call. A "pages"
 * object's slow part is the many gaps between its locked ranges, and one madvise per gap
 * costs a system call each (BFS at scale 20 made 443k calls in 24 s). Falls back to one
 * madvise per run where process_madvise is missing (Linux < 5.10) or refused. Leaves one
 * record per run when keep_records, and for every run that failed; *at becomes the end of
 * the last run taken. Returns the bytes taken (0: no slow run left). Called with `lock`
 * held. */
static uint64_t advise_runs(const pobj *o, uint64_t *at, uint64_t bytes, int advice,
                            uint16_t action, int keep_records)
{
    struct iovec iov[ADVISE_VEC];
    uint64_t done = 0, pg = rt_page_bytes, s, e;
    size_t n = 0;
    while (n < ADVISE_VEC && done < bytes && slow_run(o, *at, &s, &e)) {
        uint64_t want = bytes == UINT64_MAX ? e - s : (bytes - done + pg - 1) & ~(pg - 1);
        if (e - s > want)
            e = s + want;
        iov[n].iov_base = (void *)(uintptr_t)s;
        iov[n].iov_len = e - s;
        done += e - s;
        *at = e;
        n++;
    }
    if (n > 0) {
        int fd = vec_unusable ? -1 : pidfd_self();
        long r = fd < 0 ? -1 : syscall(SYS_process_madvise, fd, iov, n, advice, 0u);
        int one_by_one = fd < 0;
        if (fd >= 0 && r < 0 && (errno == ENOSYS || errno == EPERM || errno == EINVAL))
            vec_unusable = one_by_one = 1;
        else if (fd >= 0 && r < 0 && errno == EBADF) /* the program closed our pidfd */
            self_pidfd = -1, one_by_one = 1;
        if (one_by_one) {
            for (size_t i = 0; i < n; i++) {
                int ri = sys_result(syscall(SYS_madvise, iov[i].iov_base, iov[i].iov_len, advice));
                uintptr_t b = (uintptr_t)iov[i].iov_base;
                if (keep_records || ri != 0)
                    record(o, b, b + iov[i].iov_len, action, ri, 0);
            }
        } else {
            /* the call advises its runs in order and stops at the first it cannot: the runs
             * within the r bytes it returns were advised, the rest failed (errno when r < 0,
             * else unknown: -EAGAIN) */
            int failed = r < 0 ? -errno : -EAGAIN;
            uint64_t advised = r < 0 ? 0 : (uint64_t)r, upto = 0;
            for (size_t i = 0; i < n; i++) {
                uintptr_t b = (uintptr_t)iov[i].iov_base;
                upto += iov[i].iov_len;
                int ri = upto <= advised ? 0 : failed;
                if (keep_records || ri != 0)
                    record(o, b, b + iov[i].iov_len, action, ri, 0);
            }
        }
    }
    if (batch_n > BATCH / 2)
        flush_records();
    return done;
}

/* MADV_COLD (and MADV_PAGEOUT with OBJTIER_PAGEOUT) on the planned-slow part of every
 * planned object. The lock is held per object only, so a free() waits for at most one
 * object's advice. */
static void advise_pass(void)
{
    for (uint64_t i = 0;; i++) {
        pthread_mutex_lock(&lock);
        if (i >= objs_cap) {
            pthread_mutex_unlock(&lock);
            break;
        }
        pobj *o = &objs[i];
        for (uint64_t at = 0;
             o->addr > DELETED && advise_runs(o, &at, UINT64_MAX, MADV_COLD, OT_PLACE_COLD, 1);)
            ;
        for (uint64_t at = 0; pageout && o->addr > DELETED &&
                              advise_runs(o, &at, UINT64_MAX, MADV_PAGEOUT, OT_PLACE_PAGEOUT, 1);)
            ;
        if (batch_n > BATCH / 2 || i + 1 >= objs_cap)
            flush_records();
        pthread_mutex_unlock(&lock);
    }
}

/* Where the next pressure advice starts: a slot of objs and an address in that object (its
 * first whole page when outside it). Background thread only. */
static uint64_t cold_slot, cold_at;

/* MADV_COLD on about `bytes` of planned-slow ranges, continuing where the previous call
 * stopped and wrapping around, so that successive calls age every slow page in turn (a clock
 * hand over the slow ranges). Returns the bytes advised. */
static uint64_t advise_some(uint64_t bytes, int keep_records)
{
    uint64_t done = 0;
    for (uint64_t visited = 0; done < bytes && visited <= objs_cap;) {
        pthread_mutex_lock(&lock);
        if (cold_slot >= objs_cap)
            cold_slot = cold_at = 0;
        pobj *o = &objs[cold_slot];
        uint64_t taken = o->addr > DELETED ? advise_runs(o, &cold_at, bytes - done, MADV_COLD,
                                                         OT_PLACE_COLD, keep_records)
                                           : 0;
        if (taken) {
            done += taken;
            if (batch_n)
                flush_records();
            pthread_mutex_unlock(&lock);
            continue;
        }
        cold_slot++;
        cold_at = 0;
        visited++;
        if (batch_n > BATCH / 2)
            flush_records();
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    flush_records();
    pthread_mutex_unlock(&lock);
    return done;
}

/* Bytes of slow ranges to advise now: while the cgroup's usage is within its headroom of
 * the limit, the shortfall of its inactive anonymous list below OBJTIER_INACTIVE_PCT % of
 * the limit.
 *
 * Why: under thrashing the kernel puts every refaulted page on the active list; the inactive
 * list runs dry, and a charge whose reclaim finds nothing sixteen times in a row ends in the
 * cgroup's OOM killer although swap has room (seen with cgroup v1 on kernel 6.18). MADV_COLD
 * moves slow pages to the inactive list, where reclaim takes them unless they are touched
 * again first; advising only the shortfall leaves the kernel's page-level aging of the
 * remaining slow pages alone. */
static uint64_t pressure_shortfall(void)
{
    if (memcg.limit == UINT64_MAX)
        return 0;
    uint64_t use = rt_memcg_usage(&memcg);
    uint64_t headroom = memcg.limit / 32 > MIN_HEADROOM ? memcg.limit / 32 : MIN_HEADROOM;
    if (use == UINT64_MAX || use + headroom < memcg.limit)
        return 0;
    uint64_t target = memcg.limit / 100 * inactive_pct;
    uint64_t inactive = rt_memcg_inactive_anon(&memcg);
    if (inactive == UINT64_MAX)
        return target;
    return inactive < target ? target - inactive : 0;
}

/* 1 while the cgroup's usage is within its headroom of the limit. */
static int near_limit(void)
{
    if (memcg.limit == UINT64_MAX)
        return 0;
    uint64_t use = rt_memcg_usage(&memcg);
    uint64_t headroom = memcg.limit / 32 > MIN_HEADROOM ? memcg.limit / 32 : MIN_HEADROOM;
    return use != UINT64_MAX && use + headroom >= memcg.limit;
}

/* Threads of this process (/proc/self/stat, field 20), at least 1. */
static uint64_t thread_count(void)
{
    char buf[1024];
    if (rt_sys_read_small("/proc/self/stat", buf, sizeof buf) <= 0)
        return 1;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces and ')' */
    for (int field = 2; p && field < 20; field++)
        p = strchr(p + 1, ' ');
    uint64_t n = 0;
    for (p = p ? p + 1 : ""; *p >= '0' && *p <= '9'; p++)
        n = n * 10 + (uint64_t)(*p - '0');
    return n ? n : 1;
}

/* Bytes of our locks to give up so that the cgroup keeps `need` bytes it can reclaim from:
 * need = max(MIN_ROOM, ROOM_PER_THREAD x this process's threads), at most a quarter of the
 * limit; the room is the limit less the cgroup's mlocked memory (memory.stat unevictable).
 *
 * Why: every thread that faults while the cgroup is full reclaims for its own charge (a whole
 * transparent huge page when THP is on), and concurrent reclaimers take each other's freed
 * pages; when the evictable part of the cgroup is about the size of what its threads charge
 * at once, one of them can fail its retries and the cgroup's OOM killer ends the program
 * although swap has room. The lock limit's margin is chosen before the run and does not know
 * how many threads will burst. */
static uint64_t room_shortfall(void)
{
    uint64_t unevictable = rt_memcg_stat(&memcg, "unevictable");
    if (unevictable == UINT64_MAX || memcg.limit == UINT64_MAX)
        return 0;
    uint64_t need = thread_count() * ROOM_PER_THREAD;
    need = need > MIN_ROOM ? need : MIN_ROOM;
    need = need < memcg.limit / 4 ? need : memcg.limit / 4;
    uint64_t room = memcg.limit > unevictable ? memcg.limit - unevictable : 0;
    return room < need ? need - room : 0;
}

/* Unlocks about `bytes` (page multiples) from the ends of the locked prefixes [lo,
 * locked_end) of our objects, advises them cold, and lowers the lock limit to what stays
 * locked so that nothing locks them again: from here on the run leaves that room. Returns
 * the bytes unlocked. Background thread only. */
static uint64_t relieve_locks(uint64_t bytes)
{
    uint64_t done = 0, pg = rt_page_bytes;
    pthread_mutex_lock(&lock);
    for (uint64_t i = objs_cap; i-- > 0 && done < bytes;) {
        pobj *o = &objs[i];
        if (o->addr <= DELETED || o->locked_end <= o->lo)
            continue;
        uint64_t want = (bytes - done + pg - 1) & ~(pg - 1);
        uint64_t take = o->locked_end - o->lo < want ? o->locked_end - o->lo : want;
        uint64_t a = o->locked_end - take;
        long r = syscall(SYS_munlock, (void *)(uintptr_t)a, take);
        record(o, a, o->locked_end, OT_PLACE_MUNLOCK, sys_result(r), 0);
        if (r != 0)
            continue;
        r = syscall(SYS_madvise, (void *)(uintptr_t)a, take, MADV_COLD);
        record(o, a, o->locked_end, OT_PLACE_COLD, sys_result(r), 0);
        o->locked_end = a;
        locked_total -= take;
        done += take;
    }
    if (done) {
        lock_limit = locked_total < lock_limit ? locked_total : lock_limit;
        relieved_bytes += done;
    }
    flush_records();
    pthread_mutex_unlock(&lock);
    return done;
}

/* ---- the background thread ------------------------------------------------------- */

static void *place_loop(void *arg)
{
    (void)arg;
    rt_guard = 1;
    int swap = atomic_load(&rt_place_on) && tier == RT_TIER_SWAP;
    int advise = swap && advise_ms > 0;
    int watch = swap && pressure_ms > 0 && memcg.limit != UINT64_MAX;
    int resid = residency_on && residency_ms > 0;
    uint64_t now = rt_now_ns(), last_record = 0;
    uint64_t next_advise = now + (uint64_t)advise_ms * 1000000ull;
    uint64_t next_watch = now + (uint64_t)pressure_ms * 1000000ull;
    uint64_t next_resid = now + (uint64_t)residency_ms * 1000000ull;
    pthread_mutex_lock(&tlock);
    while (!tstop) {
        uint64_t wake = UINT64_MAX;
        if (advise)
            wake = next_advise;
        if (watch && next_watch < wake)
            wake = next_watch;
        if (resid && next_resid < wake)
            wake = next_resid;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000ull),
                              .tv_nsec = (long)(wake % 1000000000ull)};
        pthread_cond_timedwait(&tcond, &tlock, &ts);
        if (tstop)
            break;
        pthread_mutex_unlock(&tlock);
        now = rt_now_ns();
        if (advise && now >= next_advise) {
            advise_pass();
            last_record = now;
            next_advise = now + (uint64_t)advise_ms * 1000000ull;
        } else if (watch && now >= next_watch) {
            uint64_t shortfall = pressure_shortfall();
            uint64_t room = near_limit() ? room_shortfall() : 0;
            if (room)
                relieve_locks(room);
            if (shortfall) {
                int keep = now - last_record >= RECORD_EVERY_NS;
                uint64_t advised = advise_some(shortfall, keep);
                pressure_bytes += advised;
                if (keep && advised) /* a pass that advised nothing left no records */
                    last_record = now;
                pressure_passes++;
            }
        }
        if (watch && now >= next_watch)
            next_watch = rt_now_ns() + (uint64_t)pressure_ms * 1000000ull;
        if (resid && now >= next_resid) {
            rt_residency_pass(now);
            next_resid = rt_now_ns() + (uint64_t)residency_ms * 1000000ull;
        }
        pthread_mutex_lock(&tlock);
    }
    pthread_mutex_unlock(&tlock);
    return NULL;
}

void rt_place_start(void)
{
    /* under a memory limit only: without one nothing is swapped, and sampling every fault
     * would cost for nothing */
    if (atomic_load(&rt_place_on) && tier == RT_TIER_SWAP && readahead_bytes &&
        memcg.limit != UINT64_MAX)
        rt_ahead_start(readahead_bytes);
    int advise = atomic_load(&rt_place_on) && tier == RT_TIER_SWAP &&
                 (advise_ms > 0 || (pressure_ms > 0 && memcg.limit != UINT64_MAX));
    int resid = residency_on && residency_ms > 0;
    if (!advise && !resid)
        return;
    if (!atomic_load(&rt_place_on)) { /* residency only: the plan set-up did not run */
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&tcond, &ca);
    }
    tstop = 0;
    thread_started = pthread_create(&thread, NULL, place_loop, NULL) == 0;
    if (!thread_started)
        rt_log(1, "cannot start the placement thread; no periodic advice or residency");
}

static void stop_thread(void)
{
    if (!thread_started)
        return;
    pthread_mutex_lock(&tlock);
    tstop = 1;
    pthread_cond_signal(&tcond);
    pthread_mutex_unlock(&tlock);
    pthread_join(thread, NULL);
    thread_started = 0;
}

void rt_place_finish(void)
{
    rt_ahead_stop();
    stop_thread();
    if (residency_on)
        rt_residency_pass(rt_now_ns());
    if (!atomic_load(&rt_place_on))
        return;
    pthread_mutex_lock(&lock);
    flush_records();
    if (pressure_passes)
        rt_log(0,
               "memory cgroup at its limit: %llu MiB of slow ranges advised cold in %llu "
               "passes",
               (unsigned long long)(pressure_bytes >> 20), (unsigned long long)pressure_passes);
    if (relieved_bytes)
        rt_log(1,
               "the memory cgroup was nearly full of locked memory: %llu MiB of planned-fast "
               "memory unlocked to leave reclaim room for this program's threads",
               (unsigned long long)(relieved_bytes >> 20));
    if (matched == 0)
        /* following forks, a process of another binary (a launcher, a shell) matching nothing
         * is expected: said only with OBJTIER_LOG=1 */
        rt_log(!follow_forks || plan.binary_mine || plan.n_programs,
               "plan matched no allocation (another binary, other inputs, another "
               "OBJTIER_STACK_DEPTH or OBJTIER_MIN_SIZE?)");
    pthread_mutex_unlock(&lock);
}

void rt_place_fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

void rt_place_fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

void rt_place_fork_child(int follow)
{
    pthread_mutex_init(&lock, NULL);
    pthread_mutex_init(&tlock, NULL);
    thread_started = 0;
    batch_n = 0;
    rt_ahead_fork_child();
    if (atomic_load(&rt_place_on)) {
        /* mlocks are not inherited: the child starts with no locked or planned object */
        memset(objs, 0, objs_cap * sizeof *objs);
        memset(occ, 0, occ_cap * sizeof *occ);
        objs_used = objs_live = maps_live = occ_used = locked_total = 0;
        matched = pressure_passes = pressure_bytes = cold_slot = cold_at = relieved_bytes = 0;
        rt_plankey_reset();
    }
    if (follow)
        rt_place_start();
    else { /* a passive child: nothing is tracked or written */
        atomic_store(&rt_place_on, 0);
        residency_on = 0;
    }
}
