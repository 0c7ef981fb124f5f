/* Per-thread calling-context tree and (node, object) counters; see cct.h. */
#define _GNU_SOURCE
#include "cct.h"
#include "rt.h"

#include <errno.h>
#include <string.h>

static _Atomic uint32_t next_node_id; /* last id handed out; ids start at 1 */

static inline uint64_t mix3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
    h ^= c * 0x165667B19E3779F9ULL;
    h ^= h >> 31;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 29;
    return h;
}

int rt_cct_init(rt_cct *t)
{
    memset(t, 0, sizeof *t);
    t->cap = 1024;
    t->nodes = rt_sys_mmap(t->cap * sizeof(rt_cct_node));
    t->node_hash_cap = 2048;
    t->node_hash = rt_sys_mmap(t->node_hash_cap * sizeof(uint32_t));
    t->stack = rt_sys_mmap(RT_CCT_MAX_DEPTH * sizeof(rt_cct_frame));
    t->chunks = rt_sys_mmap(RT_CCT_MAX_CHUNKS * sizeof(rt_cct_counter *));
    t->ctr_hash_cap = 4096;
    t->ctr_hash = rt_sys_mmap(t->ctr_hash_cap * sizeof(uint32_t));
    if (!t->nodes || !t->node_hash || !t->stack || !t->chunks || !t->ctr_hash) {
        rt_cct_destroy(t);
        return -ENOMEM;
    }
    t->count = 1; /* the root: zero-filled */
    return 0;
}

void rt_cct_destroy(rt_cct *t)
{
    if (t->nodes)
        rt_sys_munmap(t->nodes, t->cap * sizeof(rt_cct_node));
    if (t->node_hash)
        rt_sys_munmap(t->node_hash, t->node_hash_cap * sizeof(uint32_t));
    if (t->stack)
        rt_sys_munmap(t->stack, RT_CCT_MAX_DEPTH * sizeof(rt_cct_frame));
    if (t->chunks) {
        for (uint64_t i = 0; i < RT_CCT_MAX_CHUNKS && t->chunks[i]; i++)
            rt_sys_munmap(t->chunks[i], RT_CCT_CHUNK * sizeof(rt_cct_counter));
        rt_sys_munmap(t->chunks, RT_CCT_MAX_CHUNKS * sizeof(rt_cct_counter *));
    }
    if (t->ctr_hash)
        rt_sys_munmap(t->ctr_hash, t->ctr_hash_cap * sizeof(uint32_t));
    memset(t, 0, sizeof *t);
}

/* ---- nodes ----------------------------------------------------------------------- */

static uint32_t *node_slot(rt_cct *t, uint32_t parent, uint64_t fn, uint64_t site)
{
    uint32_t mask = t->node_hash_cap - 1;
    uint32_t i = (uint32_t)mix3(parent, fn, site) & mask;
    for (;;) {
        uint32_t *s = &t->node_hash[i];
        if (*s == 0)
            return s;
        const rt_cct_node *n = &t->nodes[*s];
        if (n->parent == parent && n->fn == fn && n->site == site)
            return s;
        i = (i + 1) & mask;
    }
}

static int grow_nodes(rt_cct *t)
{
    uint32_t cap = t->cap * 2;
    rt_cct_node *nodes = rt_sys_mmap(cap * sizeof(rt_cct_node));
    if (!nodes)
        return -ENOMEM;
    memcpy(nodes, t->nodes, t->count * sizeof(rt_cct_node));
    rt_sys_munmap(t->nodes, t->cap * sizeof(rt_cct_node));
    t->nodes = nodes;
    t->cap = cap;
    return 0;
}

static int grow_node_hash(rt_cct *t)
{
    uint32_t cap = t->node_hash_cap * 2;
    uint32_t *h = rt_sys_mmap(cap * sizeof(uint32_t));
    if (!h)
        return -ENOMEM;
    rt_sys_munmap(t->node_hash, t->node_hash_cap * sizeof(uint32_t));
    t->node_hash = h;
    t->node_hash_cap = cap;
    for (uint32_t i = 1; i < t->count; i++) {
        const rt_cct_node *n = &t->nodes[i];
        *node_slot(t, n->parent, n->fn, n->site) = i;
    }
    return 0;
}

/* Index of the child (parent, fn, site), created when new; 0 when it cannot be. */
static uint32_t child(rt_cct *t, uint32_t parent, uint64_t fn, uint64_t site)
{
    uint32_t *s = node_slot(t, parent, fn, site);
    if (*s)
        return *s;
    if (t->count == UINT32_MAX / 4 || (t->count == t->cap && grow_nodes(t) != 0)) {
        t->dropped++;
        return 0;
    }
    if ((t->count + 1) * 2 > t->node_hash_cap) {
        if (grow_node_hash(t) != 0) {
            t->dropped++;
            return 0;
        }
        s = node_slot(t, parent, fn, site);
    }
    uint32_t i = t->count++;
    rt_cct_node *n = &t->nodes[i];
    memset(n, 0, sizeof *n);
    n->fn = fn;
    n->site = site;
    n->parent = parent;
    n->id = atomic_fetch_add_explicit(&next_node_id, 1, memory_order_relaxed) + 1;
    *s = i;
    return i;
}

uint32_t rt_cct_enter(rt_cct *t, uint64_t fn, uint64_t site, uint64_t now)
{
    uint32_t cur = rt_cct_current(t);
    if (t->depth == RT_CCT_MAX_DEPTH || t->overflow) {
        t->overflow++;
        return cur;
    }
    uint32_t i = child(t, cur, fn, site);
    if (i == 0) { /* out of memory: account the call to the current node */
        t->overflow++;
        return cur;
    }
    t->nodes[i].calls++;
    t->stack[t->depth].node = i;
    t->stack[t->depth].enter_ns = now;
    t->depth++;
    return i;
}

uint32_t rt_cct_exit(rt_cct *t, uint64_t fn, uint64_t site, uint64_t now)
{
    if (t->overflow) {
        t->overflow--;
        return rt_cct_current(t);
    }
    uint32_t lowest = t->depth > RT_CCT_MATCH_DEPTH ? t->depth - RT_CCT_MATCH_DEPTH : 0;
    for (uint32_t d = t->depth; d > lowest; d--) {
        const rt_cct_node *n = &t->nodes[t->stack[d - 1].node];
        if (n->fn == fn && n->site == site) {
            while (t->depth >= d) { /* close the match and anything left open above it */
                rt_cct_frame *f = &t->stack[--t->depth];
                t->nodes[f->node].incl_ns += now - f->enter_ns;
            }
            break;
        }
    }
    return rt_cct_current(t);
}

void rt_cct_close_open(rt_cct *t, uint64_t now)
{
    for (uint32_t d = 0; d < t->depth; d++) {
        rt_cct_frame *f = &t->stack[d];
        t->nodes[f->node].incl_ns += now - f->enter_ns;
        f->enter_ns = now;
    }
}

/* ---- counters -------------------------------------------------------------------- */

static uint32_t *ctr_slot(rt_cct *t, uint32_t node, uint64_t seq)
{
    uint64_t mask = t->ctr_hash_cap - 1;
    uint64_t i = mix3(node, seq, 0x5bd1e995) & mask;
    for (;;) {
        uint32_t *s = &t->ctr_hash[i];
        if (*s == 0)
            return s;
        const rt_cct_counter *c = rt_cct_counter_at(t, *s - 1);
        if (c->node == node && c->seq == seq)
            return s;
        i = (i + 1) & mask;
    }
}

static int grow_ctr_hash(rt_cct *t)
{
    uint64_t cap = t->ctr_hash_cap * 2;
    uint32_t *h = rt_sys_mmap(cap * sizeof(uint32_t));
    if (!h)
        return -ENOMEM;
    rt_sys_munmap(t->ctr_hash, t->ctr_hash_cap * sizeof(uint32_t));
    t->ctr_hash = h;
    t->ctr_hash_cap = cap;
    for (uint64_t i = 0; i < t->counters; i++) {
        const rt_cct_counter *c = rt_cct_counter_at(t, i);
        *ctr_slot(t, c->node, c->seq) = (uint32_t)(i + 1);
    }
    return 0;
}

rt_cct_counter *rt_cct_counter_get(rt_cct *t, uint32_t node, uint64_t seq)
{
    uint32_t *s = ctr_slot(t, node, seq);
    if (*s)
        return rt_cct_counter_at(t, *s - 1);
    uint64_t i = t->counters;
    if (i == (uint64_t)RT_CCT_CHUNK * RT_CCT_MAX_CHUNKS) {
        t->dropped++;
        return NULL;
    }
    if (i % RT_CCT_CHUNK == 0) {
        rt_cct_counter *chunk = rt_sys_mmap(RT_CCT_CHUNK * sizeof(rt_cct_counter));
        if (!chunk) {
            t->dropped++;
            return NULL;
        }
        t->chunks[i / RT_CCT_CHUNK] = chunk;
    }
    if ((i + 2) * 2 > t->ctr_hash_cap) {
        if (grow_ctr_hash(t) != 0) {
            t->dropped++;
            return NULL;
        }
        s = ctr_slot(t, node, seq);
    }
    rt_cct_counter *c = rt_cct_counter_at(t, i);
    memset(c, 0, sizeof *c);
    c->node = node;
    c->seq = seq;
    t->counters = i + 1;
    *s = (uint32_t)(i + 1);
    return c;
}
