/* Protection table: set/clear/run against a page-by-page model, plus the cases the fault
 * sampler depends on (a guard page inside a range, a reserve committed piece by piece). */
#define _GNU_SOURCE
#include "check.h"
#include "prottab.h"

#include <stdint.h>
#include <string.h>

#define PAGES 64
#define PG    4096ULL
#define BASE  0x10000000ULL
#define DFLT  3u

static uint32_t model[PAGES]; /* 0xFFFFFFFF: no range (default) */

static uint32_t model_at(int p)
{
    return model[p] == 0xFFFFFFFFu ? DFLT : model[p];
}

/* Every run the table reports matches the model, from every page to every end. */
static void check_against_model(const rt_prottab *t)
{
    for (int a = 0; a < PAGES; a++) {
        CHECK(rt_prottab_at(t, BASE + a * PG + 17, DFLT) == model_at(a));
        uint32_t p;
        uint64_t e = rt_prottab_run(t, BASE + a * PG, BASE + PAGES * PG, DFLT, &p);
        CHECK(p == model_at(a));
        int b = a;
        while (b < PAGES && model_at(b) == model_at(a))
            b++;
        CHECK(e == BASE + (uint64_t)b * PG);
    }
    for (size_t i = 0; i < t->n; i++) { /* sorted, non-overlapping, merged */
        CHECK(t->r[i].start < t->r[i].end);
        if (i + 1 < t->n) {
            CHECK(t->r[i].end <= t->r[i + 1].start);
            CHECK(t->r[i].end < t->r[i + 1].start || t->r[i].prot != t->r[i + 1].prot);
        }
    }
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(void)
{
    rt_prottab t = {0};
    memset(model, 0xFF, sizeof model);
    check_against_model(&t);

    /* a guard page at the end of a read-write buffer */
    CHECK(rt_prottab_set(&t, BASE, 8 * PG, 3) == 0);
    CHECK(rt_prottab_set(&t, BASE + 7 * PG, PG, 0) == 0);
    for (int i = 0; i < 7; i++)
        model[i] = 3;
    model[7] = 0;
    check_against_model(&t);
    uint32_t p;
    CHECK(rt_prottab_run(&t, BASE, BASE + 8 * PG, DFLT, &p) == BASE + 7 * PG && p == 3);

    /* a reserve made PROT_NONE, committed piece by piece, then read-only in the middle */
    CHECK(rt_prottab_set(&t, BASE + 16 * PG, 32 * PG, 0) == 0);
    for (int i = 16; i < 48; i++)
        model[i] = 0;
    CHECK(rt_prottab_set(&t, BASE + 16 * PG, 4 * PG, 3) == 0);
    CHECK(rt_prottab_set(&t, BASE + 20 * PG, 4 * PG, 3) == 0);
    CHECK(rt_prottab_set(&t, BASE + 18 * PG, 2 * PG, 1) == 0);
    for (int i = 16; i < 24; i++)
        model[i] = 3;
    model[18] = model[19] = 1;
    check_against_model(&t);

    /* munmap of a piece: back to the default */
    CHECK(rt_prottab_clear(&t, BASE + 30 * PG, 4 * PG) == 0);
    for (int i = 30; i < 34; i++)
        model[i] = 0xFFFFFFFFu;
    check_against_model(&t);

    /* random sets and clears against the model */
    for (int round = 0; round < 20000; round++) {
        int a = (int)(next() % PAGES), n = 1 + (int)(next() % 12);
        if (a + n > PAGES)
            n = PAGES - a;
        uint32_t prot = (uint32_t)(next() % 4);
        if (next() % 4 == 0) {
            CHECK(rt_prottab_clear(&t, BASE + a * PG, (uint64_t)n * PG) == 0);
            for (int i = a; i < a + n; i++)
                model[i] = 0xFFFFFFFFu;
        } else {
            if (prot == 2)
                prot = RT_PROT_NOARM | 3;
            CHECK(rt_prottab_set(&t, BASE + a * PG, (uint64_t)n * PG, prot) == 0);
            for (int i = a; i < a + n; i++)
                model[i] = prot;
        }
        check_against_model(&t);
    }
    /* the table grows past its first allocation */
    rt_prottab big = {0};
    for (uint64_t i = 0; i < 5000; i++)
        CHECK(rt_prottab_set(&big, BASE + 2 * i * PG, PG, (uint32_t)(i & 1)) == 0);
    CHECK(big.n == 5000);
    CHECK(rt_prottab_at(&big, BASE + 2 * 4999 * PG, 9) == 1 &&
          rt_prottab_at(&big, BASE + PG, 9) == 9);
    rt_prottab_reset(&big);
    rt_prottab_reset(&t);
    CHECK(t.n == 0);
    puts("test_prottab ok");
    return 0;
}
