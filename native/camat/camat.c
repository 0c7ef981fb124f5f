/* The C-AMAT timing model (camat.h): cores, the path of one access down the hierarchy,
 * miss-status registers, coherence, and the hand-off to the per-level timelines. */
#include "camat.h"
#include "cm_model.h"
#include "cm_sample.h"

#include <stdlib.h>
#include <string.h>

static int mshr_init(mshr_set *s, uint32_t n, int lines)
{
    s->n = n;
    s->release = calloc(n, sizeof *s->release);
    s->line = lines ? calloc(n, sizeof *s->line) : NULL;
    return s->release && (!lines || s->line) ? 0 : -1;
}

static void mshr_free(mshr_set *s)
{
    free(s->release);
    free(s->line);
}

/* Registers without lines (L2, LLC, MEM->FAR) are a binary min-heap on release: the register
 * that frees first is release[0]. It is the only one ever taken, and is given back with a
 * later release (done >= its release), so taking it is a replace-top: O(log n), not a scan.
 * Registers are interchangeable, so which of equal ones is taken changes nothing. The
 * replacement goes bottom-up (the hole moves down to a leaf along the smaller children, then
 * the new release rises from there, mostly not at all, being the latest), so that its
 * branches follow the heap's shape rather than the values. */
static void mshr_replace_top(mshr_set *s, uint64_t release)
{
    uint64_t *h = s->release;
    uint32_t i = 0, n = s->n;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n)
            c += h[c + 1] < h[c];
        h[i] = h[c];
        i = c;
    }
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h[p] <= release)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = release;
}

static const char *check_config(const camat_config *c)
{
    static const char *const names[3][4] = {
        {"l1.size_bytes", "l1.ways", "l1.hit_cycles", "l1.mshrs"},
        {"l2.size_bytes", "l2.ways", "l2.hit_cycles", "l2.mshrs"},
        {"llc.size_bytes", "llc.ways", "llc.hit_cycles", "llc.mshrs"}};
    if (c->line_bytes < 8 || c->line_bytes > 4096 || (c->line_bytes & (c->line_bytes - 1)))
        return "line_bytes";
    for (int i = 0; i < 3; i++) {
        const camat_cache *k = &c->cache[i];
        if (k->size_bytes < c->line_bytes)
            return names[i][0];
        if (k->ways < 1 || k->ways > 64)
            return names[i][1];
        if (k->hit_cycles < 1 || k->hit_cycles > 100000)
            return names[i][2];
        if (k->mshrs < 1 || k->mshrs > 256)
            return names[i][3];
    }
    if (c->cores < 1 || c->cores > CAMAT_MAX_CORES)
        return "cores";
    if (c->issue_width < 1 || c->issue_width > 64)
        return "issue_width";
    if (c->window < 1 || c->window > HIST)
        return "window";
    if (c->lag < 1 || c->lag > 1000000)
        return "lag";
    if (c->mem_cycles < 1 || c->mem_cycles > 1000000)
        return "mem_cycles";
    if (c->mem_mshrs < 1 || c->mem_mshrs > 256)
        return "mem_mshrs";
    if (c->local_pages && (c->far_cycles < 1 || c->far_cycles > 10000000))
        return "far_cycles";
    if (c->coherence_cycles > 100000)
        return "coherence_cycles";
    if (c->page_shift < 6 || c->page_shift > 30)
        return "page_shift";
    if (c->objects < 1 || c->regions < 1)
        return c->objects < 1 ? "objects" : "regions";
    if (c->local_pages && c->pinned_pages > c->local_pages)
        return "pinned_pages";
    if (c->local_pages >= UINT32_MAX)
        return "local_pages";
    return NULL;
}

camat_model *camat_create(const camat_config *cfg, const char **err)
{
    const char *bad = check_config(cfg);
    if (bad) {
        if (err)
            *err = bad;
        return NULL;
    }
    if (err)
        *err = "out of memory";
    camat_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->cfg = *cfg;
    m->cfg.pinned = NULL;
    m->line_shift = (uint32_t)__builtin_ctz(cfg->line_bytes);
    m->chunk_shift = cfg->line_bytes > 64 ? (uint32_t)__builtin_ctz(cfg->line_bytes / 64) : 0;
    for (int i = 0; i < 3; i++)
        m->hit[i] = cfg->cache[i].hit_cycles;
    m->hit[CAMAT_MEM] = cfg->mem_cycles;
    m->hit[CAMAT_FAR] = cfg->far_cycles;
    m->levels = cfg->local_pages ? CAMAT_LEVELS : CAMAT_FAR;
    int ok = 1;
    m->cores = calloc(cfg->cores, sizeof *m->cores);
    ok = ok && m->cores;
    for (uint32_t c = 0; ok && c < cfg->cores; c++) {
        core *k = &m->cores[c];
        ok = cm_cache_init(&k->l1, cfg->cache[0].size_bytes, cfg->cache[0].ways, cfg->line_bytes) ==
                 0 &&
             cm_cache_init(&k->l2, cfg->cache[1].size_bytes, cfg->cache[1].ways, cfg->line_bytes) ==
                 0 &&
             mshr_init(&k->m1, cfg->cache[0].mshrs, 1) == 0 &&
             mshr_init(&k->m2, cfg->cache[1].mshrs, 0) == 0 &&
             mshr_init(&k->mmem, cfg->mem_mshrs, 0) == 0 &&
             (cfg->cores == 1 || (k->inv = calloc(INV_SLOTS, sizeof *k->inv)) != NULL);
        if (ok && cfg->cores > 1) {
            /* buckets: four per line the two caches hold, 2^12 .. 2^22 */
            uint64_t lines =
                (cfg->cache[0].size_bytes + cfg->cache[1].size_bytes) / cfg->line_bytes;
            uint32_t bits = 12;
            while (bits < 22 && (1ULL << bits) < 4 * lines)
                bits++;
            m->held_shift = 64 - bits;
            ok = (k->held = calloc((size_t)1 << bits, 1)) != NULL;
        }
    }
    ok = ok &&
         cm_cache_init(&m->llc, cfg->cache[2].size_bytes, cfg->cache[2].ways, cfg->line_bytes) == 0;
    ok = ok && mshr_init(&m->mllc, cfg->cache[2].mshrs, 0) == 0;
    if (ok && cfg->local_pages) {
        ok = cm_local_init(&m->local, cfg->local_pages - cfg->pinned_pages) == 0;
        if (ok && cfg->pinned) {
            ok = (m->pinned = malloc(cfg->objects)) != NULL;
            if (ok)
                memcpy(m->pinned, cfg->pinned, cfg->objects);
        }
    }
    /* Each timeline's ring starts at twice the life of an access that queues nowhere plus the
     * lag, and doubles when an access outlives it (queueing for miss registers), up to
     * CM_RING_MAX: a ring that stays in the host's caches is much of the model's speed on
     * streams that miss, as the sweep touches every slot once per turn. */
    uint64_t trip = cfg->coherence_cycles;
    for (int i = 0; i < CAMAT_LEVELS; i++)
        trip += i == CAMAT_FAR && !cfg->local_pages ? 0 : m->hit[i];
    uint64_t ring = 1ULL << 10;
    while (ring < 2 * ((uint64_t)cfg->lag + trip) && ring < CM_RING_MAX)
        ring <<= 1;
    m->batch = ring / 16;
    m->by_object = ok ? calloc((size_t)CAMAT_LEVELS * cfg->objects, sizeof *m->by_object) : NULL;
    m->by_region = ok ? calloc((size_t)CAMAT_LEVELS * cfg->regions, sizeof *m->by_region) : NULL;
    ok = ok && m->by_object && m->by_region;
    for (uint32_t l = 0; ok && l < m->levels; l++)
        ok = cm_timeline_init(&m->tl[l], ring, &m->totals[l],
                              m->by_object + (size_t)l * cfg->objects, cfg->objects,
                              m->by_region + (size_t)l * cfg->regions, cfg->regions) == 0;
    ok = ok && cm_queue_init(&m->pending, m->tl, m->levels) == 0;
    if (!ok) {
        camat_destroy(m);
        return NULL;
    }
    if (err)
        *err = NULL;
    return m;
}

void camat_destroy(camat_model *m)
{
    if (!m)
        return;
    for (uint32_t c = 0; m->cores && c < m->cfg.cores; c++) {
        core *k = &m->cores[c];
        cm_cache_free(&k->l1);
        cm_cache_free(&k->l2);
        mshr_free(&k->m1);
        mshr_free(&k->m2);
        mshr_free(&k->mmem);
        free(k->inv);
        free(k->held);
    }
    free(m->cores);
    cm_cache_free(&m->llc);
    mshr_free(&m->mllc);
    cm_local_free(&m->local);
    free(m->pinned);
    cm_queue_free(&m->pending);
    for (int l = 0; l < CAMAT_LEVELS; l++)
        cm_timeline_free(&m->tl[l]);
    free(m->by_object);
    free(m->by_region);
    cm_sample_free(m->smp);
    free(m);
}

/* Issue cycle of the next access of core k. Accesses enter the window in order (k->cycle is
 * that in-order front: issue_width per cycle, no earlier than the retirement of the access
 * `window` places before); an access that depends on an earlier one then waits for its data,
 * and the accesses after it do not wait with it (an out-of-order core: only their own
 * dependences and the in-order retirement hold them back). */
static uint64_t issue_cycle(camat_model *m, core *k, uint32_t dep, uint64_t floor)
{
    uint64_t t = floor;
    if (k->cycle > t)
        t = k->cycle;
    if (k->n >= m->cfg.window) {
        uint64_t r = k->retire[(k->n - m->cfg.window) % HIST];
        if (r > t)
            t = r;
    }
    if (t == k->cycle && k->n && k->in_cycle >= m->cfg.issue_width)
        t++;
    if (t != k->cycle || !k->n) {
        k->cycle = t;
        k->in_cycle = 0;
    }
    k->in_cycle++;
    if (dep && dep <= k->n && dep <= m->cfg.window) {
        uint64_t d = k->done[(k->n - dep) % HIST];
        if (d > t)
            t = d;
    }
    return t;
}

/* A miss needs a free miss register when its hit phase ends; when none is free by then, the
 * request waits before the level (a replayed load: not active there, and the level above
 * sees the wait as part of its miss phase), so that every hit phase lasts the hit latency. */
static void wait_for(uint64_t *start, uint64_t *hit_end, uint64_t release)
{
    if (release > *hit_end) {
        *start += release - *hit_end;
        *hit_end = release;
    }
}

/* One access, issued no earlier than floor; timelines are not advanced here. */
static inline __attribute__((always_inline)) int feed_one_in(camat_model *m, const camat_access *a,
                                                             uint64_t floor, const int multi)
{
    const camat_config *cfg = &m->cfg;
    if (cm_check_access(m, a) != 0)
        return -1;
    core *k = &m->cores[a->core];
    uint32_t obj = a->object, reg = a->region, me = a->core;
    int write = a->flags & CAMAT_WRITE;
    uint64_t line = a->addr >> m->line_shift;
    uint64_t t = issue_cycle(m, k, a->dep, floor);
    if (k->cycle > m->gmax) /* the in-order front: a dependent access waiting leads no core */
        m->gmax = k->cycle;
    uint64_t bytes = multi ? cm_chunk_mask(m, a->addr, a->flags >> 8) : 0;

    /* Which level serves it. */
    uint64_t start[CAMAT_LEVELS] = {0}, hit_end[CAMAT_LEVELS] = {0};
    int missed[CAMAT_LEVELS] = {0};
    int deepest; /* level that served the data */
    uint64_t done;
    uint64_t v1 = 0, v2 = 0; /* the ways a fill takes, found by the look-ups */
    int64_t s1;
    int upgrade;
    start[0] = t;
    hit_end[0] = t + m->hit[0];
    if (cm_l1_serves(m, k, me, line, write, bytes, &s1, &v1, &upgrade, multi)) {
        deepest = 0;
        done = hit_end[0];
    } else {
        missed[0] = 1;
        /* a miss on a line this core already fetches merges with that request; one pass
         * also finds the register that frees first (the lowest index among equals) */
        int64_t merged = -1;
        uint32_t r1 = 0;
        uint64_t first_free = k->m1.release[0];
        if (k->fetching[line % M1_BUCKETS] && !upgrade) { /* some register may hold it */
            for (uint32_t i = 0; i < k->m1.n; i++) {      /* selects, not branches */
                uint64_t r = k->m1.release[i];
                int lt = r < first_free;
                merged = k->m1.line[i] == line + 1 && r > hit_end[0] ? (int64_t)i : merged;
                r1 = lt ? i : r1;
                first_free = lt ? r : first_free;
            }
        } else {
            for (uint32_t i = 0; i < k->m1.n; i++) {
                uint64_t r = k->m1.release[i];
                int lt = r < first_free;
                r1 = lt ? i : r1;
                first_free = lt ? r : first_free;
            }
        }
        if (merged >= 0) {
            deepest = 0;
            done = k->m1.release[merged];
        } else {
            /* coherence: a private miss on a line another core took away */
            if (multi && !upgrade)
                cm_coherence_miss(m, k, obj, reg, line, bytes);
            wait_for(&start[0], &hit_end[0], k->m1.release[r1]);
            /* L2 */
            start[1] = hit_end[0];
            hit_end[1] = start[1] + m->hit[1];
            int64_t s2 = upgrade ? -1 : cm_cache_lookup(&k->l2, line, &v2);
            int64_t s2_slot = upgrade ? -2 : s2; /* -2: not looked up */
            int snooped = -1;                    /* snoop_read's answer, when asked */
            if (s2 >= 0 && write && cm_state(&k->l2, s2) == ST_S)
                s2 = -1; /* ownership comes from the LLC */
            /* heaps: release[0] is the register that frees first */
            if (s2 >= 0) {
                cm_cache_touch(&k->l2, line, s2);
                deepest = 1;
                done = hit_end[1];
            } else {
                missed[1] = 1;
                wait_for(&start[1], &hit_end[1], k->m2.release[0]);
                /* LLC (shared); coherence actions happen here */
                uint32_t extra =
                    multi ? cm_coherence_at_llc(m, me, obj, reg, line, bytes, write, &snooped) : 0;
                start[2] = hit_end[1];
                hit_end[2] = start[2] + m->hit[2] + extra;
                if (cm_llc_serves(m, line, upgrade, extra)) {
                    deepest = 2;
                    done = hit_end[2];
                } else {
                    missed[2] = 1;
                    wait_for(&start[2], &hit_end[2], m->mllc.release[0]);
                    start[3] = hit_end[2];
                    hit_end[3] = start[3] + m->hit[3];
                    if (cm_local_serves(m, obj, a->addr)) {
                        deepest = 3;
                        done = hit_end[3];
                    } else {
                        missed[3] = 1;
                        wait_for(&start[3], &hit_end[3], k->mmem.release[0]);
                        start[4] = hit_end[3];
                        hit_end[4] = start[4] + m->hit[4];
                        deepest = 4;
                        done = hit_end[4];
                        mshr_replace_top(&k->mmem, done);
                    }
                    mshr_replace_top(&m->mllc, done);
                }
                mshr_replace_top(&k->m2, done);
            }
            k->m1.release[r1] = done;
            if (k->m1.line[r1])
                k->fetching[(k->m1.line[r1] - 1) % M1_BUCKETS]--;
            k->m1.line[r1] = line + 1;
            k->fetching[line % M1_BUCKETS]++;
            cm_fill_private(m, k, me, line, write, upgrade, snooped, s1, v1, s2_slot, v2, multi);
        }
    }
    /* the levels it visited: hit phase, and the miss phase down to the data (above the
     * deepest level an access always missed, and its hit phase ended before done) */
    if (hit_end[deepest] > done)
        hit_end[deepest] = done;
    missed[deepest] = missed[deepest] && done > hit_end[deepest];
    uint32_t n = (uint32_t)deepest + 1;
    if (m->smp) /* sampled: exact counts here; a timed access not counted goes to the extra */
        cm_sample_count(m, obj, reg, deepest, missed);
    uint32_t qo = m->discard ? cfg->objects : obj, qr = m->discard ? cfg->regions : reg;
    int rc = cm_queue_add(&m->pending, n, start, hit_end, done, missed, qo, qr);
    if (rc == 1) { /* the timelines lag: sweep them up to this issue's floor, then again */
        cm_queue_advance(&m->pending, floor);
        rc = cm_queue_add(&m->pending, n, start, hit_end, done, missed, qo, qr);
    }
    while (rc == 1 && cm_queue_widen(&m->pending) == 0) /* a longer life than the ring */
        rc = cm_queue_add(&m->pending, n, start, hit_end, done, missed, qo, qr);
    if (rc != 0) {
        m->error = rc == 1 ? "timeline overrun: a miss outlasts the model's cycle window "
                             "(lower far_cycles or the lag)"
                           : "out of memory";
        return -1;
    }
    k->done[k->n % HIST] = done;
    uint64_t prev = k->n ? k->retire[(k->n - 1) % HIST] : 0;
    k->retire[k->n % HIST] = done > prev ? done : prev;
    k->n++;
    if (done > m->last_done)
        m->last_done = done;
    return 0;
}

/* multi (more than one core) a constant in each copy: the one-core path has no coherence code */
static int feed_one(camat_model *m, const camat_access *a, uint64_t floor)
{
    return m->cfg.cores > 1 ? feed_one_in(m, a, floor, 1) : feed_one_in(m, a, floor, 0);
}

/* Sweeps the timelines once the frontier has moved `batch` cycles since the last sweep (no
 * later access starts before frontier). Sweeping in batches changes no count: an access's
 * shares depend only on the phases around it, all added before the sweep passes them. */
static void advance_all(camat_model *m, uint64_t frontier)
{
    if (frontier < m->swept + m->batch)
        return;
    cm_queue_advance(&m->pending, frontier);
    m->swept = frontier;
}

/* Starts loading the sets that access a will look up (it comes a few accesses later). */
static inline void prefetch(const camat_model *m, const camat_access *a)
{
    uint64_t line = a->addr >> m->line_shift;
    if (a->core < m->cfg.cores)
        cm_cache_prefetch(&m->cores[a->core].l2, line);
    cm_cache_prefetch(&m->llc, line);
}

#define AHEAD 8 /* accesses between a prefetch and the access */

/* Sampled timing (m->smp): takes the functional accesses from a[*i] on (moving *i past
 * them) until the next timed one, whose phase step it takes. 0: a[*i] is to be timed; 1: the
 * stream ended in functional accesses; -1: an error (m->error). Exact timing: 0. */
static inline int between_units(camat_model *m, const camat_access *a, size_t n, size_t *i)
{
    while (m->smp) {
        size_t run = cm_functional_run(m, &a[*i], n - *i);
        if (run == SIZE_MAX)
            return -1;
        if (!run) {
            cm_sample_step(m);
            return 0;
        }
        *i += run;
        if (*i == n)
            return 1;
    }
    return 0;
}

/* feed_by_clock with one core: the stream in its order, floor at the core's clock before each
 * issue (what the general loop does with one core, without its per-access scans). */
static int feed_one_core(camat_model *m, const camat_access *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].core != 0) {
            m->error = "access core out of range";
            return -1;
        }
    uint64_t floor = 0;
    for (size_t i = 0; i < n;) {
        int skip = between_units(m, a, n, &i);
        if (skip)
            return skip < 0 ? -1 : 0;
        if (i + AHEAD < n)
            prefetch(m, &a[i + AHEAD]);
        uint64_t lowest = m->cores[0].cycle > floor ? m->cores[0].cycle : floor;
        if (feed_one(m, &a[i], floor) != 0)
            return -1;
        floor = lowest;
        advance_all(m, floor);
        i++;
    }
    return 0;
}

/* One core's accesses dealt from the stream and not yet taken, in stream order: a ring of
 * stream positions that doubles when full (it holds about the reorder window at most). */
typedef struct lane {
    size_t *at;
    size_t head, tail, mask; /* at[head & mask] .. at[(tail - 1) & mask]; counts, not indices */
} lane;

static size_t lane_size(const lane *l)
{
    return l->tail - l->head;
}

static size_t lane_first(const lane *l)
{
    return l->at[l->head & l->mask];
}

static int lane_push(lane *l, size_t i)
{
    if (lane_size(l) > l->mask) {
        size_t cap = 2 * (l->mask + 1);
        size_t *at = malloc(cap * sizeof *at);
        if (!at)
            return -1;
        for (size_t j = l->head; j < l->tail; j++)
            at[j & (cap - 1)] = l->at[j & l->mask];
        free(l->at);
        l->at = at;
        l->mask = cap - 1;
    }
    l->at[l->tail++ & l->mask] = i;
    return 0;
}

#define LANE_FIRST 1024 /* a lane's first ring */

/* Deals the stream from *dealt on to the cores' lanes until every lane holds more than AHEAD
 * accesses (the prefetch's distance) or *dealt reaches limit. 0, or -1 (m->error). */
static int deal(camat_model *m, lane *lanes, const camat_access *a, size_t *dealt, size_t limit)
{
    uint32_t cores = m->cfg.cores;
    for (uint32_t c = 0; c < cores; c++)
        while (lane_size(&lanes[c]) <= AHEAD && *dealt < limit) {
            uint32_t k = a[*dealt].core;
            if (k >= cores) {
                m->error = "access core out of range";
                return -1;
            }
            if (lane_push(&lanes[k], *dealt) != 0) {
                m->error = "out of memory";
                return -1;
            }
            ++*dealt;
        }
    return 0;
}

/* Clock-ordered interleaving (cfg.reorder > 0) of the whole stream. Each core's accesses are
 * dealt to its lane as the window reaches them (no per-access index of the whole stream). */
static int feed_by_clock(camat_model *m, const camat_access *a, size_t n)
{
    uint32_t cores = m->cfg.cores;
    if (cores == 1)
        return feed_one_core(m, a, n);
    lane *lanes = calloc(cores, sizeof *lanes);
    int rc = 0;
    for (uint32_t c = 0; lanes && c < cores; c++) {
        lanes[c].mask = LANE_FIRST - 1;
        if (!(lanes[c].at = malloc(LANE_FIRST * sizeof *lanes[c].at)))
            rc = -1;
    }
    if (!lanes || rc) {
        m->error = "out of memory";
        rc = -1;
        goto out;
    }
    uint64_t floor = 0;
    size_t fresh = 0; /* every access from here on in the stream is still to come */
    size_t dealt = 0; /* every access before here is in its core's lane, or taken */
    for (;;) {
        /* the earliest pending stream position: a lane's first, or the first not dealt */
        size_t cursor = dealt < n ? dealt : SIZE_MAX;
        for (uint32_t c = 0; c < cores; c++)
            if (lane_size(&lanes[c]) && lane_first(&lanes[c]) < cursor)
                cursor = lane_first(&lanes[c]);
        if (cursor == SIZE_MAX)
            break;
        if (m->smp && cursor >= fresh) { /* between units, none taken ahead: one tight run */
            size_t run = cm_functional_run(m, &a[cursor], n - cursor);
            if (run == SIZE_MAX) {
                rc = -1;
                goto out;
            }
            if (run) {
                fresh = cursor + run;
                for (uint32_t c = 0; c < cores; c++)
                    while (lane_size(&lanes[c]) && lane_first(&lanes[c]) < fresh)
                        lanes[c].head++;
                if (dealt < fresh)
                    dealt = fresh;
                continue;
            }
        }
        /* a core's next access within the window is the first of its lane */
        size_t limit = n - cursor > m->cfg.reorder ? cursor + m->cfg.reorder : n;
        if (deal(m, lanes, a, &dealt, limit) != 0) {
            rc = -1;
            goto out;
        }
        if (m->smp && cm_sample_step(m) == 0) { /* between units: in stream order */
            lanes[a[cursor].core].head++;       /* cursor is the first of its core's lane */
            if (cm_functional_one(m, &a[cursor]) != 0) {
                rc = -1;
                goto out;
            }
            continue;
        }
        int64_t pick = -1;
        uint64_t best = UINT64_MAX, lowest = UINT64_MAX;
        for (uint32_t c = 0; c < cores; c++) {
            if (!lane_size(&lanes[c]) || lane_first(&lanes[c]) - cursor >= m->cfg.reorder)
                continue;
            uint64_t clock = m->cores[c].cycle > floor ? m->cores[c].cycle : floor;
            if (clock < best)
                best = clock, pick = c;
            if (clock < lowest)
                lowest = clock;
        }
        lane *l = &lanes[pick];
        if (lane_size(l) > AHEAD)
            prefetch(m, &a[l->at[(l->head + AHEAD) & l->mask]]);
        size_t at = l->at[l->head++ & l->mask];
        if (feed_one(m, &a[at], floor) != 0) {
            rc = -1;
            goto out;
        }
        if (at >= fresh)
            fresh = at + 1;
        /* every later issue is at or after the eligible cores' earliest clock */
        if (lowest > floor)
            floor = lowest;
        advance_all(m, floor);
    }
out:
    for (uint32_t c = 0; lanes && c < cores; c++)
        free(lanes[c].at);
    free(lanes);
    return rc;
}

int camat_feed(camat_model *m, const camat_access *a, size_t n)
{
    if (m->error)
        return -1;
    if (m->cfg.reorder) {
        if (m->fed_by_clock) { /* the interleaving needs every core's accesses at once */
            m->error = "reorder > 0: the whole stream must be fed in one camat_feed call";
            return -1;
        }
        m->fed_by_clock = 1;
        return feed_by_clock(m, a, n);
    }
    for (size_t i = 0; i < n;) {
        int skip = between_units(m, a, n, &i);
        if (skip)
            return skip < 0 ? -1 : 0;
        uint64_t floor = m->gmax > m->cfg.lag ? m->gmax - m->cfg.lag : 0;
        if (i + AHEAD < n)
            prefetch(m, &a[i + AHEAD]);
        if (feed_one(m, &a[i], floor) != 0)
            return -1;
        advance_all(m, m->gmax > m->cfg.lag ? m->gmax - m->cfg.lag : 0);
        i++;
    }
    return 0;
}

void camat_finish(camat_model *m)
{
    if (m->error) /* the levels' rings may differ after a failed widening */
        return;
    if (m->smp) {
        cm_sample_finish(m);
        return;
    }
    cm_queue_advance(&m->pending, m->last_done + 1);
    for (uint32_t l = 0; l < m->levels; l++)
        cm_timeline_totals(&m->tl[l]);
}

const camat_counts *camat_totals(const camat_model *m)
{
    return m->totals;
}
const camat_counts *camat_by_object(const camat_model *m)
{
    return m->by_object;
}
const camat_counts *camat_by_region(const camat_model *m)
{
    return m->by_region;
}
uint64_t camat_cycles(const camat_model *m)
{
    return m->last_done;
}
const char *camat_error(const camat_model *m)
{
    return m->error;
}
