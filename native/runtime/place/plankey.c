/*
 * Stable context keys of allocation contexts, for plan matching (trace_format.h, bottom).
 *
 * The key of context id c is computed from the frames the context table holds for c — the
 * frames of its CONTEXT record (context.c) — the first time an allocation with context c is
 * matched; later allocations of c cost one array load.
 *
 * Also: this process's identity (rt_plan_self_read) for choosing its sections of a
 * multi-program plan.
 *
 * Invariants
 *   - cache[c] is the key of context id c, or 0 when not computed yet (a real key of 0 is
 *     recomputed each time, which is only slower).
 *   - Callers serialize (placement.c holds its lock); the cache grows by remapping.
 */
#define _GNU_SOURCE
#include "plankey.h"
#include "context.h"
#include "modules.h"
#include "plan.h"
#include "rt.h"

#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint64_t *cache;
static uint64_t cache_cap; /* entries */

void rt_plankey_reset(void)
{
    if (cache)
        memset(cache, 0, cache_cap * sizeof *cache);
}

static uint64_t *slot(uint32_t ctx)
{
    if (ctx >= cache_cap) {
        uint64_t cap = cache_cap ? cache_cap : 4096;
        while (cap <= ctx)
            cap *= 2;
        uint64_t *c = rt_sys_mmap(cap * sizeof *c);
        if (!c)
            return NULL;
        if (cache) {
            memcpy(c, cache, cache_cap * sizeof *c);
            rt_sys_munmap(cache, cache_cap * sizeof *c);
        }
        cache = c;
        cache_cap = cap;
    }
    return &cache[ctx];
}

uint64_t rt_plankey_of(uint32_t ctx)
{
    uint64_t *s = ctx ? slot(ctx) : NULL;
    if (s && *s)
        return *s;
    uint64_t key = rt_context_key(ctx);
    if (s)
        *s = key;
    return key;
}

/* ---- this process's identity for multi-program plans (plan.h, rt_plan_self) -------- */

/* The first module dl_iterate_phdr reports is the main executable: its GNU build id. */
static int main_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    char *hex = data;
    static const char digits[] = "0123456789abcdef";
    uint32_t len;
    const unsigned char *id = rt_module_build_id(info, 32, &len);
    if (id) {
        for (uint32_t k = 0; k < len; k++) {
            hex[2 * k] = digits[id[k] >> 4];
            hex[2 * k + 1] = digits[id[k] & 15];
        }
        hex[2 * len] = 0;
    }
    return 1; /* only the first module */
}

/* A rank variable's value: decimal digits only, else RT_PLAN_NO_RANK. */
static uint64_t rank_of(const char *s)
{
    uint64_t v = 0;
    if (!s || !*s)
        return RT_PLAN_NO_RANK;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 1000000000ull)
            return RT_PLAN_NO_RANK;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    return v;
}

void rt_plan_self_read(rt_plan_self *self)
{
    memset(self, 0, sizeof *self);
    dl_iterate_phdr(main_build_id, self->build_id);
    char exe[4096];
    long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    size_t len = strlen(base);
    if (len >= sizeof self->exe_base)
        len = sizeof self->exe_base - 1;
    memcpy(self->exe_base, base, len);
    self->exe_base[len] = 0;
    /* Open MPI, MPICH/Intel MPI (PMI), Slurm: the first one set wins */
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    self->rank = RT_PLAN_NO_RANK;
    for (size_t i = 0; i < sizeof names / sizeof *names && self->rank == RT_PLAN_NO_RANK; i++)
        self->rank = rank_of(getenv(names[i]));
}
