/*
 * Residency: pages of every tracked object per NUMA node, from move_pages(2) queries
 * (nodes = NULL: the kernel only reports where each page is). One RESIDENCY record per
 * (object, node) per pass; node 0xFFFFFFFF counts pages not present (never touched, swapped
 * out, or unmapped meanwhile).
 *
 * Sampling: an object spanning P pages is queried on at most SAMPLE_PAGES pages, evenly
 * spaced (page i * P / SAMPLE_PAGES); each node's count is then scaled by P / sampled, so
 * the counts add up to about P. Below SAMPLE_PAGES pages every page is queried (exact).
 * Pieces of a partly unmapped mapping are counted together (they share the seq).
 *
 * Runs on the placement thread and at exit; never concurrently with itself.
 */
#define _GNU_SOURCE
#include "maps.h"
#include "residency.h"
#include "registry.h"
#include "rt.h"
#include "writer.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SAMPLE_PAGES 4096
#define MAX_OBJECTS  65536 /* objects per pass; more are skipped (and said once) */
#define MAX_NODES    64
#define NOT_PRESENT  0xFFFFFFFFu
#define BATCH        2048 /* records per block */

static rt_obj *snap;
static void **pages;
static int *status;
static unsigned char *block; /* block header + BATCH records */
static uint32_t block_n;
static int warned_many;

int rt_residency_init(void)
{
    snap = rt_sys_mmap(MAX_OBJECTS * sizeof *snap);
    pages = rt_sys_mmap(SAMPLE_PAGES * sizeof *pages);
    status = rt_sys_mmap(SAMPLE_PAGES * sizeof *status);
    block = rt_sys_mmap(sizeof(ot_block_header) + BATCH * sizeof(ot_residency_record));
    return snap && pages && status && block ? 0 : -ENOMEM;
}

static void flush(void)
{
    if (block_n && rt_active())
        rt_write_block(&rt_w, block, OT_TAG_RESIDENCY, sizeof(ot_residency_record),
                       block_n * (uint32_t)sizeof(ot_residency_record), block_n);
    block_n = 0;
}

static void emit(uint64_t now, uint64_t seq, uint32_t node, uint64_t n)
{
    ot_residency_record r = {.time_ns = now, .alloc_seq = seq, .node = node, .pages = n};
    memcpy(block + sizeof(ot_block_header) + block_n * sizeof r, &r, sizeof r);
    if (++block_n == BATCH)
        flush();
}

/* Adds the pages of [addr, addr+size) per node into counts (MAX_NODES = not present). */
static void count_pages(uint64_t addr, uint64_t size, uint64_t *counts)
{
    uint64_t pg = rt_page_bytes;
    uint64_t first = addr & ~(pg - 1), last = (addr + size + pg - 1) & ~(pg - 1);
    uint64_t total = (last - first) / pg;
    if (total == 0)
        return;
    uint64_t n = total < SAMPLE_PAGES ? total : SAMPLE_PAGES;
    for (uint64_t i = 0; i < n; i++)
        pages[i] = (void *)(uintptr_t)(first + (i * total / n) * pg);
    long r = syscall(SYS_move_pages, 0, (unsigned long)n, pages, NULL, status, 0);
    uint64_t local[MAX_NODES + 1];
    memset(local, 0, sizeof local);
    for (uint64_t i = 0; i < n; i++) {
        int s = r < 0 ? -ENOENT : status[i];
        local[s >= 0 && s < MAX_NODES ? (uint64_t)s : MAX_NODES]++;
    }
    for (int k = 0; k <= MAX_NODES; k++)
        counts[k] += n == total ? local[k] : (local[k] * total + n / 2) / n;
}

static void emit_counts(uint64_t now, uint64_t seq, const uint64_t *counts)
{
    for (int k = 0; k <= MAX_NODES; k++)
        if (counts[k])
            emit(now, seq, k == MAX_NODES ? NOT_PRESENT : (uint32_t)k, counts[k]);
}

void rt_residency_pass(uint64_t now_ns)
{
    if (!snap || !rt_active())
        return;
    size_t n = rt_reg_snapshot(snap, MAX_OBJECTS);
    size_t m = n < MAX_OBJECTS ? rt_maps_snapshot(snap + n, MAX_OBJECTS - n) : 0;
    if (n + m == MAX_OBJECTS && !warned_many) {
        warned_many = 1;
        rt_log(1, "residency: more than %d live objects; the rest are not sampled", MAX_OBJECTS);
    }
    uint64_t counts[MAX_NODES + 1];
    for (size_t i = 0; i < n; i++) {
        memset(counts, 0, sizeof counts);
        count_pages(snap[i].addr, snap[i].size, counts);
        emit_counts(now_ns, snap[i].seq, counts);
    }
    /* mapping pieces come sorted by address; pieces of one mapping are adjacent */
    for (size_t i = n; i < n + m;) {
        memset(counts, 0, sizeof counts);
        size_t j = i;
        for (; j < n + m && snap[j].seq == snap[i].seq; j++)
            count_pages(snap[j].addr, snap[j].size, counts);
        emit_counts(now_ns, snap[i].seq, counts);
        i = j;
    }
    flush();
}
