/*
 * The `trace` sampler's records at exit: once the callbacks are off, every thread's
 * calling-context tree and counters become CONTEXT records naming each node's (function,
 * call site), CCT_NODE records and ACCESS_COUNT records (trace_format.h).
 *
 * Invariants
 *   - Function-context ids (ot_cct_node_record.function) are RT_FN_CTX_BASE + n, above the
 *     allocation contexts' ids (1, 2, ... from context.c), so the two never collide.
 *   - Every CONTEXT record is written before the CCT_NODE block that names it, and the
 *     MODULE records its frames name before it (rt_modules_map writes them on first use).
 *   - Its tables come from rt_sys_mmap (never malloc: the program's heap may be in any
 *     state at exit); out of memory, nothing is written and the log says so.
 */
#define _GNU_SOURCE
#include "trace_internal.h"
#include "context.h"
#include "modules.h"
#include "writer.h"

#include <string.h>

#define RT_FN_CTX_BASE 0x80000000U

/* Function contexts: (fn, site) -> id, open addressing over an mmap'd table. */
typedef struct fn_ctx {
    uint64_t fn, site;
    uint32_t id; /* 0 = empty */
    uint32_t reserved;
} fn_ctx;

typedef struct emitter {
    fn_ctx *tab;
    uint64_t cap, used;
    unsigned char *blk; /* one block: header + OT_BLOCK_TARGET_BYTES of payload */
    uint32_t bytes, count;
    uint16_t tag, record_size;
} emitter;

static void em_flush(emitter *e)
{
    uint32_t bytes = (e->bytes + 7) & ~7U; /* payloads are multiples of 8 */
    memset(e->blk + sizeof(ot_block_header) + e->bytes, 0, bytes - e->bytes);
    if (e->count)
        rt_write_block(&rt_w, e->blk, e->tag, e->record_size, bytes, e->count);
    e->bytes = e->count = 0;
}

/* Appends one record (record_size 0: u32 length prefix, then the body padded to 8, as the
 * readers expect within a block of several variable records). */
static void em_put(emitter *e, uint16_t tag, uint16_t record_size, const void *rec, uint32_t len)
{
    uint32_t need = record_size ? len : 4 + (len + 7) / 8 * 8;
    if (e->tag != tag || e->bytes + need + 8 > OT_BLOCK_TARGET_BYTES)
        em_flush(e);
    e->tag = tag;
    e->record_size = record_size;
    unsigned char *p = e->blk + sizeof(ot_block_header) + e->bytes;
    if (record_size)
        memcpy(p, rec, len);
    else {
        memset(p, 0, need);
        memcpy(p, &len, 4);
        memcpy(p + 4, rec, len);
    }
    e->bytes += need;
    e->count++;
}

static void frame_of(uint64_t ip, ot_frame *f)
{
    uint64_t base = 0;
    rt_context_lock();
    uint32_t module = rt_modules_map(&rt_w, ip, &base);
    rt_context_unlock();
    f->module = module;
    f->reserved = 0;
    f->offset = module ? ip - base : ip;
}

/* The function-context id of (fn, site), writing its CONTEXT record the first time. The
 * record's frames are (fn + 1, site): symbolizers look up offset - 1 of every frame (a
 * return address), which for frame 0 is then the function's first byte. */
static uint32_t fn_context(emitter *e, uint64_t fn, uint64_t site)
{
    if ((e->used + 1) * 2 > e->cap)
        return 0;
    uint64_t i = (fn * 0x9E3779B97F4A7C15ULL ^ site * 0xC2B2AE3D27D4EB4FULL) & (e->cap - 1);
    while (e->tab[i].id && (e->tab[i].fn != fn || e->tab[i].site != site))
        i = (i + 1) & (e->cap - 1);
    if (e->tab[i].id)
        return e->tab[i].id;
    e->tab[i] = (fn_ctx){fn, site, RT_FN_CTX_BASE + (uint32_t)++e->used, 0};
    struct {
        ot_context_record h;
        ot_frame f[2];
    } rec = {{e->tab[i].id, 2}, {{0}, {0}}};
    frame_of(fn + 1, &rec.f[0]); /* MODULE records go out here, before the CONTEXT block */
    frame_of(site, &rec.f[1]);
    em_put(e, OT_TAG_CONTEXT, 0, &rec, sizeof rec);
    return e->tab[i].id;
}

void tr_emit_all(tr_thread *head)
{
    emitter e = {0};
    uint64_t nodes = 0;
    for (tr_thread *t = head; t; t = t->next)
        nodes += t->cct.count;
    for (e.cap = 1024; e.cap < nodes * 2 + 2; e.cap *= 2)
        ;
    e.tab = rt_sys_mmap(e.cap * sizeof(fn_ctx));
    e.blk = rt_sys_mmap(sizeof(ot_block_header) + OT_BLOCK_TARGET_BYTES);
    uint32_t *fn_ids = rt_sys_mmap((nodes + 1) * sizeof(uint32_t));
    if (!e.tab || !e.blk || !fn_ids) {
        rt_log(1, "trace sampler: out of memory at exit; context tree not written");
        return;
    }
    uint64_t now = rt_now_ns();
    /* CONTEXT records of every node's function first, so node records can name them */
    uint64_t k = 0;
    for (tr_thread *t = head; t; t = t->next) {
        rt_cct_close_open(&t->cct, now);
        for (uint32_t i = 1; i < t->cct.count; i++)
            fn_ids[k++] = fn_context(&e, t->cct.nodes[i].fn, t->cct.nodes[i].site);
    }
    em_flush(&e);
    k = 0;
    for (tr_thread *t = head; t; t = t->next) {
        const rt_cct_node *n = t->cct.nodes;
        for (uint32_t i = 1; i < t->cct.count; i++) {
            ot_cct_node_record r = {.id = n[i].id,
                                    .parent = n[n[i].parent].id,
                                    .function = fn_ids[k++],
                                    .calls = n[i].calls,
                                    .inclusive_ns = n[i].incl_ns};
            em_put(&e, OT_TAG_CCT_NODE, sizeof r, &r, sizeof r);
        }
    }
    em_flush(&e);
    for (tr_thread *t = head; t; t = t->next) {
        for (uint64_t i = 0; i < t->cct.counters; i++) {
            const rt_cct_counter *c = rt_cct_counter_at(&t->cct, i);
            if (!c->loads && !c->stores)
                continue;
            ot_access_count_record r = {.alloc_seq = c->seq,
                                        .cct_node = t->cct.nodes[c->node].id,
                                        .loads = c->loads,
                                        .stores = c->stores,
                                        .llc_misses = c->misses};
            em_put(&e, OT_TAG_ACCESS_COUNT, sizeof r, &r, sizeof r);
        }
    }
    em_flush(&e);
    rt_sys_munmap(e.tab, e.cap * sizeof(fn_ctx));
    rt_sys_munmap(e.blk, sizeof(ot_block_header) + OT_BLOCK_TARGET_BYTES);
    rt_sys_munmap(fn_ids, (nodes + 1) * sizeof(uint32_t));
}
