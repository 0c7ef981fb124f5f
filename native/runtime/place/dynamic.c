/*
 * Dynamic placement on the swap tier: the schedule of OBJTIER_DYNAMIC (dynamic.h).
 *
 * Text form (objtier.plan.dynamic_file), one record per line:
 *     objtier-dynamic 1
 *     page PAGE_BYTES
 *     scale CLOCK_SCALE
 *     object ID KEY OCC SIZE        ids dense from 0, in order
 *     step SWITCH OFFSET_NS         steps in (SWITCH, OFFSET_NS) order
 *     ACTION ID FIRST PAGES         unlock|pageout|lock|willneed|sweep, of the last step
 *
 * Invariants (all under `lock`):
 *   - objs[i].addr != 0 exactly while the allocation matched to schedule object i is live;
 *     objs[i].locked is what this module mlocked of it and has not unlocked since.
 *   - steps [0, cursor) have been started or skipped; a started step whose actions did not all
 *     fit the call budget is `pending` from action pend_act on, until it finishes or, out of
 *     calls, a newer step becomes due (then the rest is dropped: it is stale). Steps that fall
 *     due together (a late wake-up) run in order while calls are left.
 *   - step i is due when steps[i].sw < sw_now (stale: skipped) or steps[i].sw == sw_now and
 *     now >= t_switch + off_ns * scale.
 *   - advice calls take tokens of the shared bucket (advice.h): OBJTIER_ADVICE_RATE per second.
 *   - objs[i].defer_act != 0: a lock/willneed of a step found object i not live; it is applied
 *     (by the thread, within the budget) once the object is allocated; deferred_ready is set
 *     while such an object is live.
 * Pressure guard (under a memory limit, every RT_MOVING_GUARD_NS, memcg.h;
 * OBJTIER_PRESSURE_MS=0: off): while the cgroup is near its limit with too little on the
 * inactive list, MADV_COLD on the live schedule objects in GUARD_CHUNK pieces (guard());
 * mlocked pieces refuse it and are skipped.
 * Overhead counted: advice_ns is the time spent inside the advice calls (in the schedule's
 * thread and in the program's thread at a switch), thread_cpu_ns the schedule thread's CPU
 * time, willneed_bytes what was prefetched (WILLNEED, alone or before an mlock).
 */
#define _GNU_SOURCE
#include "dynamic.h"
#include "advice.h"
#include "memcg.h"
#include "plankey.h"
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILE_BYTES (256u << 20)
#define GUARD_CHUNK    (2ull << 20) /* bytes advised per call at most */
#define GUARD_CALLS    64           /* calls per pass at most (refused ones count) */

enum { A_UNLOCK = 1, A_PAGEOUT, A_LOCK, A_WILLNEED, A_SWEEP };
static const char *const action_names[] = {"", "unlock", "pageout", "lock", "willneed", "sweep"};
static const unsigned action_calls[] = {0, 2, 2, 2, 1, 0}; /* system calls per range */

typedef struct {
    uint64_t key, occ, size;
    uint64_t addr;   /* 0 = not live */
    uint64_t locked; /* bytes mlocked here */
    /* a lock or willneed action that found the object not yet live: applied when it is
     * allocated (the recording's clock put the step after the allocation, this run's did not) */
    uint32_t defer_act;
    uint64_t defer_first, defer_pages;
} dobj;

typedef struct {
    uint32_t sw;
    uint64_t off_ns;
    uint64_t first, n; /* its actions: acts[first, first + n) */
} dstep;

typedef struct {
    uint32_t act, obj;
    uint64_t first, pages;
} dact;

typedef struct {
    uint64_t key, count; /* allocations of this key so far (next occurrence) */
} dkey;

static int on;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static pthread_t thread;
static int thread_started, tstop;

static dobj *objs;
static dstep *steps;
static dact *acts;
static dkey *keys;
static uint32_t n_objs, n_steps, n_keys;
static uint64_t n_acts;
static uint64_t page_bytes = 4096;
static double clock_scale = 1.0;
static char stats_path[1024];

static int deferred_ready; /* an object with a deferred action became live */
static uint32_t sw_now;
static uint64_t t_switch;
static uint32_t cursor;
static int pending;
static uint32_t pend_step;
static uint64_t pend_act;
static double rate;      /* OBJTIER_ADVICE_RATE: the shared bucket's (advice.h) */
static uint64_t t_check; /* the time run_due checks the bucket at */
static uint64_t lock_limit, locked_bytes;

/* the pressure guard (thread only): under a limit, every guard_ns */
static const rt_memcg *memcg;
static uint64_t guard_ns;
static uint32_t guard_obj; /* the clock hand: the object and byte offset the next pass */
static uint64_t guard_off; /* starts from */
static struct {
    uint64_t passes, calls, bytes;
} gst;

static struct {
    uint64_t switches, steps_applied, steps_skipped, actions_applied, actions_dropped,
        actions_absent, sweep_hints, calls_mlock, calls_munlock, calls_pageout, calls_cold,
        calls_willneed, calls_failed, lock_refused, budget_waits, locked_peak, objects_matched,
        willneed_bytes, advice_ns, thread_cpu_ns, actions_deferred;
} st;

/* ---- parsing ------------------------------------------------------------------------- */

static int parse_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *p = s;
    *out = v;
    return 0;
}

static int parse_hex16(const char **p, uint64_t *out)
{
    uint64_t v = 0;
    const char *s = *p;
    for (int i = 0; i < 16; i++, s++) {
        int d = (*s >= '0' && *s <= '9') ? *s - '0' : (*s >= 'a' && *s <= 'f') ? *s - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *p = s;
    *out = v;
    return 0;
}

static int word(const char **p, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(*p, w, n) != 0 || ((*p)[n] != ' ' && (*p)[n] != '\n' && (*p)[n] != 0))
        return 0;
    *p += n;
    return 1;
}

static int space(const char **p)
{
    if (**p != ' ')
        return -1;
    (*p)++;
    return 0;
}

static void *grab(size_t count, size_t size)
{
    return rt_sys_mmap(count ? count * size : size);
}

/* Parse buf (NUL-terminated); 0, or -1 with the line number in *bad_line. */
static int parse(const char *buf, uint64_t lines, uint64_t *bad_line)
{
    objs = grab(lines, sizeof *objs);
    steps = grab(lines, sizeof *steps);
    acts = grab(lines, sizeof *acts);
    keys = grab(lines, sizeof *keys);
    if (!objs || !steps || !acts || !keys)
        return -1;
    const char *p = buf;
    uint64_t line = 0;
    if (strncmp(p, "objtier-dynamic 1\n", 18) != 0) {
        *bad_line = 1;
        return -1;
    }
    p += 18;
    line = 1;
    while (*p) {
        line++;
        *bad_line = line;
        uint64_t a, b, c, d;
        if (*p == '\n' || *p == '#') {
            while (*p && *p != '\n')
                p++;
        } else if (word(&p, "page")) {
            if (space(&p) || parse_u64(&p, &a) || !a || (a & (a - 1)))
                return -1;
            page_bytes = a;
        } else if (word(&p, "scale")) {
            if (space(&p))
                return -1;
            char *end;
            clock_scale = strtod(p, &end);
            if (end == p || !(clock_scale > 0) || clock_scale > 1e6)
                return -1;
            p = end;
        } else if (word(&p, "object")) {
            if (space(&p) || parse_u64(&p, &a) || a != n_objs || space(&p) || parse_hex16(&p, &b) ||
                space(&p) || parse_u64(&p, &c) || space(&p) || parse_u64(&p, &d) || !d)
                return -1;
            objs[n_objs++] = (dobj){.key = b, .occ = c, .size = d};
            uint32_t k = 0;
            while (k < n_keys && keys[k].key != b)
                k++;
            if (k == n_keys)
                keys[n_keys++] = (dkey){.key = b};
        } else if (word(&p, "step")) {
            if (space(&p) || parse_u64(&p, &a) || a > UINT32_MAX || space(&p) || parse_u64(&p, &b))
                return -1;
            if (n_steps && (a < steps[n_steps - 1].sw ||
                            (a == steps[n_steps - 1].sw && b <= steps[n_steps - 1].off_ns)))
                return -1; /* out of order */
            steps[n_steps++] = (dstep){.sw = (uint32_t)a, .off_ns = b, .first = n_acts};
        } else {
            uint32_t act = 0;
            for (uint32_t i = A_UNLOCK; i <= A_SWEEP && !act; i++)
                if (word(&p, action_names[i]))
                    act = i;
            if (!act || !n_steps || space(&p) || parse_u64(&p, &a) || a >= n_objs || space(&p) ||
                parse_u64(&p, &b) || space(&p) || parse_u64(&p, &c))
                return -1;
            acts[n_acts++] = (dact){.act = act, .obj = (uint32_t)a, .first = b, .pages = c};
            steps[n_steps - 1].n++;
        }
        if (*p == '\n')
            p++;
        else if (*p)
            return -1;
    }
    return 0;
}

static int load(const char *path, char *err, size_t err_len)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(err, err_len, "cannot read schedule %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > MAX_FILE_BYTES) {
        close(fd);
        snprintf(err, err_len, "cannot read schedule %s: not a regular file of at most %u MiB",
                 path, MAX_FILE_BYTES >> 20);
        return -1;
    }
    size_t cap = (size_t)sb.st_size + 1;
    char *buf = rt_sys_mmap(cap);
    size_t got = 0;
    while (buf && got < cap - 1) {
        long r = syscall(SYS_read, fd, buf + got, cap - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf) {
        snprintf(err, err_len, "cannot read schedule %s: out of memory", path);
        return -1;
    }
    buf[got] = 0;
    uint64_t lines = 1;
    for (size_t i = 0; i < got; i++)
        lines += buf[i] == '\n';
    uint64_t bad = 0;
    int r = parse(buf, lines, &bad);
    rt_sys_munmap(buf, cap);
    if (r != 0) {
        snprintf(err, err_len, "schedule %s: line %llu is malformed", path,
                 (unsigned long long)bad);
        return -1;
    }
    return 0;
}

/* ---- applying ------------------------------------------------------------------------ */

/* The whole pages object o (live) spans: [*base, *end), page_bytes aligned. */
static void span(const dobj *o, uint64_t *base, uint64_t *end)
{
    *base = o->addr & ~(page_bytes - 1);
    *end = (o->addr + o->size + page_bytes - 1) & ~(page_bytes - 1);
}

static int call(long nr, uint64_t a, uint64_t len, long arg, uint64_t *counter)
{
    return rt_advice_call(nr, a, len, arg, counter, &st.advice_ns, &st.calls_failed);
}

static void apply(const dact *x)
{
    if (x->act == A_SWEEP) { /* the runtime does not follow faults: a hint only (counted) */
        st.sweep_hints++;
        return;
    }
    dobj *o = &objs[x->obj];
    if (!o->addr) {
        if ((x->act == A_LOCK || x->act == A_WILLNEED) && !o->defer_act) {
            o->defer_act = x->act;
            o->defer_first = x->first;
            o->defer_pages = x->pages;
            st.actions_deferred++;
        } else {
            st.actions_absent++;
        }
        return;
    }
    uint64_t base, end;
    span(o, &base, &end);
    if (x->first >= (end - base) / page_bytes)
        return;
    uint64_t a = base + x->first * page_bytes;
    uint64_t len = x->pages * page_bytes;
    if (len > end - a)
        len = end - a;
    if (!len)
        return;
    st.actions_applied++;
    switch (x->act) {
    case A_UNLOCK:
    case A_PAGEOUT: {
        call(SYS_munlock, a, len, -1, &st.calls_munlock);
        uint64_t freed = len < o->locked ? len : o->locked;
        o->locked -= freed;
        locked_bytes -= freed < locked_bytes ? freed : locked_bytes;
        /* unlocked pages go cold (inactive list) or out at once: the mlock of the step's
         * new set that follows charges the cgroup, and reclaim must find them first (without
         * it, swapping one locked 14 MiB array for another under a 20 MiB cgroup v1 limit
         * ended in the cgroup's OOM killer; placement.c saw the same at 40 MiB) */
        if (x->act == A_PAGEOUT)
            call(SYS_madvise, a, len, MADV_PAGEOUT, &st.calls_pageout);
        else
            call(SYS_madvise, a, len, MADV_COLD, &st.calls_cold);
        break;
    }
    case A_LOCK:
        call(SYS_madvise, a, len, MADV_WILLNEED, &st.calls_willneed);
        st.willneed_bytes += len;
        if (locked_bytes + len > lock_limit) {
            st.lock_refused++;
            break;
        }
        if (call(SYS_mlock, a, len, -1, &st.calls_mlock)) {
            o->locked += len;
            locked_bytes += len;
            if (locked_bytes > st.locked_peak)
                st.locked_peak = locked_bytes;
        }
        break;
    case A_WILLNEED: /* prefetch: the swap-ins are started, the pages stay unlocked */
        call(SYS_madvise, a, len, MADV_WILLNEED, &st.calls_willneed);
        st.willneed_bytes += len;
        break;
    default: break;
    }
}

/* The deferred actions of objects now live, within the call budget. */
static void run_deferred(void)
{
    deferred_ready = 0;
    for (uint32_t i = 0; i < n_objs; i++) {
        dobj *o = &objs[i];
        if (!o->defer_act || !o->addr)
            continue;
        if (!rt_advice_has(t_check, action_calls[o->defer_act])) {
            deferred_ready = 1; /* the rest when calls are back */
            return;
        }
        dact x = {.act = o->defer_act, .obj = i, .first = o->defer_first, .pages = o->defer_pages};
        o->defer_act = 0;
        apply(&x);
    }
}

static int due(uint32_t i, uint64_t now)
{
    if (steps[i].sw < sw_now)
        return 1;
    return steps[i].sw == sw_now &&
           now >= t_switch + (uint64_t)((double)steps[i].off_ns * clock_scale);
}

/* Apply what is due at `now` within the call budget. Returns when the next thing is due
 * (UINT64_MAX: at the next switch only). Called with `lock` held. */
static uint64_t run_due(uint64_t now)
{
    t_check = now;
    if (deferred_ready)
        run_deferred();
    for (;;) {
        if (pending) {
            const dstep *s = &steps[pend_step];
            while (pend_act < s->first + s->n &&
                   rt_advice_has(now, action_calls[acts[pend_act].act]))
                apply(&acts[pend_act++]);
            if (pend_act < s->first + s->n) {               /* out of calls */
                if (cursor < n_steps && due(cursor, now)) { /* a newer step: the rest is stale */
                    st.actions_dropped += s->first + s->n - pend_act;
                    pending = 0;
                    continue;
                }
                st.budget_waits++;
                return now + rt_advice_wait_ns(action_calls[acts[pend_act].act]);
            }
            pending = 0;
        }
        if (cursor < n_steps && due(cursor, now)) {
            if (steps[cursor].sw < sw_now) {
                st.steps_skipped++;
            } else {
                pending = 1;
                pend_step = cursor;
                pend_act = steps[cursor].first;
                st.steps_applied++;
            }
            cursor++;
            continue;
        }
        break;
    }
    if (deferred_ready)
        return now + (uint64_t)(1e9 / rate) + 1;
    if (cursor < n_steps && steps[cursor].sw == sw_now)
        return t_switch + (uint64_t)((double)steps[cursor].off_ns * clock_scale);
    return UINT64_MAX;
}

/* Near the cgroup's limit with less than RT_MOVING_GUARD_PCT % of it on the inactive list
 * (rt_memcg_inactive_shortfall), MADV_COLD on about the shortfall in the live schedule
 * objects, GUARD_CHUNK at a time from a clock hand, so that successive passes age every object
 * in turn, at most GUARD_CALLS calls a pass (the lock is held: the program's allocation hooks
 * wait). Objects wholly locked are passed over; a piece holding mlocked pages is refused
 * (EINVAL at the locked part) and counts nothing. Without it, a schedule whose locks leave the
 * program's other pages all active ends in the cgroup's OOM killer where the kernel alone
 * lives (BFS uniform s17 at 50 %, next-use every 50 ms: 2 of 5 runs killed; 1 of 5 with it).
 * Not through the advice budget: a pass is a safeguard, not a placement. Caller holds
 * `lock`. */
static void guard(void)
{
    uint64_t want = rt_memcg_moving_guard_want(memcg);
    if (!want || !n_objs)
        return;
    gst.passes++;
    uint64_t done = 0, calls = 0;
    for (uint32_t moves = 0; done < want && moves <= 2 * n_objs && calls < GUARD_CALLS;) {
        if (guard_obj >= n_objs) {
            guard_obj = 0;
            moves++;
        }
        const dobj *o = &objs[guard_obj];
        uint64_t base, end;
        span(o, &base, &end);
        if (!o->addr || base + guard_off >= end || o->locked >= end - base) {
            guard_obj++;
            guard_off = 0;
            moves++;
            continue;
        }
        uint64_t len = end - base - guard_off, rest = want - done;
        rest = (rest + page_bytes - 1) & ~(page_bytes - 1);
        if (len > GUARD_CHUNK)
            len = GUARD_CHUNK;
        if (len > rest)
            len = rest;
        uint64_t t0 = rt_now_ns();
        long r =
            syscall(SYS_madvise, (void *)(uintptr_t)(base + guard_off), (size_t)len, MADV_COLD);
        st.advice_ns += rt_now_ns() - t0;
        gst.calls++;
        calls++;
        if (r == 0)
            done += len;
        guard_off += len;
    }
    gst.bytes += done;
}

static void *loop(void *arg)
{
    (void)arg;
    rt_guard = 1;
    rt_thread_stay_home();
    pthread_mutex_lock(&lock);
    uint64_t next_guard = guard_ns ? rt_now_ns() + guard_ns : UINT64_MAX;
    while (!tstop) {
        uint64_t now = rt_now_ns();
        if (now >= next_guard) {
            guard();
            next_guard = rt_now_ns() + guard_ns;
        }
        uint64_t wake = run_due(now);
        if (next_guard < wake)
            wake = next_guard;
        if (wake == UINT64_MAX) {
            pthread_cond_wait(&cond, &lock);
        } else {
            struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000ull),
                                  .tv_nsec = (long)(wake % 1000000000ull)};
            pthread_cond_timedwait(&cond, &lock, &ts);
        }
    }
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        st.thread_cpu_ns = (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* ---- hooks --------------------------------------------------------------------------- */

void rt_dyn_init(const rt_config *cfg)
{
    if (!cfg->dynamic[0])
        return;
    char err[1400];
    if (load(cfg->dynamic, err, sizeof err) != 0) {
        rt_log(1, "%s; running without the dynamic schedule", err);
        return;
    }
    if (page_bytes != rt_page_bytes)
        rt_log(1, "schedule %s counts pages of %llu bytes, this machine's are %zu", cfg->dynamic,
               (unsigned long long)page_bytes, rt_page_bytes);
    memcpy(stats_path, cfg->dynamic_stats, sizeof stats_path);
    rate = (double)cfg->advice_rate;
    lock_limit = cfg->mlock_limit ? cfg->mlock_limit : UINT64_MAX;
    memcg = rt_memcg_self();
    guard_ns = memcg->limit != UINT64_MAX && cfg->pressure_ms ? RT_MOVING_GUARD_NS : 0;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cond, &ca);
    pthread_mutex_lock(&lock);
    t_switch = rt_now_ns();
    rt_advice_init(rate, t_switch);
    on = 1;
    run_due(t_switch);
    pthread_mutex_unlock(&lock);
    tstop = 0;
    thread_started = pthread_create(&thread, NULL, loop, NULL) == 0;
    if (!thread_started)
        rt_log(1, "cannot start the dynamic placement thread; steps run at phase switches only");
    rt_log(0, "dynamic schedule %s: %u objects, %u steps, %llu actions, %.0f calls/s", cfg->dynamic,
           n_objs, n_steps, (unsigned long long)n_acts, rate);
}

void rt_dyn_on_alloc(const rt_obj *ob, uint32_t ctx)
{
    if (!on || ctx == 0)
        return;
    uint64_t key = rt_plankey_of(ctx);
    pthread_mutex_lock(&lock);
    for (uint32_t k = 0; k < n_keys; k++) {
        if (keys[k].key != key)
            continue;
        uint64_t occ = keys[k].count++;
        for (uint32_t i = 0; i < n_objs; i++)
            if (objs[i].key == key && objs[i].occ == occ && objs[i].size == ob->size) {
                objs[i].addr = ob->addr;
                objs[i].locked = 0;
                st.objects_matched++;
                if (objs[i].defer_act && thread_started) { /* the thread applies it */
                    deferred_ready = 1;
                    pthread_cond_signal(&cond);
                }
            }
        break;
    }
    pthread_mutex_unlock(&lock);
}

static void forget(dobj *o)
{
    locked_bytes -= o->locked < locked_bytes ? o->locked : locked_bytes;
    o->addr = 0;
    o->locked = 0;
    o->defer_act = 0;
}

void rt_dyn_release(uint64_t addr)
{
    if (!on)
        return;
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < n_objs; i++)
        if (objs[i].addr == addr) {
            if (objs[i].locked) { /* the allocator may keep the memory: do not leave it locked */
                uint64_t base, end;
                span(&objs[i], &base, &end);
                syscall(SYS_munlock, (void *)(uintptr_t)base, (size_t)(end - base));
            }
            forget(&objs[i]);
        }
    pthread_mutex_unlock(&lock);
}

void rt_dyn_unmap(uint64_t addr, uint64_t len)
{
    if (!on)
        return;
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < n_objs; i++)
        if (objs[i].addr && objs[i].addr < addr + len && addr < objs[i].addr + objs[i].size)
            forget(&objs[i]);
    pthread_mutex_unlock(&lock);
}

void rt_dyn_switch(void)
{
    if (!on)
        return;
    pthread_mutex_lock(&lock);
    sw_now++;
    st.switches++;
    t_switch = rt_now_ns();
    run_due(t_switch); /* the steps at the switch itself, in the caller, within the budget */
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
}

static void write_stats(void)
{
    if (!stats_path[0])
        return;
    char buf[1536];
    int n = snprintf(
        buf, sizeof buf,
        "objects %u\nsteps %u\nactions %llu\nswitches %llu\nsteps_applied %llu\n"
        "steps_skipped %llu\nactions_applied %llu\nactions_dropped %llu\nactions_absent %llu\n"
        "sweep_hints %llu\ncalls_mlock %llu\ncalls_munlock %llu\ncalls_pageout %llu\n"
        "calls_cold %llu\ncalls_willneed %llu\ncalls_failed %llu\nlock_refused %llu\nbudget_waits "
        "%llu\n"
        "locked_peak_bytes %llu\nobjects_matched %llu\nadvice_rate %.0f\nwillneed_bytes %llu\n"
        "advice_ns %llu\nthread_cpu_ns %llu\nactions_deferred %llu\nguard_passes %llu\n"
        "guard_calls %llu\nguard_bytes %llu\n",
        n_objs, n_steps, (unsigned long long)n_acts, (unsigned long long)st.switches,
        (unsigned long long)st.steps_applied, (unsigned long long)st.steps_skipped,
        (unsigned long long)st.actions_applied, (unsigned long long)st.actions_dropped,
        (unsigned long long)st.actions_absent, (unsigned long long)st.sweep_hints,
        (unsigned long long)st.calls_mlock, (unsigned long long)st.calls_munlock,
        (unsigned long long)st.calls_pageout, (unsigned long long)st.calls_cold,
        (unsigned long long)st.calls_willneed, (unsigned long long)st.calls_failed,
        (unsigned long long)st.lock_refused, (unsigned long long)st.budget_waits,
        (unsigned long long)st.locked_peak, (unsigned long long)st.objects_matched, rate,
        (unsigned long long)st.willneed_bytes, (unsigned long long)st.advice_ns,
        (unsigned long long)st.thread_cpu_ns, (unsigned long long)st.actions_deferred,
        (unsigned long long)gst.passes, (unsigned long long)gst.calls,
        (unsigned long long)gst.bytes);
    rt_advice_write_counts(stats_path, buf, n, sizeof buf);
}

void rt_dyn_finish(void)
{
    if (!on)
        return;
    rt_thread_stop(thread, &lock, &cond, &tstop, &thread_started);
    pthread_mutex_lock(&lock);
    write_stats();
    on = 0;
    pthread_mutex_unlock(&lock);
}

void rt_dyn_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    rt_advice_fork_child();
    on = 0;
    thread_started = 0;
}
