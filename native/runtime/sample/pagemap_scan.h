/*
 * The PAGEMAP_SCAN ioctl of /proc/PID/pagemap (include/uapi/linux/fs.h, Linux 6.7), declared
 * here for older headers: it reports ranges of pages by category (written, present, swapped,
 * huge, ...) in one call instead of one 8-byte pagemap entry per page.
 * Used by the wp sampler (PAGE_IS_WRITTEN) and the THP guard (PAGE_IS_HUGE). A kernel
 * without it answers ENOTTY or EINVAL.
 */
#ifndef OBJTIER_PAGEMAP_SCAN_H
#define OBJTIER_PAGEMAP_SCAN_H

#include <linux/fs.h>
#include <stdint.h>

#ifndef PAGEMAP_SCAN
#define PAGE_IS_WRITTEN (1 << 1)
#define PAGE_IS_HUGE    (1 << 6)
struct page_region {
    uint64_t start, end, categories; /* [start, end) bytes, PAGE_IS_* bits */
};
struct pm_scan_arg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted,
        category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif

#endif
