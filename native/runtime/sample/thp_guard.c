/* Keeping transparent huge pages huge while arming; see thp_guard.h. */
#define _GNU_SOURCE
#include "thp_guard.h"
#include "pagemap_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The PMD huge page size from sysfs, 0 when THP is absent or "never". */
static uint64_t thp_bytes(void)
{
    char buf[64] = {0};
    int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0 || strstr(buf, "[never]"))
        return 0;
    memset(buf, 0, sizeof buf);
    fd = open("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 2u << 20;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    unsigned long long v = n > 0 ? strtoull(buf, NULL, 10) : 0;
    return v && (v & (v - 1)) == 0 ? (uint64_t)v : 2u << 20;
}

/* 1 when some page of [start, end) is PMD-mapped huge, 0 when none, -errno on failure. */
static int has_huge(int fd, uint64_t start, uint64_t end)
{
    struct page_region r;
    struct pm_scan_arg a = {.size = sizeof a,
                            .start = start,
                            .end = end,
                            .vec = (uint64_t)(uintptr_t)&r,
                            .vec_len = 1,
                            .max_pages = 1,
                            .category_mask = PAGE_IS_HUGE,
                            .return_mask = PAGE_IS_HUGE};
    long n = ioctl(fd, PAGEMAP_SCAN, &a);
    return n < 0 ? -errno : n > 0;
}

const char *rt_thp_guard_init(rt_thp_guard *g, int pagemap_fd)
{
    memset(g, 0, sizeof *g);
    g->pagemap_fd = pagemap_fd;
    uint64_t h = thp_bytes();
    if (!h)
        return "transparent huge pages are off";
    /* probe the ioctl on a range of the guard itself: any answer but an error will do */
    uint64_t probe = (uint64_t)(uintptr_t)g & ~(uint64_t)4095;
    if (pagemap_fd < 0 || has_huge(pagemap_fd, probe, probe + 4096) < 0)
        return "the kernel has no PAGEMAP_SCAN (Linux 6.7)";
    g->huge_bytes = h;
    return 0;
}

int rt_thp_guard_keeps(rt_thp_guard *g, uint64_t obj, uint64_t at, uint64_t len)
{
    if (!g->huge_bytes || !len)
        return 0;
    uint64_t h = g->huge_bytes, mask = ~(h - 1), end = at + len;
    for (uint64_t f = at & mask; f < end; f += h) { /* a cluster spans one or two frames */
        uint64_t index = (f - (obj & mask)) / h;
        if (index < RT_THP_SAMPLE_FIRST || index % RT_THP_SAMPLE_EVERY == 0)
            continue; /* a sample frame: may be split */
        uint64_t s = f > at ? f : at, e = f + h < end ? f + h : end;
        if (has_huge(g->pagemap_fd, s, e) > 0) {
            g->kept++;
            return 1;
        }
    }
    return 0;
}
