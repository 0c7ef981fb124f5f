"""The regions of a `damo record` file as Snapshots (record.damon_source), on a recording's clock.

damo (the DAMON user-space tool, https://github.com/damonitor/damo) writes its record as JSON:
plain (`--output_type json`) or zlib-compressed (`json_compressed`, its default). The file is a
list of records, one per monitoring target, or (damo's versioned form) an object whose
`damo_records.damon_records.record_list` is that list. A record holds `snapshots`, each with
`start_time` and `end_time` (nanoseconds) and `regions`: `start`, `end` (bytes, end exclusive),
`nr_accesses` (a count of samples, or an object whose `samples` is) and `age` (an object
whose `aggr_intervals` is the count). Numbers are ints or strings of digits; damo 3.4 writes
times as plain digits and region bounds and ages grouped by commas ("140,289,147,703,312").

damo does not say which clock its times are on: records made from DAMON's tracepoint (damo's
default, through perf or trace-cmd) carry the tracer's clock, which on Linux is the boot-time
scheduler clock, close to CLOCK_MONOTONIC; `damo record --snapshot` takes time.time(),
CLOCK_REALTIME. on_clock() takes whichever puts the snapshots inside the recording's run and
says which; a file whose times fit neither is refused (another run's, or another machine's).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from objtier.errors import UsageError
from objtier.record.damon_source import Snapshot

#: how far outside the recording's run a snapshot may lie and still be taken as of the run
#: [ns]: damo starts before the program and stops after it; the tracer's clock drifts from
#: CLOCK_MONOTONIC by well under this on a running machine
SLACK_NS = 10_000_000_000


@dataclass
class DamoSnapshots:
    """The snapshots of one damo record (one monitoring target), times as damo wrote them."""
    target_id: int | None
    end_ns: np.ndarray             # int64, each snapshot's end_time [ns, damo's clock]
    snapshots: list[Snapshot]      # time_ns as damo wrote end_time (on_clock moves it)


def _number(value, what: str) -> int:
    """An int from damo's number: an int, or a string of digits, commas allowed between
    them."""
    if isinstance(value, bool):
        raise UsageError(f"damo record: {what} is not a number ({value!r})")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        digits = value.strip().replace(",", "")
        if digits.isdigit() and "," not in value.strip()[:1]:
            return int(digits)
    raise UsageError(f"damo record: {what} is not a number ({value!r}); damo writes digits "
                     f"(grouped by commas in region bounds), so the file was edited or is not "
                     f"a damo record")


def _samples(value, what: str) -> int:
    return _number(value["samples"] if isinstance(value, dict) else value, what)


def _age(value) -> int:
    if value is None:
        return 0
    if isinstance(value, dict):
        value = value.get("aggr_intervals")
        return 0 if value is None else _number(value, "a region's age")
    return _number(value, "a region's age")


def decode(data: bytes, name: str) -> list[dict]:
    """The list of damo records in a file's bytes (json or json_compressed)."""
    if data[:1] not in (b"[", b"{") and data[:1].strip():
        try:
            data = zlib.decompress(data)
        except zlib.error:
            raise UsageError(f"{name} is neither a damo JSON record nor a compressed one "
                             f"(damo's perf_script or perf_data output: convert it with "
                             f"`damo convert_record_format --output_type json_compressed`)"
                             ) from None
    try:
        parsed = json.loads(data)
    except (UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"{name} is not a damo record: {error}") from None
    if isinstance(parsed, dict):
        try:
            parsed = parsed["damo_records"]["damon_records"]["record_list"]
        except (KeyError, TypeError):
            raise UsageError(f"{name} is not a damo record: an object without "
                             f"damo_records.damon_records.record_list") from None
    if not isinstance(parsed, list) or not all(isinstance(r, dict) for r in parsed):
        raise UsageError(f"{name} is not a damo record: not a list of records")
    return parsed


def read_damo(path: Path) -> list[DamoSnapshots]:
    """The records of a damo record file, each with its snapshots; one-line errors for a file
    that is not one."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    out = []
    for record in decode(data, str(path)):
        try:
            raw_snapshots = record["snapshots"]
            target = record.get("target_id")
            snaps, ends = [], []
            for snap in raw_snapshots:
                regions = snap["regions"]
                end_ns = _number(snap["end_time"], "a snapshot's end_time")
                table = np.array([(_number(r["start"], "a region's start"),
                                   _number(r["end"], "a region's end"),
                                   _samples(r["nr_accesses"], "a region's nr_accesses"),
                                   _age(r.get("age"))) for r in regions],
                                 dtype=np.uint64).reshape(-1, 4)
                if (table[:, 1] < table[:, 0]).any():
                    raise UsageError(f"{path}: a region ends before it starts")
                snaps.append(Snapshot(time_ns=end_ns, start=table[:, 0], end=table[:, 1],
                                      nr_accesses=table[:, 2].astype(np.uint32),
                                      age=table[:, 3].astype(np.uint32)))
                ends.append(end_ns)
        except (KeyError, TypeError) as error:
            raise UsageError(f"{path} is not a damo record: a record or snapshot lacks "
                             f"{error}") from None
        target_id = None if target is None else _number(target, "target_id")
        out.append(DamoSnapshots(target_id, np.array(ends, dtype=np.int64), snaps))
    return out


def on_clock(records: list[DamoSnapshots], run_mono: tuple[int, int], real_minus_mono: int,
             slack_ns: int = SLACK_NS) -> tuple[list[Snapshot], str]:
    """Every snapshot with time_ns on CLOCK_MONOTONIC, and the clock damo's times were taken
    as ("monotonic" or "realtime"). run_mono: the recording's first and last time
    (CLOCK_MONOTONIC ns); real_minus_mono: its CLOCK_REALTIME minus CLOCK_MONOTONIC. The clock
    that puts the most snapshots inside the run (within slack_ns) is taken; none inside is
    an error."""
    ends = np.concatenate([r.end_ns for r in records]) if records else np.zeros(0, np.int64)
    if not len(ends):
        raise UsageError("the damo record holds no snapshot")
    lo, hi = run_mono[0] - slack_ns, run_mono[1] + slack_ns
    inside = {"monotonic": int(((ends >= lo) & (ends <= hi)).sum()),
              "realtime": int(((ends - real_minus_mono >= lo)
                               & (ends - real_minus_mono <= hi)).sum())}
    clock = max(inside, key=lambda k: inside[k])
    if not inside[clock]:
        raise UsageError("no snapshot of the damo record falls in the recording's run, on "
                         "CLOCK_MONOTONIC or CLOCK_REALTIME: record both of one run, on this "
                         "machine")
    shift = real_minus_mono if clock == "realtime" else 0
    out = []
    for record in records:
        for snap in record.snapshots:
            out.append(Snapshot(time_ns=snap.time_ns - shift, start=snap.start, end=snap.end,
                                nr_accesses=snap.nr_accesses, age=snap.age))
    out.sort(key=lambda s: s.time_ns)
    return out, clock
