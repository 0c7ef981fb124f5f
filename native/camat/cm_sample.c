/* Sampled timing of the C-AMAT model (cm_sample.h). */
#include "cm_sample.h"

#include <stdlib.h>
#include <string.h>

const char *camat_sample(camat_model *m, uint64_t period, uint32_t unit, uint32_t warm)
{
    if (unit < 1 || unit > CAMAT_SAMPLE_MAX)
        return "unit";
    if (warm > CAMAT_SAMPLE_MAX)
        return "warm";
    if (period > CAMAT_PERIOD_MAX || period < (uint64_t)unit + 2 * (uint64_t)warm)
        return "period";
    if (m->smp || m->error)
        return "model";
    uint32_t objects = m->cfg.objects, regions = m->cfg.regions;
    cm_sampling *s = calloc(1, sizeof *s);
    if (!s)
        return "out of memory";
    s->ex_obj = calloc((size_t)CAMAT_LEVELS * objects, sizeof *s->ex_obj);
    s->ex_reg = calloc((size_t)CAMAT_LEVELS * regions, sizeof *s->ex_reg);
    s->s_obj = calloc((size_t)CAMAT_LEVELS * (objects + 1), sizeof *s->s_obj);
    s->s_reg = calloc((size_t)CAMAT_LEVELS * (regions + 1), sizeof *s->s_reg);
    s->served_obj = calloc((size_t)CAMAT_LEVELS * objects, sizeof *s->served_obj);
    s->served_reg = calloc((size_t)CAMAT_LEVELS * regions, sizeof *s->served_reg);
    if (!s->ex_obj || !s->ex_reg || !s->s_obj || !s->s_reg || !s->served_obj || !s->served_reg) {
        cm_sample_free(s);
        return "out of memory";
    }
    s->info.period = period;
    s->info.unit = unit;
    s->info.warm = warm;
    uint64_t rest = period - unit - 2 * (uint64_t)warm;
    s->len[CM_PRE] = rest / 2;
    s->len[CM_WARM] = s->len[CM_COOL] = warm;
    s->len[CM_MEASURE] = unit;
    s->len[CM_POST] = rest - rest / 2;
    s->phase = CM_POST; /* the first step enters CM_PRE */
    /* the timelines' shares go to the measured sums; the extra object and region collect the
     * timed accesses that are not counted (and make every region's shares kept per region) */
    for (uint32_t l = 0; l < m->levels; l++) {
        m->tl[l].by_object = s->s_obj + (size_t)l * (objects + 1);
        m->tl[l].objects = objects + 1;
        m->tl[l].by_region = s->s_reg + (size_t)l * (regions + 1);
        m->tl[l].regions = regions + 1;
    }
    m->smp = s;
    return NULL;
}

void cm_sample_free(cm_sampling *s)
{
    if (!s)
        return;
    free(s->ex_obj);
    free(s->ex_reg);
    free(s->s_obj);
    free(s->s_reg);
    free(s->served_obj);
    free(s->served_reg);
    free(s->units);
    free(s);
}

/* Makes every timed access final: the timelines swept past the latest completion. */
static void drain(camat_model *m)
{
    uint64_t t0 = m->last_done + 1;
    if (m->tl[0].t > t0)
        t0 = m->tl[0].t;
    cm_queue_advance(&m->pending, t0);
    m->swept = t0;
}

/* Every core starts again with an empty window and idle miss registers at the cycle after
 * the latest completion (nothing of the last unit overlaps the next one). */
static void restart(camat_model *m)
{
    uint64_t t0 = m->tl[0].t;
    m->gmax = t0;
    for (uint32_t c = 0; c < m->cfg.cores; c++) {
        core *k = &m->cores[c];
        k->cycle = t0;
        k->n = 0;
        k->in_cycle = 0;
        memset(k->m1.release, 0, k->m1.n * sizeof *k->m1.release);
        memset(k->m1.line, 0, k->m1.n * sizeof *k->m1.line);
        memset(k->fetching, 0, sizeof k->fetching);
        memset(k->m2.release, 0, k->m2.n * sizeof *k->m2.release);
        memset(k->mmem.release, 0, k->mmem.n * sizeof *k->mmem.release);
    }
    memset(m->mllc.release, 0, m->mllc.n * sizeof *m->mllc.release);
}

/* Records the unit that ended: its measured accesses and active shares per level. */
static void close_unit(camat_model *m)
{
    cm_sampling *s = m->smp;
    uint32_t stride = m->cfg.objects + 1;
    double now[CAMAT_LEVELS][2] = {{0}};
    for (uint32_t l = 0; l < m->levels; l++)
        for (uint32_t o = 0; o < m->cfg.objects; o++) {
            const camat_counts *c = &s->s_obj[(size_t)l * stride + o];
            now[l][0] += (double)c->accesses;
            now[l][1] += c->hit_share + c->pure_share;
        }
    if (now[0][0] > s->last[0][0]) {
        if (s->info.units == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 64;
            double *u = realloc(s->units, cap * CAMAT_LEVELS * 2 * sizeof *u);
            if (!u) {
                m->error = "out of memory";
                return;
            }
            s->units = u;
            s->cap = cap;
        }
        double *u = s->units + s->info.units * CAMAT_LEVELS * 2;
        for (int l = 0; l < CAMAT_LEVELS; l++) {
            u[2 * l] = now[l][0] - s->last[l][0];
            u[2 * l + 1] = now[l][1] - s->last[l][1];
        }
        s->info.units++;
    }
    memcpy(s->last, now, sizeof now);
}

void cm_sample_next(camat_model *m)
{
    cm_sampling *s = m->smp;
    do {
        s->done[s->phase] += s->started ? s->len[s->phase] - s->left : 0;
        s->started = 1;
        s->phase = (s->phase + 1) % CM_PHASES;
        s->left = s->len[s->phase];
        if (s->phase == CM_WARM && s->done[CM_WARM] + s->done[CM_MEASURE]) {
            drain(m); /* a unit starts: the last one's measured accesses are final */
            close_unit(m);
            restart(m);
        }
    } while (!s->left);
    m->discard = s->phase != CM_MEASURE;
}

#define OBJ(l, o) m->by_object[(size_t)(l)*m->cfg.objects + (o)]
#define REG(l, r) m->by_region[(size_t)(l)*m->cfg.regions + (r)]

/* The functional path of one access; multi (more than one core) is a constant where it is
 * inlined, so the one-core path carries no coherence code. */
static inline __attribute__((always_inline)) int functional(camat_model *m, const camat_access *a,
                                                            const int multi)
{
    const camat_config *cfg = &m->cfg;
    if (cm_check_access(m, a) != 0)
        return -1;
    core *k = &m->cores[a->core];
    uint32_t obj = a->object, reg = a->region, me = a->core;
    int write = a->flags & CAMAT_WRITE;
    uint64_t line = a->addr >> m->line_shift;
    uint64_t bytes = multi ? cm_chunk_mask(m, a->addr, a->flags >> 8) : 0;
    uint64_t v1 = 0, v2 = 0;
    int64_t s1;
    int deepest, upgrade;
    if (cm_l1_serves(m, k, me, line, write, bytes, &s1, &v1, &upgrade, multi)) {
        deepest = 0;
    } else {
        if (multi && !upgrade)
            cm_coherence_miss(m, k, obj, reg, line, bytes);
        int64_t s2 = upgrade ? -1 : cm_cache_lookup(&k->l2, line, &v2);
        int64_t s2_slot = upgrade ? -2 : s2;
        int snooped = -1;
        if (s2 >= 0 && write && cm_state(&k->l2, s2) == ST_S)
            s2 = -1;
        if (s2 >= 0) {
            cm_cache_touch(&k->l2, line, s2);
            deepest = 1;
        } else {
            uint32_t extra =
                multi ? cm_coherence_at_llc(m, me, obj, reg, line, bytes, write, &snooped) : 0;
            if (cm_llc_serves(m, line, upgrade, extra))
                deepest = 2;
            else
                deepest = cm_local_serves(m, obj, a->addr) ? 3 : 4;
        }
        cm_fill_private(m, k, me, line, write, upgrade, snooped, s1, v1, s2_slot, v2, multi);
    }
    m->smp->served_obj[(size_t)deepest * cfg->objects + obj]++;
    m->smp->served_reg[(size_t)deepest * cfg->regions + reg]++;
    return 0;
}

int cm_functional_one(camat_model *m, const camat_access *a)
{
    return m->cfg.cores > 1 ? functional(m, a, 1) : functional(m, a, 0);
}

#define RUN_AHEAD 8 /* accesses between a prefetch of the sets and the access */

static inline void run_prefetch(const camat_model *m, const camat_access *a)
{
    uint64_t line = a->addr >> m->line_shift;
    if (a->core < m->cfg.cores)
        cm_cache_prefetch(&m->cores[a->core].l2, line);
    cm_cache_prefetch(&m->llc, line);
}

size_t cm_functional_run(camat_model *m, const camat_access *a, size_t n)
{
    cm_sampling *s = m->smp;
    if (!s->left)
        cm_sample_next(m);
    if (s->phase != CM_PRE && s->phase != CM_POST)
        return 0;
    size_t run = s->left < n ? (size_t)s->left : n;
    size_t i = 0;
    if (m->cfg.cores > 1) {
        for (; i < run; i++) {
            if (i + RUN_AHEAD < n)
                run_prefetch(m, &a[i + RUN_AHEAD]);
            if (functional(m, &a[i], 1) != 0)
                return SIZE_MAX;
        }
    } else {
        for (; i < run; i++) {
            if (i + RUN_AHEAD < n)
                run_prefetch(m, &a[i + RUN_AHEAD]);
            if (functional(m, &a[i], 0) != 0)
                return SIZE_MAX;
        }
    }
    s->left -= run;
    return run;
}

static inline uint64_t rnd(double x) /* x >= 0 */
{
    return (uint64_t)(x + 0.5);
}

/* out: the measured sums meas scaled to the exact counts ex (hit terms by accesses, miss terms
 * by misses); pool stands in where meas has no access (or no miss) measured. */
static void scale(camat_counts *out, const camat_counts *meas, const cm_exact *ex,
                  const camat_counts *pool)
{
    const camat_counts *h = meas->accesses ? meas : pool;
    double f = h->accesses ? (double)ex->accesses / (double)h->accesses : 0.0;
    out->accesses = ex->accesses;
    out->misses = ex->misses;
    out->hit_phase = rnd((double)h->hit_phase * f);
    out->hit_share = h->hit_share * f;
    const camat_counts *q = meas->misses ? meas : pool;
    double g = q->misses ? (double)ex->misses / (double)q->misses : 0.0;
    out->miss_phase = rnd((double)q->miss_phase * g);
    out->pure_phase = rnd((double)q->pure_phase * g);
    out->pure_misses = rnd((double)q->pure_misses * g);
    out->miss_share = q->miss_share * g;
    out->pure_share = q->pure_share * g;
}

static void fold(cm_exact *ex, const uint64_t *served, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < CAMAT_LEVELS; d++)
            for (uint32_t l = 0; l <= d; l++) {
                ex[(size_t)l * n + i].accesses += served[(size_t)d * n + i];
                ex[(size_t)l * n + i].misses += l < d ? served[(size_t)d * n + i] : 0;
            }
}

void cm_sample_finish(camat_model *m)
{
    cm_sampling *s = m->smp;
    uint32_t objects = m->cfg.objects, regions = m->cfg.regions;
    s->done[s->phase] += s->len[s->phase] - s->left;
    s->left = 0;
    s->info.accesses = s->done[CM_PRE] + s->done[CM_WARM] + s->done[CM_MEASURE] + s->done[CM_COOL] +
                       s->done[CM_POST];
    s->info.detailed = s->done[CM_WARM] + s->done[CM_MEASURE] + s->done[CM_COOL];
    s->info.measured = s->done[CM_MEASURE];
    drain(m);
    close_unit(m);
    /* functional accesses served at level d visited levels 0..d and missed above d */
    fold(s->ex_obj, s->served_obj, objects);
    fold(s->ex_reg, s->served_reg, regions);
    for (uint32_t l = 0; l < m->levels; l++) {
        const camat_counts *so = s->s_obj + (size_t)l * (objects + 1);
        const camat_counts *sr = s->s_reg + (size_t)l * (regions + 1);
        camat_counts pool = {0};
        double shared = 0;
        for (uint32_t o = 0; o <= objects; o++) {
            shared += so[o].hit_share + so[o].pure_share;
            if (o < objects)
                cm_counts_add(&pool, &so[o]);
        }
        camat_counts *t = &m->totals[l];
        s->info.counted_active[l] = (double)t->active_cycles;
        s->info.shared_active[l] = shared;
        camat_counts sum = {0};
        cm_exact all = {0, 0};
        for (uint32_t o = 0; o < objects; o++) {
            all.accesses += s->ex_obj[(size_t)l * objects + o].accesses;
            all.misses += s->ex_obj[(size_t)l * objects + o].misses;
            scale(&OBJ(l, o), &so[o], &s->ex_obj[(size_t)l * objects + o], &pool);
        }
        for (uint32_t r = 0; r < regions; r++) {
            scale(&REG(l, r), &sr[r], &s->ex_reg[(size_t)l * regions + r], &pool);
            cm_counts_add(&sum, &REG(l, r));
        }
        /* the level's terms are the sums over regions (code regions separate a program's phases
         * better than objects do), its cycle counts the sums of the estimated shares */
        t->accesses = all.accesses;
        t->misses = all.misses;
        t->pure_misses = sum.pure_misses;
        t->hit_phase = sum.hit_phase;
        t->miss_phase = sum.miss_phase;
        t->pure_phase = sum.pure_phase;
        t->hit_share = sum.hit_share;
        t->miss_share = sum.miss_share;
        t->pure_share = sum.pure_share;
        t->hit_cycles = rnd(sum.hit_share);
        t->miss_cycles = rnd(sum.miss_share);
        t->pure_cycles = rnd(sum.pure_share);
        t->active_cycles = t->hit_cycles + t->pure_cycles;
    }
}

const camat_sample_info *camat_sample_info_of(const camat_model *m)
{
    return m->smp ? &m->smp->info : NULL;
}

const double *camat_sample_units(const camat_model *m, size_t *n)
{
    if (n)
        *n = m->smp ? m->smp->info.units : 0;
    return m->smp ? m->smp->units : NULL;
}
