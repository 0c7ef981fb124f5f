"""The fault sampler's WINDOW records: each scan window's exposure, read back with the real
reader, and the touch rates the objects table estimates from them."""

from __future__ import annotations

import numpy as np

from objtier.analysis.objects import object_table

# `hot` (4 MiB) takes random read-modify-writes without pause; a second thread walks `swept`
# (32 MiB) one page every ~30 us, so each of its pages is touched once per ~0.25 s sweep.
# Both are touched all over within a few sweeps: first-touch counts per page are similar, the
# rates of touch episodes differ by orders of magnitude.
HOT_AND_SWEPT = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile int done;
static unsigned char *swept;
#define SWEPT (32u << 20)

static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9;
}
static void *sweeper(void *arg) {
    (void)arg;
    unsigned long sum = 0;
    while (!done)
        for (size_t i = 0; i < SWEPT && !done; i += 4096) {
            sum += swept[i]++;
            if ((i >> 12) % 8 == 7) {
                struct timespec d = {0, 200000};
                nanosleep(&d, NULL);
            }
        }
    return (void *)sum;
}
__attribute__((noinline)) static unsigned char *alloc_hot(size_t n) { return malloc(n); }
__attribute__((noinline)) static unsigned char *alloc_swept(size_t n) { return malloc(n); }
int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    size_t hot_n = 4u << 20;
    unsigned char *hot = alloc_hot(hot_n);
    swept = alloc_swept(SWEPT);
    memset(hot, 1, hot_n);
    memset(swept, 1, SWEPT);
    pthread_t t;
    pthread_create(&t, NULL, sweeper, NULL);
    uint64_t x = 88172645463325252ull, sum = 0;
    double end = now() + seconds;
    while (now() < end)
        for (int k = 0; k < 100000; k++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            sum += hot[x % hot_n]++;
        }
    done = 1;
    pthread_join(t, NULL);
    printf("%llu\n", (unsigned long long)sum);
    free(hot);
    free(swept);
    return 0;
}
"""


def test_windows_describe_the_samples(compile_c, run_traced):
    exe = compile_c(HOT_AND_SWEPT, name="hot_and_swept")
    run = run_traced(exe, 1.5, sampler="fault", rate=5000)
    assert run.returncode == 0, run.stderr
    trace = run.trace()
    windows = trace.windows
    assert windows.num_rows > 0
    pages = windows.column("pages").to_numpy()
    touched = windows.column("touched").to_numpy()
    dwell = windows.column("dwell_ns").to_numpy()
    touched_ns = windows.column("touched_ns").to_numpy()
    assert (pages > 0).all() and (touched <= pages).all()
    # a touched page was touched within its window: its delay is below the window's dwell
    assert (touched_ns <= touched.astype(np.uint64) * dwell).all()
    # every window lies in a recorded object: its first armed page inside that allocation
    allocs = {row["seq"]: row for row in trace.allocations.to_pylist()}
    for row in windows.to_pylist():
        obj = allocs[row["alloc_seq"]]
        assert obj["addr"] <= row["start"] < obj["addr"] + obj["size"]
    # each touch of an armed page is one SAMPLE unless the writer dropped it
    stats = trace.sampler_stats.to_pylist()[-1]
    samples = trace.samples.num_rows
    assert samples <= touched.sum() <= samples + stats["lost"]
    assert stats["windows"] >= windows.num_rows


def test_touch_rate_separates_hot_from_swept(compile_c, run_traced):
    """Both arrays are touched all over in most windows, so their first-touch counts per MiB
    are within a small factor; the estimated rates separate them by far more. (Rates are per
    wall-clock second: on a loaded machine the hot thread waits for a CPU and its rate
    drops — 14x apart here with two other busy processes on two cores.)"""
    exe = compile_c(HOT_AND_SWEPT, name="hot_and_swept")
    run = run_traced(exe, 2.5, sampler="fault", rate=5000)
    assert run.returncode == 0, run.stderr
    table = object_table(run.trace()).to_pylist()
    by_site = {row["label"].split(" ")[0]: row for row in table}
    hot, swept = by_site["alloc_hot"], by_site["alloc_swept"]
    assert hot["watched_s"] > 0 and swept["watched_s"] > 0
    rate_ratio = hot["touch_rate"] / swept["touch_rate"]
    count_ratio = (hot["samples"] / hot["size"]) / (swept["samples"] / swept["size"])
    assert rate_ratio > 5 and rate_ratio > 2 * count_ratio, (hot, swept)
    # the planner's input follows the estimate: hot has the higher accesses per byte
    assert hot["accesses"] / hot["size"] > 5 * swept["accesses"] / swept["size"]
    assert hot["est_touches"] == hot["accesses"]
