/* The growable range array: growth keeps the elements, insert and erase keep the order, and
 * the search finds the first range that ends after an address. */
#define _GNU_SOURCE
#include "check.h"
#include "range_array.h"

typedef struct {
    uint64_t start, end, tag;
} range;

static uint64_t end_of(const void *e)
{
    return ((const range *)e)->end;
}

static range *at(rt_range_array *a, size_t i)
{
    return (range *)a->items + i;
}

int main(void)
{
    rt_range_array a = RT_RANGE_ARRAY_INIT(range, 4);
    CHECK(a.items == NULL && a.cap == 0);
    CHECK(rt_range_array_first_after(&a, 123, end_of) == 0); /* empty: n */

    /* ranges [100k, 100k + 50) for k = 0..999, inserted in reverse order at index 0 */
    for (uint64_t k = 1000; k-- > 0;) {
        CHECK(rt_range_array_reserve(&a, a.n + 1) == 0);
        range r = {100 * k, 100 * k + 50, k};
        rt_range_array_insert(&a, 0, &r);
    }
    CHECK(a.n == 1000 && a.cap == 1024); /* 4 doubled eight times */
    for (size_t i = 0; i < a.n; i++)
        CHECK(at(&a, i)->tag == i && at(&a, i)->start == 100 * i);
    CHECK(rt_range_array_reserve(&a, 10) == 0 && a.cap == 1024); /* never shrinks */

    CHECK(rt_range_array_first_after(&a, 0, end_of) == 0);
    CHECK(rt_range_array_first_after(&a, 49, end_of) == 0); /* inside range 0 */
    CHECK(rt_range_array_first_after(&a, 50, end_of) == 1); /* range 0 ends at 50 */
    CHECK(rt_range_array_first_after(&a, 75, end_of) == 1); /* in the gap: the next one */
    CHECK(rt_range_array_first_after(&a, 12345, end_of) == 123);
    CHECK(rt_range_array_first_after(&a, 99950, end_of) == 1000); /* past the last: n */

    /* erase the first, a middle and the last element */
    rt_range_array_erase(&a, 0);
    rt_range_array_erase(&a, 499); /* tag 500 */
    rt_range_array_erase(&a, a.n - 1);
    CHECK(a.n == 997 && at(&a, 0)->tag == 1 && at(&a, 498)->tag == 499 && at(&a, 499)->tag == 501 &&
          at(&a, a.n - 1)->tag == 998);
    CHECK(rt_range_array_first_after(&a, 50010, end_of) == 499); /* range 500 is gone */

    /* insert in the middle and at the end */
    range mid = {50000, 50050, 500}, last = {99900, 99950, 999};
    CHECK(rt_range_array_reserve(&a, a.n + 2) == 0);
    rt_range_array_insert(&a, rt_range_array_first_after(&a, mid.start, end_of), &mid);
    rt_range_array_insert(&a, a.n, &last);
    CHECK(a.n == 999);
    for (size_t i = 0; i < a.n; i++)
        CHECK(at(&a, i)->tag == i + 1);
    return 0;
}
