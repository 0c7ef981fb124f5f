/* Calling-context tree: the seed's Listing 1 gives its Figure 2; exits, recursion, counters. */
#define _GNU_SOURCE
#include "cct.h"
#include "check.h"

/* Function addresses and call sites of Listing 1 (any distinct values). */
enum { MAIN = 0x1000, FOO = 0x2000, BAR = 0x3000 };
enum { START_MAIN = 0x900, MAIN_FOO = 0x1010, FOO_BAR = 0x2010, MAIN_BAR = 0x1020 };

static uint32_t find(const rt_cct *t, uint32_t parent, uint64_t fn, uint64_t site)
{
    uint32_t hit = 0;
    for (uint32_t i = 1; i < t->count; i++)
        if (t->nodes[i].parent == parent && t->nodes[i].fn == fn && t->nodes[i].site == site) {
            CHECK(hit == 0); /* one node per (parent, fn, site) */
            hit = i;
        }
    return hit;
}

int main(void)
{
    rt_cct t;
    CHECK(rt_cct_init(&t) == 0);
    uint64_t now = 0;
    /* Listing 1: main calls foo, foo calls bar three times, main then calls bar */
    CHECK(rt_cct_enter(&t, MAIN, START_MAIN, now) != 0);
    rt_cct_enter(&t, FOO, MAIN_FOO, now += 10);
    for (int i = 0; i < 3; i++) {
        uint32_t n = rt_cct_enter(&t, BAR, FOO_BAR, now += 1);
        rt_cct_counter *c = rt_cct_counter_get(&t, n, 7);
        CHECK(c != NULL);
        c->loads += 2;
        rt_cct_exit(&t, BAR, FOO_BAR, now += 2);
    }
    rt_cct_exit(&t, FOO, MAIN_FOO, now += 1);
    uint32_t mb = rt_cct_enter(&t, BAR, MAIN_BAR, now += 1);
    rt_cct_counter_get(&t, mb, 7)->stores += 5;
    rt_cct_exit(&t, BAR, MAIN_BAR, now += 4);
    CHECK(rt_cct_exit(&t, MAIN, START_MAIN, now += 1) == 0);

    /* Figure 2: root - main - {foo - bar, bar}: 4 nodes besides the root */
    CHECK(t.count == 5 && t.depth == 0);
    uint32_t m = find(&t, 0, MAIN, START_MAIN), f = find(&t, m, FOO, MAIN_FOO);
    uint32_t fb = find(&t, f, BAR, FOO_BAR), b = find(&t, m, BAR, MAIN_BAR);
    CHECK(m && f && fb && b && fb != b);
    CHECK(t.nodes[m].calls == 1 && t.nodes[f].calls == 1 && t.nodes[fb].calls == 3);
    CHECK(t.nodes[b].calls == 1);
    CHECK(t.nodes[fb].incl_ns == 6 && t.nodes[f].incl_ns == 10 && t.nodes[b].incl_ns == 4);
    CHECK(t.nodes[m].incl_ns == now);
    CHECK(rt_cct_counter_get(&t, fb, 7)->loads == 6 && rt_cct_counter_get(&t, b, 7)->stores == 5);
    CHECK(t.counters == 2);
    /* ids are distinct and non-zero */
    for (uint32_t i = 1; i < t.count; i++)
        for (uint32_t j = i + 1; j < t.count; j++)
            CHECK(t.nodes[i].id && t.nodes[i].id != t.nodes[j].id);

    /* an exit skipping frames (longjmp) closes them; an unknown exit is ignored */
    rt_cct_enter(&t, MAIN, START_MAIN, 100);
    rt_cct_enter(&t, FOO, MAIN_FOO, 101);
    rt_cct_enter(&t, BAR, FOO_BAR, 102);
    CHECK(rt_cct_exit(&t, 0x7777, 0x8888, 103) == fb && t.depth == 3);
    CHECK(rt_cct_exit(&t, FOO, MAIN_FOO, 110) == m && t.depth == 1);
    CHECK(t.nodes[fb].incl_ns == 6 + 8 && t.nodes[f].incl_ns == 10 + 9);
    /* open calls at process exit */
    rt_cct_close_open(&t, 200);
    CHECK(t.nodes[m].incl_ns == now + 100 && t.depth == 1);
    rt_cct_exit(&t, MAIN, START_MAIN, 200);

    /* deep recursion: one node per level up to the depth limit, then overflow */
    uint32_t before = t.count;
    for (int i = 0; i < RT_CCT_MAX_DEPTH + 10; i++)
        rt_cct_enter(&t, FOO, FOO + 0x10, (uint64_t)i);
    CHECK(t.depth == RT_CCT_MAX_DEPTH && t.overflow == 10);
    CHECK(t.count == before + RT_CCT_MAX_DEPTH);
    for (int i = 0; i < RT_CCT_MAX_DEPTH + 10; i++)
        rt_cct_exit(&t, FOO, FOO + 0x10, 1000000);
    CHECK(t.depth == 0 && t.overflow == 0);

    /* many counters: growth keeps earlier pointers valid */
    rt_cct_counter *first = rt_cct_counter_get(&t, 1, 1000);
    first->misses = 42;
    for (uint64_t s = 0; s < 100000; s++)
        CHECK(rt_cct_counter_get(&t, 2, s) != NULL);
    CHECK(first == rt_cct_counter_get(&t, 1, 1000) && first->misses == 42);
    CHECK(rt_cct_counter_get(&t, 2, 99999)->seq == 99999);
    rt_cct_destroy(&t);
    return 0;
}
