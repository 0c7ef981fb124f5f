/*
 * libobjtier_camat: a trace-driven timing model of a cache hierarchy that counts the C-AMAT
 * terms (Sun & Wang) per level, per object and per code region.
 *
 * Levels, top down: L1 and L2 (private to each core), LLC (shared), MEM (main memory, or the
 * local buffer of a disaggregated machine), and FAR (the far memory behind that buffer,
 * present only when camat_config.local_pages > 0).
 *
 * Timing (one clock, in cycles, for all cores):
 *   - A core issues its accesses in trace order, at most issue_width per cycle, no earlier
 *     than the completion of the access it depends on (camat_access.dep) and no earlier than
 *     the retirement of the access `window` places before it (an out-of-order window).
 *   - An access arriving at a level spends that level's hit cycles there (its hit phase).
 *     A miss then holds one of the level's miss-status registers (mshrs; per core for L1/L2/
 *     MEM, shared for the LLC) until the data returns; with all of them busy the request waits
 *     before the level (as a replayed load does: not active there; the level above counts the
 *     wait in its miss phase), so every hit phase lasts exactly the level's hit latency (plus
 *     coherence_cycles for a transfer from another core at the LLC). A miss on a line already
 *     outstanding from the same core merges with it (no new request).
 *   - Interleaving of cores. reorder == 0: accesses are taken in stream order and cores stay
 *     within `lag` cycles of the most advanced one (the trace's interleaving is taken as
 *     simultaneity). reorder > 0: each core runs its own accesses in order and the core with
 *     the earliest clock goes next, among the cores whose next access lies fewer than
 *     `reorder` stream positions after the earliest pending one (so threads still start,
 *     stop and meet where the stream says, within that window, while a recording made on a
 *     busy machine, where threads ran in turns, still overlaps them).
 *   - Coherence (MESI-like, over the private L1/L2): a store to a line not held Modified or
 *     Exclusive invalidates every other core's copy; a load of a line another core holds
 *     Modified is served by that core (LLC hit plus coherence_cycles) and downgrades it.
 *     A later private miss on an invalidated line is an invalidation (coherence) miss; it is
 *     false sharing when the bytes accessed were not written by the invalidating stores.
 *
 * Counting (per level, over cycles): a cycle is a hit cycle when some access is in its hit
 * phase there, a miss cycle when some access is in its miss phase, a pure-miss cycle when it
 * is a miss cycle and not a hit cycle, active when either. Then, for N accesses of a level:
 *   H = hit-phase cycles / N; C_H = hit-phase cycles / hit cycles; MR = misses / N;
 *   pure miss = a miss with at least one pure-miss cycle; pMR = pure misses / N;
 *   pAMP = pure-miss cycles summed over pure misses / pure misses;
 *   C_M = that sum / pure-miss cycles; kappa = pure-miss cycles / miss cycles;
 *   C-AMAT = H/C_H + pMR*pAMP/C_M = active cycles / N (exactly, by construction; the APC
 *   identity APC = N / active = 1 / C-AMAT is what the tests check), AMAT = H + MR * AMP.
 * Per object and region, each cycle is shared among the accesses present in it (1/k each of k
 * hits, or of k misses in a pure-miss cycle), so an object's shares sum, over objects, to the
 * level's totals.
 *
 * All functions are pure computations on caller memory plus the model's own allocations; no
 * I/O, no globals. Not thread-safe per model.
 */
#ifndef OBJTIER_CAMAT_H
#define OBJTIER_CAMAT_H

#include "camat_counts.h"

#include <stddef.h>
#include <stdint.h>

#define CAMAT_L1        0
#define CAMAT_L2        1
#define CAMAT_LLC       2
#define CAMAT_MEM       3
#define CAMAT_FAR       4
#define CAMAT_LEVELS    5
#define CAMAT_MAX_CORES 64

#define CAMAT_WRITE 0x1 /* camat_access.flags: a store */

/* One access of the input stream (24 bytes). */
typedef struct camat_access {
    uint64_t addr;
    uint32_t core;   /* 0 .. cores-1 */
    uint32_t object; /* 0 .. objects-1 (the caller's numbering; 0 may mean "no object") */
    uint32_t region; /* 0 .. regions-1 */
    uint16_t flags;  /* CAMAT_WRITE; bits 8..15: bytes accessed (0 = 1) */
    uint16_t dep;    /* this core's accesses back to the one it depends on; 0 = none */
} camat_access;

typedef struct camat_cache {
    uint64_t size_bytes;
    uint32_t ways;       /* 1..64 */
    uint32_t hit_cycles; /* >= 1 */
    uint32_t mshrs;      /* outstanding misses to the next level, >= 1 */
    uint32_t reserved;
} camat_cache;

typedef struct camat_config {
    camat_cache cache[3];      /* L1, L2, LLC */
    uint32_t line_bytes;       /* power of two, 8..4096 */
    uint32_t cores;            /* 1..CAMAT_MAX_CORES */
    uint32_t issue_width;      /* accesses per cycle per core, >= 1 */
    uint32_t window;           /* accesses in flight per core, 1..4096 */
    uint32_t lag;              /* reorder == 0: cycles a core may trail the most advanced one */
    uint32_t reorder;          /* 0, or the stream window of clock-ordered interleaving; then
                                 camat_feed must be given the whole stream in one call */
    uint32_t mem_cycles;       /* MEM hit latency */
    uint32_t mem_mshrs;        /* per core: outstanding MEM misses (to FAR); swap faults: 1 */
    uint32_t far_cycles;       /* FAR latency */
    uint32_t coherence_cycles; /* extra cycles of a transfer from another core's cache */
    uint32_t page_shift;       /* local-buffer granule, 12 = 4 KiB pages */
    uint64_t local_pages;      /* MEM as a local buffer of this many pages; 0 = no FAR level */
    uint32_t objects;          /* >= 1 */
    uint32_t regions;          /* >= 1 */
    const uint8_t *pinned;     /* NULL, or objects flags: 1 = the object's pages are always
                                 local (they fill the buffer first) */
    uint64_t pinned_pages;     /* local pages the pinned objects take */
} camat_config;


typedef struct camat_model camat_model;

/* NULL on a bad configuration (then *err names the first bad field) or out of memory. */
camat_model *camat_create(const camat_config *cfg, const char **err);
void camat_destroy(camat_model *m);

/* Feeds n accesses in stream order. 0, or -1 with camat_error(m) set (a bad access field,
 * a timeline overrun: latencies too long for the model's cycle window, or with reorder > 0
 * a second call: clock order takes the whole stream in one). */
int camat_feed(camat_model *m, const camat_access *a, size_t n);

/* Drains every access in flight; call once after the last feed (nothing to drain after a
 * failed feed: the counts are then incomplete). */
void camat_finish(camat_model *m);

/* Counts: totals[CAMAT_LEVELS]; by_object[level * objects + object];
 * by_region[level * regions + region]. Valid after camat_finish. */
const camat_counts *camat_totals(const camat_model *m);
const camat_counts *camat_by_object(const camat_model *m);
const camat_counts *camat_by_region(const camat_model *m);
uint64_t camat_cycles(const camat_model *m); /* last completion cycle */
const char *camat_error(const camat_model *m);

/* Sampled timing (SMARTS-like). Every access goes through the caches, the coherence states and
 * the local buffer (functional warming), so accesses, misses, coherence misses, false sharing
 * and invalidations stay exact; every `period` accesses (in the order the model takes them) a
 * unit is timed in detail: `warm` accesses timed but not counted, `unit` accesses timed and
 * counted (measured), `warm` accesses timed but not counted (so the last measured ones overlap
 * later accesses as they would). Each unit starts from drained timing state (empty window and
 * miss registers, every core at the latest completion cycle). The cycle terms (hit/miss/pure
 * phases and shares, pure misses) of each level, object and region are those of its measured
 * accesses scaled to its exact counts: hit terms by accesses, miss terms by misses (from the
 * level's pooled measured accesses where an object or region has none measured). The level
 * totals are the sums over regions (so over objects they sum only approximately); their cycle
 * counts are the sums of the estimated shares. With several cores and clock-ordered
 * interleaving (reorder > 0), accesses between units are taken in stream order.
 * Call once, after camat_create and before the first camat_feed. NULL, or the name of the bad
 * argument (period >= unit + 2 * warm, 1 <= unit <= CAMAT_SAMPLE_MAX, warm <= CAMAT_SAMPLE_MAX,
 * period <= CAMAT_PERIOD_MAX) or "out of memory"; the model stays exact on an error. */
#define CAMAT_SAMPLE_MAX 100000000ULL
#define CAMAT_PERIOD_MAX (1ULL << 40)
const char *camat_sample(camat_model *m, uint64_t period, uint32_t unit, uint32_t warm);

typedef struct camat_sample_info {
    uint64_t period, accesses; /* accesses: all that were fed */
    uint64_t detailed;         /* timed (warm-up, measured, cool-down) */
    uint64_t measured;         /* timed and counted */
    uint64_t units;
    uint32_t unit, warm;
    double counted_active[CAMAT_LEVELS]; /* active cycles the timelines counted (timed accesses) */
    double shared_active[CAMAT_LEVELS];  /* Σ of the timed accesses' shares of them */
} camat_sample_info;

/* After camat_finish of a sampled model: the totals above, and per unit and level the measured
 * accesses and their active-cycle shares (hit + pure-miss): units[(u * CAMAT_LEVELS + l) * 2 +
 * {0, 1}], *n = units. NULL for an exact model. */
const camat_sample_info *camat_sample_info_of(const camat_model *m);
const double *camat_sample_units(const camat_model *m, size_t *n);

#endif
