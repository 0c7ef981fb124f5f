/*
 * objtier tiered-memory simulator: public interface of libobjtier_sim.so.
 *
 * The Python driver (objtier.sim.engine) mirrors sim_event, sim_config and sim_bin with
 * ctypes/numpy; keep the three in sync with it (engine.py asserts the sizes of its copies).
 *
 * Model in one paragraph: memory is a set of pages (4 KiB or 2 MiB) of live objects, each in
 * the fast or the slow tier. A page exists from the allocation of the first object that
 * overlaps it until the last such object is freed. Events arrive in time order, in chunks
 * (sim_feed); the simulator keeps state only for live pages, so memory stays bounded by the
 * live footprint whatever the trace length. A policy (one ops table per file) decides where a
 * new page goes and reacts to accesses and to a 1 ms clock (migrations). The core counts
 * accesses per tier and migrations, per time bin; costs are applied by the driver.
 */
#ifndef OBJTIER_SIM_H
#define OBJTIER_SIM_H

#include <stddef.h>
#include <stdint.h>

/* sim_event.type */
enum sim_event_type {
    SIM_EV_ALLOC = 1,  /* object `obj` = [addr, addr+size) becomes live */
    SIM_EV_ACCESS = 2, /* a sample at addr standing for `size` accesses (its weight) */
    SIM_EV_FREE = 3,   /* obj != SIM_NO_OBJ: the whole object; else the range [addr, addr+size) */
    SIM_EV_PHASE = 4,  /* the program enters phase `obj` (an index of sim_set_phase_placement);
                        * policies without phases ignore it */
};

#define SIM_NO_OBJ 0xFFFFFFFFu

/* One input event, 40 bytes. Events must be fed in non-decreasing time_ns. */
typedef struct sim_event {
    uint64_t time_ns; /* CLOCK_MONOTONIC ns, as in the trace */
    uint64_t addr;    /* virtual address in address space `space` */
    uint64_t size;    /* ALLOC/FREE: bytes; ACCESS: accesses this sample stands for (>= 1) */
    uint32_t obj;     /* ALLOC/FREE: object index < sim_config.objects; ACCESS: the object
                       * the address falls in (a hint for a direct page lookup; an address
                       * outside it falls back to a search) or SIM_NO_OBJ */
    uint32_t space;   /* address space (process) index, < 2^23 */
    uint16_t type;    /* enum sim_event_type */
    uint16_t flags;   /* ACCESS: ot_sample_record.flags (bit0 write when bit1 set) */
    uint32_t next;    /* ACCESS: how many ACCESS events ahead the next access to the same page
                       * is (1 = the next ACCESS event), 0 = none; read only by the belady
                       * policy, 0 for the others. Other events: 0 */
} sim_event;
_Static_assert(sizeof(sim_event) == 40, "sim_event is 40 bytes");

typedef struct sim_config {
    uint64_t fast_bytes; /* fast-tier capacity in bytes (rounded down to whole pages) */
    uint64_t start_ns;   /* time of bin 0 */
    uint64_t bin_ns;     /* width of one statistics bin, ns (> 0) */
    uint32_t page_shift; /* 12 (4 KiB) or 21 (2 MiB) */
    uint32_t objects;    /* object indices are < objects */
    uint32_t swap;       /* 1: the slow tier is swap (see "Swap mode" below); 0: a NUMA node */
    uint32_t reserved;   /* 0 */
} sim_config;
_Static_assert(sizeof(sim_config) == 40, "sim_config is 40 bytes");

/*
 * Swap mode (sim_config.swap = 1; the zram, nvme and rdma presets). The slow tier is swap under
 * a memory cgroup whose limit is the fast capacity:
 *   - an access to a page in swap is a major fault: the page is swapped in (pswpin) and the
 *     access is charged once at the slow tier's cost, the rest of the sample's weight at the
 *     fast tier's; when fast memory is full, the coldest unpinned fast page (second-chance LRU)
 *     is swapped out first (pswpout). Pinned pages (mlock of a plan's fast objects) are never
 *     swapped out. When every fast page is pinned the page stays in swap (the whole sample is
 *     charged slow, no swap-in is counted, and swap_fault_pinned and pgmigrate_fail count it):
 *     the plan pins more than the cgroup can hold, which a real cgroup answers with harder
 *     reclaim or its OOM killer; the driver notes it, since swap-ins are understated then.
 *   - a page a static plan pins (mlock) at allocation swaps an unpinned fast page out when fast
 *     memory is full, as mlock's population does under a memcg limit;
 *   - a page placed in the slow tier at allocation has never been written: it is in neither
 *     tier, and its first access is a zero-fill fault into fast memory (pgfault_first_touch,
 *     charged fast; it may swap another page out), not a swap-in.
 *   - every fast->slow move, by a fault or by a policy (kswapd), counts as pswpout, never as a
 *     demotion; a policy's promotion of a swapped page counts as pswpin and pgpromote_success.
 */

/* Per-bin statistics. Access counts are weighted (sum of sample weights); pages are counts of
 * pages of (1 << page_shift) bytes. */
typedef struct sim_bin {
    uint64_t fast_loads, fast_stores; /* accesses served by the fast tier */
    uint64_t slow_loads, slow_stores; /* accesses served by the slow tier */
    uint64_t other;                   /* accesses to no live object (stack, globals): fast */
    uint64_t promoted, demoted;       /* pages moved slow->fast, fast->slow by the policy
                                        * (NUMA migrations; in swap mode demoted stays 0 and
                                        * promoted counts policy swap-ins) */
    uint64_t hint_faults;             /* NUMA hint faults taken in this bin */
    uint64_t fast_pages, slow_pages;  /* resident pages at the end of the bin */
    uint64_t swap_in, swap_out;       /* swap mode: pages swapped in by faults / out (any cause) */
} sim_bin;
_Static_assert(sizeof(sim_bin) == 96, "sim_bin is 96 bytes");

typedef struct sim sim_t;

/* Create a simulator running `policy` (see sim_policy_names). NULL if the policy is unknown or
 * memory is short. Parameters may be set until the first sim_feed. */
sim_t *sim_create(const sim_config *config, const char *policy);
void sim_destroy(sim_t *sim);

/* Comma-separated list of the built-in policies. */
const char *sim_policy_names(void);
/* Comma-separated "name=default" list of a policy's parameters ("" if none, NULL if unknown). */
const char *sim_policy_params(const char *policy);
/* Set a policy parameter. 0 on success, -1 if the policy has no such parameter. */
int sim_set_param(sim_t *sim, const char *name, double value);

/* Static placement for the "static" policy: object i's first fast_bytes[i] bytes go to the fast
 * tier; if page_bits is given, page k of object i (k counted from the page holding its first
 * byte) additionally goes fast when page_bits[page_base[i] + k] != 0. Arrays are borrowed and
 * must outlive the simulator. Either may be NULL. */
void sim_set_placement(sim_t *sim, const uint64_t *fast_bytes, const uint8_t *page_bits,
                       const uint64_t *page_base);

/* Per-phase placements for the "phases" policy, in CSR form: while phase p is in force
 * (phase 0 from the start, then the last SIM_EV_PHASE), object objs[i] for i in
 * [offsets[p], offsets[p + 1]) has its first fast_bytes[i] bytes fast (pinned) and every other
 * object is slow. A switch migrates live pages to the new placement at once. Arrays (offsets:
 * nphases + 1 entries) are borrowed and must outlive the simulator. */
void sim_set_phase_placement(sim_t *sim, uint32_t nphases, const uint64_t *offsets,
                             const uint32_t *objs, const uint64_t *fast_bytes);

/* Feed n events (time ordered, continuing the previous chunk). 0 on success, -1 on error
 * (sim_error tells which). */
int sim_feed(sim_t *sim, const sim_event *events, size_t n);
/* Advance the clock to end_ns (running due ticks) and close the last bin. */
void sim_finish(sim_t *sim, uint64_t end_ns);
const char *sim_error(const sim_t *sim);

/* Cumulative counters, vmstat-like names (sim_counter_name). */
size_t sim_counter_count(void);
const char *sim_counter_name(size_t index);
void sim_counters(const sim_t *sim, uint64_t *out);

/* Swap mode: out[i] = swap-ins of accesses naming object i (sim_event.obj), for every
 * i < config.objects. Accesses naming no object are not counted here. */
void sim_object_swap_ins(const sim_t *sim, uint64_t *out);

/* The statistics bins so far (valid until the next sim_feed/sim_finish/sim_destroy). */
size_t sim_bins(const sim_t *sim, const sim_bin **bins);

#endif /* OBJTIER_SIM_H */
