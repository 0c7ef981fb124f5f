/*
 * dynamic: a placement schedule learned ahead (objtier.plan.dynamic), swap mode only. The
 * schedule is a list of steps; the driver feeds SIM_EV_PHASE with obj = step index at the time
 * of the step's trigger (a phase switch, an allocation, a time window: events the runtime sees
 * too). At a step, its actions are applied to live pages, in this order:
 *   UNLOCK   munlock: the page leaves the pinned set and joins the LRU head (stays resident);
 *   PAGEOUT  munlock + MADV_PAGEOUT: a fast page is swapped out now (pswpout);
 *   LOCK     MADV_WILLNEED + mlock: a swapped page is brought in (pswpin, not a major fault),
 *            reclaiming an unpinned page first when fast memory is full; a page never resident
 *            is zero-filled (pgfault_first_touch); the page is then pinned;
 *   WILLNEED MADV_WILLNEED: like LOCK without the pin (the page joins the LRU head);
 *   SWEEP    the object is swept in page order until the next step: a major fault on one of
 *            its pages prefetches (WILLNEED) the next `prefetch_pages` pages of the object.
 * A LOCK on an object not allocated yet waits for it: its pages are pinned (and fast) as the
 * allocation creates them, as the runtime applies such a lock once the object is live.
 * Between steps the unpinned pages follow the kernel's reclaim (second-chance LRU), as on the
 * real swap tier. Every page brought in ahead of its access is counted in pswpin (a swap-in is
 * a swap-in whoever asks for it) and in pgprefetch, never in pgmajfault, so swap-ins compare
 * with belady's directly and major faults say how many the program waited for.
 *
 * The advice-call budget (advice_rate > 0) is the runtime's rule (native/runtime/place/
 * dynamic.c): a token bucket of advice_rate calls, refilled at advice_rate per second of run
 * time (one trace second is time_scale seconds of run), starting full. Under it a step's
 * actions run in file order, each only while the bucket holds its calls (unlock, pageout,
 * lock 2, willneed 1, sweep 0; an action on an object not allocated or past its end makes
 * none); the rest of a step waits for tokens (applied at the first access after they are
 * back) until the next step falls due, when whatever still fits runs and the remainder is
 * dropped (actions_dropped_step). A LOCK on an object not allocated yet is recorded for free;
 * its 2 calls are paid when the object's first page is created, or, out of calls then, at the
 * first access after they are back (pages created before that are not pinned). Every call
 * made is counted in advice_calls_step. advice_rate 0: no budget, every action applied at
 * its step in the order UNLOCK, PAGEOUT, LOCK, WILLNEED, SWEEP.
 *
 * Invariants: sweep[o] != 0 exactly for the objects with a SWEEP action in the step in force;
 * majfault_seen == counter[SIM_C_PGMAJFAULT] after every hook returns; 0 <= tokens <= cap;
 * pend_step != 0 exactly while step pend_step - 1 has actions [pend_i, its end) not yet run;
 * unpaid[o] != 0 while object o's deferred LOCK has not been paid for.
 */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dynamic_state {
    uint8_t *sweep;         /* per object: prefetch ahead of its faults in this step */
    uint64_t *defer_first;  /* per object: a LOCK that found it not yet allocated: its pages */
    uint64_t *defer_end;    /* [defer_first, defer_end) are pinned as they are allocated */
    uint64_t majfault_seen; /* major faults counted when the last hook ran */
    uint32_t step;          /* the step in force + 1 (0 before the first) */
    /* the advice-call budget (advice_rate > 0) */
    double tokens, cap, per_ns; /* calls in the bucket, its size, refill per ns of trace */
    uint64_t last_ns;           /* trace time of the last refill */
    uint32_t pend_step;         /* step with actions still to run + 1 (0: none) */
    uint64_t pend_i;            /* its next action */
    uint8_t *unpaid;            /* per object: a deferred LOCK whose calls are not paid */
    int waiting;                /* an allocated object's deferred LOCK waits for calls */
} dynamic_state;

static const unsigned action_calls[] = {0, 2, 2, 2, 1, 0}; /* dynamic.c: calls per range */

static const sim_param_def dynamic_params[] = {
    {"prefetch_pages", 32}, /* pages prefetched ahead of a fault in a swept object (0: none) */
    /* read by the driver when it learns the schedule (objtier.plan.dynamic), not here: */
    {"window_ms", 0},      /* windows inside a phase execution, ms of trace time (0: none) */
    {"min_accesses", 2},   /* accesses in a window for a page to be locked */
    {"pageout", 1},        /* 1: page out what leaves the locked set unused soon; 0: unlock */
    {"mode", 0},           /* 0 auto (the best of the others, simulated), 1 hot, 2 nextuse,
                          * 3 static, 4 online */
    {"chunk_pages", 16},   /* nextuse: pages of an object ranked as one */
    {"lookahead", 2},      /* nextuse: windows looked ahead */
    {"willneed_pages", 0}, /* nextuse: pages prefetched per step (0: auto tries a share) */
    {"horizon", 1},        /* nextuse: page out what no window this far ahead uses */
    {"max_calls", 0},      /* auto: leave out schedules needing more advice calls (0: any) */
    {"advice_rate", 2000}, /* advice calls per second, as run --advice-rate (0: no budget) */
    {"time_scale", 1},     /* seconds of run per second of trace (refill of the budget) */
    /* mode 4 (online, objtier.plan.dynamic.learn_online), read by the driver: */
    {"online_ms", 100},    /* the online placement's period, ms of run */
    {"sample_rate", 2000}, /* pages the fault sampler arms per second of run */
    {"phase_memory", 1},   /* 1: ticks at phase switches, scores kept per phase (0: off) */
    {NULL, 0},
};

static int dynamic_init(sim_t *s)
{
    dynamic_state *st = s->state;
    if (!s->cfg.swap) {
        snprintf(s->error, sizeof s->error,
                 "policy dynamic needs the swap tier (a swap preset or --param swap=1)");
        return -1;
    }
    size_t n = s->cfg.objects ? s->cfg.objects : 1;
    st->sweep = calloc(n, 1);
    st->defer_first = calloc(n, sizeof *st->defer_first);
    st->defer_end = calloc(n, sizeof *st->defer_end);
    st->unpaid = calloc(n, 1);
    double rate = s->param[10], scale = s->param[11];
    if (rate < 0 || rate > 1e6 || !(scale > 0) || scale > 1e6) {
        snprintf(s->error, sizeof s->error,
                 "dynamic.advice_rate must be in [0, 1e6] and dynamic.time_scale in (0, 1e6]");
        return -1;
    }
    st->cap = st->tokens = rate;
    st->per_ns = rate * scale / 1e9;
    st->last_ns = s->cfg.start_ns;
    return st->sweep && st->defer_first && st->defer_end && st->unpaid ? 0 : -1;
}

static void refill(sim_t *s, dynamic_state *st)
{
    if (s->now > st->last_ns) {
        st->tokens += st->per_ns * (double)(s->now - st->last_ns);
        if (st->tokens > st->cap)
            st->tokens = st->cap;
        st->last_ns = s->now;
    }
}

/* Take `calls` from the bucket when it holds them (always, without a budget). */
static bool pay(sim_t *s, dynamic_state *st, unsigned calls)
{
    if (st->cap > 0) {
        if (st->tokens < calls)
            return false;
        st->tokens -= calls;
    }
    s->counter[SIM_C_ADVICE_CALLS] += calls;
    return true;
}

static int dynamic_alloc(sim_t *s, sim_page *pg, uint32_t obj, uint64_t offset)
{
    dynamic_state *st = s->state;
    if (obj < s->cfg.objects && st->unpaid[obj]) {
        refill(s, st);
        if (pay(s, st, action_calls[SIM_DYN_LOCK]))
            st->unpaid[obj] = 0;
        else
            st->waiting = 1;
    }
    if (obj < s->cfg.objects && st->defer_end[obj] && !st->unpaid[obj]) {
        /* offset = the page's start - the object's address (0 for its first page) */
        uint64_t k = (offset + (1ull << s->cfg.page_shift) - 1) >> s->cfg.page_shift;
        if (k >= st->defer_first[obj] && k < st->defer_end[obj]) {
            pg->flags |= SIM_PG_PINNED; /* the runtime locks it once the object is live */
            s->counter[SIM_C_PGLOCK]++;
            return SIM_FAST;
        }
    }
    return SIM_SLOW; /* demand paging: resident from the first access, as under the kernel */
}

/* Bring a slow page in ahead of its access (WILLNEED): true when it is fast afterwards. */
static bool bring_in(sim_t *s, sim_page *pg)
{
    if (pg->tier == SIM_FAST)
        return true;
    if (sim_fast_free(s) == 0)
        sim_reclaim(s, 1, NULL);
    bool fresh = (pg->flags & SIM_PG_UNTOUCHED) != 0;
    if (!sim_promote(s, pg)) {
        s->counter[SIM_C_PGMIGRATE_FAIL]++;
        return false;
    }
    if (fresh)
        s->counter[SIM_C_PGFAULT_FIRST_TOUCH]++;
    else {
        s->counter[SIM_C_PGPREFETCH]++;
        s->bin->swap_in++;
    }
    return true;
}

/* One action; `paid`: its calls were taken from the budget already. */
static void apply(sim_t *s, dynamic_state *st, uint32_t obj, uint64_t first, uint64_t n,
                  uint8_t action, bool paid)
{
    if (action == SIM_DYN_SWEEP) {
        st->sweep[obj] = 1;
        return;
    }
    sim_object *o = &s->objects[obj];
    if (!o->size && action == SIM_DYN_LOCK && !st->defer_end[obj]) {
        st->defer_first[obj] = first; /* not allocated yet: locked when it is (dynamic.c) */
        st->defer_end[obj] = first + n;
        st->unpaid[obj] = 1;
        return;
    }
    if (!o->size || first >= o->npages)
        return;
    if (!paid)
        s->counter[SIM_C_ADVICE_CALLS] += action_calls[action];
    uint64_t end = first + n < o->npages ? first + n : o->npages;
    for (uint64_t k = first; k < end; k++) {
        if (o->pages[k] == SIM_NIL)
            continue;
        sim_page *pg = &s->pool[o->pages[k]];
        switch (action) {
        case SIM_DYN_UNLOCK: sim_unpin(s, pg); break;
        case SIM_DYN_PAGEOUT:
            sim_unpin(s, pg);
            if (pg->tier == SIM_FAST) {
                sim_demote(s, pg);
                s->counter[SIM_C_PGPAGEOUT]++;
            }
            break;
        case SIM_DYN_LOCK:
            if (bring_in(s, pg)) {
                if (!(pg->flags & SIM_PG_PINNED))
                    s->counter[SIM_C_PGLOCK]++;
                sim_pin(s, pg);
            }
            break;
        case SIM_DYN_WILLNEED: bring_in(s, pg); break;
        default: break;
        }
    }
}

/* The calls action i would make now (dynamic.c apply): none on an object not allocated or past
 * its end. */
static unsigned calls_of(const sim_t *s, uint64_t i)
{
    const sim_object *o = &s->objects[s->dyn_obj[i]];
    if (!o->size || s->dyn_first[i] >= o->npages)
        return 0;
    return action_calls[s->dyn_action[i]];
}

/* Deferred LOCKs of allocated objects, then the pending step's actions, while calls last
 * (dynamic.c run_due). */
static void run_budget(sim_t *s, dynamic_state *st)
{
    refill(s, st);
    if (st->waiting) {
        st->waiting = 0;
        for (uint32_t o = 0; o < s->cfg.objects; o++) {
            if (!st->unpaid[o] || !s->objects[o].size)
                continue;
            if (!pay(s, st, action_calls[SIM_DYN_LOCK])) {
                st->waiting = 1;
                break;
            }
            st->unpaid[o] = 0;
            apply(s, st, o, st->defer_first[o], st->defer_end[o] - st->defer_first[o], SIM_DYN_LOCK,
                  true);
        }
    }
    if (!st->pend_step)
        return;
    uint64_t end = s->dyn_offsets[st->pend_step];
    for (; st->pend_i < end; st->pend_i++) {
        uint64_t i = st->pend_i;
        /* the runtime checks the action's calls before it finds the object absent */
        if (st->tokens < action_calls[s->dyn_action[i]])
            return;
        if (s->dyn_obj[i] >= s->cfg.objects)
            continue;
        pay(s, st, calls_of(s, i));
        apply(s, st, s->dyn_obj[i], s->dyn_first[i], s->dyn_pages[i], s->dyn_action[i], true);
    }
    st->pend_step = 0;
}

static void dynamic_step(sim_t *s, uint32_t step)
{
    dynamic_state *st = s->state;
    if (st->cap > 0) {
        run_budget(s, st);
        if (st->pend_step) { /* out of calls and a newer step is due: the rest is stale */
            s->counter[SIM_C_ACTIONS_DROPPED] += s->dyn_offsets[st->pend_step] - st->pend_i;
            st->pend_step = 0;
        }
        memset(st->sweep, 0, s->cfg.objects ? s->cfg.objects : 1);
        st->pend_step = step + 1;
        st->pend_i = s->dyn_offsets[step];
        run_budget(s, st);
    } else {
        memset(st->sweep, 0, s->cfg.objects ? s->cfg.objects : 1);
        /* actions in the order UNLOCK, PAGEOUT, LOCK, WILLNEED, SWEEP: room is made before it
         * is taken */
        for (uint8_t action = SIM_DYN_UNLOCK; action <= SIM_DYN_SWEEP; action++)
            for (uint64_t i = s->dyn_offsets[step]; i < s->dyn_offsets[step + 1]; i++)
                if (s->dyn_action[i] == action && s->dyn_obj[i] < s->cfg.objects)
                    apply(s, st, s->dyn_obj[i], s->dyn_first[i], s->dyn_pages[i], action, false);
    }
    st->step = step + 1;
    st->majfault_seen = s->counter[SIM_C_PGMAJFAULT];
}

/* After a major fault on a swept object's page: prefetch the pages after it. */
static void dynamic_access(sim_t *s, sim_page *pg, uint64_t now, uint64_t weight, bool store)
{
    (void)pg, (void)now, (void)weight, (void)store;
    dynamic_state *st = s->state;
    if (st->pend_step || st->waiting)
        run_budget(s, st);
    if (s->counter[SIM_C_PGMAJFAULT] == st->majfault_seen)
        return;
    st->majfault_seen = s->counter[SIM_C_PGMAJFAULT];
    const sim_event *e = s->event;
    uint64_t ahead = (uint64_t)s->param[0];
    if (!e || e->obj >= s->cfg.objects || !st->sweep[e->obj] || !ahead)
        return;
    sim_object *o = &s->objects[e->obj];
    uint64_t k = (e->addr >> s->cfg.page_shift) - o->first_vpn;
    for (uint64_t j = k + 1; j <= k + ahead && j < o->npages; j++) {
        if (o->pages[j] == SIM_NIL)
            continue;
        sim_page *p = &s->pool[o->pages[j]];
        if (p->tier == SIM_SLOW && !(p->flags & SIM_PG_UNTOUCHED))
            bring_in(s, p);
    }
    st->majfault_seen = s->counter[SIM_C_PGMAJFAULT];
}

static void dynamic_fini(sim_t *s)
{
    dynamic_state *st = s->state;
    free(st->sweep);
    free(st->defer_first);
    free(st->defer_end);
    free(st->unpaid);
    st->unpaid = NULL;
    st->sweep = NULL;
    st->defer_first = st->defer_end = NULL;
}

const sim_policy_ops sim_policy_dynamic = {
    .name = "dynamic",
    .params = dynamic_params,
    .state_bytes = sizeof(dynamic_state),
    .init = dynamic_init,
    .on_alloc = dynamic_alloc,
    .on_access = dynamic_access,
    .on_phase = dynamic_step,
    .fini = dynamic_fini,
};
