/* Context interning: equal frame arrays get one id, different ones new dense ids,
 * across growth of the table; every id gives its frames back. */
#define _GNU_SOURCE
#include "check.h"
#include "ctxtab.h"

int main(void)
{
    rt_ctxtab t;
    CHECK(rt_ctxtab_init(&t) == 0);
    ot_frame f[4] = {{1, 0, 0x10}, {1, 0, 0x20}, {2, 0, 0x30}, {0, 0, 0x7fff0000}};
    int is_new;
    uint32_t a = rt_ctxtab_intern(&t, f, 4, &is_new);
    CHECK(a == 1 && is_new);
    CHECK(rt_ctxtab_intern(&t, f, 4, &is_new) == 1 && !is_new);
    CHECK(rt_ctxtab_intern(&t, f, 3, &is_new) == 2 && is_new); /* a prefix is another context */
    f[1].module = 3;
    CHECK(rt_ctxtab_intern(&t, f, 4, &is_new) == 3 && is_new);
    for (uint32_t i = 0; i < 20000; i++) {
        ot_frame g[2] = {{1, 0, i}, {2, 0, i * 7}};
        CHECK(rt_ctxtab_intern(&t, g, 2, &is_new) == 4 + i && is_new);
    }
    for (uint32_t i = 0; i < 20000; i++) {
        ot_frame g[2] = {{1, 0, i}, {2, 0, i * 7}};
        CHECK(rt_ctxtab_intern(&t, g, 2, &is_new) == 4 + i && !is_new);
    }
    CHECK(rt_ctxtab_intern(&t, NULL, 0, &is_new) == 20004 && is_new);
    const ot_frame *got;
    uint32_t depth;
    CHECK(rt_ctxtab_frames(&t, 2, &got, &depth) == 0 && depth == 3);
    CHECK(got[0].offset == 0x10 && got[1].module == 1 && got[2].offset == 0x30);
    CHECK(rt_ctxtab_frames(&t, 3, &got, &depth) == 0 && depth == 4 && got[1].module == 3);
    for (uint32_t i = 0; i < 20000; i += 997) {
        CHECK(rt_ctxtab_frames(&t, 4 + i, &got, &depth) == 0 && depth == 2);
        CHECK(got[0].offset == i && got[1].offset == (uint64_t)i * 7);
    }
    CHECK(rt_ctxtab_frames(&t, 20004, &got, &depth) == 0 && depth == 0);
    CHECK(rt_ctxtab_frames(&t, 0, &got, &depth) == -1);
    CHECK(rt_ctxtab_frames(&t, 20005, &got, &depth) == -1);
    rt_ctxtab_destroy(&t);
    printf("test_ctxtab: ok\n");
    return 0;
}
