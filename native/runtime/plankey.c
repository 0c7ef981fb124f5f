/*
 * Stable context keys of allocation contexts, for plan matching (trace_format.h, bottom).
 *
 * The key of context id c is computed once, the first time an allocation with context c is
 * matched: the caller's stack is unwound again from inside the same rt_on_alloc call, with
 * the procedure of context.c (unw_backtrace; frames inside the runtime dropped; at most
 * `depth` frames; each ip mapped to the dl_iterate_phdr module whose PT_LOAD span holds it;
 * offset = ip - load bias; the main program named by /proc/self/exe), so the frames are the
 * ones the CONTEXT record holds. Later allocations of c cost one array load.
 *
 * Invariants
 *   - cache[c] is the key of context id c, or 0 when not computed yet (a real key of 0 is
 *     recomputed each time, which is only slower).
 *   - Callers serialize (placement.c holds its lock); the cache grows by remapping.
 */
#define _GNU_SOURCE
#include "modules.h"
#include "plankey.h"
#include "rt.h"

#include <libunwind.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "objtier/trace_format.h"

#define MAX_DEPTH 32
#define EXTRA_FRAMES 16 /* room for the runtime's own frames, which are dropped */

static uint64_t *cache;
static uint64_t cache_cap; /* entries */
static uint64_t self_start, self_end;
static char exe_name[256];
static size_t exe_name_len;

typedef struct {
    uint64_t ip;
    int found;
    uint64_t span_lo, span_hi; /* PT_LOAD span of the module found */
    uint64_t base;
    const char *name;
    size_t name_len;
} find_arg;

static void basename_of(const char *path, const char **name, size_t *len)
{
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    *len = strlen(*name);
}

static int on_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    find_arg *a = data;
    uint64_t lo, hi;
    rt_load_span(info, &lo, &hi);
    if (hi == 0 || a->ip < lo || a->ip >= hi)
        return 0;
    a->found = 1;
    a->span_lo = lo;
    a->span_hi = hi;
    a->base = info->dlpi_addr;
    if (!info->dlpi_name || !*info->dlpi_name) {
        a->name = exe_name;
        a->name_len = exe_name_len;
    } else
        basename_of(info->dlpi_name, &a->name, &a->name_len);
    return 1;
}

/* The PT_LOAD span of the module holding a->ip (set in a->base/a->name by on_module). */
static int find_span(struct dl_phdr_info *info, size_t size, void *data)
{
    if (!on_module(info, size, data))
        return 0;
    const find_arg *a = data;
    self_start = a->span_lo;
    self_end = a->span_hi;
    return 1;
}

void rt_plankey_init(void)
{
    char exe[4096];
    long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    const char *name;
    size_t len;
    basename_of(exe, &name, &len);
    if (len >= sizeof exe_name)
        len = sizeof exe_name - 1;
    memcpy(exe_name, name, len);
    exe_name[len] = 0;
    exe_name_len = len;
    find_arg a = {.ip = (uint64_t)(uintptr_t)&rt_plankey_init};
    dl_iterate_phdr(find_span, &a);
}

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

__attribute__((noinline)) uint64_t rt_plankey_of(uint32_t ctx, uint32_t depth)
{
    uint64_t *s = ctx ? slot(ctx) : NULL;
    if (s && *s)
        return *s;
    if (depth > MAX_DEPTH)
        depth = MAX_DEPTH;
    void *ips[MAX_DEPTH + EXTRA_FRAMES];
    int n = unw_backtrace(ips, (int)depth + EXTRA_FRAMES);
    int first = 0;
    while (first < n && (uint64_t)(uintptr_t)ips[first] >= self_start &&
           (uint64_t)(uintptr_t)ips[first] < self_end)
        first++;
    int count = n - first;
    if (count > (int)depth)
        count = (int)depth;
    uint64_t h = OT_FNV64_OFFSET;
    for (int i = 0; i < count; i++) {
        find_arg a = {.ip = (uint64_t)(uintptr_t)ips[first + i]};
        dl_iterate_phdr(on_module, &a);
        if (a.found)
            h = ot_context_key_frame(h, a.name, a.name_len, a.ip - a.base);
        else
            h = ot_context_key_frame(h, "", 0, a.ip); /* no module: empty name, absolute ip */
    }
    if (s)
        *s = h;
    return h;
}
