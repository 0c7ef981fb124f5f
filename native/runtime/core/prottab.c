/* The program's page protections as a sorted range list; see prottab.h. */
#define _GNU_SOURCE
#include "prottab.h"
#include "rt.h"

#include <errno.h>
#include <string.h>

static int reserve(rt_prottab *t, size_t need)
{
    if (need <= t->capacity)
        return 0;
    size_t cap = t->capacity ? t->capacity * 2 : 256;
    while (cap < need)
        cap *= 2;
    rt_prot_range *r = rt_sys_mmap(cap * sizeof *r);
    if (!r)
        return -ENOMEM;
    if (t->r) {
        memcpy(r, t->r, t->n * sizeof *r);
        rt_sys_munmap(t->r, t->capacity * sizeof *r);
    }
    t->r = r;
    t->capacity = cap;
    return 0;
}

/* First index whose range ends after addr. */
static size_t first_after(const rt_prottab *t, uint64_t addr)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->r[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void insert_at(rt_prottab *t, size_t i, rt_prot_range v)
{
    memmove(&t->r[i + 1], &t->r[i], (t->n - i) * sizeof v);
    t->r[i] = v;
    t->n++;
}

static void erase(rt_prottab *t, size_t i, size_t k)
{
    memmove(&t->r[i], &t->r[i + k], (t->n - i - k) * sizeof *t->r);
    t->n -= k;
}

/* Removes [start, end) from every range; returns the index where a range starting at
 * `start` belongs. Needs room for one more entry (a range split in two). */
static size_t cut(rt_prottab *t, uint64_t start, uint64_t end)
{
    size_t i = first_after(t, start);
    if (i < t->n && t->r[i].start < start && t->r[i].end > end) { /* split one range */
        rt_prot_range right = t->r[i];
        right.start = end;
        t->r[i].end = start;
        insert_at(t, i + 1, right);
        return i + 1;
    }
    if (i < t->n && t->r[i].start < start) { /* keep its left part */
        t->r[i].end = start;
        i++;
    }
    size_t j = i;
    while (j < t->n && t->r[j].end <= end)
        j++;
    erase(t, i, j - i);
    if (i < t->n && t->r[i].start < end) /* keep its right part */
        t->r[i].start = end;
    return i;
}

int rt_prottab_set(rt_prottab *t, uint64_t start, uint64_t len, uint32_t prot)
{
    if (len == 0)
        return 0;
    uint64_t end = start + len;
    if (reserve(t, t->n + 2) != 0)
        return -ENOMEM;
    size_t i = cut(t, start, end);
    rt_prot_range v = {start, end, prot};
    if (i > 0 && t->r[i - 1].end == start && t->r[i - 1].prot == prot) {
        t->r[i - 1].end = end;
        i--;
    } else {
        insert_at(t, i, v);
    }
    if (i + 1 < t->n && t->r[i + 1].start == t->r[i].end && t->r[i + 1].prot == prot) {
        t->r[i].end = t->r[i + 1].end;
        erase(t, i + 1, 1);
    }
    return 0;
}

int rt_prottab_clear(rt_prottab *t, uint64_t start, uint64_t len)
{
    if (len == 0 || t->n == 0)
        return 0;
    if (reserve(t, t->n + 1) != 0)
        return -ENOMEM;
    cut(t, start, start + len);
    return 0;
}

uint64_t rt_prottab_run(const rt_prottab *t, uint64_t start, uint64_t end, uint32_t dflt,
                        uint32_t *prot)
{
    if (start >= end) {
        *prot = dflt;
        return start;
    }
    size_t i = first_after(t, start);
    uint64_t at = start;
    uint32_t p = (i < t->n && t->r[i].start <= start) ? t->r[i].prot : dflt;
    *prot = p;
    while (at < end) {
        if (i < t->n && t->r[i].start <= at) { /* inside range i */
            if (t->r[i].prot != p)
                break;
            at = t->r[i].end;
            i++;
        } else { /* in a gap: default up to the next range */
            if (dflt != p)
                break;
            at = i < t->n ? t->r[i].start : end;
        }
    }
    return at < end ? at : end;
}

uint32_t rt_prottab_at(const rt_prottab *t, uint64_t addr, uint32_t dflt)
{
    size_t i = first_after(t, addr);
    return (i < t->n && t->r[i].start <= addr) ? t->r[i].prot : dflt;
}

void rt_prottab_reset(rt_prottab *t)
{
    if (t->r)
        rt_sys_munmap(t->r, t->capacity * sizeof *t->r);
    t->r = NULL;
    t->n = t->capacity = 0;
}
