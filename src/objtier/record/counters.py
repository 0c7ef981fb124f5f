"""The counters timeline: system and per-process memory counters sampled every interval.

Written to <recording>/counters.otr as COUNTER_DEF + COUNTERS records (long form: one value of
one counter per record). Names and units:
  vmstat.<field>          /proc/vmstat numa_*, pgpromote_*, pgdemote_*, pgmigrate_*, pswpin,
                          pswpout, pgmajfault, pgfault (cumulative, pages or events)
  node<N>.memused_bytes   /sys/devices/system/node/node<N>/meminfo MemUsed (bytes)
  proc.rss_bytes, proc.swap_bytes    /proc/<pid>/status VmRSS, VmSwap (bytes)
  proc.rss_anon_bytes, proc.rss_file_bytes, proc.rss_shmem_bytes, proc.stack_bytes,
  proc.exe_bytes, proc.lib_bytes     /proc/<pid>/status RssAnon, RssFile, RssShmem, VmStk,
                          VmExe, VmLib (bytes)
  proc.cpu_percent        utime+stime over the interval, % of one CPU
  proc.node<N>_bytes      the process's pages on node N from /proc/<pid>/numa_maps (bytes;
                          only on machines with more than one node)
  memcg.<field>           memory cgroup of the process when it has a limit: usage, swap usage,
                          memory.stat fields (cgroup v1 or v2), bytes or events
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

VMSTAT_PREFIXES = ("numa_", "pgpromote_", "pgdemote_", "pgmigrate_", "pswpin", "pswpout",
                   "pgmajfault", "pgfault", "promo", "thp_migration")
MEMCG_STAT_FIELDS = ("rss", "cache", "swap", "pgmajfault", "pgfault", "pgpgin", "pgpgout",
                     "anon", "file", "zswapped", "zswpout", "zswpin", "pswpin", "pswpout",
                     "workingset_refault_anon")
_NODE_PAGES = re.compile(r"\bN(\d+)=(\d+)")
_PAGE_KB = re.compile(r"kernelpagesize_kB=(\d+)")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# /proc/<pid>/status fields [kB] -> counters [bytes]: the RSS split by kind, the main thread's
# stack and the code's mapped sizes (VmStk, VmExe, VmLib: virtual sizes)
STATUS_SPLIT = {"RssAnon:": "proc.rss_anon_bytes", "RssFile:": "proc.rss_file_bytes",
                "RssShmem:": "proc.rss_shmem_bytes", "VmStk:": "proc.stack_bytes",
                "VmExe:": "proc.exe_bytes", "VmLib:": "proc.lib_bytes"}
NO_LIMIT = 1 << 60


def read_vmstat(path: Path = Path("/proc/vmstat")) -> dict[str, int]:
    out = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition(" ")
        if name.startswith(VMSTAT_PREFIXES):
            out[f"vmstat.{name}"] = int(value)
    return out


def read_node_memory(root: Path = Path("/sys/devices/system/node")) -> dict[str, int]:
    out = {}
    for meminfo in sorted(root.glob("node*/meminfo")):
        node = meminfo.parent.name
        for line in meminfo.read_text().splitlines():
            if " MemUsed:" in line:
                out[f"{node}.memused_bytes"] = int(line.split()[-2]) * 1024
    return out


def numa_node_count(root: Path = Path("/sys/devices/system/node")) -> int:
    return len(list(root.glob("node[0-9]*")))


def read_process(pid: int, per_node: bool = True) -> dict[str, int]:
    """RSS, swap and CPU ticks of pid; with per_node, its pages per NUMA node from numa_maps
    (reading numa_maps walks the page tables, so it is skipped on one-node machines)."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out["proc.rss_bytes"] = int(line.split()[1]) * 1024
            elif line.startswith("VmSwap:"):
                out["proc.swap_bytes"] = int(line.split()[1]) * 1024
            elif line.startswith(tuple(STATUS_SPLIT)):   # what the RSS holds (analysis/coverage.py)
                name, value = line.split()[:2]
                out[STATUS_SPLIT[name]] = int(value) * 1024
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()
        out["proc.cpu_ticks"] = int(fields[11]) + int(fields[12])  # utime + stime
        node_bytes: dict[int, int] = {}
        numa_maps = Path(f"/proc/{pid}/numa_maps").read_text().splitlines() if per_node else []
        for line in numa_maps:
            page_kb = _PAGE_KB.search(line)
            scale = int(page_kb.group(1)) * 1024 if page_kb else 4096
            for node, pages in _NODE_PAGES.findall(line):
                node_bytes[int(node)] = node_bytes.get(int(node), 0) + int(pages) * scale
        for node, value in node_bytes.items():
            out[f"proc.node{node}_bytes"] = value
    except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError, IndexError):
        pass
    return out


def memory_cgroup_dir(pid: int) -> Path | None:
    """The memory cgroup directory of pid when it has a memory limit, else None."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):  # cgroup v1
            directory = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
            limit = directory / "memory.limit_in_bytes"
            if limit.exists() and int(limit.read_text()) < NO_LIMIT:
                return directory
        if controllers == "":  # cgroup v2 unified
            directory = Path("/sys/fs/cgroup") / path.lstrip("/")
            limit = directory / "memory.max"
            if limit.exists() and limit.read_text().strip() != "max":
                return directory
    return None


def read_memcg(directory: Path) -> dict[str, int]:
    out = {}
    files = {"memory.usage_in_bytes": "memcg.usage_bytes",
             "memory.memsw.usage_in_bytes": "memcg.memsw_usage_bytes",
             "memory.current": "memcg.usage_bytes", "memory.swap.current": "memcg.swap_bytes"}
    for name, counter in files.items():
        path = directory / name
        if path.exists():
            out[counter] = int(path.read_text())
    stat = directory / "memory.stat"
    if stat.exists():
        for line in stat.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name in MEMCG_STAT_FIELDS:
                out[f"memcg.{name}"] = int(value)
    return out


def unit_of(name: str) -> str:
    if name.endswith("_bytes") or name in ("memcg.rss", "memcg.cache", "memcg.swap",
                                            "memcg.anon", "memcg.file", "memcg.zswapped"):
        return "bytes"
    if name.endswith("_percent"):
        return "percent"
    return "pages" if name.startswith("vmstat.p") or name.startswith("vmstat.numa_pages") else "events"


def _import_trace_package() -> None:
    """Imports objtier.trace (numpy, pyarrow) with one BLAS thread when numpy is not loaded
    yet: the recorder does no linear algebra, and OpenBLAS's start-up threads cost more CPU
    than the rest of the import. Runs only after the program has started, whose environment
    was copied before, so the program never sees the variable."""
    import sys

    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        import objtier.trace  # noqa: F401
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import objtier.trace  # noqa: F401
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


class CountersCollector:
    """Samples counters for a process every `interval_s` in a background thread."""

    def __init__(self, path: Path, pid: int, interval_s: float):
        self.path = path
        self.pid = pid
        self.interval_s = interval_s
        # The TraceWriter is made by a second thread, so that its import (numpy) overlaps the
        # program's run; points sampled before it exists wait in _pending (time order kept).
        self._writer = None
        self._error: OSError | None = None
        self._opener = threading.Thread(target=self._open, name="objtier-counters-open",
                                        daemon=True)
        self._pending: list[tuple[int, dict[str, int]]] = []
        self.cpu_s = 0.0  # CPU time of the collector thread (s), known once it has stopped
        self._ids: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="objtier-counters", daemon=True)
        self._last_cpu: tuple[int, float] | None = None
        self._per_node = numa_node_count() > 1
        self.samples = 0

    def start(self) -> None:
        self._opener.start()
        self._thread.start()

    def stop(self) -> None:
        """Ends the threads and closes the file; re-raises an error met opening it."""
        self._stop.set()
        self._thread.join()
        self._opener.join()
        if self._writer is not None:
            self._drain()
            self._writer.close()
        if self._error is not None:
            raise self._error

    def _open(self) -> None:
        try:
            _import_trace_package()
            from objtier.trace.writer import TraceWriter

            self._writer = TraceWriter(self.path, kind="counters", pid=0)
        except OSError as error:
            self._error = error

    def _drain(self) -> None:
        """Writes the points sampled before the writer existed."""
        pending, self._pending = self._pending, []
        for point in pending:
            self._emit(*point)

    def _emit(self, now_ns: int, values: dict[str, int]) -> None:
        """One COUNTERS record per value, all in one array (a record at a time costs more
        than reading the counters)."""
        import numpy as np

        from objtier.trace import format as F

        ids = []
        for name in values:
            counter_id = self._ids.get(name)
            if counter_id is None:
                counter_id = self._ids[name] = len(self._ids) + 1
                self._writer.counter_def(counter_id, name, unit_of(name))
            ids.append(counter_id)
        records = np.zeros(len(ids), dtype=F.FIXED[F.TAG_COUNTERS])
        records["time_ns"] = now_ns
        records["id"] = ids
        records["value"] = [int(value) for value in values.values()]
        self._writer.fixed(F.TAG_COUNTERS, records)

    def sample_once(self) -> None:
        point = self._collect()
        if self._writer is None:
            self._pending.append(point)
        else:
            if self._pending:
                self._drain()
            self._emit(*point)
        self.samples += 1

    def _collect(self) -> tuple[int, dict[str, int]]:
        now_ns = time.monotonic_ns()
        values = read_vmstat()
        values.update(read_node_memory())
        process = read_process(self.pid, self._per_node)
        ticks = process.pop("proc.cpu_ticks", None)
        if ticks is not None:
            if self._last_cpu is not None:
                last_ticks, last_s = self._last_cpu
                elapsed = max(now_ns / 1e9 - last_s, 1e-9)
                process["proc.cpu_percent"] = round(100 * (ticks - last_ticks) / CLOCK_TICKS
                                                    / elapsed)
            self._last_cpu = (ticks, now_ns / 1e9)
        values.update(process)
        memcg = memory_cgroup_dir(self.pid)
        if memcg is not None:
            values.update(read_memcg(memcg))
        return now_ns, values

    def _loop(self) -> None:
        try:
            self._run()
        finally:
            self.cpu_s = time.thread_time()

    def _last_point(self) -> None:
        try:
            self.sample_once()  # the last point, at the end of the run
        except OSError:
            pass

    def _run(self) -> None:
        flushed = time.monotonic()
        while True:
            try:
                self.sample_once()
            except OSError:
                pass  # the process went away between reads; the next tick or stop() ends it
            if time.monotonic() - flushed > 1.0 and self._writer is not None:
                self._writer.flush()
                flushed = time.monotonic()
            if self._stop.wait(self.interval_s):
                self._last_point()
                return
