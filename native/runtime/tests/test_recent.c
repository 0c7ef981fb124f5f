/* The ring of recent sampler windows (sample/recent.c): nothing is noted before it is enabled;
 * windows come out whole and in the order they were noted; a full ring drops (and counts) the
 * new window, never an old one; a producer and a consumer running at once lose nothing that
 * was not counted as dropped, in order; the fork child's ring is off and empty. */
#define _GNU_SOURCE
#include "check.h"
#include "recent.h"

#include <pthread.h>
#include <stdint.h>

#define N_CONCURRENT 2000000u

static rt_recent_window out[RT_RECENT_SLOTS + 16];

static void *produce(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < N_CONCURRENT; i++)
        rt_recent_note((uint64_t)i << 12, ((uint64_t)i + 1) << 12, i, i / 2, i);
    return NULL;
}

int main(void)
{
    /* off: nothing noted */
    rt_recent_note(0, 4096, 1, 1, 1);
    CHECK(rt_recent_take(out, 16) == 0 && rt_recent_dropped() == 0);

    /* whole and in order, at most cap per take */
    rt_recent_enable();
    for (uint32_t i = 0; i < 10; i++)
        rt_recent_note(4096 * i, 4096 * (i + 1), 8 + i, i, 1000 + i);
    CHECK(rt_recent_take(out, 4) == 4);
    for (uint32_t i = 0; i < 4; i++)
        CHECK(out[i].start == 4096 * i && out[i].end == 4096 * (i + 1) && out[i].pages == 8 + i &&
              out[i].touched == i && out[i].end_ns == 1000 + i);
    CHECK(rt_recent_take(out, 16) == 6 && out[0].end_ns == 1004 && out[5].end_ns == 1009);
    CHECK(rt_recent_take(out, 16) == 0);

    /* full: the newest are dropped and counted, the ring keeps the oldest */
    for (uint32_t i = 0; i < RT_RECENT_SLOTS + 5; i++)
        rt_recent_note(0, 4096, 1, 0, i);
    CHECK(rt_recent_dropped() == 5);
    CHECK(rt_recent_take(out, RT_RECENT_SLOTS + 16) == RT_RECENT_SLOTS);
    CHECK(out[0].end_ns == 0 && out[RT_RECENT_SLOTS - 1].end_ns == RT_RECENT_SLOTS - 1);

    /* a producer and a consumer at once: every window taken or counted dropped, in order */
    uint64_t dropped_before = rt_recent_dropped();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, produce, NULL) == 0);
    uint64_t taken = 0, last = 0;
    int first = 1, done = 0;
    while (!done) {
        done = pthread_tryjoin_np(t, NULL) == 0; /* after the join, one more full drain */
        for (uint32_t got; (got = rt_recent_take(out, 512)) > 0;)
            for (uint32_t k = 0; k < got; k++) {
                CHECK(first || out[k].end_ns > last);
                CHECK(out[k].start == out[k].end_ns << 12 && out[k].pages == out[k].end_ns &&
                      out[k].touched == out[k].end_ns / 2);
                last = out[k].end_ns;
                first = 0;
                taken++;
            }
    }
    CHECK(taken + (rt_recent_dropped() - dropped_before) == N_CONCURRENT);
    CHECK(taken > 0);

    /* fork child: off and empty */
    rt_recent_note(0, 4096, 1, 0, 7);
    rt_recent_fork_child();
    CHECK(rt_recent_take(out, 16) == 0);
    rt_recent_note(0, 4096, 1, 0, 8);
    CHECK(rt_recent_take(out, 16) == 0);
    puts("test_recent: ok");
    return 0;
}
