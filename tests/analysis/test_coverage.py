"""Coverage of the footprint: a real program recorded with the real recorder (counters on),
read back; the tracked objects, the small blocks and the split of the rest."""

from __future__ import annotations

import pytest

from objtier.analysis.coverage import coverage, coverage_line, coverage_of
from objtier.record.session import RecordSettings, record_program
from objtier.trace import open_trace

MIB = 1 << 20

# One 8 MiB object and 20 MiB in 160-byte blocks, all written, held while the counters sample.
HOLDER = r"""
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
__attribute__((noinline)) char *small(void) { char *p = malloc(160); __asm__ volatile("" ::: "memory"); return p; }
int main(void) {
    char *big = malloc(8 << 20);
    memset(big, 1, 8 << 20);
    int n = (20 << 20) / 160;
    char **keep = malloc(n * sizeof *keep);   /* itself an object: 1 MiB */
    for (int i = 0; i < n; i++) { keep[i] = small(); memset(keep[i], 2, 160); }
    usleep(600000);
    return big[5] + keep[n - 1][0] - 3;
}
"""


def _record(compile_c, tmp_path, interval_ms: int):
    exe = compile_c(HOLDER, name="holder", flags=("-O1", "-g", "-fno-builtin"))
    out = tmp_path / f"run{interval_ms}.otr"
    settings = RecordSettings(sampler="none", rate=1000, min_size=128 << 10, stack_depth=8,
                              counters_interval_ms=interval_ms, follow_forks=False,
                              trace_limit=0, llc=None, extra_env={})
    returncode, _ = record_program([str(exe)], out, settings, force=True)
    assert returncode == 0
    return open_trace(out)


def test_objects_cover_their_share_and_the_rest_is_split(compile_c, tmp_path):
    trace = _record(compile_c, tmp_path, 50)
    c = coverage(trace)
    assert c.footprint_bytes >= 28 * MIB
    assert 9 * MIB <= c.objects_bytes <= 10 * MIB   # 8 MiB + the 1 MiB pointer array
    assert 0.15 < c.share < 0.4
    # the small blocks (20 MiB plus malloc's headers) are anonymous memory outside objects
    assert c.parts["small"] >= 18 * MIB
    assert c.parts["file"] > 0                       # the program's and libc's code
    assert c.parts["small"] + c.parts["stack"] + c.objects_bytes <= c.footprint_bytes
    # default site sampling (1 in 64 blocks): about the 20 MiB of small blocks
    assert c.sites_bytes == pytest.approx(20 * MIB, rel=0.3)
    line = coverage_line(c)
    assert f"of the {c.footprint_bytes / MIB:.1f} MiB footprint" in line
    assert "heap in small blocks" in line and "(estimate)" in line
    d = c.as_dict()
    assert d["covered_share"] == c.share and d["parts_bytes"]["small"] == c.parts["small"]
    # objects and sites together: most of the footprint, more of its anonymous memory
    assert 0.8 < c.with_sites_share <= 1.0 and c.with_sites_share > c.share + 0.4
    assert c.anonymous_share >= c.with_sites_share
    assert f"objects and sites about {c.with_sites_share:.1%} of the footprint" in line
    assert d["with_sites_share_estimated"] == c.with_sites_share


def test_footprint_measured_elsewhere(compile_c, tmp_path):
    trace = _record(compile_c, tmp_path, 50)
    c = coverage_of(100 * MIB, trace, "given", page_cache_bytes=3 * MIB)
    assert c.footprint_bytes == 100 * MIB and 9 * MIB <= c.objects_bytes <= 10 * MIB
    assert c.outside_bytes == 100 * MIB - c.objects_bytes
    assert "page cache 3.0 MiB" in coverage_line(c)


def test_without_counters_the_footprint_is_unknown(compile_c, tmp_path):
    trace = _record(compile_c, tmp_path, 0)
    c = coverage(trace)
    assert c.footprint_bytes is None and c.share is None
    assert 9 * MIB <= c.objects_bytes <= 10 * MIB
    assert "footprint unknown" in coverage_line(c)
