/* Registry: concurrent insert/lookup/remove from several threads on disjoint and shared
 * keys; growth past the initial capacity; snapshot agrees with the live count. */
#define _GNU_SOURCE
#include "check.h"
#include "registry.h"

#include <pthread.h>

#define THREADS    8
#define PER_THREAD 50000

static void *worker(void *arg)
{
    uint64_t base = ((uint64_t)(uintptr_t)arg + 1) << 32;
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        rt_obj o = {.addr = base + i * 4096, .size = i, .seq = i, .prot = 3, .kind = 1};
        CHECK(rt_reg_insert(&o) == 0);
    }
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        rt_obj o;
        CHECK(rt_reg_lookup(base + i * 4096, &o) == 1);
        CHECK(o.size == i && o.seq == i);
    }
    for (uint64_t i = 0; i < PER_THREAD; i += 2) {
        rt_obj o;
        CHECK(rt_reg_remove(base + i * 4096, &o) == 1);
        CHECK(o.seq == i);
        CHECK(rt_reg_remove(base + i * 4096, &o) == 0);
    }
    return NULL;
}

int main(void)
{
    CHECK(rt_reg_init() == 0);
    pthread_t th[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    uint64_t expect = (uint64_t)THREADS * PER_THREAD / 2;
    CHECK(atomic_load(&rt_reg_live) == expect);
    static rt_obj snap[THREADS * PER_THREAD];
    CHECK(rt_reg_snapshot(snap, THREADS * PER_THREAD) == expect);
    for (uint64_t i = 0; i < expect; i++)
        CHECK(((snap[i].addr & 0xffffffffu) / 4096) % 2 == 1);
    rt_obj o;
    CHECK(rt_reg_lookup(0x12345000, &o) == 0);
    /* re-inserting the same address replaces, not duplicates */
    rt_obj a = {.addr = 0x5000, .size = 1, .seq = 1};
    rt_obj b = {.addr = 0x5000, .size = 2, .seq = 2};
    rt_reg_insert(&a);
    rt_reg_insert(&b);
    CHECK(rt_reg_lookup(0x5000, &o) == 1 && o.seq == 2);
    CHECK(atomic_load(&rt_reg_live) == expect + 1);
    printf("test_registry: %llu live objects\n", (unsigned long long)expect);
    return 0;
}
