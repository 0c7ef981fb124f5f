"""DAMON as an access source (`record --sampler damon`): the kernel's data access monitor
watches the program's virtual address space, and its regions become the recording's samples.

Where: a kernel with the DAMON sysfs interface and the `vaddr` operations set, as root, and
only where DAMON is free: no kdamond runs (objtier.tiers.damon_free) and no kdamond directory
exists (nr_kdamonds = 0). Writing nr_kdamonds replaces every kdamond directory, so objtier
writes it only when it is 0, and puts it back to 0 when it is done, on exit, error and Ctrl-C.
A machine whose DAMON is busy (this test VM's host runs a paddr context of its own) gets a
one-line refusal before the program starts.

How (DAMON's own model, docs: admin-guide/mm/damon/usage): every sample interval
(SAMPLE_US) DAMON checks one random page of each region for an access (the page's Accessed
bit); at the end of each aggregation interval (AGGR_US) a region's nr_accesses is how many of
its checks found an access (0 to AGGR_US / SAMPLE_US), and regions are split and merged so that
pages of like access share a region. A DAMOS scheme with action `stat` applies to every region
and changes nothing; writing `update_schemes_tried_regions` to the kdamond's state asks DAMON
to list the regions the scheme was tried on (all of them) in schemes/0/tried_regions/N/ —
start, end (bytes, end exclusive), nr_accesses, age (aggregation intervals since the region's
access frequency last changed). objtier reads that list about once per aggregation interval.
The list is read with one os.read per file: in the QEMU guest (TCG) reading it costs more than
the aggregation interval. MIN_REGIONS stays 10: 100 (regions of at most a hundredth of the
space) ranked objects no better there (bench/damon_source_accuracy.py) and cost listings and
sampling fidelity (the kdamond checks more pages per interval).
Where tracefs has DAMON's `damon_aggregated` event, objtier reads every aggregation from it
instead (record.damon_trace: a tracefs instance of its own, removed after), and lists nothing;
the listings are the fallback.

Samples (SAMPLE records, source OT_SRC_DAMON, in damon-<pid>.otr, a file of imported samples
that replaces the runtime's as perf's does): a region with nr_accesses > 0 in a snapshot is cut
into chunks of at most CHUNK_BYTES; each chunk is one sample at its middle address, at the
snapshot's time, weight = nr_accesses x the chunk's pages (DAMON assumes the pages of a region
are alike, so this is its estimate of the chunk's page-accesses seen in that interval). Every
figure from these samples is an estimate (DAMON samples one page per region per interval).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from objtier.errors import EnvironmentProblem
from objtier.tiers.damon_free import damon_busy_reason
from objtier.trace import format as F

ADMIN = Path("/sys/kernel/mm/damon/admin")
SAMPLE_US = 5_000             # DAMON's sampling interval [us]
AGGR_US = 100_000             # aggregation interval [us]: nr_accesses is 0..AGGR_US/SAMPLE_US
UPDATE_US = 1_000_000         # how often DAMON re-reads the target's mappings [us]
MIN_REGIONS, MAX_REGIONS = 10, 1000
CHUNK_BYTES = 64 << 10        # most bytes one sample stands for
PAGE_BYTES = 4096
U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1


def unavailable(admin: Path = ADMIN, proc: Path = Path("/proc"),
                sysfs: Path = Path("/sys")) -> str | None:
    """Why the DAMON source cannot run here (one line), or None when it can."""
    if not admin.is_dir():
        return ("the damon sampler needs the DAMON sysfs interface (CONFIG_DAMON_SYSFS); "
                f"{admin} does not exist")
    busy = damon_busy_reason(proc, sysfs)
    if busy is not None:
        return busy.replace("a DAMON arm", "the damon sampler")
    try:
        existing = int((admin / "kdamonds" / "nr_kdamonds").read_text())
    except (OSError, ValueError) as error:
        return f"the damon sampler cannot read {admin}/kdamonds/nr_kdamonds: {error}"
    if existing:
        return (f"{existing} kdamond director{'y' if existing == 1 else 'ies'} exist here that "
                "objtier did not make: setting up its own would remove them; refusing")
    operations = available_operations(admin)
    if "vaddr" not in operations:
        return ("the damon sampler needs DAMON's vaddr operations (this kernel has: "
                f"{' '.join(operations) or 'none'})")
    return None


def available_operations(admin: Path = ADMIN) -> list[str]:
    """DAMON's operations sets on this kernel (vaddr, fvaddr, paddr), read from a kdamond
    directory made for the purpose and removed again; call only with nr_kdamonds = 0."""
    kdamonds = admin / "kdamonds"
    try:
        (kdamonds / "nr_kdamonds").write_text("1\n")
    except OSError:
        return []
    try:
        (kdamonds / "0" / "contexts" / "nr_contexts").write_text("1\n")
        return (kdamonds / "0" / "contexts" / "0" / "avail_operations").read_text().split()
    except OSError:
        return []
    finally:
        try:
            (kdamonds / "nr_kdamonds").write_text("0\n")
        except OSError:
            pass


@dataclass
class Snapshot:
    """One listing of the monitored regions."""
    time_ns: int                  # CLOCK_MONOTONIC, when the listing was read
    start: np.ndarray             # uint64 region starts [bytes]
    end: np.ndarray               # uint64 region ends (exclusive) [bytes]
    nr_accesses: np.ndarray       # uint32, 0..AGGR_US/SAMPLE_US
    age: np.ndarray               # uint32 [aggregation intervals]


@dataclass
class DamonMonitor:
    """One kdamond watching one process; start(pid) ... stop(). stop() is idempotent and
    leaves the DAMON sysfs interface as it found it (nr_kdamonds = 0)."""
    admin: Path = ADMIN
    snapshots: list[Snapshot] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pid: int | None = None
    tracepoint: bool = True         # read damon_aggregated where tracefs has it
    _made: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    events: object | None = None    # record.damon_trace.AggregatedEvents while it reads
    via: str = "sysfs listings"     # or "tracepoint": where the snapshots came from

    @property
    def _kdamond(self) -> Path:
        return self.admin / "kdamonds" / "0"

    @property
    def _context(self) -> Path:
        return self._kdamond / "contexts" / "0"

    def _write(self, relative: str, value: object, base: Path | None = None) -> None:
        (base or self._context).joinpath(relative).write_text(f"{value}\n")

    def start(self, pid: int) -> None:
        """Create kdamond 0 for pid and turn it on. EnvironmentProblem when DAMON refuses
        (the sysfs tree is removed again first)."""
        self.pid = pid
        try:
            self._write("kdamonds/nr_kdamonds", 1, base=self.admin)
            self._made = True
            self._write("contexts/nr_contexts", 1, base=self._kdamond)
            operations = (self._context / "avail_operations").read_text().split()
            if "vaddr" not in operations:
                raise EnvironmentProblem("the damon sampler needs DAMON's vaddr operations "
                                         f"(this kernel has: {' '.join(operations) or 'none'})")
            self._write("operations", "vaddr")
            self._write("monitoring_attrs/intervals/sample_us", SAMPLE_US)
            self._write("monitoring_attrs/intervals/aggr_us", AGGR_US)
            self._write("monitoring_attrs/intervals/update_us", UPDATE_US)
            self._write("monitoring_attrs/nr_regions/min", MIN_REGIONS)
            self._write("monitoring_attrs/nr_regions/max", MAX_REGIONS)
            self._write("targets/nr_targets", 1)
            self._write("targets/0/pid_target", pid)
            self._write("schemes/nr_schemes", 1)
            scheme = "schemes/0/"
            self._write(scheme + "action", "stat")
            for name, top in (("sz", U64_MAX), ("nr_accesses", U32_MAX), ("age", U32_MAX)):
                self._write(f"{scheme}access_pattern/{name}/min", 0)
                self._write(f"{scheme}access_pattern/{name}/max", top)
            self._trace_events()
            self._write("state", "on", base=self._kdamond)
        except OSError as error:
            self.stop()
            raise EnvironmentProblem(f"DAMON refused to monitor pid {pid}: {error.strerror or error}"
                                     ) from None
        except EnvironmentProblem:
            self.stop()
            raise
        if self.events is None:
            self._thread = threading.Thread(target=self._poll, name="objtier-damon",
                                            daemon=True)
            self._thread.start()

    def _trace_events(self) -> None:
        """Every aggregation from the damon_aggregated tracepoint where tracefs has it
        (record.damon_trace), instead of listings; without it, listings."""
        from objtier.record.damon_trace import AggregatedEvents, tracefs_root

        root = tracefs_root() if self.tracepoint else None
        if root is None:
            return
        events = AggregatedEvents(root)
        try:
            events.start()
        except OSError as error:
            self.errors.append(f"DAMON's tracepoint could not be read ({error.strerror or error}); "
                               "listing regions instead")
            return
        self.events, self.via = events, "tracepoint"

    def _poll(self) -> None:
        interval = AGGR_US / 1e6
        while not self._stop.wait(interval):
            try:
                self.snapshots.append(self.read_regions())
            except OSError as error:   # the target exited, or the kdamond stopped with it
                if not self.errors:
                    self.errors.append(str(error.strerror or error))
                if not (self._kdamond / "state").exists() or \
                        (self._kdamond / "state").read_text().strip() != "on":
                    return

    def read_regions(self) -> Snapshot:
        """Ask DAMON for the scheme's tried regions and read them."""
        self._write("state", "update_schemes_tried_regions", base=self._kdamond)
        now = time.monotonic_ns()
        tried = self._context / "schemes" / "0" / "tried_regions"
        rows = [tuple(_read_int(f"{tried}/{name}/{field}")
                      for field in ("start", "end", "nr_accesses", "age"))
                for name in os.listdir(tried) if name.isdigit()]
        table = np.array(rows, dtype=np.uint64).reshape(-1, 4)
        return Snapshot(time_ns=now, start=table[:, 0], end=table[:, 1],
                        nr_accesses=table[:, 2].astype(np.uint32),
                        age=table[:, 3].astype(np.uint32))

    def stop(self) -> None:
        """Stop polling, turn the kdamond off and remove it (nr_kdamonds = 0)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.events is not None:
            from objtier.record.damon_trace import aggregations

            self.events.stop()
            self.errors.extend(self.events.errors)
            self.snapshots = aggregations(self.events.rows)
            self.events = None
        if not self._made:
            return
        try:
            state = self._kdamond / "state"
            if state.exists() and state.read_text().strip() == "on":
                state.write_text("off\n")
        except OSError:
            pass   # it stopped with its target
        finally:
            self._made = False
            try:
                self._write("kdamonds/nr_kdamonds", 0, base=self.admin)
            except OSError as error:
                self.errors.append(f"could not remove objtier's kdamond: {error}")


def _read_int(path: str) -> int:
    """One sysfs number; os.open/os.read, not Path.read_text: a listing reads 4 files per
    region, and under TCG the text layer's cost per file made listings seconds apart."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return int(os.read(fd, 64))
    finally:
        os.close(fd)


def samples_of(snapshots: list[Snapshot], tid: int,
               chunk_bytes: int = CHUNK_BYTES) -> np.ndarray:
    """SAMPLE records (source DAMON) from region snapshots; see the module docstring.
    Sorted by time; regions never found accessed give none."""
    parts = []
    for snap in snapshots:
        hot = snap.nr_accesses > 0
        start, end = snap.start[hot].astype(np.int64), snap.end[hot].astype(np.int64)
        if not len(start):
            continue
        chunks = np.maximum((end - start + chunk_bytes - 1) // chunk_bytes, 1)
        owner = np.repeat(np.arange(len(start)), chunks)
        index = np.arange(len(owner)) - np.repeat(np.cumsum(chunks) - chunks, chunks)
        lo = start[owner] + index * chunk_bytes
        hi = np.minimum(lo + chunk_bytes, end[owner])
        pages = np.maximum((hi - lo) // PAGE_BYTES, 1)
        records = np.zeros(len(owner), dtype=F.SAMPLE)
        records["time_ns"] = snap.time_ns
        records["addr"] = (lo + (hi - lo) // 2).astype(np.uint64)
        records["tid"] = tid
        records["source"] = F.SOURCE_DAMON
        records["level"] = 0
        records["node"] = F.NODE_UNKNOWN
        records["weight"] = np.minimum(snap.nr_accesses[hot][owner].astype(np.int64) * pages,
                                       U32_MAX)
        parts.append(records)
    if not parts:
        return np.zeros(0, dtype=F.SAMPLE)
    out = np.concatenate(parts)
    return out[np.argsort(out["time_ns"], kind="stable")]


def _running(pid: int) -> bool:
    """Whether pid is a live process (not gone, not a zombie waiting to be reaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


class DamonSource:
    """record's side of the damon sampler: refuse early, monitor the program from its start,
    store the samples after it ends."""

    def __init__(self, admin: Path = ADMIN):
        self.admin = admin
        self.monitor: DamonMonitor | None = None

    @classmethod
    def choose(cls, admin: Path = ADMIN) -> "DamonSource":
        why = unavailable(admin)
        if why is not None:
            raise EnvironmentProblem(why)
        return cls(admin)

    def attach(self, pid: int) -> None:
        self.monitor = DamonMonitor(admin=self.admin)
        try:
            self.monitor.start(pid)
        except EnvironmentProblem:
            if _running(pid):
                raise
            self.monitor.errors.append("the program ended before DAMON could watch it")

    def stop(self) -> None:
        if self.monitor is not None:
            self.monitor.stop()

    def finish(self, output: Path, say) -> None:
        """After the program ended: stop DAMON and store its regions as damon-<pid>.otr."""
        from objtier.record.perf_source import ParsedSamples, store_samples

        if self.monitor is None:   # the program never started: nothing was monitored
            return
        self.stop()
        records = samples_of(self.monitor.snapshots, self.monitor.pid or 0)
        parsed = ParsedSamples(records=records,
                               pids=np.full(len(records), self.monitor.pid or 0, np.uint32),
                               events={"damon": len(records)})
        written = store_samples(output, parsed, prefix="damon")
        for error in self.monitor.errors[:1]:
            say(f"warning: DAMON: {error}")
        regions = sum(len(s.start) for s in self.monitor.snapshots)
        what = ("aggregations (tracepoint)" if self.monitor.via == "tracepoint"
                else "listings")
        say(f"DAMON: {len(self.monitor.snapshots)} {what} of {regions} regions in all, "
            f"{sum(written.values())} samples stored (estimated accesses: one page per region "
            f"checked every {SAMPLE_US // 1000} ms)")
