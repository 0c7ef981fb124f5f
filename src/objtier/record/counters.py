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
import struct
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


class CountersFile:
    """The counters timeline's .otr file (FILE_COUNTERS), written with struct: the same bytes
    objtier.trace.TraceWriter(path, kind="counters") writes for the same calls, without numpy,
    whose import would cost `record` more than the whole timeline."""

    BLOCK_BYTES = 64 * 1024

    def __init__(self, path: Path):
        from objtier.outputs import open_private
        from objtier.trace import light as L

        self._L = L
        self._file = open_private(path, what="trace")  # 0600, never through a link
        self._file.write(L.FILE_HEADER.pack(L.MAGIC, L.VERSION_MAJOR, L.VERSION_MINOR,
                                            L.FILE_HEADER.size, 1, 8, 62, L.FILE_COUNTERS, 0, 0,
                                            4096, time.monotonic_ns(), time.time_ns()))
        self._pending: list[bytes] = []   # COUNTER records not yet in a block
        self.records = 0

    def _block(self, tag: int, record_size: int, count: int, payload: bytes) -> None:
        import zlib

        self._file.write(self._L.BLOCK_HEADER.pack(self._L.BLOCK_MAGIC, tag, record_size,
                                                   len(payload), count, zlib.crc32(payload), 0)
                         + payload)
        self.records += count

    def counter_def(self, counter_id: int, name: str, unit: str) -> None:
        raw_name, raw_unit = name.encode(), unit.encode()
        body = (self._L.COUNTER_DEF_HEAD.pack(counter_id, len(raw_unit), len(raw_name))
                + raw_name + raw_unit)
        self._block(self._L.TAG_COUNTER_DEF, 0, 1, struct.pack("<I", len(body)) + body
                    + b"\0" * (-len(body) % 8))

    def counters(self, time_ns: int, ids: list[int], values: list[int]) -> None:
        pack = self._L.COUNTER.pack
        self._pending.extend(pack(time_ns, i, 0, v) for i, v in zip(ids, values))
        if len(self._pending) * self._L.COUNTER.size >= self.BLOCK_BYTES:
            self._write_pending()

    def _write_pending(self) -> None:
        size = self._L.COUNTER.size
        per_block = max(1, self.BLOCK_BYTES // size)
        pending, self._pending = self._pending, []
        for start in range(0, len(pending), per_block):
            chunk = pending[start:start + per_block]
            self._block(self._L.TAG_COUNTERS, size, len(chunk), b"".join(chunk))

    def flush(self) -> None:
        self._write_pending()
        self._file.flush()

    def close(self) -> None:
        if self._file.closed:
            return
        self.flush()
        end = self._L.END
        self._block(self._L.TAG_END, end.size, 1, end.pack(time.monotonic_ns(), self.records, 0, 0))
        self._file.close()


class CountersCollector:
    """Samples counters for a process every `interval_s` in a background thread."""

    def __init__(self, path: Path, pid: int, interval_s: float):
        self.path = path
        self.pid = pid
        self.interval_s = interval_s
        # points sampled while there is no file (it could not be opened) wait in _pending
        self._writer: CountersFile | None = None
        self._error: OSError | None = None
        self._pending: list[tuple[int, dict[str, int]]] = []
        self.cpu_s = 0.0  # CPU time of the collector thread (s), known once it has stopped
        self._ids: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="objtier-counters", daemon=True)
        self._last_cpu: tuple[int, float] | None = None
        self._per_node = numa_node_count() > 1
        self.samples = 0

    def start(self) -> None:
        try:
            self._writer = CountersFile(self.path)
        except OSError as error:
            self._error = error
        self._thread.start()

    def stop(self) -> None:
        """Ends the threads and closes the file; re-raises an error met opening it."""
        self._stop.set()
        self._thread.join()
        if self._writer is not None:
            self._drain()
            self._writer.close()
        if self._error is not None:
            raise self._error

    def _drain(self) -> None:
        """Writes the points sampled before the writer existed."""
        pending, self._pending = self._pending, []
        for point in pending:
            self._emit(*point)

    def _emit(self, now_ns: int, values: dict[str, int]) -> None:
        """One COUNTERS record per value."""
        ids = []
        for name in values:
            counter_id = self._ids.get(name)
            if counter_id is None:
                counter_id = self._ids[name] = len(self._ids) + 1
                self._writer.counter_def(counter_id, name, unit_of(name))
            ids.append(counter_id)
        self._writer.counters(now_ns, ids, [int(value) for value in values.values()])

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
