"""The pageout sampler keeps a program's transparent huge pages (native/runtime/sample/thp_guard.h).

Paging out a part of a huge page splits it; a sampler arming clusters all over a THP-backed
array used to leave none of it huge (a 96 MiB solver matrix: 94 MiB huge plain, 0 while
recorded). A real C program madvises a 64 MiB array MADV_HUGEPAGE, reads it round after round
and prints how much of its memory is huge at the end; under the real runtime with the pageout
sampler most of it stays huge (at most 7 of its 32 frames split), the array is still sampled
(in its sample frames), and the
program's output is otherwise the same as plain.

Needs root (a temporary zram swap device when the machine has none), perf_event_open and
transparent huge pages for madvised memory."""

from __future__ import annotations

import pytest


from .conftest import samples_in

pytestmark = pytest.mark.root

MIB = 1 << 20

# argv: rounds. Prints "array <addr>", then the checksum, then "huge_kib <AnonHugePages>".
HUGE_READER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
int main(int argc, char **argv) {
    size_t n = 64u << 20;
    int rounds = atoi(argv[1]);
    unsigned char *a = NULL;
    if (posix_memalign((void **)&a, 2u << 20, n) != 0) return 2;
    madvise(a, n, MADV_HUGEPAGE);
    memset(a, 1, n);
    printf("array %lu\n", (unsigned long)(size_t)a);
    unsigned long sum = 0;
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < n; i += 4096) sum += a[i] + (unsigned long)r;
    printf("sum %lu\n", sum);
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long huge = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %ld kB", &huge) == 1) break;
    if (f) fclose(f);
    printf("huge_kib %ld\n", huge);
    return 0;
}
"""


def fields(stdout: str) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in stdout.splitlines())}


def test_a_recorded_huge_array_stays_mostly_huge_and_is_sampled(compile_c, run_traced, swap):
    exe = compile_c(HUGE_READER, "huge_reader")
    plain = run_traced(exe, 400, name="plain", sampler="none")
    assert plain.returncode == 0, plain.stderr
    plain_huge = fields(plain.stdout)["huge_kib"]
    if plain_huge < 32 * 1024:
        pytest.skip(f"transparent huge pages not given to madvised memory ({plain_huge} KiB)")
    run = run_traced(exe, 400, sampler="pageout", rate=4000, overhead_bp=0)
    assert run.returncode == 0, run.stderr
    got = fields(run.stdout)
    assert got["sum"] == fields(plain.stdout)["sum"]
    # of its 32 frames, arming may split the first 4 (RT_THP_SAMPLE_FIRST) and 8, 16, 24
    # (RT_THP_SAMPLE_EVERY): 14 MiB; 50 MiB stay huge (the guard off: none)
    assert got["huge_kib"] >= plain_huge - 7 * 2048, (got["huge_kib"], plain_huge)
    trace = run.trace()
    assert samples_in(trace, got["array"], 64 * MIB) > 0
    # what was armed lies mostly in the sample frames, 0-3, 8, 16, 24 from the array's start
    # (a frame the kernel did not make huge is armed anywhere, as base pages always are)
    addr = trace.samples.column("addr").to_numpy()
    inside = addr[(addr >= got["array"]) & (addr < got["array"] + 64 * MIB)]
    frames = (inside - got["array"]) // (2 * MIB)
    assert ((frames < 4) | (frames % 8 == 0)).mean() >= 0.5, sorted(set(frames.tolist()))
