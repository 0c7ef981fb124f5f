/*
 * Segregated arenas: the allocator; see arena.h. Which site a call belongs to, and what the
 * tier does to a site's chunks, is arena_site.c.
 *
 * Layout: regions (PROT_NONE reservations of REGION_BYTES, MAP_NORESERVE) are cut into
 * CHUNK_BYTES chunks, made read-write one at a time and given to one site each. A site carves
 * blocks from its current chunk with a bump pointer; a block is a 16-byte header and a body of
 * its size class's capacity (16-byte steps to 256 bytes, then four classes per power of two up
 * to RT_SARENA_MAX_BLOCK). A freed block goes on its site's free list of its class and is
 * reused first. A chunk's tail too small for a block is left unused (counted as waste).
 */
#define _GNU_SOURCE
#include "arena.h"
#include "arena_site.h"
#include "rt.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

_Atomic int rt_sarena_serving;
_Atomic uint32_t rt_sarena_nregions;
rt_sarena_region rt_sarena_regions[RT_SARENA_MAX_REGIONS];

#define MAGIC        0x6f74a7e5u
#define HDR          16
#define CHUNK_BYTES  RT_SARENA_CHUNK_BYTES
#define REGION_BYTES (1ull << 30)
#define N_CLASSES    52

typedef struct hdr {
    uint32_t magic;
    uint16_t site;
    uint16_t cls;
    uint64_t size; /* bytes requested */
} hdr;
_Static_assert(sizeof(hdr) == HDR, "block header is 16 bytes");

typedef struct free_block {
    struct free_block *next;
} free_block;

typedef struct site {
    pthread_mutex_t lock;
    char *bump, *end; /* the current chunk's unused part */
    free_block *free[N_CLASSES];
} site;

static site sites[RT_SARENA_MAX_SITES];
static rt_sarena_counts counts[RT_SARENA_MAX_SITES];      /* under each site's lock */
static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER; /* regions, chunk cutting */
static uintptr_t cut, cut_end;                            /* the current region's uncut part */

/* ---- size classes ------------------------------------------------------------------ */

static inline uint32_t class_of(size_t n)
{
    if (n <= 256)
        return n ? (uint32_t)((n + 15) / 16 - 1) : 0;
    uint32_t e = 63u - (uint32_t)__builtin_clzll((unsigned long long)(n - 1)); /* >= 8 */
    uint32_t sub = (uint32_t)((n - 1) >> (e - 2)) & 3u;
    return 16u + (e - 8u) * 4u + sub;
}

static inline size_t class_bytes(uint32_t c)
{
    if (c < 16)
        return (size_t)(c + 1) * 16;
    uint32_t e = 8 + (c - 16) / 4, sub = (c - 16) % 4;
    return (size_t)(5 + sub) << (e - 2);
}

/* ---- chunks ------------------------------------------------------------------------ */

static void *sys_map(size_t len, int prot, int flags)
{
    void *p = (void *)syscall(SYS_mmap, NULL, len, prot, flags, -1, 0);
    return (long)p < 0 && (long)p > -4096 ? NULL : p;
}

/* A new chunk for site s (glock not held): cut from the current region, or from a new one. */
static char *new_chunk(uint32_t s)
{
    pthread_mutex_lock(&glock);
    if (cut + CHUNK_BYTES > cut_end) {
        uint32_t n = atomic_load(&rt_sarena_nregions);
        void *r = NULL;
        uint64_t len = REGION_BYTES; /* smaller when the address space is limited */
        while (n < RT_SARENA_MAX_REGIONS && len >= 16 * CHUNK_BYTES) {
            r = sys_map(len + CHUNK_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
            if (r)
                break;
            len /= 4;
        }
        if (!r) {
            pthread_mutex_unlock(&glock);
            return NULL;
        }
        /* chunk-aligned, so that every chunk is whole pages of one site */
        uintptr_t start = ((uintptr_t)r + CHUNK_BYTES - 1) & ~(uintptr_t)(CHUNK_BYTES - 1);
        rt_sarena_regions[n] = (rt_sarena_region){(uintptr_t)r, len + CHUNK_BYTES};
        atomic_store_explicit(&rt_sarena_nregions, n + 1, memory_order_release);
        cut = start;
        cut_end = start + len;
    }
    char *c = (char *)cut;
    cut += CHUNK_BYTES;
    pthread_mutex_unlock(&glock);
    if (rt_sys_mprotect(c, CHUNK_BYTES, PROT_READ | PROT_WRITE) != 0)
        return NULL; /* left cut: the reservation keeps it PROT_NONE */
    rt_sarena_site_chunk(s, c, CHUNK_BYTES, &counts[s]);
    return c;
}

/* ---- blocks ------------------------------------------------------------------------ */

/* A block of class c (capacity >= n) aligned to align from site s; NULL when no memory. */
static void *take(uint32_t s, uint32_t c, size_t n, size_t align, int *fresh)
{
    site *st = &sites[s];
    rt_sarena_counts *k = &counts[s];
    size_t cap = class_bytes(c);
    free_block **head = &st->free[c];
    if (*head && ((uintptr_t)*head & (align - 1)) == 0) {
        free_block *b = *head;
        *head = b->next;
        hdr *h = (hdr *)((char *)b - HDR);
        h->size = n;
        k->blocks++;
        k->live_blocks++;
        k->live_bytes += n;
        k->reused++;
        *fresh = 0;
        return b;
    }
    for (int tries = 0; tries < 2; tries++) {
        uintptr_t at = ((uintptr_t)st->bump + HDR + align - 1) & ~(uintptr_t)(align - 1);
        if (st->bump && at + cap <= (uintptr_t)st->end) {
            k->waste_bytes += at - HDR - (uintptr_t)st->bump;
            hdr *h = (hdr *)(at - HDR);
            *h = (hdr){.magic = MAGIC, .site = (uint16_t)s, .cls = (uint16_t)c, .size = n};
            st->bump = (char *)(at + cap);
            k->carved_bytes += cap + HDR;
            k->blocks++;
            k->live_blocks++;
            k->live_bytes += n;
            *fresh = 1; /* never handed out since the chunk was mapped: zero */
            return (void *)at;
        }
        if (st->bump) {
            k->waste_bytes += (uintptr_t)st->end - (uintptr_t)st->bump;
            rt_sarena_site_chunk_full(s, st->end - CHUNK_BYTES, CHUNK_BYTES, &counts[s]);
        }
        char *chunk = new_chunk(s);
        if (!chunk) {
            st->bump = st->end = NULL;
            return NULL;
        }
        k->chunks++;
        st->bump = chunk;
        st->end = chunk + CHUNK_BYTES;
    }
    return NULL;
}

void *rt_sarena_alloc(size_t n, size_t align, const void *ip, int zero)
{
    if (n > RT_SARENA_MAX_BLOCK || align > RT_SARENA_MAX_ALIGN)
        return NULL;
    if (align < 16)
        align = 16;
    rt_guard++;
    int s = rt_sarena_site_of(n, ip);
    void *p = NULL;
    int fresh = 0;
    if (s >= 0) {
        uint32_t c = class_of(n);
        pthread_mutex_lock(&sites[s].lock);
        p = take((uint32_t)s, c, n, align, &fresh);
        if (!p)
            counts[s].no_memory++;
        pthread_mutex_unlock(&sites[s].lock);
        if (p && zero && !fresh)
            memset(p, 0, n);
    }
    rt_guard--;
    return p;
}

static inline hdr *header(const void *p)
{
    return (hdr *)((char *)p - HDR);
}

size_t rt_sarena_usable(const void *p)
{
    return class_bytes(header(p)->cls);
}

void rt_sarena_free(void *p)
{
    hdr *h = header(p);
    if (h->magic != MAGIC || h->site >= RT_SARENA_MAX_SITES || h->cls >= N_CLASSES) {
        static const char msg[] = "objtier: free(): not an arena block\n";
        rt_sys_write_all(2, msg, sizeof msg - 1);
        abort();
    }
    uint32_t s = h->site;
    pthread_mutex_lock(&sites[s].lock);
    free_block *b = p;
    b->next = sites[s].free[h->cls];
    sites[s].free[h->cls] = b;
    counts[s].live_blocks--;
    counts[s].live_bytes -= h->size;
    counts[s].frees++;
    pthread_mutex_unlock(&sites[s].lock);
}

void *rt_sarena_realloc(void *p, size_t n, void *(*real_malloc)(size_t))
{
    hdr *h = header(p);
    size_t cap = class_bytes(h->cls);
    if (n == 0) {
        rt_sarena_free(p);
        return NULL;
    }
    uint32_t s = h->site;
    if (n <= cap) {
        pthread_mutex_lock(&sites[s].lock);
        counts[s].live_bytes += n;
        counts[s].live_bytes -= h->size;
        h->size = n;
        pthread_mutex_unlock(&sites[s].lock);
        return p;
    }
    void *q = NULL;
    if (n <= RT_SARENA_MAX_BLOCK) {
        int fresh;
        pthread_mutex_lock(&sites[s].lock);
        q = take(s, class_of(n), n, 16, &fresh);
        pthread_mutex_unlock(&sites[s].lock);
    }
    if (!q) {
        rt_guard++;
        q = real_malloc(n); /* too large for an arena, or none left: the program's allocator */
        rt_guard--;
    }
    if (!q) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(q, p, cap < n ? cap : n);
    rt_sarena_free(p);
    return q;
}

/* ---- counts, fork ------------------------------------------------------------------ */

void rt_sarena_read_counts(uint32_t s, rt_sarena_counts *out)
{
    pthread_mutex_lock(&sites[s].lock);
    *out = counts[s];
    pthread_mutex_unlock(&sites[s].lock);
}

/* Lock order: a site's lock before glock (take cuts chunks with its site's lock held). */
static void fork_prepare(void)
{
    rt_sarena_site_fork_prepare();
    for (uint32_t s = 0; s < RT_SARENA_MAX_SITES; s++)
        pthread_mutex_lock(&sites[s].lock);
    pthread_mutex_lock(&glock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&glock);
    for (uint32_t s = RT_SARENA_MAX_SITES; s-- > 0;)
        pthread_mutex_unlock(&sites[s].lock);
    rt_sarena_site_fork_parent();
}

static void fork_child(void)
{
    for (uint32_t s = 0; s < RT_SARENA_MAX_SITES; s++)
        pthread_mutex_init(&sites[s].lock, NULL);
    pthread_mutex_init(&glock, NULL);
    rt_sarena_site_fork_child();
}

void rt_sarena_alloc_init(void)
{
    for (uint32_t s = 0; s < RT_SARENA_MAX_SITES; s++)
        pthread_mutex_init(&sites[s].lock, NULL);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}
