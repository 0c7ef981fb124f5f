"""Time and peak memory of a full `objtier report` on the synthetic trace of report_synthetic.py.

    python bench/report_full.py [--samples 50000000] [--objects 10000] [--dir /tmp/report-bench]

Writes the trace once (one .otr file, bulk sample blocks), then runs the report in a fresh
process and prints wall time and peak RSS (ru_maxrss of that process).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from objtier.trace import TraceWriter  # noqa: E402
from objtier.trace import format as F  # noqa: E402
from report_synthetic import PID, synthetic_tables  # noqa: E402


def write_trace(path: Path, objects: int, samples: int) -> None:
    allocations, frees, sample_table = synthetic_tables(objects, samples)
    with TraceWriter(path / f"proc-{PID}.otr", pid=PID, start_mono_ns=0, page_bytes=4096) as w:
        w.process(PID, 1, 0, "/bench/synthetic", ["synthetic"], {})
        for cid in range(1, 98):
            w.context(cid, [(0, 0x400000 + 16 * cid)])
        a = allocations.to_pydict()
        for i in range(allocations.num_rows):
            w.alloc(a["time_ns"][i], a["seq"][i], a["addr"][i], a["size"][i],
                    context=a["context"][i], kind=a["kind"][i])
        f = frees.to_pydict()
        for i in range(frees.num_rows):
            w.free(f["time_ns"][i], f["seq"][i], f["addr"][i], 0, kind=1)
        chunk = 1 << 20
        for lo in range(0, samples, chunk):
            part = sample_table.slice(lo, chunk)
            records = np.zeros(part.num_rows, dtype=F.SAMPLE)
            for name in part.column_names:
                if name != "pid":
                    records[name] = part.column(name).to_numpy()
            w.samples(records)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=50_000_000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--dir", default="/tmp/objtier-report-bench")
    args = parser.parse_args()
    base = Path(args.dir)
    trace = base / f"synthetic-{args.samples}.otr"
    if not trace.exists():
        trace.mkdir(parents=True)
        start = time.perf_counter()
        write_trace(trace, args.objects, args.samples)
        print(f"trace written in {time.perf_counter() - start:.1f} s: {trace}")
    out = base / "report"
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "objtier", "report", str(trace), "-o", str(out),
                          "--no-symbols"], capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB -> GiB
    if run.returncode != 0:
        print(run.stderr)
        return 1
    print(f"machine: {os.uname().nodename} {os.cpu_count()} cpus; samples {args.samples:,}, "
          f"objects {args.objects:,}")
    print(f"full report: {wall:.1f} s wall, peak RSS {peak:.2f} GiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
