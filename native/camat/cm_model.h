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

#define CM_INLINE static inline __attribute__((always_inline)) /* the per-access steps */

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
    uint8_t *held; /* more than one core: copies in l1 and l2 by cm_held_at bucket (HELD_STUCK) */
    uint16_t fetching[M1_BUCKETS]; /* L1 registers holding a line, by line % M1_BUCKETS */
} core;

struct camat_model {
    camat_config cfg;
    uint32_t line_shift, chunk_shift; /* chunk = line / 64: one bit of a byte mask */
    uint32_t hit[CAMAT_LEVELS];
    uint32_t levels;     /* 4, or 5 with FAR */
    uint32_t held_shift; /* cm_held_at: 64 - log2 of the buckets of core.held */
    core *cores;
    cm_cache llc;
    mshr_set mllc;
    cm_local local;
    uint8_t *pinned;
    uint64_t gmax;  /* most advanced in-order issue front (core.cycle) */
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
    uint32_t fed_by_clock;   /* reorder > 0: the one camat_feed call was made */
};

/* Which cores may hold a line in their private caches. With more than one core, each core
 * counts the copies in its l1 and l2 (a line in both counts twice) by a hash bucket of the
 * line; a count that reaches HELD_STUCK stays there. A bucket at 0 means no copy, so a
 * coherence step skips that core's look-ups, which would find nothing: the same states and
 * counts as asking every core. */
#define HELD_STUCK 255

CM_INLINE uint64_t cm_held_at(const camat_model *m, uint64_t line)
{
    return (line * 0xD6E8FEB86659FD93ULL) >> m->held_shift;
}

CM_INLINE void cm_held_add(core *k, uint64_t at)
{
    k->held[at] += k->held[at] != HELD_STUCK;
}

CM_INLINE void cm_held_sub(core *k, uint64_t at)
{
    k->held[at] -= k->held[at] != HELD_STUCK;
}

/* Puts line in slot v of core k's cache c (a victim from cm_cache_lookup), keeping k's counts
 * of copies (multi: more than one core). */
CM_INLINE void cm_private_put(const camat_model *m, core *k, cm_cache *c, uint64_t v, uint64_t line,
                              uint8_t st, const int multi)
{
    if (multi) { /* no branch on whether the way was empty (old 0: a bucket left as it is) */
        uint64_t old = c->tag[v], was = cm_held_at(m, old - 1);
        k->held[was] -= (old != 0) & (k->held[was] != HELD_STUCK);
        cm_held_add(k, cm_held_at(m, line));
    }
    cm_cache_put(c, v, line, st);
}

/* Coherence, shared by both paths (inlined into both). */

/* The j-th core after me (1 <= j < cores), round the cores: no branch on me. */
CM_INLINE uint32_t cm_other(const camat_model *m, uint32_t me, uint32_t j)
{
    uint32_t c = me + j;
    return c >= m->cfg.cores ? c - m->cfg.cores : c;
}

/* Byte-chunk mask of [addr, addr + size) within its line (64 chunks per line). */
CM_INLINE uint64_t cm_chunk_mask(const camat_model *m, uint64_t addr, uint32_t size)
{
    uint64_t off = (addr & (m->cfg.line_bytes - 1)) >> m->chunk_shift;
    uint64_t last = ((addr & (m->cfg.line_bytes - 1)) + (size ? size : 1) - 1) >> m->chunk_shift;
    last = last < 63 ? last : 63;
    return (~0ULL >> (63 - last)) & ~((1ULL << off) - 1);
}

/* Coherence on a store that needs ownership: drop every other core's copy and remember, in
 * that core's table, which bytes the store wrote. Returns the copies invalidated. */
CM_INLINE uint64_t cm_invalidate_others(camat_model *m, uint32_t me, uint64_t line, uint64_t mask)
{
    uint64_t n = 0;
    for (uint32_t j = 1; j < m->cfg.cores; j++) {
        core *k = &m->cores[cm_other(m, me, j)];
        uint64_t at = cm_held_at(m, line);
        if (!k->held[at])
            continue;
        int64_t s1 = cm_cache_find(&k->l1, line), s2 = cm_cache_find(&k->l2, line);
        if (s1 < 0 && s2 < 0)
            continue;
        if (k->fetching[line % M1_BUCKETS]) /* its fetch in flight no longer counts */
            for (uint32_t i = 0; i < k->m1.n; i++)
                if (k->m1.line[i] == line + 1) {
                    k->m1.line[i] = 0;
                    k->fetching[line % M1_BUCKETS]--;
                }
        if (s1 >= 0)
            cm_cache_drop(&k->l1, s1, line), cm_held_sub(k, at);
        if (s2 >= 0)
            cm_cache_drop(&k->l2, s2, line), cm_held_sub(k, at);
        inv_entry *e = &k->inv[line % INV_SLOTS];
        if (e->line != line + 1)
            *e = (inv_entry){line + 1, 0};
        e->written |= mask;
        n++;
    }
    return n;
}

/* On a read miss in the private caches: is the line held by another core, Modified there?
 * Downgrades every other copy to Shared. Returns 2 (modified elsewhere), 1 (shared), 0. */
CM_INLINE int cm_snoop_read(camat_model *m, uint32_t me, uint64_t line)
{
    int found = 0;
    for (uint32_t j = 1; j < m->cfg.cores; j++) {
        core *k = &m->cores[cm_other(m, me, j)];
        if (!k->held[cm_held_at(m, line)])
            continue;
        int64_t s1 = cm_cache_find(&k->l1, line), s2 = cm_cache_find(&k->l2, line);
        if (s1 >= 0) {
            found = found > 1 || cm_state(&k->l1, s1) == ST_M ? 2 : 1;
            cm_set_state(&k->l1, s1, ST_S);
        }
        if (s2 >= 0) {
            found = found > 1 || cm_state(&k->l2, s2) == ST_M ? 2 : (found ? found : 1);
            cm_set_state(&k->l2, s2, ST_S);
        }
    }
    return found;
}

/* The pieces of an access's path that the timed path (camat.c) and the functional one
 * (cm_sample.c) share; inlined into both. */

/* 0, or -1 with m->error naming the field of a that is out of range. */
CM_INLINE int cm_check_access(camat_model *m, const camat_access *a)
{
    const camat_config *cfg = &m->cfg;
    if (a->core < cfg->cores && a->object < cfg->objects && a->region < cfg->regions)
        return 0;
    m->error = a->core >= cfg->cores       ? "access core out of range"
               : a->object >= cfg->objects ? "access object out of range"
                                           : "access region out of range";
    return -1;
}

/* A store hitting a line core me owns: its bytes count for the cores it took the line from. */
CM_INLINE void cm_owner_store(camat_model *m, uint32_t me, uint64_t line, uint64_t bytes)
{
    for (uint32_t j = 1; j < m->cfg.cores; j++) { /* no branch on the outcome */
        inv_entry *e = &m->cores[cm_other(m, me, j)].inv[line % INV_SLOTS];
        e->written |= e->line == line + 1 ? bytes : 0;
    }
}

/* A private miss of core k: counts it as a coherence miss (and false sharing) when another
 * core took the line away. */
CM_INLINE void cm_coherence_miss(camat_model *m, core *k, uint32_t obj, uint32_t reg, uint64_t line,
                                 uint64_t bytes)
{
    inv_entry *e = &k->inv[line % INV_SLOTS];
    uint64_t lost = e->line == line + 1, fs = lost & !(e->written & bytes); /* no branches */
    camat_counts *o = &m->by_object[obj], *r = &m->by_region[reg];
    o->coherence_misses += lost;
    r->coherence_misses += lost;
    m->totals[0].coherence_misses += lost;
    o->false_sharing += fs;
    r->false_sharing += fs;
    m->totals[0].false_sharing += fs;
    e->line = lost ? 0 : e->line;
}

/* Coherence at the LLC for a private miss of core me (more than one core): a store
 * invalidates the other copies, a load snoops them (*snooped: cm_snoop_read's answer).
 * Returns the extra cycles of a transfer from another core, or 0. */
CM_INLINE uint32_t cm_coherence_at_llc(camat_model *m, uint32_t me, uint32_t obj, uint32_t reg,
                                       uint64_t line, uint64_t bytes, int write, int *snooped)
{
    if (write) {
        uint64_t n = cm_invalidate_others(m, me, line, bytes);
        m->by_object[(size_t)CAMAT_LLC * m->cfg.objects + obj].invalidations += n;
        m->by_region[(size_t)CAMAT_LLC * m->cfg.regions + reg].invalidations += n;
        m->totals[CAMAT_LLC].invalidations += n;
        return n ? m->cfg.coherence_cycles : 0;
    }
    *snooped = cm_snoop_read(m, me, line);
    return *snooped == 2 ? m->cfg.coherence_cycles : 0;
}

/* Core k's L1 look-up of line: 1 when the L1 serves the access (the line is there and the
 * access needs no ownership; a store makes it Modified), else 0. *s1 and *v1 are the look-up's
 * slot and victim; *upgrade is set when a store found the line Shared (it needs ownership). */
CM_INLINE int cm_l1_serves(camat_model *m, core *k, uint32_t me, uint64_t line, int write,
                           uint64_t bytes, int64_t *s1, uint64_t *v1, int *upgrade, const int multi)
{
    *s1 = cm_cache_lookup(&k->l1, line, v1);
    *upgrade = *s1 >= 0 && write && cm_state(&k->l1, *s1) == ST_S; /* needs ownership: RFO */
    if (*s1 < 0 || *upgrade)
        return 0;
    cm_cache_touch(&k->l1, line, *s1);
    if (write) {
        cm_set_state(&k->l1, *s1, ST_M);
        if (multi)
            cm_owner_store(m, me, line, bytes);
    }
    return 1;
}

/* The LLC's look-up of a private miss: 1 when the LLC serves it (a hit, an upgrade, or a
 * transfer from another core: extra > 0), else 0. Either way the line ends in the LLC (put
 * Shared when missing: it passes through on its way from memory). */
CM_INLINE int cm_llc_serves(camat_model *m, uint64_t line, int upgrade, uint32_t extra)
{
    uint64_t v3 = 0;
    int64_t s3 = cm_cache_lookup(&m->llc, line, &v3);
    if (s3 >= 0)
        cm_cache_touch(&m->llc, line, s3);
    else
        cm_cache_put(&m->llc, v3, line, ST_S);
    return s3 >= 0 || upgrade || extra;
}

/* Memory's answer to an LLC miss of object obj at addr: 1 when the local buffer (MEM) holds
 * the page (always without a far level, or for a pinned object), 0 when it comes from FAR. */
CM_INLINE int cm_local_serves(camat_model *m, uint32_t obj, uint64_t addr)
{
    if (!m->cfg.local_pages || (m->pinned && m->pinned[obj]))
        return 1;
    return cm_local_access(&m->local, addr >> m->cfg.page_shift);
}

/* Fills core k's private caches with a missed line in its new state: s1/v1 the L1 look-up
 * (an upgrade keeps the line in place), s2_slot the L2 slot (-2: not looked up), v2 its
 * victim; snooped as from cm_coherence_at_llc (-1: not asked). */
CM_INLINE void cm_fill_private(camat_model *m, core *k, uint32_t me, uint64_t line, int write,
                               int upgrade, int snooped, int64_t s1, uint64_t v1, int64_t s2_slot,
                               uint64_t v2, const int multi)
{
    /* a load that snooped: Shared when it found copies (they are still there, Shared) */
    int w = write != 0; /* M for a store, else S or E: arithmetic, no branch */
    uint8_t st = (uint8_t)(ST_E + w - (!w & (snooped > 0)));
    /* a load that hit in L2 (s2_slot >= 0, not snooped): Shared if another core holds a copy.
     * No core holds a copy of a line another holds Exclusive or Modified (a store invalidates
     * the other copies, a load that finds one makes every copy Shared), so a line this core's
     * L2 holds so needs no look-up: the scan would find none. */
    if (multi && !write && snooped < 0 && cm_state(&k->l2, s2_slot) < ST_E) {
        uint64_t at = cm_held_at(m, line);
        for (uint32_t j = 1; j < m->cfg.cores && st == ST_E; j++) {
            const core *o = &m->cores[cm_other(m, me, j)];
            if (o->held[at] &&
                (cm_cache_find(&o->l1, line) >= 0 || cm_cache_find(&o->l2, line) >= 0))
                st = ST_S;
        }
    }
    if (upgrade)
        cm_set_state(&k->l1, s1, ST_M), cm_cache_touch(&k->l1, line, s1);
    else
        cm_private_put(m, k, &k->l1, v1, line, st, multi); /* the set as the look-up saw it */
    int64_t s2b = s2_slot != -2 ? s2_slot : cm_cache_lookup(&k->l2, line, &v2);
    if (s2b >= 0)
        cm_set_state(&k->l2, s2b, st);
    else
        cm_private_put(m, k, &k->l2, v2, line, st, multi);
}

#endif
