/* Set-associative caches with true LRU for the C-AMAT model.
 *
 * Layout, per set (slot = set * ways + way):
 *   tag[slot]   line number + 1, 0 = empty way;
 *   state[slot] a MESI state (shared caches use ST_S only);
 *   fp[set * fp_stride + way]  one byte per way: 0x80 | 7 bits of a hash of the line, 0 for
 *               an empty way, FP_PAD past the last way (fp_stride = ways rounded up to 8);
 *   the set's recency order, most recent way first: with up to 16 ways, one 64-bit word per
 *               set, rank r in bits 4r..4r+3 (ranks past the last way hold 15, never a way
 *               then); with more, one byte per rank (rank[set * fp_stride + r]).
 * A fill or touch moves its way to rank 0, so the LRU way of a full set is read at rank
 * ways - 1, without a scan.
 * A look-up compares the set's fingerprints eight at a time (bytes of a 64-bit word) and
 * reads a tag only where a fingerprint matches, so it costs a few instructions whatever the
 * ways, and no branch depends on which way holds the line. */
#ifndef OBJTIER_CM_CACHE_H
#define OBJTIER_CM_CACHE_H

#include <stdint.h>
#include <string.h>

/* MESI states of a line in a private cache. */
enum { ST_I = 0, ST_S = 1, ST_E = 2, ST_M = 3 };

#define CM_HOT static inline __attribute__((always_inline)) /* on every access's path */

#define FP_PAD 0x01 /* neither a fingerprint (>= 0x80) nor empty (0) */

typedef struct cm_cache {
    uint64_t *tag;
    uint8_t *state;
    uint8_t *fp;
    uint64_t *order;         /* ways <= 16: per set, ways by recency in nibbles */
    uint8_t *rank;           /* ways > 16: per set, ways by recency in bytes */
    uint64_t sets, set_mask; /* set_mask = sets - 1 when sets is a power of two, else 0 */
    uint32_t ways, fp_stride;
} cm_cache;

int cm_cache_init(cm_cache *c, uint64_t size_bytes, uint32_t ways, uint32_t line_bytes);
void cm_cache_free(cm_cache *c);

static inline uint64_t cm_set_of(const cm_cache *c, uint64_t line)
{
    return c->set_mask ? (line & c->set_mask) : (line % c->sets);
}

static inline uint8_t cm_fingerprint(uint64_t line)
{
    return (uint8_t)(0x80 | ((line * 0x9E3779B97F4A7C15ULL) >> 57));
}

#define CM_NIBS 0x1111111111111111ULL

/* The LRU way of the full set (its slot). */
static inline uint64_t cm_cache_lru_of(const cm_cache *c, uint64_t set)
{
    uint32_t last = c->ways - 1;
    uint64_t way = c->order ? c->order[set] >> (4 * last) & 15 : c->rank[set * c->fp_stride + last];
    return set * c->ways + way;
}

/* Moves way to rank 0 of the set's recency order (ways > 16). */
void cm_cache_rank_touch(cm_cache *c, uint64_t set, uint32_t way);

/* Moves way to rank 0 of the set's recency order. */
CM_HOT void cm_cache_mru(cm_cache *c, uint64_t set, uint32_t way)
{
    if (!c->order) {
        cm_cache_rank_touch(c, set, way);
        return;
    }
    uint64_t o = c->order[set], x = o ^ (way * CM_NIBS);
    if ((o & 15) == way) /* already the most recent (a loop over one line) */
        return;
    /* the lowest zero nibble of x is way's rank (exact: a borrow only reaches higher ones) */
    uint32_t r = (uint32_t)__builtin_ctzll((x - CM_NIBS) & ~x & (CM_NIBS << 3)) & ~3U;
    uint64_t below = (1ULL << r) - 1, above = ~(below | (15ULL << r));
    c->order[set] = (o & above) | ((o & below) << 4) | way;
}

#define CM_ONES  0x0101010101010101ULL
#define CM_HIGHS 0x8080808080808080ULL

/* Bit 7 of every byte of x that is zero (and maybe of bytes above one that is: a zero byte's
 * borrow; never of a byte below the lowest zero byte), else 0. */
static inline uint64_t cm_zero_bytes(uint64_t x)
{
    return (x - CM_ONES) & ~x & CM_HIGHS;
}

/* Slot index of line, or -1 (a line is in at most one way); with a miss, *victim (when not
 * NULL) is the slot a fill of line takes: the set's first empty way, else its LRU way. */
CM_HOT int64_t cm_cache_scan(const cm_cache *c, uint64_t line, uint64_t *victim)
{
    uint64_t set = cm_set_of(c, line), base = set * c->ways, key = line + 1;
    const uint8_t *f = c->fp + set * c->fp_stride;
    uint64_t pattern = cm_fingerprint(line) * CM_ONES;
    for (uint32_t w0 = 0; w0 < c->ways; w0 += 8) {
        uint64_t word;
        memcpy(&word, f + w0, 8);
        for (uint64_t m = cm_zero_bytes(word ^ pattern); m; m &= m - 1) {
            uint64_t s = base + w0 + (uint64_t)__builtin_ctzll(m) / 8;
            if (c->tag[s] == key)
                return (int64_t)s;
        }
    }
    if (!victim)
        return -1;
    /* a miss: the first empty way, else the LRU one (a full set, the usual case, reads the
     * fingerprints again rather than every look-up searching for an empty way) */
    for (uint32_t w0 = 0; w0 < c->ways; w0 += 8) {
        uint64_t word;
        memcpy(&word, f + w0, 8);
        uint64_t e = cm_zero_bytes(word);
        if (e) {
            *victim = base + w0 + (uint64_t)__builtin_ctzll(e) / 8;
            return -1;
        }
    }
    *victim = cm_cache_lru_of(c, set);
    return -1;
}

CM_HOT int64_t cm_cache_lookup(const cm_cache *c, uint64_t line, uint64_t *victim)
{
    return cm_cache_scan(c, line, victim);
}

CM_HOT int64_t cm_cache_find(const cm_cache *c, uint64_t line)
{
    return cm_cache_scan(c, line, NULL);
}

static inline void cm_cache_prefetch(const cm_cache *c, uint64_t line)
{
    uint64_t set = cm_set_of(c, line);
    __builtin_prefetch(c->fp + set * c->fp_stride);
    __builtin_prefetch(c->tag + set * c->ways);
    if (c->order)
        __builtin_prefetch(c->order + set);
}

static inline uint8_t cm_state(const cm_cache *c, int64_t slot)
{
    return c->state[slot];
}

static inline void cm_set_state(cm_cache *c, int64_t slot, uint8_t state)
{
    c->state[slot] = state;
}

/* Makes slot, which holds line, the set's most recently used way. */
CM_HOT void cm_cache_touch(cm_cache *c, uint64_t line, int64_t slot)
{
    uint64_t set = cm_set_of(c, line);
    cm_cache_mru(c, set, (uint32_t)((uint64_t)slot - set * c->ways));
}

static inline uint8_t *cm_fp_of(const cm_cache *c, uint64_t line, uint64_t slot)
{
    uint64_t set = cm_set_of(c, line);
    return c->fp + set * c->fp_stride + (slot - set * c->ways);
}

/* Empties slot, which holds line (the line was invalidated). */
static inline void cm_cache_drop(cm_cache *c, int64_t slot, uint64_t line)
{
    *cm_fp_of(c, line, (uint64_t)slot) = 0;
    c->tag[slot] = 0;
    c->state[slot] = ST_I;
}

/* Puts line in slot: a victim from cm_cache_lookup, the set unchanged since. */
CM_HOT void cm_cache_put(cm_cache *c, uint64_t slot, uint64_t line, uint8_t state)
{
    uint64_t set = cm_set_of(c, line);
    uint32_t way = (uint32_t)(slot - set * c->ways);
    uint8_t *fp = c->fp + set * c->fp_stride, *st = c->state;
    uint64_t *tag = c->tag;
    cm_cache_mru(c, set, way); /* first: the byte stores below would make c's fields reload */
    fp[way] = cm_fingerprint(line);
    tag[slot] = line + 1;
    st[slot] = state;
}

/* Puts line (missing) in the set's first empty way, else in its LRU way; returns the slot. */
int64_t cm_cache_fill(cm_cache *c, uint64_t line, uint8_t state);

#endif
