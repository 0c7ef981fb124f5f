/* Sampled timing of the C-AMAT model (camat.h, camat_sample): the functional path every
 * access takes between timed units, the exact per-level counts, the units' bookkeeping, and
 * the scaling of the measured accesses' cycle terms to the whole stream. */
#ifndef OBJTIER_CM_SAMPLE_H
#define OBJTIER_CM_SAMPLE_H

#include "cm_model.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cm_exact {
    uint64_t accesses, misses;
} cm_exact;

enum { CM_PRE, CM_WARM, CM_MEASURE, CM_COOL, CM_POST, CM_PHASES };

typedef struct cm_sampling {
    camat_sample_info info;
    uint64_t len[CM_PHASES];   /* accesses of each phase of a period: before the unit (half of
                                the functional accesses, so units sit mid-period), warm-up,
                                measured, cool-down, after */
    uint32_t phase;            /* the current phase */
    uint32_t started;          /* an access was taken (the first phase is entered) */
    uint64_t left;             /* its accesses still to come */
    uint64_t done[CM_PHASES];  /* accesses taken in each phase */
    cm_exact *ex_obj, *ex_reg; /* exact counts of timed accesses, [level * objects + o] */
    uint64_t *served_obj, *served_reg; /* functional accesses by the level that served them,
                                          [level * objects + o] */
    camat_counts *s_obj, *s_reg;       /* measured sums, [level * (objects + 1) + o]; the extra
                                    object/region collects the uncounted timed accesses */
    double *units;                     /* per unit and level: measured accesses, active share */
    size_t cap;
    double last[CAMAT_LEVELS][2]; /* running sums at the last unit's start */
} cm_sampling;

/* Enters the next phase with accesses (cm_sample_step). */
void cm_sample_next(camat_model *m);

/* What the next access is: functional (0), timed and not counted (1), measured (2). At the
 * start of a unit the timelines are drained and every core's timing restarts. */
static inline int cm_sample_step(camat_model *m)
{
    cm_sampling *s = m->smp;
    if (!s->left)
        cm_sample_next(m);
    s->left--;
    return s->phase == CM_MEASURE ? 2 : s->phase == CM_WARM || s->phase == CM_COOL ? 1 : 0;
}

/* The functional path of one access (range-checked): caches, coherence, local buffer and the
 * exact counts; no timing. 0, or -1 with m->error set. */
int cm_functional_one(camat_model *m, const camat_access *a);

/* The functional accesses at the head of a[0..n) (none when the next access is timed), in
 * stream order: how many were taken, or SIZE_MAX with m->error set. */
size_t cm_functional_run(camat_model *m, const camat_access *a, size_t n);

/* Exact counts of a timed access that visited levels 0..deepest (missed[l]: a miss there). */
static inline void cm_sample_count(camat_model *m, uint32_t obj, uint32_t reg, int deepest,
                                   const int *missed)
{
    cm_sampling *s = m->smp;
    for (int l = 0; l <= deepest; l++) {
        uint64_t miss = missed[l] != 0;
        cm_exact *o = &s->ex_obj[(size_t)l * m->cfg.objects + obj];
        cm_exact *r = &s->ex_reg[(size_t)l * m->cfg.regions + reg];
        o->accesses++, o->misses += miss;
        r->accesses++, r->misses += miss;
    }
}

/* After the last access: drains, closes the last unit and writes the public counts. */
void cm_sample_finish(camat_model *m);

void cm_sample_free(cm_sampling *s);

#endif
