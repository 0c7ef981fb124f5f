"""The stat-flush reader: reads a cgroup's memory.stat every period from a thread, writes
nothing, and is off at period 0. On a file in a directory (no root), then on a real memory
cgroup with a program running in it (root)."""

from __future__ import annotations

import os
import time

import pytest

from objtier.experiments.measure import run_measured
from objtier.restore import Restorer
from objtier.tiers.statflush import StatFlushReader, major_faults, stats_line

STAT = "cache 0\nrss 4096\ninactive_anon 0\n" * 200   # larger than one short read


def wait_for(condition, limit_s: float = 60.0) -> None:
    """Poll until condition() holds; the limit only ends a hung test, it is no measure."""
    deadline = time.monotonic() + limit_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_reads_every_period_until_the_block_ends(tmp_path):
    (tmp_path / "memory.stat").write_text(STAT)
    with StatFlushReader(tmp_path, period_ms=1) as reader:
        wait_for(lambda: reader.stats.reads >= 5)
    done = reader.stats.reads
    assert done >= 5 and reader.stats.errors == 0 and not reader.stats.notes
    assert reader.stats.max_gap_ms > 0 and reader.stats.running_s > 0
    time.sleep(0.05)
    assert reader.stats.reads == done                 # the thread stopped with the block
    assert (tmp_path / "memory.stat").read_text() == STAT
    assert reader.stats.as_dict() == {"period_ms": 1, "fast_ms": 2, "reads": done,
                                      "fast_reads": 0,
                                      "max_gap_ms": round(reader.stats.max_gap_ms, 3),
                                      "errors": 0, "running_s": round(reader.stats.running_s, 3)}


def test_reads_fast_while_major_faults_grow_and_slow_when_they_stop(tmp_path):
    stat = tmp_path / "memory.stat"
    stat.write_text("cache 0\npgmajfault 0\ntotal_pgmajfault 0\n")
    with StatFlushReader(tmp_path, period_ms=50, fast_ms=1) as reader:
        wait_for(lambda: reader.stats.reads >= 1)
        for faults in range(1, 30):   # the count grows between reads: reads come every 1 ms
            stat.write_text(f"cache 0\npgmajfault {faults}\ntotal_pgmajfault {faults}\n")
            seen = reader.stats.reads
            wait_for(lambda: reader.stats.reads > seen)
        fast = reader.stats.fast_reads
        assert fast >= 5, reader.stats.as_dict()
        reads = reader.stats.reads
        time.sleep(0.1)      # no growth: one read per 50 ms again (fast: about 100 in 0.1 s)
        assert reader.stats.reads <= reads + 4, reader.stats.as_dict()
        assert reader.stats.fast_reads <= fast + 1
    assert "(1 ms while major faults grow)" in stats_line(reader.stats)
    assert major_faults(b"pgmajfault 7\n") == 7 and major_faults(b"cache 1\n") == -1
    assert major_faults(b"total_pgmajfault 3\n") == -1   # the hierarchy's, not the cgroup's
    with pytest.raises(ValueError, match="fast period"):
        StatFlushReader(tmp_path, period_ms=10, fast_ms=0)


def test_period_zero_is_off_and_a_negative_period_is_refused(tmp_path):
    (tmp_path / "memory.stat").write_text(STAT)
    with StatFlushReader(tmp_path, period_ms=0) as reader:
        assert not reader.enabled
        time.sleep(0.05)
    assert reader.stats.reads == 0 and reader._thread is None
    with pytest.raises(ValueError, match="must be >= 0"):
        StatFlushReader(tmp_path, period_ms=-1)


def test_a_cgroup_without_memory_stat_is_noted_not_raised(tmp_path):
    with StatFlushReader(tmp_path / "gone", period_ms=1) as reader:
        wait_for(lambda: reader.stats.notes)
    assert reader.stats.reads == 0
    assert reader.stats.notes and "cannot open" in reader.stats.notes[0]


@pytest.mark.root
def test_reads_a_real_cgroup_while_a_program_runs_and_changes_nothing(compile_c):
    from objtier.tiers.swap import MemoryCgroup

    prog = compile_c("#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\n"
                     "int main(void) { char *p = malloc(8 << 20); memset(p, 1, 8 << 20);\n"
                     "usleep(300000); return p[4096] == 1 ? 0 : 1; }", "hold")
    with Restorer() as restorer:
        cgroup = MemoryCgroup.create(f"objtier-{os.getpid()}-statflush", 64 << 20, restorer)
        limit = cgroup.read("memory.limit_in_bytes" if cgroup.version == 1 else "memory.max")
        with StatFlushReader(cgroup.path, period_ms=5) as reader:
            run = run_measured("hold", [str(prog)], preexec=cgroup.add_self)
        assert run.returncode == 0
        assert reader.stats.reads >= 2 and reader.stats.errors == 0, reader.stats.as_dict()
        assert cgroup.read("memory.limit_in_bytes" if cgroup.version == 1
                           else "memory.max") == limit
    assert not cgroup.path.exists()


def test_a_reader_entered_again_reads_again(tmp_path):
    (tmp_path / "memory.stat").write_text(STAT)
    reader = StatFlushReader(tmp_path, period_ms=1)
    with reader:
        wait_for(lambda: reader.stats.reads >= 2)
    first = reader.stats.reads
    with reader:
        wait_for(lambda: reader.stats.reads >= first + 2)
    assert reader.stats.reads >= first + 2
