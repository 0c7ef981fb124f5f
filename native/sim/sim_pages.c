/*
 * Page storage: a pool of sim_page with a free list, an open-addressing hash table from page
 * key to pool index (linear probing, backward-shift deletion, load factor <= 1/2), the fast-tier
 * LRU list and the promotion-queue ring used by policies.
 *
 * Memory: 16 + 16 bytes per pool slot (page, link) + 12 bytes per hash slot (two to four per
 * live page), so about 60-80 bytes per live page, plus 4 bytes per page in its objects' page
 * arrays; freed slots are reused before the pool grows.
 */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

uint64_t sim_hash_key(uint64_t key)
{
    key ^= key >> 29;
    key *= 0xbf58476d1ce4e5b9ULL;
    key ^= key >> 32;
    return key;
}

static int hash_alloc(sim_t *s, uint64_t cap)
{
    s->hkeys = calloc(cap, sizeof *s->hkeys);
    s->hvals = malloc(cap * sizeof *s->hvals);
    if (!s->hkeys || !s->hvals)
        return -1;
    s->hmask = cap - 1;
    return 0;
}

int sim_pages_init(sim_t *s)
{
    s->pool_cap = 1024;
    s->pool = calloc(s->pool_cap, sizeof *s->pool);
    s->links = calloc(s->pool_cap, sizeof *s->links);
    s->free_head = SIM_NIL;
    s->lru_head = s->lru_tail = SIM_NIL;
    s->last_key = 0;
    if (!s->pool || !s->links)
        return -1;
    return hash_alloc(s, 2048);
}

void sim_pages_fini(sim_t *s)
{
    free(s->pool);
    free(s->links);
    free(s->hkeys);
    free(s->hvals);
    s->pool = NULL;
    s->links = NULL;
    s->hkeys = NULL;
    s->hvals = NULL;
}

sim_page *sim_page_lookup(sim_t *s, uint64_t key)
{
    if (key == s->last_key)
        return &s->pool[s->last_idx];
    for (uint64_t i = sim_hash_key(key) & s->hmask;; i = (i + 1) & s->hmask) {
        uint64_t k = s->hkeys[i];
        if (k == key) {
            s->last_key = key;
            s->last_idx = s->hvals[i];
            return &s->pool[s->hvals[i]];
        }
        if (k == 0)
            return NULL;
    }
}

static void hash_put(sim_t *s, uint64_t key, uint32_t idx)
{
    uint64_t i = sim_hash_key(key) & s->hmask;
    while (s->hkeys[i])
        i = (i + 1) & s->hmask;
    s->hkeys[i] = key;
    s->hvals[i] = idx;
}

static int hash_grow(sim_t *s)
{
    uint64_t *okeys = s->hkeys;
    uint32_t *ovals = s->hvals;
    uint64_t ocap = s->hmask + 1;
    if (hash_alloc(s, ocap * 2) < 0) {
        free(s->hkeys);
        free(s->hvals);
        s->hkeys = okeys;
        s->hvals = ovals;
        s->hmask = ocap - 1;
        return -1;
    }
    for (uint64_t i = 0; i < ocap; i++)
        if (okeys[i])
            hash_put(s, okeys[i], ovals[i]);
    free(okeys);
    free(ovals);
    return 0;
}

sim_page *sim_page_insert(sim_t *s, uint64_t key)
{
    if ((s->hcount + 1) * 2 > s->hmask + 1 && hash_grow(s) < 0)
        return NULL;
    uint32_t idx;
    if (s->free_head != SIM_NIL) {
        idx = s->free_head;
        s->free_head = s->links[idx].next;
    } else {
        if (s->pool_used == s->pool_cap) {
            if (s->pool_cap >= 0x7FFFFFFFu)
                return NULL;
            size_t cap = (size_t)s->pool_cap * 2;
            sim_page *pool = realloc(s->pool, cap * sizeof *pool);
            if (!pool)
                return NULL;
            s->pool = pool;
            sim_page_link *links = realloc(s->links, cap * sizeof *links);
            if (!links)
                return NULL; /* the larger pool is kept; pool_cap still fits both */
            s->links = links;
            s->pool_cap = (uint32_t)cap;
        }
        idx = s->pool_used++;
    }
    sim_page *pg = &s->pool[idx];
    memset(pg, 0, sizeof *pg);
    s->links[idx] = (sim_page_link){.key = key, .prev = SIM_NIL, .next = SIM_NIL};
    hash_put(s, key, idx);
    s->hcount++;
    return pg;
}

void sim_page_remove(sim_t *s, sim_page *pg)
{
    uint32_t idx = (uint32_t)(pg - s->pool);
    uint64_t key = s->links[idx].key;
    uint64_t i = sim_hash_key(key) & s->hmask;
    while (s->hkeys[i] != key)
        i = (i + 1) & s->hmask;
    /* backward-shift deletion: move later members of the probe run into the hole */
    for (uint64_t j = (i + 1) & s->hmask; s->hkeys[j]; j = (j + 1) & s->hmask) {
        uint64_t home = sim_hash_key(s->hkeys[j]) & s->hmask;
        /* j's entry may move to i if its home is not in the cyclic range (i, j] */
        bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            s->hkeys[i] = s->hkeys[j];
            s->hvals[i] = s->hvals[j];
            i = j;
        }
    }
    s->hkeys[i] = 0;
    s->hcount--;
    if (s->last_key == key)
        s->last_key = 0;
    s->links[idx].key = 0;
    s->links[idx].next = s->free_head;
    s->free_head = idx;
}

/* Pinned pages (mlock) live off the LRU, as on the kernel's unevictable list: pushing or
 * unlinking one is a no-op, so pin a page only while it is off the LRU (sim_pin). */
void sim_lru_push_head(sim_t *s, sim_page *pg)
{
    if (pg->flags & SIM_PG_PINNED)
        return;
    uint32_t idx = (uint32_t)(pg - s->pool);
    sim_page_link *l = &s->links[idx];
    l->prev = SIM_NIL;
    l->next = s->lru_head;
    if (s->lru_head != SIM_NIL)
        s->links[s->lru_head].prev = idx;
    else
        s->lru_tail = idx;
    s->lru_head = idx;
}

void sim_lru_unlink(sim_t *s, sim_page *pg)
{
    if (pg->flags & SIM_PG_PINNED)
        return;
    sim_page_link *l = &s->links[pg - s->pool];
    if (l->prev != SIM_NIL)
        s->links[l->prev].next = l->next;
    else
        s->lru_head = l->next;
    if (l->next != SIM_NIL)
        s->links[l->next].prev = l->prev;
    else
        s->lru_tail = l->prev;
    l->prev = l->next = SIM_NIL;
}

/* Queue: ring of cap (power of two) slots; head and tail count pushes/pops monotonically. */
int sim_queue_push(sim_queue *q, uint32_t idx, uint64_t key)
{
    if (q->tail - q->head == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 1024;
        uint32_t *ni = malloc(cap * sizeof *ni);
        uint64_t *nk = malloc(cap * sizeof *nk);
        if (!ni || !nk) {
            free(ni);
            free(nk);
            return -1;
        }
        size_t n = q->tail - q->head;
        for (size_t i = 0; i < n; i++) {
            ni[i] = q->idx[(q->head + i) & (q->cap - 1)];
            nk[i] = q->key[(q->head + i) & (q->cap - 1)];
        }
        free(q->idx);
        free(q->key);
        q->idx = ni;
        q->key = nk;
        q->cap = cap;
        q->head = 0;
        q->tail = n;
    }
    q->idx[q->tail & (q->cap - 1)] = idx;
    q->key[q->tail & (q->cap - 1)] = key;
    q->tail++;
    return 0;
}

bool sim_queue_pop(sim_queue *q, uint32_t *idx, uint64_t *key)
{
    if (q->head == q->tail)
        return false;
    *idx = q->idx[q->head & (q->cap - 1)];
    *key = q->key[q->head & (q->cap - 1)];
    q->head++;
    return true;
}

void sim_queue_free(sim_queue *q)
{
    free(q->idx);
    free(q->key);
    memset(q, 0, sizeof *q);
}
