/* Watched sites: the sites file, the chunk table, the SITE_REGION records; see arena_watch.h. */
#define _GNU_SOURCE
#include "arena_watch.h"
#include "arena.h"
#include "arena_site.h"
#include "context.h"
#include "objtier/trace_format.h"
#include "rt.h"
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define MAX_CHUNKS (RT_SARENA_MAX_REGIONS * 1024u) /* 1 MiB chunks of 16 GiB of regions */
#define FILE_BYTES (64u << 10)

typedef struct chunk {
    uint64_t addr, len, seq;
} chunk;

static chunk *tab;             /* MAX_CHUNKS, rt_sys_mmap */
static _Atomic uint64_t n_tab; /* entries written */
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;

#define LEARN_CTX (1u << 16) /* context ids learned: 1 .. LEARN_CTX - 1 */

_Atomic int rt_sarena_learning;
static _Atomic uint64_t *learn_tab; /* estimated bytes per context id, rt_sys_mmap */
static _Atomic uint64_t learn_total, learn_top;
static uint64_t learn_threshold;
static uint32_t learn_n;

int rt_sarena_learn_init(uint32_t n, uint64_t bytes)
{
    learn_tab = rt_sys_mmap(LEARN_CTX * sizeof *learn_tab);
    if (!learn_tab)
        return -ENOMEM;
    learn_n = n < RT_SARENA_MAX_SITES ? n : RT_SARENA_MAX_SITES;
    learn_threshold = bytes;
    atomic_store(&rt_sarena_learning, 1);
    return 0;
}

/* The learn_n contexts with the most bytes (learning is over: the table is ours alone). */
static void choose(uint64_t total)
{
    uint64_t keys[RT_SARENA_MAX_SITES], f0[RT_SARENA_MAX_SITES];
    uint32_t n = 0, top = (uint32_t)atomic_load(&learn_top);
    while (n < learn_n) {
        uint32_t best = 0;
        uint64_t most = 0;
        for (uint32_t c = 1; c <= top; c++) {
            uint64_t b = atomic_load_explicit(&learn_tab[c], memory_order_relaxed);
            if (b > most) {
                most = b;
                best = c;
            }
        }
        if (!best)
            break;
        atomic_store_explicit(&learn_tab[best], 0, memory_order_relaxed);
        uint64_t k = rt_context_key(best), k0 = rt_context_key_depth(best, 1);
        if (k && k0) {
            keys[n] = k;
            f0[n] = k0;
            n++;
        }
    }
    rt_log(0, "arenas: watching %u sites learned from %llu estimated bytes of small blocks", n,
           (unsigned long long)total);
    if (n)
        rt_sarena_watch_begin(keys, f0, n);
}

void rt_sarena_learn(uint32_t ctx, uint64_t est_bytes)
{
    if (ctx == 0 || ctx >= LEARN_CTX || !learn_tab)
        return;
    atomic_fetch_add_explicit(&learn_tab[ctx], est_bytes, memory_order_relaxed);
    uint64_t top = atomic_load_explicit(&learn_top, memory_order_relaxed);
    while (ctx > top && !atomic_compare_exchange_weak(&learn_top, &top, ctx))
        ;
    uint64_t total = atomic_fetch_add(&learn_total, est_bytes) + est_bytes;
    int on = 1;
    if (total >= learn_threshold && atomic_compare_exchange_strong(&rt_sarena_learning, &on, 0))
        choose(total); /* one thread, once */
}

static int hex16(const char *p, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

int rt_sarena_watch_read(const char *path, uint64_t *keys, uint64_t *frame0s, uint32_t cap)
{
    char *text = rt_sys_mmap(FILE_BYTES);
    if (!text) {
        rt_log(1, "OBJTIER_ARENA_SITES: out of memory; no watched sites");
        return -1;
    }
    int got = rt_sys_read_small(path, text, FILE_BYTES);
    int n = 0, line = 0;
    if (got < 0) {
        rt_log(1, "OBJTIER_ARENA_SITES=%s cannot be read; no watched sites", path);
        n = -1;
    }
    for (char *p = text; got >= 0 && *p;) {
        char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        line++;
        uint64_t k, f;
        if (len == 0 || p[0] == '#')
            ;
        else if (len < 33 || p[16] != ' ' || hex16(p, &k) || hex16(p + 17, &f) ||
                 (len > 33 && p[33] != ' ')) {
            rt_log(1, "OBJTIER_ARENA_SITES=%s line %d is not `KEY FRAME0`; no watched sites", path,
                   line);
            n = -1;
            break;
        } else if ((uint32_t)n < cap) {
            keys[n] = k;
            frame0s[n] = f;
            n++;
        }
        p = end ? end + 1 : p + len;
    }
    rt_sys_munmap(text, FILE_BYTES);
    return n;
}

int rt_sarena_watch_init(void)
{
    if (!tab)
        tab = rt_sys_mmap(MAX_CHUNKS * sizeof *tab);
    return tab ? 0 : -ENOMEM;
}

void rt_sarena_watch_chunk(uint32_t s, uint64_t key, uint32_t ctx, void *c, size_t len)
{
    uint64_t seq = OT_SITE_REGION_SEQ_BASE + s;
    if (!tab)
        return;
    /* sites cut chunks concurrently (each under its own lock): appends are serialized; no
     * append is under way at fork (arena.c holds every site's lock across it) */
    pthread_mutex_lock(&tab_lock);
    uint64_t n = atomic_load_explicit(&n_tab, memory_order_relaxed);
    if (n < MAX_CHUNKS) {
        tab[n] = (chunk){(uint64_t)(uintptr_t)c, len, seq};
        atomic_store_explicit(&n_tab, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&tab_lock);
    if (!rt_active())
        return;
    unsigned char blk[sizeof(ot_block_header) + sizeof(ot_site_region_record)];
    ot_site_region_record r = {.time_ns = rt_now_ns(),
                               .seq = seq,
                               .addr = (uint64_t)(uintptr_t)c,
                               .len = len,
                               .key = key,
                               .context = ctx,
                               .site = s};
    memcpy(blk + sizeof(ot_block_header), &r, sizeof r);
    rt_write_block(&rt_w, blk, OT_TAG_SITE_REGION, sizeof r, sizeof r, 1);
}

uint64_t rt_sarena_watch_count(void)
{
    return atomic_load_explicit(&n_tab, memory_order_acquire);
}

size_t rt_sarena_watch_snapshot(rt_obj *out, size_t cap)
{
    uint64_t n = rt_sarena_watch_count();
    size_t k = 0;
    for (uint64_t i = 0; i < n && k < cap; i++, k++)
        out[k] = (rt_obj){.addr = tab[i].addr,
                          .size = tab[i].len,
                          .seq = tab[i].seq,
                          .prot = 3,
                          .kind = RT_OBJ_SITE_REGION};
    return k;
}

void rt_sarena_watch_fork_child(void)
{
    atomic_store(&rt_sarena_learning, 0); /* a child does not learn its parent's sites */
    pthread_mutex_init(&tab_lock, NULL);
    atomic_store(&n_tab, 0);
}
