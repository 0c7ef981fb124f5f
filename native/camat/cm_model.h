/* The C-AMAT model's state (camat.h), shared by its exact path (camat.c) and its sampled
 * path (cm_sample.c). Internal: not part of the library's interface. */
#ifndef OBJTIER_CM_MODEL_H
#define OBJTIER_CM_MODEL_H

#include "camat.h"
#include "cm_cache.h"
#include "cm_local.h"
#include "cm_pending.h"
#include "cm_timeline.h"

#include <stdint.h>

struct cm_sampling;

#define HIST       4096 /* per-core ring of done/retire cycles; >= the largest window */
#define INV_SLOTS  4096 /* per-core direct-mapped table of lines lost to invalidation */
#define M1_BUCKETS 256  /* per-core counts of the L1 miss registers' lines, by line */

typedef struct mshr_set {
    uint64_t *release; /* cycle each register frees */
    uint64_t *line;    /* line it fetches (L1 only: for merging) */
    uint32_t n;
} mshr_set;

typedef struct inv_entry {
    uint64_t line;    /* line + 1; 0 = empty */
    uint64_t written; /* byte-chunk mask written by the invalidating stores */
} inv_entry;

typedef struct core {
    cm_cache l1, l2;
    mshr_set m1, m2, mmem;
    uint64_t done[HIST], retire[HIST];
    uint64_t n;        /* accesses issued */
    uint64_t cycle;    /* cycle of the last issue */
    uint32_t in_cycle; /* accesses issued in that cycle */
    uint32_t reserved;
    inv_entry *inv;
    uint16_t fetching[M1_BUCKETS]; /* L1 registers holding a line, by line % M1_BUCKETS */
} core;

struct camat_model {
    camat_config cfg;
    uint32_t line_shift, chunk_shift; /* chunk = line / 64: one bit of a byte mask */
    uint32_t hit[CAMAT_LEVELS];
    uint32_t levels; /* 4, or 5 with FAR */
    core *cores;
    cm_cache llc;
    mshr_set mllc;
    cm_local local;
    uint8_t *pinned;
    uint64_t gmax;  /* most advanced issue cycle */
    uint64_t swept; /* frontier of the last advance of all timelines */
    uint64_t batch; /* cycles the frontier moves between advances */
    uint64_t last_done;
    cm_timeline tl[CAMAT_LEVELS];
    cm_queue pending; /* accesses not yet final, over the levels' timelines */
    camat_counts totals[CAMAT_LEVELS];
    camat_counts *by_object, *by_region;
    const char *error;
    struct cm_sampling *smp; /* NULL: exact (every access timed) */
    uint32_t discard;        /* sampled: the access being fed is timed but not counted */
};

/* Coherence, shared by both paths (camat.c). */
uint64_t cm_chunk_mask(const camat_model *m, uint64_t addr, uint32_t size);
uint64_t cm_invalidate_others(camat_model *m, uint32_t me, uint64_t line, uint64_t mask);
int cm_snoop_read(camat_model *m, uint32_t me, uint64_t line);

#endif
