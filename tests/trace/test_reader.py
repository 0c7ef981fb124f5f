"""Reader and writer round trips, and clear errors for bad traces."""

import subprocess
import sys

import numpy as np
import pytest

from objtier.errors import TraceError
from objtier.trace import TraceWriter, open_trace
from objtier.trace import format as F


def _write_small(path, pid=42, samples=3000, end=True):
    writer = TraceWriter(path, pid=pid, ppid=1, start_mono_ns=1_000)
    writer.process(pid, 1, 1_000, "/usr/bin/prog", ["prog", "-x"], {"OBJTIER_RATE": "10"})
    writer.module(1, "/usr/bin/prog", "0badc0de", base=0x5550000, start=0x5550000, end=0x5560000)
    writer.context(1, [(1, 0x1100), (1, 0x2200)])
    writer.context(2, [(1, 0x1180)])
    writer.alloc(2_000, 0, 0x10000, 1 << 20, tid=pid, context=1, kind=1)
    writer.alloc(2_500, 1, 0x200000, 4 << 20, tid=pid, context=2, kind=9)
    for i in range(samples):
        writer.sample(3_000 + i, 0x10000 + (i % 256) * 4096, tid=pid, latency=i % 100)
    writer.free(9_000, 2, 0x200000, size=1 << 20, kind=3)
    writer.close(write_end=end)


def test_round_trip(tmp_path):
    _write_small(tmp_path / "proc-42.otr")
    trace = open_trace(tmp_path)
    assert [p.pid for p in trace.processes] == [42]
    process = trace.processes[0]
    assert process.exe == "/usr/bin/prog" and process.argv == ["prog", "-x"]
    assert process.config == {"OBJTIER_RATE": "10"} and process.complete
    allocs = trace.allocations.to_pydict()
    assert allocs["size"] == [1 << 20, 4 << 20] and allocs["kind"] == [1, 9]
    assert allocs["pid"] == [42, 42]
    frees = trace.frees.to_pydict()
    assert frees["kind"] == [3] and frees["size"] == [1 << 20]
    samples = trace.samples
    assert samples.num_rows == 3000
    assert np.array_equal(samples.column("latency").to_numpy(), np.arange(3000) % 100)
    contexts = trace.contexts.to_pylist()
    assert [c["context"] for c in contexts] == [1, 2]
    assert contexts[0]["frames"][1] == {"module": "/usr/bin/prog", "build_id": "0badc0de",
                                        "offset": 0x2200}
    assert contexts[0]["key"] != contexts[1]["key"] and len(contexts[0]["key"]) == 16


def test_counters_long_form(tmp_path):
    with TraceWriter(tmp_path / "counters.otr", kind="counters") as writer:
        writer.counter_def(1, "vmstat.pswpout", "pages")
        writer.counter_def(2, "proc.rss_bytes", "bytes")
        for t in range(5):
            writer.counter(t * 100, 1, t * 10)
            writer.counter(t * 100, 2, 4096 * t)
    table = open_trace(tmp_path / "counters.otr").counters
    import pyarrow.compute as pc
    rows = table.filter(pc.equal(table.column("name"), "vmstat.pswpout")).to_pydict()
    assert rows["value"] == [0, 10, 20, 30, 40] and set(rows["unit"]) == {"pages"}


def test_truncated_trace_keeps_prefix(tmp_path):
    path = tmp_path / "proc-7.otr"
    _write_small(path, pid=7, samples=5000, end=False)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 500])  # cut inside the last block
    trace = open_trace(path)
    assert trace.allocations.num_rows == 2
    assert 0 < trace.samples.num_rows < 5000
    assert not trace.processes[0].complete
    assert any("cut short" in w for w in trace.warnings)


def test_corrupt_block_is_a_clear_error(tmp_path):
    path = tmp_path / "proc-8.otr"
    _write_small(path, pid=8)
    data = bytearray(path.read_bytes())
    data[F.FILE_HEADER.itemsize + F.BLOCK_HEADER.itemsize + 5] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match="checksum"):
        open_trace(path)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: b"NOTATRACE" + d[9:], "bad magic"),
    (lambda d: d[:8] + (7).to_bytes(2, "little") + d[10:], "version 7"),
    (lambda d: d[:30], "cut short inside its header"),
    (lambda d: b"", "not an objtier trace"),
])
def test_bad_headers(tmp_path, mutate, message):
    path = tmp_path / "proc-9.otr"
    _write_small(path, pid=9)
    path.write_bytes(mutate(path.read_bytes()))
    with pytest.raises(TraceError, match=message):
        open_trace(path)


def test_dump_cli_prints_records_and_errors_in_one_line(tmp_path):
    path = tmp_path / "proc-5.otr"
    _write_small(path, pid=5, samples=2)
    run = subprocess.run([sys.executable, "-m", "objtier", "dump", "--no-symbols", str(path)],
                         capture_output=True, text=True)
    assert run.returncode == 0
    lines = run.stdout.splitlines()
    assert sum(line.startswith("ALLOC ") for line in lines) == 2
    assert sum(line.startswith("SAMPLE ") for line in lines) == 2
    assert "prog+0x1100" in run.stdout and any(line.startswith("END ") for line in lines)
    path.write_bytes(b"garbage" * 20)
    bad = subprocess.run([sys.executable, "-m", "objtier", "dump", str(path)],
                         capture_output=True, text=True)
    assert bad.returncode == 3 and bad.stderr.count("\n") == 1
    assert "Traceback" not in bad.stderr
