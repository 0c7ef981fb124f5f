/*
 * Online placement on the swap tier: the fault sampler's recent windows decide which ranges
 * stay mlocked (online.h).
 *
 * Every OBJTIER_ONLINE_MS the thread
 *   1. takes the windows the sampler ended since the last tick (rt_recent_take);
 *   2. rebuilds its table of ranges from a snapshot of the tracked objects (heap objects and
 *      mappings): an object's whole pages [page_up(addr), page_down(addr + size)) cut into
 *      ranges of max(RANGE_BYTES, size / MAX_PER_OBJECT) bytes; a range keeps its score and its
 *      lock across ticks (matched by object seq and start);
 *   3. scores each range: a window's armed and touched pages are shared among the ranges it
 *      spans in proportion to the overlap; a range observed this tick takes
 *      score = ALPHA * touched / armed + (1 - ALPHA) * score, one not observed score * AGE;
 *   4. wants the ranges of highest score (at least MIN_SCORE; a locked range counts HOLD times
 *      its score, so noise does not move a lock), as many as fit the lock budget;
 *   5. unlocks the locked ranges no longer wanted (munlock, then MADV_COLD, or MADV_PAGEOUT with
 *      OBJTIER_PAGEOUT=1: reclaim must find them before the new locks charge the cgroup), then
 *      locks the wanted ones (MADV_WILLNEED, then mlock), each run of adjacent ranges with one
 *      call of each kind, within the shared advice-call budget (advice.h); what does not fit is
 *      dropped (counted) and decided anew at the next tick.
 *
 * Invariants (all under `lock`):
 *   - ranges[0, n_ranges) are sorted by lo and disjoint; r.locked is 1 while this module holds
 *     an mlock on [lo, hi); locked_bytes is the sum of their lengths <= lock_budget.
 *   - The table is rebuilt from a snapshot taken with `lock` held. An object leaves the
 *     registry before its release hook runs, and the hook waits for `lock`: a locked range
 *     missing from a snapshot is kept (GONE, never wanted) until its hook takes it out, so
 *     every lock is undone before the memory goes back.
 *   - lead is the seq of the object with the most bytes locked after a tick (0: none); each
 *     change is logged (at most LEAD_LOG entries) with the time and the phase switches so far.
 *
 * Phase memory (OBJTIER_ONLINE_PHASES=1, the default): a phase switch (objtier_phase) wakes the
 * thread, which ticks at once (at most one tick per min(SWITCH_GAP_NS, period)) instead of at
 * the end of the period. At a tick that finds the phase in force changed, the windows that
 * ended by the switch (switch_ns) are scored, the scores of every range are kept under the
 * phase left (`kept`, the PHASES_KEPT most recently left phases), and, when the phase entered
 * was kept before, every range takes the score it had when that phase was last left (a range it
 * did not have, e.g. of an object allocated since, takes 0: the next observation, weighted
 * ALPHA, sets it); the windows that ended after the switch are then folded in (a range they did
 * not see keeps its score). So a phase seen before gets its own hot ranges locked at its start,
 * not one or two ticks later; a phase not seen before starts from the scores of the phase
 * before, as without the memory. With OBJTIER_ONLINE_PHASES=0 switches are only counted.
 *   - kept[k].e[0, n) is sorted by lo (the order of ranges[] when it was kept), scores > 0.
 *   - phase_ticked is the phase in force at the last tick; switch_pending is set by the
 *     program's thread at a switch and cleared by the tick that sees it.
 *
 * Pressure guard (under a memory limit, every RT_MOVING_GUARD_NS, memcg.h;
 * OBJTIER_PRESSURE_MS=0: off): while the cgroup is near its limit with too little on the
 * inactive list, MADV_COLD on unlocked ranges (guard()).
 */
#define _GNU_SOURCE
#include "online.h"
#include "advice.h"
#include "maps.h"
#include "memcg.h"
#include "recent.h"
#include "registry.h"
#include "rt.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RANGE_BYTES    (2ull << 20) /* smallest range of an object larger than it */
#define MAX_PER_OBJECT 256          /* ranges per object at most */
#define ALPHA          0.7          /* weight of this tick's observation */
#define AGE            0.7          /* a tick without observation */
#define MIN_SCORE      0.02         /* share of armed pages touched, to be worth a lock */
#define HOLD           1.2          /* a locked range's advantage */
#define LEAD_LOG       256          /* lead changes kept for the stats */
#define TAKE_BATCH     512          /* windows taken per rt_recent_take */
#define PHASES_KEPT    64           /* phases whose scores are kept (least recently left goes) */
#define SWITCH_GAP_NS  10000000ull  /* switch ticks at least min(this, period) apart */

enum { GONE = 1 };

typedef struct {
    uint64_t lo, hi, seq;
    double score, armed, touched;
    uint32_t flags;
    uint32_t locked;
    uint32_t want;
} orange;

static int on;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static pthread_t thread;
static int thread_started, tstop;
static uint64_t period_ns, lock_budget, t_start;
static int pageout;
static char stats_path[1024];
static _Atomic uint64_t switches;

static orange *ranges, *spare;
static size_t n_ranges, cap_ranges;
static rt_obj *snap;
static size_t cap_snap;
static rt_recent_window *wins;
static uint64_t locked_bytes;
static uint64_t lead;

static struct {
    uint64_t ticks, windows, calls_mlock, calls_munlock, calls_cold, calls_pageout, calls_willneed,
        calls_failed, bytes_locked, bytes_unlocked, locked_peak, runs_locked, runs_unlocked,
        actions_dropped, lock_refused, lead_changes, advice_ns, thread_cpu_ns, ranges_peak,
        mlock_unpopulated, calls_onfault;
} st;
static struct {
    uint64_t seq, at_ms, switches;
} leads[LEAD_LOG];
static uint32_t n_leads;

typedef struct {
    uint64_t seq, lo;
    double score;
} kept_score;

typedef struct {
    int used;
    uint32_t phase; /* name id (phase.c), 0 = no phase */
    uint64_t left;  /* st.ticks when it was last left: the least recent is replaced */
    kept_score *e;  /* e[0, n), sorted by lo */
    size_t n, cap;
} kept_phase;

static int phase_memory;
static kept_phase kept[PHASES_KEPT];

static _Atomic uint32_t phase_now;
static _Atomic uint64_t switch_ns; /* when phase_now was last set (CLOCK_MONOTONIC) */
static _Atomic int switch_pending;
static uint32_t phase_ticked;
static struct {
    uint64_t switch_ticks, phases_kept, recalls, recalled_ranges;
} pst;

/* the pressure guard (thread only): under a limit, every guard_ns */
static const rt_memcg *memcg;
static uint64_t guard_ns;
static size_t guard_at; /* the clock hand: the range the next pass starts from */
static struct {
    uint64_t passes, calls, bytes;
} gst;

static inline uint64_t page_down(uint64_t a)
{
    return a & ~(uint64_t)(rt_page_bytes - 1);
}
static inline uint64_t page_up(uint64_t a)
{
    return page_down(a + rt_page_bytes - 1);
}

/* ---- the table ------------------------------------------------------------------------ */

/* Room for n ranges in both buffers; 0, or -1 (the table keeps its size). */
static int reserve(size_t n)
{
    if (n <= cap_ranges)
        return 0;
    size_t cap = n * 2;
    orange *a = rt_sys_mmap(cap * sizeof(orange)), *b = rt_sys_mmap(cap * sizeof(orange));
    if (!a || !b) {
        if (a)
            rt_sys_munmap(a, cap * sizeof(orange));
        if (b)
            rt_sys_munmap(b, cap * sizeof(orange));
        return -1;
    }
    if (ranges) {
        memcpy(a, ranges, n_ranges * sizeof(orange));
        rt_sys_munmap(ranges, cap_ranges * sizeof(orange));
        rt_sys_munmap(spare, cap_ranges * sizeof(orange));
    }
    ranges = a;
    spare = b;
    cap_ranges = cap;
    return 0;
}

static int by_addr(const void *a, const void *b)
{
    const rt_obj *x = a, *y = b;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

static uint64_t range_len_of(uint64_t size)
{
    uint64_t len = page_up(size / MAX_PER_OBJECT);
    return len > RANGE_BYTES ? len : RANGE_BYTES;
}

/* The ranges the snapshot's n objects (sorted by addr) cut into. */
static size_t count_ranges(size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t lo = page_up(snap[i].addr), hi = page_down(snap[i].addr + snap[i].size);
        if (hi > lo && (snap[i].prot & PROT_READ)) {
            uint64_t len = range_len_of(snap[i].size);
            total += (size_t)((hi - lo + len - 1) / len);
        }
    }
    return total;
}

/* Rebuilds ranges[] from the tracked objects: old ranges carried over by (seq, lo), locked
 * ranges of objects no longer tracked kept as GONE. Caller holds `lock`. */
static void rebuild(void)
{
    size_t need = (size_t)atomic_load(&rt_reg_live) + (size_t)atomic_load(&rt_maps_live) + 64;
    if (need > cap_snap) {
        if (snap)
            rt_sys_munmap(snap, cap_snap * sizeof(rt_obj));
        cap_snap = need * 2;
        snap = rt_sys_mmap(cap_snap * sizeof(rt_obj));
        if (!snap) {
            cap_snap = 0;
            return;
        }
    }
    size_t n = rt_reg_snapshot(snap, cap_snap);
    n += rt_maps_snapshot(snap + n, cap_snap - n);
    qsort(snap, n, sizeof(rt_obj), by_addr);
    if (reserve(count_ranges(n) + n_ranges) != 0)
        return;
    size_t out = 0, old = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t lo = page_up(snap[i].addr), hi = page_down(snap[i].addr + snap[i].size);
        if (hi <= lo || !(snap[i].prot & PROT_READ))
            continue;
        uint64_t len = range_len_of(snap[i].size);
        for (uint64_t a = lo; a < hi; a += len) {
            orange r = {.lo = a, .hi = a + len < hi ? a + len : hi, .seq = snap[i].seq};
            /* old ranges below this one: carried only when locked and gone */
            while (old < n_ranges && ranges[old].lo < r.lo) {
                if (ranges[old].locked && ranges[old].hi <= r.lo &&
                    (out == 0 || ranges[old].lo >= spare[out - 1].hi)) {
                    spare[out] = ranges[old];
                    spare[out++].flags |= GONE;
                }
                old++;
            }
            if (old < n_ranges && ranges[old].lo == r.lo && ranges[old].seq == r.seq &&
                ranges[old].hi == r.hi) {
                r.score = ranges[old].score;
                r.locked = ranges[old].locked;
                old++;
            }
            spare[out++] = r;
        }
    }
    for (; old < n_ranges; old++)
        if (ranges[old].locked && (out == 0 || ranges[old].lo >= spare[out - 1].hi)) {
            spare[out] = ranges[old];
            spare[out++].flags |= GONE;
        }
    orange *t = ranges;
    ranges = spare;
    spare = t;
    n_ranges = out;
    if (out > st.ranges_peak)
        st.ranges_peak = out;
}

/* The first range with hi > a. */
static size_t first_after(uint64_t a)
{
    size_t l = 0, h = n_ranges;
    while (l < h) {
        size_t m = (l + h) / 2;
        if (ranges[m].hi <= a)
            l = m + 1;
        else
            h = m;
    }
    return l;
}

static void attribute(const rt_recent_window *w)
{
    if (w->end <= w->start || !w->pages)
        return;
    double span = (double)(w->end - w->start);
    for (size_t i = first_after(w->start); i < n_ranges && ranges[i].lo < w->end; i++) {
        uint64_t lo = ranges[i].lo > w->start ? ranges[i].lo : w->start;
        uint64_t hi = ranges[i].hi < w->end ? ranges[i].hi : w->end;
        double f = (double)(hi - lo) / span;
        ranges[i].armed += f * w->pages;
        ranges[i].touched += f * w->touched;
    }
}

/* Folds the attributed windows into the scores; a range not observed ages (AGE) when `age`,
 * else keeps its score. */
static void score(int age)
{
    for (size_t i = 0; i < n_ranges; i++) {
        orange *r = &ranges[i];
        if (r->armed > 0) {
            double d = r->touched / r->armed;
            r->score = ALPHA * (d > 1 ? 1 : d) + (1 - ALPHA) * r->score;
        } else if (age) {
            r->score *= AGE;
        }
        r->armed = r->touched = 0;
    }
}

static double key_of(const orange *r)
{
    return r->score * (r->locked ? HOLD : 1.0);
}

static int hotter_first(const void *a, const void *b)
{
    double x = key_of(&ranges[*(const uint32_t *)a]), y = key_of(&ranges[*(const uint32_t *)b]);
    return (x < y) - (x > y);
}

/* Marks the wanted ranges: the hottest that fit the lock budget. */
static void choose(void)
{
    uint32_t *idx = rt_sys_mmap(n_ranges * sizeof(uint32_t) + 1);
    size_t m = 0;
    for (size_t i = 0; i < n_ranges; i++) {
        ranges[i].want = 0;
        if (idx && !(ranges[i].flags & GONE) && ranges[i].score >= MIN_SCORE)
            idx[m++] = (uint32_t)i;
    }
    if (!idx)
        return;
    qsort(idx, m, sizeof *idx, hotter_first);
    uint64_t sum = 0;
    for (size_t k = 0; k < m; k++) {
        orange *r = &ranges[idx[k]];
        if (sum + (r->hi - r->lo) <= lock_budget) {
            r->want = 1;
            sum += r->hi - r->lo;
        }
    }
    rt_sys_munmap(idx, n_ranges * sizeof(uint32_t) + 1);
}

/* ---- advice ----------------------------------------------------------------------------- */

static int call(long nr, uint64_t a, uint64_t len, long arg, uint64_t *counter)
{
    return rt_advice_call(nr, a, len, arg, counter, &st.advice_ns, &st.calls_failed);
}

/* The end of the run of adjacent ranges from i that `match` selects: [i, *j). */
static uint64_t run_from(size_t i, size_t *j, int (*match)(const orange *))
{
    size_t k = i + 1;
    while (k < n_ranges && match(&ranges[k]) && ranges[k].lo == ranges[k - 1].hi)
        k++;
    *j = k;
    return ranges[k - 1].hi - ranges[i].lo;
}

static int to_unlock(const orange *r)
{
    return r->locked && !r->want;
}
static int to_lock(const orange *r)
{
    return !r->locked && r->want;
}

/* mlock [a, a + len): all of it now (after MADV_WILLNEED), or with `onfault` each page as the
 * program next touches it (mlock2 MLOCK_ONFAULT; pages present are locked at once). 0 or -1
 * with errno. */
static int lock_range(uint64_t a, uint64_t len, int onfault)
{
#ifdef SYS_mlock2
    if (onfault) {
        if (call(SYS_mlock2, a, len, MLOCK_ONFAULT, &st.calls_mlock)) {
            st.calls_onfault++;
            return 0;
        }
        if (errno != ENOSYS && errno != EINVAL)
            return -1;
        st.calls_mlock--; /* no mlock2 on this kernel: not counted, plain mlock below */
        st.calls_failed--;
    }
#endif
    call(SYS_madvise, a, len, MADV_WILLNEED, &st.calls_willneed);
    return call(SYS_mlock, a, len, -1, &st.calls_mlock) ? 0 : -1;
}

/* Unlocks what is no longer wanted, then locks what is wanted; `onfault`: the new locks take
 * each page as the program touches it (a phase switch: the phase's pages are about to be
 * touched, and swapping them all in at once charges the memory cgroup faster than reclaim
 * frees the pages just unlocked). */
static void act(uint64_t now, int onfault)
{
    for (size_t i = 0, j; i < n_ranges; i = j) {
        if (!to_unlock(&ranges[i])) {
            j = i + 1;
            continue;
        }
        uint64_t len = run_from(i, &j, to_unlock);
        if (!rt_advice_has(now, 2)) {
            st.actions_dropped++;
            continue;
        }
        call(SYS_munlock, ranges[i].lo, len, -1, &st.calls_munlock);
        if (pageout)
            call(SYS_madvise, ranges[i].lo, len, MADV_PAGEOUT, &st.calls_pageout);
        else
            call(SYS_madvise, ranges[i].lo, len, MADV_COLD, &st.calls_cold);
        for (size_t k = i; k < j; k++)
            ranges[k].locked = 0;
        locked_bytes -= len < locked_bytes ? len : locked_bytes;
        st.bytes_unlocked += len;
        st.runs_unlocked++;
    }
    for (size_t i = 0, j; i < n_ranges; i = j) {
        if (!to_lock(&ranges[i])) {
            j = i + 1;
            continue;
        }
        uint64_t len = run_from(i, &j, to_lock);
        if (locked_bytes + len > lock_budget) { /* unlocks dropped for the call budget */
            st.lock_refused++;
            continue;
        }
        if (!rt_advice_has(now, 2)) {
            st.actions_dropped++;
            continue;
        }
        /* ENOMEM after the range was marked locked: pages the sampler has armed (PROT_NONE)
         * are not populated, yet locked as they fault in: held as locked (munlock undoes it) */
        if (lock_range(ranges[i].lo, len, onfault) != 0) {
            if (errno != ENOMEM)
                continue;
            st.calls_failed--;
            st.mlock_unpopulated++;
        }
        for (size_t k = i; k < j; k++)
            ranges[k].locked = 1;
        locked_bytes += len;
        st.bytes_locked += len;
        st.runs_locked++;
        if (locked_bytes > st.locked_peak)
            st.locked_peak = locked_bytes;
    }
}

/* The object with the most bytes locked; logs a change. */
static void follow_lead(uint64_t now)
{
    uint64_t best = 0, best_bytes = 0, cur = 0, cur_bytes = 0;
    for (size_t i = 0; i < n_ranges; i++) {
        if (ranges[i].seq != cur) {
            cur = ranges[i].seq;
            cur_bytes = 0;
        }
        if (ranges[i].locked && !(ranges[i].flags & GONE))
            cur_bytes += ranges[i].hi - ranges[i].lo;
        if (cur_bytes > best_bytes) {
            best_bytes = cur_bytes;
            best = cur;
        }
    }
    if (best == lead || !best) {
        lead = best ? best : lead;
        return;
    }
    lead = best;
    st.lead_changes++;
    if (n_leads < LEAD_LOG) {
        leads[n_leads].seq = best;
        leads[n_leads].at_ms = (now - t_start) / 1000000;
        leads[n_leads++].switches = atomic_load(&switches);
    }
}

/* ---- phase memory ------------------------------------------------------------------------ */

static kept_phase *kept_of(uint32_t phase)
{
    for (size_t k = 0; k < PHASES_KEPT; k++)
        if (kept[k].used && kept[k].phase == phase)
            return &kept[k];
    return NULL;
}

/* Keeps the ranges' scores under `phase` (replacing what it had, or the least recently left
 * phase when all slots are used). Caller holds `lock`. */
static void remember(uint32_t phase)
{
    kept_phase *p = kept_of(phase);
    if (!p) { /* a free slot, or else the least recently left phase's */
        p = &kept[0];
        for (size_t k = 0; k < PHASES_KEPT && p->used; k++)
            if (!kept[k].used || kept[k].left < p->left)
                p = &kept[k];
    }
    size_t n = 0;
    for (size_t i = 0; i < n_ranges; i++)
        n += ranges[i].score > 0 && !(ranges[i].flags & GONE);
    if (n > p->cap) {
        kept_score *e = rt_sys_mmap(n * 2 * sizeof(kept_score));
        if (!e)
            return; /* this phase is not kept: its next start learns as without the memory */
        if (p->e)
            rt_sys_munmap(p->e, p->cap * sizeof(kept_score));
        p->e = e;
        p->cap = n * 2;
    }
    p->n = 0;
    for (size_t i = 0; i < n_ranges; i++)
        if (ranges[i].score > 0 && !(ranges[i].flags & GONE))
            p->e[p->n++] = (kept_score){ranges[i].seq, ranges[i].lo, ranges[i].score};
    if (!p->used)
        pst.phases_kept++;
    p->used = 1;
    p->phase = phase;
    p->left = st.ticks;
}

/* Every range takes the score it had when `phase` was last left (0 when it had none there);
 * 0 when the phase was never kept (nothing changes). Caller holds `lock`. */
static int recall(uint32_t phase)
{
    kept_phase *p = kept_of(phase);
    if (!p)
        return 0;
    size_t j = 0;
    for (size_t i = 0; i < n_ranges; i++) {
        while (j < p->n && p->e[j].lo < ranges[i].lo)
            j++;
        int hit = j < p->n && p->e[j].lo == ranges[i].lo && p->e[j].seq == ranges[i].seq;
        ranges[i].score = hit ? p->e[j].score : 0;
        pst.recalled_ranges += (uint64_t)hit;
    }
    return 1;
}

/* ---- the pressure guard ------------------------------------------------------------------- */

/* Near the cgroup's limit with less than RT_MOVING_GUARD_PCT % of it on the inactive list
 * (rt_memcg_inactive_shortfall), MADV_COLD on about the shortfall in unlocked ranges, a clock
 * hand over the table so that successive passes age every unlocked range in turn. Without it,
 * locks that leave the program's evictable pages all active end in the cgroup's OOM killer
 * where the kernel alone lives (the swap tier guards planned-slow ranges the same way, every
 * OBJTIER_PRESSURE_MS to OBJTIER_INACTIVE_PCT; the online placement moves its locks and needs
 * the tighter 2 ms / 25 %: alternating 2 x 64 MiB at 50 % local, 24 of 24 runs alive, against
 * 16 of 24 without a guard and 14 of 18 at 10 ms / 12 %). Not through the advice budget: a
 * pass is a safeguard, not a placement. Caller holds `lock`. */
static void guard(void)
{
    uint64_t want = rt_memcg_moving_guard_want(memcg);
    if (!want || !n_ranges)
        return;
    gst.passes++;
    uint64_t done = 0;
    for (size_t seen = 0; done < want && seen < n_ranges; seen++, guard_at++) {
        if (guard_at >= n_ranges)
            guard_at = 0;
        const orange *r = &ranges[guard_at];
        if (r->locked || (r->flags & GONE))
            continue;
        uint64_t len = r->hi - r->lo;
        if (len > want - done)
            len = page_up(want - done);
        uint64_t t0 = rt_now_ns();
        syscall(SYS_madvise, (void *)(uintptr_t)r->lo, (size_t)len, MADV_COLD);
        st.advice_ns += rt_now_ns() - t0;
        gst.calls++;
        done += len;
    }
    gst.bytes += done;
}

/* ---- the tick ------------------------------------------------------------------------------ */

/* The phase in force is now `phase`: the scores are kept under the phase left, and the
 * phase entered takes its own when it was kept. */
static void enter_phase(uint32_t phase)
{
    remember(phase_ticked);
    pst.recalls += (uint64_t)recall(phase);
    phase_ticked = phase;
}

/* One tick. When the phase in force changed since the last one, the windows that ended by
 * the switch are scored for the phase left before it is kept; those that ended after it are
 * then folded into the scores of the phase entered (without ageing what they did not see). */
static void tick(uint64_t now, int switched)
{
    st.ticks++;
    if (switched)
        pst.switch_ticks++;
    rebuild();
    uint32_t phase = atomic_load(&phase_now);
    int changed = phase_memory && phase != phase_ticked;
    uint64_t cut = changed ? atomic_load(&switch_ns) : UINT64_MAX;
    int entered = 0;
    for (uint32_t got; (got = rt_recent_take(wins, TAKE_BATCH)) > 0;) {
        st.windows += got;
        for (uint32_t k = 0; k < got; k++) {
            if (changed && !entered && wins[k].end_ns > cut) { /* windows end in order */
                score(1);
                enter_phase(phase);
                entered = 1;
            }
            attribute(&wins[k]);
        }
        if (got < TAKE_BATCH)
            break;
    }
    score(!entered);
    if (changed && !entered)
        enter_phase(phase);
    choose();
    act(now, switched);
    follow_lead(now);
}

/* When the next tick is due: `gap` after the last one while a switch is pending (unless the
 * period ends first), else at the period's end `next`. */
static uint64_t tick_due(int switch_pending_now, uint64_t last, uint64_t gap, uint64_t next)
{
    return switch_pending_now && last + gap < next ? last + gap : next;
}

static void *loop(void *arg)
{
    (void)arg;
    rt_guard = 1;
    rt_thread_stay_home();
    pthread_mutex_lock(&lock);
    uint64_t gap = SWITCH_GAP_NS < period_ns ? SWITCH_GAP_NS : period_ns;
    uint64_t last = rt_now_ns(), next = last + period_ns;
    uint64_t next_guard = guard_ns ? last + guard_ns : UINT64_MAX;
    while (!tstop) {
        /* the next tick, or the guard's pass when that comes first */
        uint64_t due = tick_due(atomic_load(&switch_pending), last, gap, next);
        if (next_guard < due)
            due = next_guard;
        if (rt_now_ns() < due) {
            struct timespec ts = {.tv_sec = (time_t)(due / 1000000000ull),
                                  .tv_nsec = (long)(due % 1000000000ull)};
            pthread_cond_timedwait(&cond, &lock, &ts);
        }
        if (tstop)
            break;
        uint64_t now = rt_now_ns();
        if (now >= next_guard) {
            guard();
            next_guard = rt_now_ns() + guard_ns;
        }
        int sw = atomic_load(&switch_pending); /* a switch may have come during the wait */
        if (now < tick_due(sw, last, gap, next))
            continue;
        atomic_store(&switch_pending, 0);
        tick(now, sw);
        last = now;
        next = now + period_ns;
    }
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        st.thread_cpu_ns = (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* ---- hooks ------------------------------------------------------------------------------ */

int rt_online_wanted(const rt_config *cfg)
{
    if (!cfg->online_ms)
        return 0;
    const char *why = NULL;
    if (cfg->tier != RT_TIER_SWAP)
        why = "runs on the swap tier only (OBJTIER_TIER=swap)";
    else if (cfg->sampler != RT_SAMPLER_FAULT)
        why = "follows the fault sampler (OBJTIER_SAMPLER=fault)";
    else if (cfg->plan[0] || cfg->dynamic[0])
        why = "is one placement: not with OBJTIER_PLAN or OBJTIER_DYNAMIC";
    if (why)
        rt_log(1, "the online placement %s; it stays off", why);
    return why == NULL;
}

void rt_online_init(const rt_config *cfg)
{
    wins = rt_sys_mmap(TAKE_BATCH * sizeof(rt_recent_window));
    if (!wins) {
        rt_log(1, "out of memory for the online placement; it stays off");
        return;
    }
    memcg = rt_memcg_self();
    lock_budget = rt_memcg_lock_room(memcg->limit, cfg->mlock_limit);
    period_ns = (uint64_t)cfg->online_ms * 1000000ull;
    pageout = cfg->pageout;
    phase_memory = cfg->online_phases;
    guard_ns = memcg->limit != UINT64_MAX && cfg->pressure_ms ? RT_MOVING_GUARD_NS : 0;
    memcpy(stats_path, cfg->online_stats, sizeof stats_path);
    t_start = rt_now_ns();
    rt_advice_init((double)cfg->advice_rate, t_start);
    rt_recent_enable();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cond, &ca);
    on = 1;
    tstop = 0;
    thread_started = pthread_create(&thread, NULL, loop, NULL) == 0;
    if (!thread_started)
        rt_log(1, "cannot start the online placement's thread; it stays off");
    rt_log(0, "online placement: every %u ms, at most %llu MiB locked, %u calls/s", cfg->online_ms,
           (unsigned long long)(lock_budget == UINT64_MAX ? 0 : lock_budget >> 20),
           cfg->advice_rate);
}

/* Drops ranges[i] (caller holds `lock`). */
static void drop(size_t i)
{
    if (ranges[i].locked)
        locked_bytes -= (ranges[i].hi - ranges[i].lo) < locked_bytes ? ranges[i].hi - ranges[i].lo
                                                                     : locked_bytes;
    memmove(&ranges[i], &ranges[i + 1], (n_ranges - i - 1) * sizeof(orange));
    n_ranges--;
}

void rt_online_release(uint64_t addr)
{
    if (!on)
        return;
    pthread_mutex_lock(&lock);
    uint64_t seq = 0;
    for (size_t i = first_after(page_up(addr)); i < n_ranges;) {
        if (!seq && ranges[i].lo == page_up(addr))
            seq = ranges[i].seq; /* the object's first range starts at page_up(addr) */
        if (!seq || ranges[i].seq != seq)
            break;
        if (ranges[i].locked) /* the allocator may keep the memory: do not leave it locked */
            syscall(SYS_munlock, (void *)(uintptr_t)ranges[i].lo,
                    (size_t)(ranges[i].hi - ranges[i].lo));
        drop(i);
    }
    pthread_mutex_unlock(&lock);
}

void rt_online_unmap(uint64_t addr, uint64_t len)
{
    if (!on)
        return;
    pthread_mutex_lock(&lock);
    for (size_t i = first_after(addr); i < n_ranges && ranges[i].lo < addr + len;)
        drop(i); /* unmapped: its locks are gone with it */
    pthread_mutex_unlock(&lock);
}

void rt_online_switch(uint32_t phase)
{
    if (!on)
        return;
    atomic_fetch_add(&switches, 1);
    if (!phase_memory)
        return;
    atomic_store(&switch_ns, rt_now_ns());
    atomic_store(&phase_now, phase);
    atomic_store(&switch_pending, 1);
    /* The thread holds `lock` except while it waits: when it is busy it sees switch_pending
     * before it waits again; the program never waits for a tick. */
    if (pthread_mutex_trylock(&lock) == 0) {
        pthread_cond_signal(&cond);
        pthread_mutex_unlock(&lock);
    }
}

static void write_stats(void)
{
    if (!stats_path[0])
        return;
    char buf[4096 + LEAD_LOG * 64];
    int n = snprintf(
        buf, sizeof buf,
        "period_ms %llu\nlock_budget_bytes %llu\nadvice_rate %.0f\nticks %llu\nwindows %llu\n"
        "windows_dropped %llu\nranges_peak %llu\ncalls_mlock %llu\ncalls_munlock %llu\n"
        "calls_cold %llu\ncalls_pageout %llu\ncalls_willneed %llu\ncalls_failed %llu\n"
        "bytes_locked %llu\nbytes_unlocked %llu\nlocked_peak_bytes %llu\nruns_locked %llu\n"
        "runs_unlocked %llu\nactions_dropped %llu\nlock_refused %llu\nswitches %llu\n"
        "lead_changes %llu\nadvice_ns %llu\nthread_cpu_ns %llu\nmlock_unpopulated %llu\n"
        "phase_memory %d\nswitch_ticks %llu\nphases_kept %llu\nrecalls %llu\n"
        "recalled_ranges %llu\ncalls_mlock_onfault %llu\nguard_passes %llu\nguard_calls %llu\n"
        "guard_bytes %llu\n",
        (unsigned long long)(period_ns / 1000000),
        (unsigned long long)(lock_budget == UINT64_MAX ? 0 : lock_budget), rt_advice_rate(),
        (unsigned long long)st.ticks, (unsigned long long)st.windows,
        (unsigned long long)rt_recent_dropped(), (unsigned long long)st.ranges_peak,
        (unsigned long long)st.calls_mlock, (unsigned long long)st.calls_munlock,
        (unsigned long long)st.calls_cold, (unsigned long long)st.calls_pageout,
        (unsigned long long)st.calls_willneed, (unsigned long long)st.calls_failed,
        (unsigned long long)st.bytes_locked, (unsigned long long)st.bytes_unlocked,
        (unsigned long long)st.locked_peak, (unsigned long long)st.runs_locked,
        (unsigned long long)st.runs_unlocked, (unsigned long long)st.actions_dropped,
        (unsigned long long)st.lock_refused, (unsigned long long)atomic_load(&switches),
        (unsigned long long)st.lead_changes, (unsigned long long)st.advice_ns,
        (unsigned long long)st.thread_cpu_ns, (unsigned long long)st.mlock_unpopulated,
        phase_memory, (unsigned long long)pst.switch_ticks, (unsigned long long)pst.phases_kept,
        (unsigned long long)pst.recalls, (unsigned long long)pst.recalled_ranges,
        (unsigned long long)st.calls_onfault, (unsigned long long)gst.passes,
        (unsigned long long)gst.calls, (unsigned long long)gst.bytes);
    /* "lead SEQ AT_MS SWITCHES": the object most locked from AT_MS on, after SWITCHES phase
     * switches */
    for (uint32_t i = 0; i < n_leads && n > 0 && (size_t)n < sizeof buf; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "lead %llu %llu %llu\n",
                      (unsigned long long)leads[i].seq, (unsigned long long)leads[i].at_ms,
                      (unsigned long long)leads[i].switches);
    rt_advice_write_counts(stats_path, buf, n, sizeof buf);
}

void rt_online_finish(void)
{
    if (!on)
        return;
    rt_thread_stop(thread, &lock, &cond, &tstop, &thread_started);
    pthread_mutex_lock(&lock);
    write_stats();
    on = 0;
    pthread_mutex_unlock(&lock);
}

void rt_online_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    on = 0;
    thread_started = 0;
    rt_recent_fork_child();
}
