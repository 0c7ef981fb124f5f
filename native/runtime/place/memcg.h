/*
 * The memory cgroup this process runs in: the limit that binds it and that cgroup's usage.
 * cgroup v1: the memory controller's cgroup, limit = memory.stat's hierarchical_memory_limit
 * (ancestors included), usage = its memory.usage_in_bytes. cgroup v2: the cgroup or ancestor
 * with the smallest memory.max, usage = that cgroup's memory.current. Standard mount points
 * (/sys/fs/cgroup/memory for v1, /sys/fs/cgroup for v2). Raw system calls only: callable
 * from the runtime's own threads with rt_guard set.
 */
#ifndef OBJTIER_MEMCG_H
#define OBJTIER_MEMCG_H

#include <stdint.h>

typedef struct rt_memcg {
    uint64_t limit;        /* bytes; UINT64_MAX = no limit (or no memory cgroup) */
    char usage_path[1400]; /* the usage file of the binding cgroup; "" when unknown */
    char stat_path[1400];  /* its memory.stat; "" when unknown */
} rt_memcg;

/* Fills *m from /proc/self/cgroup. Never fails: an unreadable set-up means no limit. */
void rt_memcg_open(rt_memcg *m);

/* This process's memory cgroup, read once (rt_memcg_open on the first call) and shared by
 * every start-up step that needs it (the swap tier, where the runtime's threads run).
 * Start-up only: the first call is not thread-safe. */
const rt_memcg *rt_memcg_self(void);

/* Current usage of the binding cgroup [bytes], UINT64_MAX when it cannot be read. */
uint64_t rt_memcg_usage(const rt_memcg *m);

/* Anonymous memory on the binding cgroup's inactive LRU list [bytes] (memory.stat
 * "inactive_anon"), UINT64_MAX when it cannot be read. */
uint64_t rt_memcg_inactive_anon(const rt_memcg *m);

/* 1 while the binding cgroup's usage is within its headroom of the limit (1/32 of it, at
 * least 4 MiB); 0 without a limit. */
int rt_memcg_near_limit(const rt_memcg *m);

/* The pressure guard's measure (the swap tier's and the online placement's): bytes to advise
 * MADV_COLD now — while near the limit (near: rt_memcg_near_limit's answer), the shortfall of
 * the inactive anonymous list below inactive_pct % of the limit; 0 otherwise.
 *
 * Why: under thrashing the kernel puts every refaulted page on the active list; the inactive
 * list runs dry, and a charge whose reclaim finds nothing sixteen times in a row ends in the
 * cgroup's OOM killer although swap has room (seen with cgroup v1 on kernel 6.18). MADV_COLD
 * moves pages to the inactive list, where reclaim takes them unless they are touched again
 * first; advising only the shortfall leaves the kernel's page-level aging of the rest alone. */
uint64_t rt_memcg_inactive_shortfall(const rt_memcg *m, int near, uint32_t inactive_pct);

/* The value of the binding cgroup's own memory.stat line `key` (e.g. "unevictable": mlocked
 * memory, bytes), UINT64_MAX when it cannot be read. */
uint64_t rt_memcg_stat(const rt_memcg *m, const char *key);

/* The bytes the swap tier may mlock in all, under cgroup limit cg (UINT64_MAX: none) and
 * OBJTIER_MLOCK_LIMIT mlock_limit (0: none of its own): mlock_limit, and cg less a margin —
 * max(10 %, 32 MiB) without mlock_limit, 4 MiB with it (chosen with its own margin: objtier
 * run/compare --mlock-margin). UINT64_MAX without either. */
uint64_t rt_memcg_lock_room(uint64_t cg, uint64_t mlock_limit);

#endif
