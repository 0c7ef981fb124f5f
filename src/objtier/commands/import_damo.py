"""`objtier import-damo damon.data --objects run.otr`: a `damo record` file as a recording's samples.

For a damo record of the same run as an objtier recording (e.g. `objtier record --sampler none
-o run.otr -- ./app &` and `damo record -o damon.data $(pidof app)`, or `damo record` of the
recording's command): each snapshot's regions found accessed become DAMON samples
(record.damon_source.samples_of: one per region chunk, weighted by its accesses and pages),
stored as damon-<pid>.otr, as `record --sampler damon` stores its own; from then on objects,
report and plan rank by them. damo's file names no pid, so the samples go to the recording's
first process unless --pid names another. Its times are taken on the clock that puts them in
the recording's run (record.damo_import.on_clock), which is said."""

from __future__ import annotations

import sys
from pathlib import Path

from objtier.errors import UsageError

NAME = "import-damo"
HELP = "store the regions of a `damo record` file in a recording as its samples"


def add_arguments(parser) -> None:
    parser.add_argument("damo_record", metavar="damon.data",
                        help="damo record's output (json or json_compressed)")
    parser.add_argument("--objects", required=True, metavar="RUN.otr",
                        help="the recording (directory) of the same run whose objects the "
                        "regions belong to")
    parser.add_argument("--pid", type=int, default=None,
                        help="the recorded process damo monitored (default: the first)")
    parser.add_argument("-f", "--force", action="store_true",
                        help="replace DAMON samples the recording already holds")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only errors")


def run_span(trace, pid: int) -> tuple[int, int]:
    """The first and last CLOCK_MONOTONIC time [ns] the recording saw of process pid: its
    start, and its END record or else its last allocation or free."""
    import pyarrow.compute as pc

    process = next(p for p in trace.processes if p.pid == pid)
    last = process.start_mono_ns
    for table in (trace.ends, trace.allocations, trace.frees):
        if table.num_rows and "pid" in table.column_names:
            mine = table.filter(pc.equal(table["pid"], pid))
            if mine.num_rows:
                last = max(last, int(pc.max(mine["time_ns"]).as_py()))
        elif table.num_rows:
            last = max(last, int(pc.max(table["time_ns"]).as_py()))
    return process.start_mono_ns, last


def run(args) -> int:
    import numpy as np

    from objtier.commands._imported import say_mapped
    from objtier.record.damo_import import on_clock, read_damo
    from objtier.record.damon_source import samples_of
    from objtier.record.perf_source import ParsedSamples, store_samples
    from objtier.trace import open_trace

    say = (lambda text: None) if args.quiet else (
        lambda text: print(f"objtier import-damo: {text}", file=sys.stderr))
    recording = Path(args.objects)
    if not recording.is_dir():
        raise UsageError(f"--objects takes a recording directory (objtier record -o), got "
                         f"{recording}")
    trace = open_trace(recording)
    if not trace.processes:
        raise UsageError(f"{recording} holds no process trace, so no objects to map onto")
    pids = [p.pid for p in trace.processes]
    pid = pids[0] if args.pid is None else args.pid
    if pid not in pids:
        raise UsageError(f"--pid {pid} is not a process of {recording} (pids "
                         f"{', '.join(map(str, pids[:5]))})")
    old = sorted(recording.glob("damon-*.otr"))
    if old and not args.force:
        raise UsageError(f"{recording} already holds DAMON samples ({old[0].name}); pass -f to "
                         f"replace them")
    records = read_damo(Path(args.damo_record))
    process = next(p for p in trace.processes if p.pid == pid)
    snapshots, clock = on_clock(records, run_span(trace, pid),
                                process.start_real_ns - process.start_mono_ns)
    samples = samples_of(snapshots, pid)
    parsed = ParsedSamples(records=samples, pids=np.full(len(samples), pid, np.uint32),
                           events={"damon": len(samples)})
    for path in old:          # replaced only now that there is something to replace them with
        path.unlink()
    written = store_samples(recording, parsed, prefix="damon")
    regions = sum(len(s.start) for s in snapshots)
    say(f"{len(snapshots)} snapshots of {regions} regions in all ({len(records)} target(s)), "
        f"times taken as CLOCK_{clock.upper()}; {sum(written.values())} samples stored as "
        f"damon-{pid}.otr (estimated accesses)")
    say_mapped(recording, say)
    return 0
