"""DAMON's regions at every aggregation, from its `damon:damon_aggregated` tracepoint.

Listing the regions through sysfs (`update_schemes_tried_regions`, record.damon_source) costs
more than DAMON's aggregation interval where the machine is slow (about one listing a second
in the QEMU guest under TCG, against ten aggregations). The tracepoint has the kernel write
every region of every aggregation to a ring buffer as it aggregates, so none is missed and the
reader's cost does not decide the rate.

objtier uses a tracefs instance of its own (`instances/objtier-<pid>` under the tracefs mount:
/sys/kernel/tracing, or /sys/kernel/debug/tracing where debugfs is mounted), so the machine's
own tracing (the top-level buffer, other instances) is untouched; the instance's clock is
`mono` (CLOCK_MONOTONIC, as every time in a trace). stop() turns the event off and removes
the instance (rmdir), on exit, error and Ctrl-C alike (record's cleanup calls it).

Each event line (include/trace/events/damon.h, Linux 5.15 to 6.12 at least):
    kdamond.0-123 [001] ..... 5123.456789: damon_aggregated: target_id=0 nr_regions=12
        94032281341952-94032285536256: 3 7
is one region (start-end in bytes, end exclusive; nr_accesses; age in aggregation intervals).
An aggregation lists its regions in ascending address order, so a region that does not start
above the one before begins the next aggregation.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import numpy as np

TRACEFS_MOUNTS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
EVENT = "events/damon/damon_aggregated"
LINE = re.compile(rb"\s(\d+)\.(\d+): damon_aggregated: target_id=(\d+) nr_regions=(\d+) "
                  rb"(\d+)-(\d+): (\d+) (\d+)")
READ_BYTES = 1 << 16


def tracefs_root(mounts: tuple[Path, ...] = TRACEFS_MOUNTS) -> Path | None:
    """The mounted tracefs that has the damon_aggregated event, or None."""
    for root in mounts:
        if (root / "instances").is_dir() and (root / EVENT).is_dir():
            return root
    return None


def parse_lines(data: bytes) -> list[tuple[int, int, int, int, int]]:
    """(time_ns, start, end, nr_accesses, age) of each damon_aggregated line in data (bytes
    of trace_pipe text; lines of other events and partial lines are skipped)."""
    out = []
    for m in LINE.finditer(data):
        sec, frac = m.group(1), m.group(2)
        ns = int(sec) * 1_000_000_000 + int(frac.ljust(9, b"0")[:9])
        out.append((ns, int(m.group(5)), int(m.group(6)), int(m.group(7)), int(m.group(8))))
    return out


def aggregations(rows: list[tuple[int, int, int, int, int]]):
    """The rows grouped into aggregations (module docstring): a list of Snapshot, each at the
    time of its first region."""
    from objtier.record.damon_source import Snapshot

    groups: list[list[tuple[int, int, int, int, int]]] = []
    last_start = None
    for row in rows:
        if last_start is None or row[1] <= last_start:
            groups.append([])
        groups[-1].append(row)
        last_start = row[1]
    out = []
    for group in groups:
        table = np.array(group, dtype=np.uint64).reshape(-1, 5)
        out.append(Snapshot(time_ns=int(table[0, 0]), start=table[:, 1], end=table[:, 2],
                            nr_accesses=table[:, 3].astype(np.uint32),
                            age=table[:, 4].astype(np.uint32)))
    return out


class AggregatedEvents:
    """A tracefs instance with damon_aggregated on, read by a thread into `rows`."""

    def __init__(self, root: Path):
        self.root = root
        self.instance = root / "instances" / f"objtier-{os.getpid()}"
        self.rows: list[tuple[int, int, int, int, int]] = []
        self.errors: list[str] = []
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Make the instance and turn the event on; OSError when tracefs refuses (then
        nothing is left behind)."""
        self.instance.mkdir(mode=0o700)
        try:
            (self.instance / "trace_clock").write_text("mono\n")
            (self.instance / "buffer_size_kb").write_text("4096\n")
            (self.instance / EVENT / "enable").write_text("1\n")
            self._fd = os.open(self.instance / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            self.stop()
            raise
        self._thread = threading.Thread(target=self._read, name="objtier-damon-trace",
                                        daemon=True)
        self._thread.start()

    def _drain(self, pending: bytes) -> bytes:
        """Reads what the pipe holds now; returns the partial last line."""
        while self._fd is not None:
            try:
                chunk = os.read(self._fd, READ_BYTES)
            except BlockingIOError:
                break
            if not chunk:
                break
            pending += chunk
            cut = pending.rfind(b"\n") + 1
            self.rows.extend(parse_lines(pending[:cut]))
            pending = pending[cut:]
        return pending

    def _read(self) -> None:
        pending = b""
        try:
            while not self._stop.wait(0.05):
                pending = self._drain(pending)
            self._drain(pending)
        except OSError as error:
            self.errors.append(f"reading DAMON's tracepoint: {error.strerror or error}")

    def stop(self) -> None:
        """Stop reading, turn the event off and remove the instance (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        try:
            if (self.instance / EVENT / "enable").exists():
                (self.instance / EVENT / "enable").write_text("0\n")
        except OSError:
            pass
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        try:
            if self.instance.exists():
                self.instance.rmdir()
        except OSError as error:
            self.errors.append(f"could not remove the tracefs instance {self.instance}: "
                               f"{error.strerror or error}")
