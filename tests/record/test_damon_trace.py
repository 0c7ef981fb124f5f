"""DAMON's damon_aggregated tracepoint lines (record.damon_trace): parsed into regions and
grouped into aggregations as the kernel writes them (ascending addresses within one), and the
tracefs instance is made and removed without touching the machine's own tracing. The lines are
in the format of include/trace/events/damon.h; a real kdamond's are read in the guest
(tests/testbed/test_guest_damon.py)."""

from __future__ import annotations

from objtier.record.damon_source import samples_of
from objtier.record.damon_trace import aggregations, parse_lines, tracefs_root
from objtier.trace import format as F

LINES = b"""# tracer: nop
       kdamond.0-211     [001] ..... 5123.400001: damon_aggregated: target_id=0 nr_regions=3 4096-69632: 0 4
       kdamond.0-211     [001] ..... 5123.400003: damon_aggregated: target_id=0 nr_regions=3 69632-135168: 20 1
       kdamond.0-211     [001] ..... 5123.400004: damon_aggregated: target_id=0 nr_regions=3 135168-139264: 5 0
            bash-99      [000] ..... 5123.450000: sched_waking: comm=x pid=1
       kdamond.0-211     [001] ..... 5123.500002: damon_aggregated: target_id=0 nr_regions=2 4096-135168: 7 0
       kdamond.0-211     [001] ..... 5123.500003: damon_aggregated: target_id=0 nr_regions=2 135168-139264: 1 1
       kdamond.0-211     [001] ..... 5123.600001: damon_aggregated: target_id=0 nr_regi"""


def test_lines_become_regions_and_aggregations():
    rows = parse_lines(LINES)
    assert len(rows) == 5                       # another event and the cut line skipped
    assert rows[0] == (5_123_400_001_000, 4096, 69632, 0, 4)
    snaps = aggregations(rows)
    assert [len(s.start) for s in snaps] == [3, 2]
    assert snaps[0].time_ns == 5_123_400_001_000 and snaps[1].time_ns == 5_123_500_002_000
    assert snaps[1].nr_accesses.tolist() == [7, 1] and snaps[1].age.tolist() == [0, 1]


def test_aggregations_become_damon_samples():
    records = samples_of(aggregations(parse_lines(LINES)), tid=7)
    assert set(records["source"].tolist()) == {F.SOURCE_DAMON}
    # the first aggregation's untouched region gives no sample; 64 KiB chunks otherwise
    first = records[records["time_ns"] == 5_123_400_001_000]
    assert first["weight"].tolist() == [20 * 16, 5]
    assert (records["addr"] >= 4096).all() and (records["addr"] < 139264).all()


def test_no_tracefs_means_none(tmp_path):
    assert tracefs_root((tmp_path / "absent",)) is None
    (tmp_path / "t" / "instances").mkdir(parents=True)
    assert tracefs_root((tmp_path / "t",)) is None          # no damon event there
    (tmp_path / "t" / "events" / "damon" / "damon_aggregated").mkdir(parents=True)
    assert tracefs_root((tmp_path / "t",)) == tmp_path / "t"
