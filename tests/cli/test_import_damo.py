"""`objtier import-damo`: a damo record file, written by damo's own record writer (PyPI damo),
mapped onto a real recording of a program with a hot, a warm and a cold array. The regions
are the arrays' own address ranges, with access counts in damo's units (samples), and the
snapshots' times are on either clock damo uses. The guest test (tests/testbed/
test_guest_damon.py) imports a file that a real `damo record` made of a real kdamond."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from objtier.analysis.objects import object_table
from objtier.trace import format as F
from objtier.trace import open_trace

pytestmark = pytest.mark.root

PROG = Path(__file__).parents[1] / "testbed" / "progs" / "damon_hotcold.c"
ACCESSES = (18, 4, 0)   # hot, warm, cold: samples per aggregation (of 20 checks)


def objtier(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "objtier", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("damo")
    exe = scratch / "hotcold"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(PROG)], check=True)
    rec = scratch / "run.otr"
    done = objtier("record", "--sampler", "none", "-o", str(rec), "--", str(exe), "0.3")
    assert done.returncode == 0, done.stderr
    return rec


@pytest.fixture(autouse=True)
def damo_modules(monkeypatch):
    """damo's modules import one another by their own names (its `damo` command puts its
    directory on sys.path), so the tests do as the command does."""
    import importlib.util

    spec = importlib.util.find_spec("damo")
    assert spec is not None and spec.origin, "damo (PyPI) is a test dependency"
    monkeypatch.syspath_prepend(str(Path(spec.origin).parent))


def damo_file(recording: Path, path: Path, clock: str, output_type="json_compressed",
              shift_ns: int = 0) -> Path:
    """A damo record of the recording's three arrays written by damo itself: ten snapshots
    across the run, on CLOCK_MONOTONIC (as damo's tracers) or CLOCK_REALTIME (damo --snapshot)."""
    import _damo_records
    import _damon

    trace = open_trace(recording)
    table = object_table(trace, labels=False).sort_by("seq")
    process = trace.processes[0]
    first = int(table.column("alloc_ns").to_pylist()[0])
    offset = process.start_real_ns - process.start_mono_ns if clock == "realtime" else 0
    record = _damo_records.DamonRecord(0, 0, None, None, 1, [])
    for i in range(10):
        end = first + (i + 1) * 20_000_000 + offset + shift_ns
        regions = [_damon.DamonRegion(a, a + s, n, _damon.unit_samples, i,
                                      _damon.unit_aggr_intervals)
                   for a, s, n in zip(table.column("addr").to_pylist(),
                                      table.column("size").to_pylist(), ACCESSES)]
        record.snapshots.append(_damo_records.DamonSnapshot(end - 100_000_000, end, regions,
                                                            None))
    assert _damo_records.write_damon_records([record], str(path), output_type) is None
    return path


@pytest.mark.parametrize("clock", ["monotonic", "realtime"])
def test_damo_regions_rank_the_arrays(recording, tmp_path, clock):
    data = damo_file(recording, tmp_path / "damon.data", clock)
    done = objtier("import-damo", str(data), "--objects", str(recording), "-f")
    assert done.returncode == 0, done.stderr
    assert f"times taken as CLOCK_{clock.upper()}" in done.stderr, done.stderr
    trace = open_trace(recording)
    assert set(trace.samples.column("source").to_pylist()) == {F.SOURCE_DAMON}
    assert os.stat(recording / f"damon-{trace.processes[0].pid}.otr").st_mode & 0o777 == 0o600
    hot, warm, cold = (object_table(trace, labels=False).sort_by("seq")
                       .column("accesses").to_pylist())
    assert hot > warm > 0 and cold == 0, (hot, warm, cold)
    # weights follow damo's counts: hot's regions are as large as warm's
    assert 3 < hot / warm < 6, (hot, warm)


def test_plain_json_reads_as_the_compressed_form(recording, tmp_path):
    data = damo_file(recording, tmp_path / "damon.json", "monotonic", output_type="json")
    assert data.read_bytes()[:1] == b"["
    done = objtier("import-damo", str(data), "--objects", str(recording), "-f")
    assert done.returncode == 0, done.stderr
    assert "30 regions in all" in done.stderr, done.stderr


def test_bad_files_get_one_line_and_keep_the_samples(recording, tmp_path):
    good = damo_file(recording, tmp_path / "damon.data", "monotonic")
    assert objtier("import-damo", str(good), "--objects", str(recording), "-f").returncode == 0
    stored = sorted(recording.glob("damon-*.otr"))
    before = stored[0].read_bytes()
    cases = {
        "not damo": (tmp_path / "junk", b"\x00\x01 not a record"),
        "not a list": (tmp_path / "obj.json", b'{"a": 1}'),
        "truncated": (tmp_path / "cut", good.read_bytes()[:40]),
        "a string number": (tmp_path / "str.json",
                            b'[{"target_id": 1, "snapshots": [{"start_time": "1.5 s", '
                            b'"end_time": "2 s", "regions": []}]}]'),
    }
    for name, (path, data) in cases.items():
        path.write_bytes(data)
        done = objtier("import-damo", str(path), "--objects", str(recording), "-f")
        assert done.returncode != 0, name
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr, (name, done.stderr)
    # another run's record (an hour later): refused, and the stored samples stay
    late = damo_file(recording, tmp_path / "late.data", "monotonic", shift_ns=3600 * 10**9)
    done = objtier("import-damo", str(late), "--objects", str(recording), "-f")
    assert done.returncode != 0 and "falls in the recording's run" in done.stderr
    # without -f an existing import is kept
    done = objtier("import-damo", str(good), "--objects", str(recording))
    assert done.returncode != 0 and "-f" in done.stderr
    assert stored[0].read_bytes() == before
    # a pid not in the recording
    done = objtier("import-damo", str(good), "--objects", str(recording), "-f", "--pid", "1")
    assert done.returncode != 0 and "--pid 1" in done.stderr
    assert stored[0].read_bytes() == before
