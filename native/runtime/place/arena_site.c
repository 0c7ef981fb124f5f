/*
 * Segregated arenas: site choice, tier actions and counts; see arena.h and arena_site.h.
 *
 * Choice (plan mode): a call is of a planned site iff the stable key of its calling context
 * is a `site` record's key. Unwinding every small allocation would cost microseconds, so the
 * return address ip of the allocator call is looked up first in a table of addresses: an ip
 * whose innermost frame's key (module base name and offset, one-frame context) is no record's
 * frame0 is never of a planned site and costs one probe from then on; only calls from a
 * candidate ip unwind: their raw return addresses (unw_backtrace, this process's absolute
 * addresses) are hashed and looked up in a second table, so that only the first call of each
 * distinct stack maps its frames to modules and computes its context key (rt_context_capture,
 * rt_context_key). A 64-bit hash collision would give a call another stack's decision: the
 * block is then served by the other allocator, which is a placement error, never a wrong
 * block. With OBJTIER_ARENA=all, the site is
 * the ip itself (the first RT_SARENA_MAX_SITES addresses seen get an arena each).
 *
 * Invariants
 *   - ip_tab and stk_tab entries are written once (value after key, both atomic; a reader
 *     that finds the key with no value yet falls back to the program's allocator for that
 *     call); new ip entries and new sites are made under slock.
 *   - stk_tab's hashes are of absolute addresses, valid in a forked child too (same image).
 */
#define _GNU_SOURCE
#include "arena.h"
#include "arena_site.h"
#include "arena_watch.h"
#include "context.h"
#include "modules.h"
#include "objtier/trace_format.h"
#include "placement.h"
#include "plan.h"
#include "planned.h"
#include "tier.h"
#include "writer.h"

#include <fcntl.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#define MPOL_PREFERRED_ 1
#define MPOL_BIND_      2

/* MODE_WATCH: as MODE_PLAN, the sites of OBJTIER_ARENA_SITES with no tier action, their
 * chunks registered with the scanners (arena_watch.h) */
enum { MODE_OFF, MODE_PLAN, MODE_ALL, MODE_WATCH };
enum { TIER_NONE = 0, TIER_FAST = 1, TIER_SLOW = 2 };

#define IP_SLOTS  (1u << 14)
#define STK_SLOTS (1u << 15)

typedef struct ip_slot {
    _Atomic uintptr_t ip;
    _Atomic int32_t v; /* 0 not yet, -1 never, -2 a candidate (plan mode), s + 1 site s */
} ip_slot;

static int mode;
static int numa;          /* OBJTIER_TIER=numa */
static int strict;        /* OBJTIER_NUMA_STRICT */
static int follow;        /* OBJTIER_FOLLOW_FORKS */
static uint64_t lock_cap; /* OBJTIER_MLOCK_LIMIT, 0 = none of ours */
static uint64_t fast_mask, slow_mask;
static char stats_path[1024];
static uint64_t locked_total; /* under slock */
static pthread_mutex_t slock = PTHREAD_MUTEX_INITIALIZER;

static ip_slot *ip_tab; /* IP_SLOTS, rt_sys_mmap */
typedef struct stk_slot {
    _Atomic uint64_t h; /* hash of a stack's return addresses, never 0 */
    _Atomic int32_t v;  /* -1 not a site, s + 1 site s */
} stk_slot;
static stk_slot *stk_tab;         /* STK_SLOTS, plan mode */
static uint32_t stack_depth;      /* OBJTIER_STACK_DEPTH */
static uint64_t self_lo, self_hi; /* the runtime's own code: frames skipped, as context.c */
static uint32_t n_sites;          /* sites in use (plan mode: the plan's, sorted by key) */
static uint64_t site_key[RT_SARENA_MAX_SITES]; /* plan key, or ip (all mode) */
static uint8_t site_tier[RT_SARENA_MAX_SITES];
static uint64_t site_cap[RT_SARENA_MAX_SITES]; /* fast, swap tier: most locked bytes, 0 = none */
static _Atomic uint32_t site_ctx[RT_SARENA_MAX_SITES]; /* a context id of the site, 0 unknown */
static uint64_t *frame0s; /* plan mode: the records' frame0 keys, sorted */
static uint32_t n_frame0s;

static const char *mode_name(void)
{
    return mode == MODE_ALL ? "all" : mode == MODE_WATCH ? "watch" : "plan";
}

/* ---- choice ------------------------------------------------------------------------ */

static inline uint32_t ip_hash(uintptr_t ip)
{
    return (uint32_t)(((uint64_t)ip * 0x9E3779B97F4A7C15ULL) >> 50) & (IP_SLOTS - 1);
}

/* The slot of ip, or the empty slot where it would go (NULL when the table is full). */
static ip_slot *ip_find(uintptr_t ip)
{
    uint32_t h = ip_hash(ip);
    for (uint32_t i = 0; i < IP_SLOTS; i++) {
        ip_slot *s = &ip_tab[(h + i) & (IP_SLOTS - 1)];
        uintptr_t v = atomic_load_explicit(&s->ip, memory_order_acquire);
        if (v == ip || v == 0)
            return s;
    }
    return NULL;
}

static int has_u64(const uint64_t *a, uint32_t n, uint64_t x, uint32_t *at)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (at)
        *at = lo;
    return lo < n && a[lo] == x;
}

/* The one-frame key of ip, as rt_context_key computes it for a frame. */
static uint64_t frame0_key(uintptr_t ip)
{
    uint64_t base = 0;
    size_t len = 0;
    rt_context_lock();
    uint32_t m = rt_modules_map(&rt_w, ip, &base);
    const char *path = m ? rt_modules_path(m, &len) : NULL;
    size_t start = len;
    while (path && start > 0 && path[start - 1] != '/')
        start--;
    uint64_t h = ot_context_key_frame(OT_FNV64_OFFSET, path ? path + start : "",
                                      path ? len - start : 0, ip - base);
    rt_context_unlock();
    return h;
}

/* The value of a new ip (slock held). */
static int32_t first_sight(uintptr_t ip, uint64_t k0)
{
    if (mode != MODE_ALL)
        return has_u64(frame0s, n_frame0s, k0, NULL) ? -2 : -1;
    if (n_sites == RT_SARENA_MAX_SITES)
        return -1;
    site_key[n_sites] = ip;
    site_tier[n_sites] = TIER_NONE;
    return (int32_t)++n_sites;
}

static int32_t ip_value(uintptr_t ip)
{
    ip_slot *s = ip_find(ip);
    if (s && atomic_load_explicit(&s->ip, memory_order_acquire) == ip)
        return atomic_load_explicit(&s->v, memory_order_acquire);
    uint64_t k0 = mode != MODE_ALL ? frame0_key(ip) : 0;
    pthread_mutex_lock(&slock);
    int32_t v = -1;
    s = ip_find(ip);
    if (s && atomic_load(&s->ip) == ip)
        v = atomic_load(&s->v);
    else if (s) {
        v = first_sight(ip, k0);
        atomic_store_explicit(&s->ip, ip, memory_order_release);
        atomic_store_explicit(&s->v, v, memory_order_release);
    } /* else a full table: this ip is not served */
    pthread_mutex_unlock(&slock);
    return v;
}

/* The hash of the caller's stack as rt_context_capture would record it: the first
 * OBJTIER_STACK_DEPTH return addresses outside the runtime. */
static uint64_t stack_hash(void)
{
    void *ips[RT_MAX_STACK_DEPTH + 8];
    int n = unw_backtrace(ips, (int)stack_depth + 8), first = 0;
    while (first < n && (uintptr_t)ips[first] >= self_lo && (uintptr_t)ips[first] < self_hi)
        first++;
    int depth = n - first < (int)stack_depth ? n - first : (int)stack_depth;
    uint64_t h = OT_FNV64_OFFSET ^ (uint64_t)depth;
    for (int i = 0; i < depth; i++)
        h = (h ^ (uint64_t)(uintptr_t)ips[first + i]) * 0x100000001B3ULL;
    h ^= h >> 29;
    return h ? h : 1;
}

static stk_slot *stk_find(uint64_t h)
{
    for (uint32_t i = 0; i < STK_SLOTS; i++) {
        stk_slot *s = &stk_tab[((uint32_t)h + i) & (STK_SLOTS - 1)];
        uint64_t v = atomic_load_explicit(&s->h, memory_order_acquire);
        if (v == h || v == 0)
            return s;
    }
    return NULL;
}

int rt_sarena_site_of(size_t n, const void *ip)
{
    (void)n;
    int32_t v = ip_value((uintptr_t)ip);
    if (v > 0)
        return v - 1;
    if (v != -2)
        return -1;
    uint64_t h = stack_hash();
    stk_slot *s = stk_find(h);
    if (s && atomic_load_explicit(&s->h, memory_order_acquire) == h) {
        int32_t d = atomic_load_explicit(&s->v, memory_order_acquire);
        if (d != 0)
            return d > 0 ? d - 1 : -1;
    }
    uint32_t ctx = rt_context_capture(&rt_w);
    if (ctx == 0)
        return -1;
    uint32_t at;
    int32_t d = has_u64(site_key, n_sites, rt_context_key(ctx), &at) ? (int32_t)at + 1 : -1;
    if (d > 0 && atomic_load_explicit(&site_ctx[at], memory_order_relaxed) == 0)
        atomic_store_explicit(&site_ctx[at], ctx, memory_order_relaxed);
    pthread_mutex_lock(&slock);
    s = stk_find(h);
    if (s && atomic_load(&s->h) == 0) {
        atomic_store_explicit(&s->h, h, memory_order_release);
        atomic_store_explicit(&s->v, d, memory_order_release);
    }
    pthread_mutex_unlock(&slock);
    return d > 0 ? d - 1 : -1;
}

/* ---- tier actions ------------------------------------------------------------------ */

static long sys_mbind(void *a, size_t len, int mpol, uint64_t mask)
{
    unsigned long m[1] = {(unsigned long)mask};
    return syscall(SYS_mbind, a, len, mpol, m, 65, 0);
}

void rt_sarena_site_chunk(uint32_t s, void *c, size_t len, rt_sarena_counts *k)
{
    if (mode == MODE_WATCH)
        rt_sarena_watch_chunk(s, site_key[s], atomic_load(&site_ctx[s]), c, len);
    int t = site_tier[s];
    if (t == TIER_NONE)
        return;
    if (numa) {
        uint64_t mask = t == TIER_FAST ? fast_mask : slow_mask;
        int mpol = t == TIER_FAST && !strict ? MPOL_PREFERRED_ : MPOL_BIND_;
        if (mpol == MPOL_PREFERRED_)
            mask &= -mask; /* preferred takes one node */
        if (mask && sys_mbind(c, len, mpol, mask) == 0)
            k->bound_bytes += len;
        else
            k->bind_failed++;
        return;
    }
    if (t != TIER_FAST)
        return;
    /* the site's own cap (the plan's lock_bytes: its first chunks, the part of a cyclic
     * pass LRU would lose anyway) leaves the rest to the kernel, and is no failure */
    if (site_cap[s] && k->locked_bytes + len > site_cap[s])
        return;
    pthread_mutex_lock(&slock);
    int room = !lock_cap || locked_total + len <= lock_cap; /* the limit all sites share */
    if (room)
        locked_total += len;
    pthread_mutex_unlock(&slock);
    /* locked as touched: a chunk's untouched tail costs nothing */
    long r = room ? syscall(SYS_mlock2, c, len, MLOCK_ONFAULT) : -1;
    if (r == 0)
        k->locked_bytes += len;
    else
        k->lock_failed++;
}

void rt_sarena_site_chunk_full(uint32_t s, void *c, size_t len, rt_sarena_counts *k)
{
    if (site_tier[s] == TIER_SLOW && !numa && syscall(SYS_madvise, c, len, MADV_COLD) == 0)
        k->cold_bytes += len;
}

/* ---- start-up, exit, fork ---------------------------------------------------------- */

/* The plan's `site` records, sorted by key into site_key/site_tier, and their frame0s. */
static int take_plan_sites(void)
{
    const rt_plan *p = &rt_plan_in_force;
    uint64_t n = p->n_sites;
    if (n > RT_SARENA_MAX_SITES) {
        rt_log(1, "plan: %llu sites; arenas for the first %u", (unsigned long long)n,
               RT_SARENA_MAX_SITES);
        n = RT_SARENA_MAX_SITES;
    }
    frame0s = rt_sys_mmap(RT_SARENA_MAX_SITES * sizeof *frame0s);
    if (!frame0s)
        return -1;
    for (uint64_t i = 0; i < n; i++) { /* insertion sorts: few records */
        const rt_plan_site *r = &p->sites[i];
        uint32_t at;
        if (!has_u64(site_key, n_sites, r->key, &at)) { /* the first record of a key wins */
            memmove(site_key + at + 1, site_key + at, (n_sites - at) * sizeof *site_key);
            memmove(site_tier + at + 1, site_tier + at, n_sites - at);
            memmove(site_cap + at + 1, site_cap + at, (n_sites - at) * sizeof *site_cap);
            site_key[at] = r->key;
            site_tier[at] = r->tier == RT_PLAN_SLOW    ? TIER_SLOW
                            : r->tier == RT_PLAN_APART ? TIER_NONE
                                                       : TIER_FAST;
            site_cap[at] = r->lock_bytes;
            n_sites++;
        }
        if (!has_u64(frame0s, n_frame0s, r->frame0, &at)) {
            memmove(frame0s + at + 1, frame0s + at, (n_frame0s - at) * sizeof *frame0s);
            frame0s[at] = r->frame0;
            n_frame0s++;
        }
    }
    return 0;
}

/* The sites of OBJTIER_ARENA_SITES, sorted by key into site_key (no tier), and their
 * frame0s. 0, or -1 (logged) when the file is not a sites file. */
static void put_watch_sites(const uint64_t *keys, const uint64_t *f0, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at;
        if (!has_u64(site_key, n_sites, keys[i], &at)) {
            memmove(site_key + at + 1, site_key + at, (n_sites - at) * sizeof *site_key);
            site_key[at] = keys[i];
            n_sites++;
        }
        if (!has_u64(frame0s, n_frame0s, f0[i], &at)) {
            memmove(frame0s + at + 1, frame0s + at, (n_frame0s - at) * sizeof *frame0s);
            frame0s[at] = f0[i];
            n_frame0s++;
        }
    }
    memset(site_tier, TIER_NONE, sizeof site_tier);
}

/* OBJTIER_ARENA_SITES, or with OBJTIER_ARENA_LEARN (path NULL) none yet: they are learned
 * (arena_watch.c) and rt_sarena_watch_begin turns serving on. 0 or -1. */
static int take_watch_sites(const char *path, const rt_config *cfg)
{
    uint64_t keys[RT_SARENA_MAX_SITES], f0[RT_SARENA_MAX_SITES];
    int n = path ? rt_sarena_watch_read(path, keys, f0, RT_SARENA_MAX_SITES) : 0;
    frame0s = n > 0 || !path ? rt_sys_mmap(RT_SARENA_MAX_SITES * sizeof *frame0s) : NULL;
    if ((path && n <= 0) || !frame0s || rt_sarena_watch_init() != 0)
        return -1;
    if (!path)
        return rt_sarena_learn_init(cfg->arena_learn, cfg->arena_learn_bytes);
    put_watch_sites(keys, f0, (uint32_t)n);
    return 0;
}

void rt_sarena_watch_begin(const uint64_t *keys, const uint64_t *f0, uint32_t n)
{
    if (mode != MODE_WATCH || atomic_load(&rt_sarena_serving))
        return;
    put_watch_sites(keys, f0, n); /* before serving: no reader yet */
    atomic_store(&rt_sarena_serving, 1);
}

void rt_sarena_init(const rt_config *cfg)
{
    if (strcmp(cfg->arena, "off") == 0)
        return;
    if (cfg->arena[0] && strcmp(cfg->arena, "all") != 0) {
        rt_log(1, "OBJTIER_ARENA=%s is not all or off; no arenas", cfg->arena);
        return;
    }
    int planned = atomic_load(&rt_place_on) && rt_plan_in_force.n_sites > 0;
    mode = cfg->arena[0] ? MODE_ALL : planned ? MODE_PLAN : MODE_OFF;
    int learn = !cfg->arena_sites[0] && cfg->arena_learn > 0;
    if (mode == MODE_OFF && (cfg->arena_sites[0] || learn)) {
        if (!cfg->output[0]) /* watching is for recordings: nothing to register with */
            return;
        mode = MODE_WATCH;
    } else if (mode != MODE_OFF && (cfg->arena_sites[0] || learn))
        rt_log(1, "OBJTIER_ARENA_SITES/LEARN ignored: arenas already serve %s",
               mode == MODE_ALL ? "every call site (OBJTIER_ARENA=all)" : "the plan's sites");
    if (mode == MODE_OFF)
        return;
    numa = cfg->tier == RT_TIER_NUMA;
    strict = cfg->numa_strict;
    follow = cfg->follow_forks;
    lock_cap = cfg->mlock_limit;
    if (numa && mode == MODE_PLAN &&
        (rt_parse_nodes(cfg->fast_nodes, &fast_mask) ||
         rt_parse_nodes(cfg->slow_nodes, &slow_mask)))
        fast_mask = slow_mask = 0; /* tier_numa.c said so already; mbind is counted failed */
    snprintf(stats_path, sizeof stats_path, "%s", cfg->arena_stats);
    ip_tab = rt_sys_mmap(IP_SLOTS * sizeof *ip_tab);
    stk_tab = mode != MODE_ALL ? rt_sys_mmap(STK_SLOTS * sizeof *stk_tab) : NULL;
    stack_depth = cfg->stack_depth;
    rt_context_lock();
    if (rt_modules_range_of((uint64_t)(uintptr_t)&rt_sarena_init, &self_lo, &self_hi) != 0)
        self_lo = self_hi = 0;
    rt_context_unlock();
    if (mode == MODE_WATCH &&
        (!ip_tab || !stk_tab || take_watch_sites(learn ? NULL : cfg->arena_sites, cfg))) {
        rt_log(1, "no watched sites");
        mode = MODE_OFF;
        return;
    }
    if (!ip_tab || (mode == MODE_PLAN && (!stk_tab || take_plan_sites() != 0))) {
        rt_log(1, "out of memory setting up arenas; no arenas");
        mode = MODE_OFF;
        return;
    }
    rt_sarena_alloc_init();
    rt_log(0, "arenas: %s, %u sites%s", mode_name(), n_sites, learn ? " (learning)" : "");
    if (!learn)
        atomic_store(&rt_sarena_serving, 1);
}

void rt_sarena_site_fork_prepare(void)
{
    pthread_mutex_lock(&slock);
}

void rt_sarena_site_fork_parent(void)
{
    pthread_mutex_unlock(&slock);
}

void rt_sarena_site_fork_child(void)
{
    pthread_mutex_init(&slock, NULL);
    locked_total = 0; /* mlocks are not inherited */
    /* a child that writes no trace of its own has no context table to unwind into */
    if (mode != MODE_ALL && !follow)
        atomic_store(&rt_sarena_serving, 0);
    if (mode == MODE_WATCH)
        rt_sarena_watch_fork_child();
}

/* One line of counts per process, appended to OBJTIER_ARENA_STATS at exit. */
__attribute__((destructor)) static void write_stats(void)
{
    if (mode == MODE_OFF)
        return;
    rt_sarena_counts t = {0};
    uint32_t used = 0;
    for (uint32_t s = 0; s < n_sites; s++) {
        rt_sarena_counts k;
        rt_sarena_read_counts(s, &k);
        used += k.blocks > 0;
        uint64_t *a = (uint64_t *)&t, *b = (uint64_t *)&k;
        for (size_t i = 0; i < sizeof t / sizeof(uint64_t); i++)
            a[i] += b[i];
    }
    if (mode == MODE_WATCH && t.blocks == 0)
        rt_log(0, "watched sites: no allocation of the %u sites was served from an arena", n_sites);
    else if (mode == MODE_PLAN && t.blocks == 0)
        rt_log(follow == 0,
               "plan: no allocation of its %u sites was served from an arena "
               "(another binary, other inputs, another OBJTIER_STACK_DEPTH?)",
               n_sites);
    else
        rt_log(0, "arenas: %llu blocks of %u sites, %llu chunks of 1 MiB, %llu live bytes",
               (unsigned long long)t.blocks, used, (unsigned long long)t.chunks,
               (unsigned long long)t.live_bytes);
    if (!stats_path[0])
        return;
    char line[768];
    int w = snprintf(
        line, sizeof line,
        "pid=%d mode=%s sites=%u sites_used=%u blocks=%llu reused=%llu frees=%llu "
        "live_blocks=%llu live_bytes=%llu carved_bytes=%llu waste_bytes=%llu chunks=%llu "
        "chunk_bytes=%llu no_memory=%llu locked_bytes=%llu lock_failed=%llu cold_bytes=%llu "
        "bound_bytes=%llu bind_failed=%llu\n",
        (int)getpid(), mode_name(), n_sites, used, (unsigned long long)t.blocks,
        (unsigned long long)t.reused, (unsigned long long)t.frees,
        (unsigned long long)t.live_blocks, (unsigned long long)t.live_bytes,
        (unsigned long long)t.carved_bytes, (unsigned long long)t.waste_bytes,
        (unsigned long long)t.chunks, (unsigned long long)t.chunks * RT_SARENA_CHUNK_BYTES,
        (unsigned long long)t.no_memory, (unsigned long long)t.locked_bytes,
        (unsigned long long)t.lock_failed, (unsigned long long)t.cold_bytes,
        (unsigned long long)t.bound_bytes, (unsigned long long)t.bind_failed);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, stats_path,
                          O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || w <= 0)
        return;
    rt_sys_write_all(fd, line, (size_t)w < sizeof line ? (size_t)w : sizeof line - 1);
    syscall(SYS_close, fd);
}
