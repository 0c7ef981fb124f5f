"""`objtier import-perf perf.data --objects run.otr`: perf's samples as a recording's samples.

For a perf.data recorded beside an objtier recording of the same run (e.g. `perf record -d -k
CLOCK_MONOTONIC -e major-faults -- objtier record -- ./app`, or `perf mem record -k
CLOCK_MONOTONIC -p PID`): its samples are read with `perf script` (objtier.record.perf_source)
and written into the recording as perf-<pid>.otr, for the processes the recording holds; from
then on objects, report and plan use them as the recording's samples. Times must be
CLOCK_MONOTONIC, perf's `-k CLOCK_MONOTONIC`; without it perf's own clock is taken for it, which
says so."""

from __future__ import annotations

import sys
from pathlib import Path

from objtier.errors import UsageError

NAME = "import-perf"
HELP = "store the samples of a perf.data (perf record -d) in a recording as its samples"


def add_arguments(parser) -> None:
    parser.add_argument("perf_data", metavar="perf.data", help="perf.data from perf record -d")
    parser.add_argument("--objects", required=True, metavar="RUN.otr",
                        help="the recording (directory) of the same run whose objects the "
                        "samples belong to")
    parser.add_argument("-f", "--force", action="store_true",
                        help="replace perf samples the recording already holds")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only errors")


def run(args) -> int:
    from objtier.commands._imported import say_mapped
    from objtier.record.perf_source import (perf_files, read_perf_data, store_samples,
                                            summary_line)
    from objtier.trace import open_trace

    say = (lambda text: None) if args.quiet else (
        lambda text: print(f"objtier import-perf: {text}", file=sys.stderr))
    recording = Path(args.objects)
    if not recording.is_dir():
        raise UsageError(f"--objects takes a recording directory (objtier record -o), got "
                         f"{recording}")
    trace = open_trace(recording)
    if not trace.processes:
        raise UsageError(f"{recording} holds no process trace, so no objects to map onto")
    old = perf_files(recording)
    if old and not args.force:
        raise UsageError(f"{recording} already holds perf samples ({old[0].name}); pass -f to "
                         f"replace them")
    header, parsed = read_perf_data(Path(args.perf_data))
    pids = sorted({p.pid for p in trace.processes})
    if not set(parsed.pids.tolist()) & set(pids):
        raise UsageError(f"no sample of {args.perf_data} is from a process of the recording "
                         f"(pids {', '.join(map(str, pids[:5]))}); record both in one run")
    for path in old:          # replaced only now that there is something to replace them with
        path.unlink()
    written = store_samples(recording, parsed)
    if not header.monotonic:
        say("warning: perf.data was recorded without -k CLOCK_MONOTONIC; its times (perf's "
            "clock) are taken as CLOCK_MONOTONIC, so samples near an allocation or free may "
            "land on the wrong object")
    say(summary_line(parsed, written))
    say_mapped(recording, say)
    return 0

