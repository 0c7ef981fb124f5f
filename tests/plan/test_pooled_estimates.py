"""Several fault-sampler recordings of one program: each object's accesses are the mean of the
estimates of the recordings whose windows armed it (pipeline.pooled_estimates), so an object
one short recording never armed is not planned as cold."""

from __future__ import annotations

from pathlib import Path

import pytest

from objtier.plan.pipeline import read_recordings
from objtier.trace import TraceWriter

PID, PAGE, S = 300, 4096, 1_000_000_000
START = 3_000_000_000_000
EXE = "/usr/bin/prog"
A, B = 0x7F0000000000, 0x7F0000100000   # 64 pages each


def write_fault_recording(directory: Path, windows: list[tuple[int, int, int]]) -> Path:
    """A recording of one process with objects A (seq 1) and B (seq 2), live 1 s, and the
    given windows (alloc seq, pages armed, pages touched within 10 ms each)."""
    directory.mkdir()
    with TraceWriter(directory / f"proc-{PID}.otr", kind="process", pid=PID, ppid=1,
                     start_mono_ns=START, start_real_ns=1_700_000_000 * S,
                     page_bytes=PAGE) as w:
        w.process(PID, 1, START, EXE, ["prog"], {"SAMPLER": "fault"})
        w.module(1, EXE, "", base=0x555555554000, start=0x555555554000, end=0x555555560000)
        for ctx, pc in ((1, 0x1100), (2, 0x1200)):
            w.context(ctx, [(1, pc), (1, 0x1400)])
        w.alloc(START + 1, 1, A, 64 * PAGE, context=1, kind=9)
        w.alloc(START + 2, 2, B, 64 * PAGE, context=2, kind=9)
        t = START + S // 10
        for seq, pages, touched in windows:
            base = A if seq == 1 else B
            w.window(t, seq, base, pages, 20_000_000, touched, touched * 10_000_000)
            for k in range(touched):
                w.sample(t + 1000 + k, base + k * PAGE, tid=PID, latency=100)
            t += 30_000_000
        w.close(end_time_ns=START + S)
    return directory


def _accesses(profile) -> dict[int, float]:
    seq = profile.table.column("seq").to_pylist()
    return dict(zip(seq, profile.table.column("accesses").to_pylist()))


def test_an_object_one_recording_never_armed_gets_the_others_estimate(tmp_path):
    only_a = write_fault_recording(tmp_path / "r1", [(1, 16, 4)])
    both = write_fault_recording(tmp_path / "r2", [(1, 16, 12), (2, 16, 16)])
    first = _accesses(read_recordings([only_a]))
    second = _accesses(read_recordings([both]))
    assert first[2] == 0.0 and first[1] > 0          # B never armed: 0, unobserved
    assert second[2] > second[1] > first[1]
    pooled = _accesses(read_recordings([only_a, both]))
    assert pooled[2] == pytest.approx(second[2])     # only r2 watched B
    assert pooled[1] == pytest.approx((first[1] + second[1]) / 2)
    # the planner now ranks B, which the first recording alone calls cold, first
    table = read_recordings([only_a, both]).table
    density = dict(zip(table.column("seq").to_pylist(), table.column("density").to_pylist()))
    assert density[2] > density[1] > 0


def test_recordings_without_windows_keep_the_first_ones_table(tmp_path):
    # no WINDOW records in the second: nothing is pooled (the sampler did not arm windows)
    only_a = write_fault_recording(tmp_path / "r1", [(1, 16, 4)])
    none = write_fault_recording(tmp_path / "r2", [])
    assert _accesses(read_recordings([only_a, none])) == _accesses(read_recordings([only_a]))
