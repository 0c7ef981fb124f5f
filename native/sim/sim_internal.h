/*
 * Simulator internals shared by the core (sim_core.c, sim_tiers.c, sim_objects.c, sim_pages.c)
 * and the policies (policy_*.c). Not installed; the public interface is sim.h.
 */
#ifndef OBJTIER_SIM_INTERNAL_H
#define OBJTIER_SIM_INTERNAL_H

#include "sim.h"

#include <stdbool.h>

enum sim_tier { SIM_FAST = 0, SIM_SLOW = 1 };

/* sim_page.flags */
#define SIM_PG_REFERENCED 0x01 /* accessed since the fast-LRU clock hand last passed */
#define SIM_PG_PROTNONE   0x02 /* numab: marked by the scanner, next access is a hint fault */
#define SIM_PG_ACTIVE     0x04 /* tpp: on the active LRU (one hint fault seen) */
#define SIM_PG_QUEUED     0x08 /* memtis/hemem: in the policy's promotion queue */
#define SIM_PG_PINNED     0x10 /* static: never demoted */
#define SIM_PG_UNTOUCHED  0x20 /* swap mode: placed slow at allocation, never resident yet */

#define SIM_NIL 0xFFFFFFFFu

/* One live page: the 16 bytes the access path touches. Its key and fast-LRU links live in a
 * parallel array (sim_page_link, same pool index), so that the pool an access walks is 16
 * bytes per page. Indices into the pool are stable for the page's lifetime (the hash table maps
 * key -> index, objects' page arrays hold indices). */
typedef struct sim_page {
    uint32_t stamp;  /* policy-defined: numab scan time (ms since start), hemem epoch */
    uint32_t count;  /* policy-defined: access count (memtis), reads (hemem) */
    uint32_t refs;   /* live objects overlapping the page (>= 1) */
    uint16_t count2; /* policy-defined: writes (hemem) */
    uint8_t tier;    /* enum sim_tier */
    uint8_t flags;   /* SIM_PG_* */
} sim_page;
_Static_assert(sizeof(sim_page) == 16, "sim_page is 16 bytes");

/* The cold half of a pool slot. key == 0 marks a free slot. */
typedef struct sim_page_link {
    uint64_t key;        /* ((space + 1) << 40) | page number; never 0 for a live page */
    uint32_t prev, next; /* fast-tier LRU links (pool indices, SIM_NIL at the ends); free
                           * slots are chained through next */
} sim_page_link;

/* Counter indices; names in sim_core.c (keep in the same order). Access counters are
 * weighted; page counters count pages. */
enum sim_counter {
    SIM_C_EVENTS,
    SIM_C_SAMPLES,
    SIM_C_FAST_LOADS,
    SIM_C_FAST_STORES,
    SIM_C_SLOW_LOADS,
    SIM_C_SLOW_STORES,
    SIM_C_OTHER,
    SIM_C_ALLOC_FAST,
    SIM_C_ALLOC_SLOW, /* new pages placed in each tier */
    SIM_C_PGPROMOTE_SUCCESS,
    SIM_C_PGPROMOTE_CANDIDATE,
    SIM_C_PGDEMOTE_KSWAPD,
    SIM_C_NUMA_HINT_FAULTS,
    SIM_C_NUMA_PTE_UPDATES,
    SIM_C_NUMA_PAGES_MIGRATED,
    SIM_C_PGMIGRATE_FAIL,
    SIM_C_KSWAPD_WAKE,
    SIM_C_PEAK_PAGES,
    SIM_C_PEAK_FAST_PAGES,
    SIM_C_HOT_THRESHOLD_MS, /* numab2: hot threshold at the end (gauge) */
    SIM_C_PSWPIN,
    SIM_C_PSWPOUT,
    SIM_C_PGMAJFAULT,          /* swap mode; pgmajfault = faulting swap-ins */
    SIM_C_PGFAULT_FIRST_TOUCH, /* swap mode: zero-fill faults */
    SIM_C_PHASE_SWITCHES,
    SIM_C_PGMIGRATE_PHASE,   /* phases: switches, pages moved by them */
    SIM_C_SWAP_FAULT_PINNED, /* swap mode: faults that found every fast page pinned (no room
                              * to swap in: the access is charged slow, a real cgroup would
                              * reclaim harder or OOM-kill); also counted in pgmigrate_fail */
    SIM_C_COUNT_
};

typedef struct sim_param_def {
    const char *name;
    double value; /* default */
} sim_param_def;

#define SIM_MAX_PARAMS 16

/* A policy. Every hook is optional except place. Hooks see the simulator and its pages;
 * migrations go through sim_promote/sim_demote so that counters and bins stay right. */
typedef struct sim_policy_ops {
    const char *name;
    const sim_param_def *params; /* terminated by {NULL, 0}; at most SIM_MAX_PARAMS */
    size_t state_bytes;          /* zeroed policy state at sim->state */
    int (*init)(sim_t *s);
    /* Tier for a new page of object obj at byte offset `offset` (page start - object start,
     * clamped at 0). The core falls back to slow when fast has no free page. */
    int (*on_alloc)(sim_t *s, sim_page *pg, uint32_t obj, uint64_t offset);
    void (*on_free)(sim_t *s, sim_page *pg);
    /* An access of `weight` accesses; the core has already charged it to pg's tier. Called
     * only when pg->flags has a bit of access_flags, or always when access_flags is 0. */
    void (*on_access)(sim_t *s, sim_page *pg, uint64_t now, uint64_t weight, bool store);
    uint8_t access_flags;
    void (*on_tick)(sim_t *s, uint64_t now);    /* every 1 ms of trace time */
    void (*on_phase)(sim_t *s, uint32_t phase); /* SIM_EV_PHASE; phase < phase_count */
    /* Swap mode: the fast page to swap out when a fault finds fast memory full, NULL when none
     * may go (the fault then fails as when every page is pinned). Without this hook the core
     * reclaims by second-chance LRU (sim_reclaim). */
    sim_page *(*evict)(sim_t *s);
    void (*fini)(sim_t *s);
} sim_policy_ops;

/* A live object and its direct page array: pages[k] is the pool index of the page holding
 * virtual page first_vpn + k of address space `space`, or SIM_NIL once that page was dropped
 * by an unmapped range. The array never holds a stale index (sim_objects.c invalidates entries
 * whenever a page it names is dropped while the object lives), so an access that knows its
 * object finds its page without the hash. first_vpn/npages keep the range of the allocation
 * even after a partial unmap shrinks addr/size. */
typedef struct sim_object {
    uint64_t addr, size; /* current range; size 0 = not live */
    uint64_t first_vpn;  /* page number of the allocation's first byte */
    uint32_t *pages;     /* npages pool indices (NULL when not live) */
    uint32_t npages;
    uint32_t space;
} sim_object;

struct sim {
    sim_config cfg;
    const sim_policy_ops *ops;
    double param[SIM_MAX_PARAMS]; /* values of ops->params, same order */
    void *state;
    bool started;
    char error[160];

    /* pages: pool (hot halves) and links (cold halves) with a free list, open-addressing
     * hash key -> pool index */
    sim_page *pool;
    sim_page_link *links;
    uint32_t pool_used, pool_cap, free_head; /* free slots chained through links[].next */
    uint64_t *hkeys;
    uint32_t *hvals;
    uint64_t hmask; /* capacity - 1, capacity a power of two, load <= 1/2 */
    uint64_t hcount;
    uint64_t last_key; /* one-entry lookup cache */
    uint32_t last_idx;

    /* tiers: fast LRU of the unpinned fast pages (head = most recent), page counts */
    uint32_t lru_head, lru_tail;
    uint64_t fast_cap, fast_pages, slow_pages;  /* in pages */
    uint64_t wm_min, wm_low, wm_high, wm_promo; /* fast-tier free-page watermarks */

    sim_object *objects;
    /* live objects with pages, sorted by (space, first_vpn), rebuilt lazily (scanners) */
    uint32_t *sorted;
    size_t nsorted, sorted_cap;
    bool sorted_dirty;

    /* time */
    uint64_t now, next_tick;
    const sim_event *event; /* the ACCESS event being applied (hooks may read it) */

    /* statistics */
    uint64_t counter[SIM_C_COUNT_];
    uint64_t *obj_swap_in; /* cfg.objects entries: swap-ins per object named by the access */
    sim_bin *bins;
    size_t nbins, bins_cap;
    sim_bin *bin;     /* current bin */
    uint64_t bin_end; /* end of the current bin, ns: an event before it and before next_tick
                       * needs no clock work */

    /* static placement (policy_static.c) */
    const uint64_t *place_fast_bytes;
    const uint8_t *place_bits;
    const uint64_t *place_base;

    /* per-phase placements (policy_phases.c), see sim_set_phase_placement */
    uint32_t phase_count;
    const uint64_t *phase_offsets;
    const uint32_t *phase_objs;
    const uint64_t *phase_fast_bytes;
};

/* Parameter value by name (must exist in ops->params). */
double sim_param(const sim_t *s, const char *name);

static inline uint64_t sim_fast_free(const sim_t *s)
{
    return s->fast_cap - s->fast_pages;
}
static inline uint64_t sim_ms(const sim_t *s, uint64_t now)
{
    return now > s->cfg.start_ns ? (now - s->cfg.start_ns) / 1000000u : 0;
}

/* Tiers (sim_tiers.c). Move a page between tiers, updating counters, bins and the fast LRU.
 * Promotion fails (returns false) when the fast tier has no free page. */
bool sim_promote(sim_t *s, sim_page *pg);
void sim_demote(sim_t *s, sim_page *pg);

/* kswapd-like reclaim: demote pages from the cold end of the fast LRU (second chance: a
 * referenced page gets its bit cleared and moves to the head) until `target_free` pages are free
 * or no candidate is left. `keep`, if given, vetoes a victim (it then moves to the head).
 * Returns pages demoted. */
typedef bool (*sim_keep_fn)(sim_t *s, sim_page *pg);
uint64_t sim_reclaim(sim_t *s, uint64_t target_free, sim_keep_fn keep);

/* mlock/munlock of a page: a pinned fast page leaves the LRU and is never reclaimed; unpinning
 * puts it back at the LRU head. Pinning a slow page only sets the flag. */
void sim_pin(sim_t *s, sim_page *pg);
void sim_unpin(sim_t *s, sim_page *pg);

/* Pool iteration (scanners): pages live at indices [0, pool_used) with key != 0. */
static inline sim_page *sim_page_at(sim_t *s, uint32_t idx)
{
    return s->links[idx].key ? &s->pool[idx] : NULL;
}

/* Look a page up by pool index recorded together with its key (queues): NULL if gone. */
static inline sim_page *sim_page_check(sim_t *s, uint32_t idx, uint64_t key)
{
    return (idx < s->pool_used && s->links[idx].key == key) ? &s->pool[idx] : NULL;
}

static inline uint32_t sim_page_index(const sim_t *s, const sim_page *pg)
{
    return (uint32_t)(pg - s->pool);
}

/* The key of a live page. */
static inline uint64_t sim_page_key_of(const sim_t *s, const sim_page *pg)
{
    return s->links[pg - s->pool].key;
}

#define SIM_KEY_SPACE_SHIFT 40
static inline uint64_t sim_page_key(uint32_t space, uint64_t vpn)
{
    return ((uint64_t)(space + 1) << SIM_KEY_SPACE_SHIFT) | vpn;
}

/* Objects (sim_objects.c): allocation and free events, the live objects in address order. */
int sim_do_alloc(sim_t *s, const sim_event *e);
int sim_do_free(sim_t *s, const sim_event *e);
void sim_objects_fini(sim_t *s);
/* Live objects with pages sorted by (space, first_vpn); valid until the next event. NULL with
 * *n = 0 when there is none or memory is short. */
const uint32_t *sim_sorted_objects(sim_t *s, size_t *n);

/* Page helpers (sim_pages.c). */
uint64_t sim_hash_key(uint64_t key);
int sim_pages_init(sim_t *s);
void sim_pages_fini(sim_t *s);
sim_page *sim_page_lookup(sim_t *s, uint64_t key);
sim_page *sim_page_insert(sim_t *s, uint64_t key); /* new zeroed page (refs 0), NULL on OOM */
void sim_page_remove(sim_t *s, sim_page *pg);
void sim_lru_push_head(sim_t *s, sim_page *pg);
void sim_lru_unlink(sim_t *s, sim_page *pg);

/* A small growable FIFO of (pool index, key) pairs for promotion queues. */
typedef struct sim_queue {
    uint32_t *idx;
    uint64_t *key;
    size_t head, tail, cap; /* entries [head, tail) in a ring of cap slots */
} sim_queue;
int sim_queue_push(sim_queue *q, uint32_t idx, uint64_t key);
bool sim_queue_pop(sim_queue *q, uint32_t *idx, uint64_t *key);
static inline size_t sim_queue_len(const sim_queue *q)
{
    return q->tail - q->head;
}
void sim_queue_free(sim_queue *q);

/* Built-in policies (one file each). */
extern const sim_policy_ops sim_policy_first_touch;
extern const sim_policy_ops sim_policy_numab2;
extern const sim_policy_ops sim_policy_tpp;
extern const sim_policy_ops sim_policy_memtis;
extern const sim_policy_ops sim_policy_hemem;
extern const sim_policy_ops sim_policy_static;
extern const sim_policy_ops sim_policy_phases;
extern const sim_policy_ops sim_policy_belady;

#endif /* OBJTIER_SIM_INTERNAL_H */
