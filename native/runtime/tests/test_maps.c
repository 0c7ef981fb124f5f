/* Map list: partial unmaps trim and split ranges and report each removed piece. */
#define _GNU_SOURCE
#include "check.h"
#include "maps.h"

typedef struct {
    uint64_t start, len, seq;
    int n;
} seen;

static void note(uint64_t start, uint64_t len, uint64_t seq, uint32_t prot, void *ctx)
{
    (void)prot;
    seen *s = ctx;
    s->start = start;
    s->len = len;
    s->seq = seq;
    s->n++;
}

int main(void)
{
    rt_obj a = {.addr = 0x100000, .size = 0x10000, .seq = 5, .prot = 3};
    rt_obj b = {.addr = 0x200000, .size = 0x10000, .seq = 6, .prot = 1};
    CHECK(rt_maps_add(&a) == 0 && rt_maps_add(&b) == 0);
    CHECK(rt_maps_contains(0x100000, 0x10000, 5));
    CHECK(!rt_maps_contains(0x100000, 0x10000, 6));
    seen s = {0};
    /* hole in the middle of a: two pieces remain */
    CHECK(rt_maps_remove(0x104000, 0x2000, note, &s) == 1);
    CHECK(s.start == 0x104000 && s.len == 0x2000 && s.seq == 5);
    CHECK(rt_maps_contains(0x100000, 0x4000, 5));
    CHECK(rt_maps_contains(0x106000, 0xa000, 5));
    CHECK(!rt_maps_contains(0x103000, 0x2000, 5));
    CHECK(atomic_load(&rt_maps_live) == 3);
    /* one call covering the tail of a and the head of b */
    s.n = 0;
    CHECK(rt_maps_remove(0x108000, 0x100000, note, &s) == 2);
    CHECK(s.start == 0x200000 && s.len == 0x8000 && s.seq == 6);
    CHECK(rt_maps_contains(0x208000, 0x8000, 6));
    /* unmapping untracked memory touches nothing */
    s.n = 0;
    CHECK(rt_maps_remove(0x900000, 0x1000, note, &s) == 0 && s.n == 0);
    rt_obj snap[8];
    size_t n = rt_maps_snapshot(snap, 8);
    CHECK(n == 3);
    CHECK(snap[0].addr == 0x100000 && snap[0].size == 0x4000);
    CHECK(snap[1].addr == 0x106000 && snap[1].size == 0x2000);
    CHECK(snap[2].addr == 0x208000 && snap[2].size == 0x8000);
    /* a MAP_FIXED mapping over part of a range replaces that part */
    rt_obj c = {.addr = 0x107000, .size = 0x20000, .seq = 9};
    CHECK(rt_maps_add(&c) == 0);
    n = rt_maps_snapshot(snap, 8);
    CHECK(n == 4 && snap[1].size == 0x1000 && snap[2].seq == 9);
    printf("test_maps: ok\n");
    return 0;
}
