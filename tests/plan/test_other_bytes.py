"""What the program holds outside its objects (pipeline.other_bytes), the base of the unlocked
margin: a program whose one large buffer is mostly never touched and whose data is in small
blocks. The footprint less the objects' requested bytes says nothing is outside them; the
recording's sampled sites say about 16 MiB is, and the margin keeps room for it."""

from __future__ import annotations

import subprocess

from objtier.analysis.coverage import coverage
from objtier.plan.by_model import lock_cap
from objtier.plan.pipeline import other_bytes, read_recordings

from tests.cli.helpers import OBJTIER

MIB = 1 << 20

# A 64 MiB buffer of which 4 MiB is touched, and 65,536 rows of 256 B (16 MiB) kept live.
SPARSE_AND_SMALL = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
__attribute__((noinline)) char *row(void) { char *p = malloc(256); __asm__ volatile("" ::: "memory"); return p; }
int main(void) {
    char *big = malloc(64u << 20);
    memset(big, 1, 4u << 20);
    int n = 65536;
    char **rows = malloc(n * sizeof *rows);
    long sum = 0;
    for (int i = 0; i < n; i++) { rows[i] = row(); memset(rows[i], i, 256); }
    for (int pass = 0; pass < 4; pass++)
        for (int i = 0; i < n; i++) sum += rows[i][pass];
    usleep(400000);   /* the counters (every 100 ms) see the peak */
    printf("sum %ld %d\n", sum, big[4096]);
    return 0;
}
"""


def test_small_blocks_count_outside_objects_when_objects_overstate(compile_c, tmp_path):
    exe = compile_c(SPARSE_AND_SMALL, name="sparse_small", flags=("-O1", "-g", "-fno-builtin"))
    rec = tmp_path / "rec.otr"
    done = subprocess.run([str(OBJTIER), "record", "-q", "--sampler", "none", "-o", str(rec),
                           "--", str(exe)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    profile = read_recordings([rec])
    footprint = coverage(profile.traces[0]).footprint_bytes
    assert footprint is not None and footprint < 64 * MIB   # the buffer is mostly untouched
    assert other_bytes(footprint, profile.objects) == 0      # requested bytes exceed it
    outside = other_bytes(footprint, profile.objects, profile.traces)
    assert 8 * MIB <= outside <= footprint, outside          # ~16 MiB of rows (estimated)
    assert lock_cap(footprint, outside) <= footprint - outside   # the margin keeps their room
    assert lock_cap(footprint, outside) < lock_cap(footprint, 0)


def test_memory_the_recording_did_not_hold_counts_outside_objects(compile_c, tmp_path):
    """A footprint measured where the program will run (a cgroup v2 charging kernel memory and
    page cache) that exceeds the recording's own anonymous memory: the excess is outside the
    objects too (pipeline.unseen_bytes), on top of the small blocks."""
    from objtier.plan.pipeline import unseen_bytes

    exe = compile_c(SPARSE_AND_SMALL, name="sparse_small2", flags=("-O1", "-g", "-fno-builtin"))
    rec = tmp_path / "rec.otr"
    done = subprocess.run([str(OBJTIER), "record", "-q", "--sampler", "none", "-o", str(rec),
                           "--", str(exe)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    profile = read_recordings([rec])
    footprint = coverage(profile.traces[0]).footprint_bytes
    assert unseen_bytes(footprint, ()) == 0                       # no recording, no counters
    anon = footprint - unseen_bytes(footprint, profile.traces)    # VmRSS less its file pages
    assert 16 * MIB <= anon <= footprint, (anon, footprint)
    assert unseen_bytes(anon - MIB, profile.traces) == 0          # a footprint below it
    measured = anon + 24 * MIB
    assert unseen_bytes(measured, profile.traces) == 24 * MIB
    within = other_bytes(footprint, profile.objects, profile.traces)
    more = other_bytes(measured, profile.objects, profile.traces)
    assert more - within >= 20 * MIB, (within, more)
