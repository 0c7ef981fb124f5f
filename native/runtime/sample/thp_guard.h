/*
 * Keeping the program's transparent huge pages huge while a window sampler arms pages.
 *
 * MADV_PAGEOUT of a part of a PMD-mapped transparent huge page splits it into base pages
 * for good (khugepaged may collapse it again, slowly). A sampler that armed clusters all
 * over a THP-backed object would leave none of it huge: on a 96 MiB sparse matrix scanned
 * by a solver that was +10 % of the program's user time (TLB misses), more than everything
 * the sampler itself costs. So the pageout sampler arms a cluster that lies in a huge page
 * only when that huge page is a *sample frame* of its object: frames
 * (huge-page-aligned ranges) are numbered from the one holding the object's first byte;
 * the first RT_THP_SAMPLE_FIRST (0..3) and every RT_THP_SAMPLE_EVERY-th after them (8, 16,
 * ...) may be split. An object of up to 4 frames (8 MiB with 2 MiB pages) is sampled as
 * without the guard — splitting its few huge pages costs little, and a short run of a
 * THP-backed program (THP "always", the default of many distributions) still gets samples
 * of every object — and a large one loses at most 4 frames + 1 in RT_THP_SAMPLE_EVERY of its
 * huge pages. Clusters in base pages (not THP-backed, or split already) are armed as before. The trace's WINDOW records list the pages actually armed,
 * so estimates per object stay exposure-weighted (systematic spatial sampling).
 *
 * Detection: PAGEMAP_SCAN with PAGE_IS_HUGE (Linux 6.7). Where the kernel lacks it, or THP
 * is off, nothing is kept (the old behaviour) and rt_thp_guard_init says why.
 * Scanner thread only.
 */
#ifndef OBJTIER_THP_GUARD_H
#define OBJTIER_THP_GUARD_H

#include <stdint.h>

#define RT_THP_SAMPLE_FIRST 4 /* an object's first 4 huge frames may be split by arming */
#define RT_THP_SAMPLE_EVERY 8 /* and 1 in 8 of the frames after them */

typedef struct rt_thp_guard {
    int pagemap_fd;      /* /proc/self/pagemap, the sampler's */
    uint64_t huge_bytes; /* PMD huge page size; 0 = no guard (no THP or no PAGEMAP_SCAN) */
    uint64_t kept;       /* clusters left unarmed to keep their huge page */
} rt_thp_guard;

/* 0 with the guard on, else a static reason the guard is off (g->huge_bytes = 0). */
const char *rt_thp_guard_init(rt_thp_guard *g, int pagemap_fd);

/* 1 when arming [at, at + len) would split a huge page that is not a sample frame of the
 * object starting at obj (the cluster is then left unarmed and counted in g->kept). */
int rt_thp_guard_keeps(rt_thp_guard *g, uint64_t obj, uint64_t at, uint64_t len);

#endif
