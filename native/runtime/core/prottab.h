/*
 * The program's own page protections, as it last set them through mmap, mprotect and
 * pkey_mprotect: a sorted list of non-overlapping byte ranges [start, end), each with the
 * protection word its pages have now. The fault sampler asks it which pages it may arm
 * (only pages that are exactly PROT_READ|PROT_WRITE) and so restores a scan window to
 * the protection the program set last, never to what the mapping had when it was made.
 *
 * Protection word: PROT_* bits, plus RT_PROT_PKEY when a protection key other than the
 * default one was given, plus RT_PROT_NOARM for memory the sampler must leave alone
 * (stdio buffers the program handed to setvbuf). Any word other than exactly
 * PROT_READ|PROT_WRITE means "do not arm".
 *
 * Invariants
 *   - ranges are sorted by start, non-overlapping, start < end, page aligned by callers;
 *   - two touching ranges with the same word are merged;
 *   - a page with no range has the caller's default (the object's protection).
 * Not thread-safe: the caller serializes every call (the fault sampler's arm lock).
 */
#ifndef OBJTIER_PROTTAB_H
#define OBJTIER_PROTTAB_H

#include <stddef.h>
#include <stdint.h>

#define RT_PROT_PKEY  0x20000000u /* a non-default protection key is set */
#define RT_PROT_NOARM 0x40000000u /* never armed, whatever its protection */

typedef struct rt_prot_range {
    uint64_t start, end;
    uint32_t prot;
} rt_prot_range;

typedef struct rt_prottab {
    rt_prot_range *r; /* rt_sys_mmap'd, capacity entries */
    size_t n, capacity;
} rt_prottab;

/* Sets [start, start+len) to prot, replacing what was there. 0, or -ENOMEM (then the
 * range is marked by the best effort that fits: the caller treats -ENOMEM as "stop
 * arming", see rt_prottab_broken). */
int rt_prottab_set(rt_prottab *t, uint64_t start, uint64_t len, uint32_t prot);

/* Forgets [start, start+len) (munmap): those pages go back to the callers' default. */
int rt_prottab_clear(rt_prottab *t, uint64_t start, uint64_t len);

/* The run of equal protection that starts at `start`, cut at `end`: returns the end of the
 * run (> start when start < end) and its protection in *prot (dflt where no range is). */
uint64_t rt_prottab_run(const rt_prottab *t, uint64_t start, uint64_t end, uint32_t dflt,
                        uint32_t *prot);

/* The protection of the page holding addr (dflt where no range is). */
uint32_t rt_prottab_at(const rt_prottab *t, uint64_t addr, uint32_t dflt);

void rt_prottab_reset(rt_prottab *t); /* frees everything */

#endif
