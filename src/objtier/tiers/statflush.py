"""The stat-flush reader: a read-only sidecar that keeps a memory cgroup's LRU statistics fresh.

On memory cgroup v1 kernels with the classic LRU, reclaim decides from per-memcg LRU statistics
that are flushed lazily (up to about 2 s stale). Under swap thrash the stale counters make
reclaim deactivate nothing, the swap-in charge fails and the memcg OOM killer fires with swap
mostly free. Reading the cgroup's `memory.stat` forces the flush. This reader does exactly that,
every `period_ms` milliseconds, from a thread of the objtier process (outside the program), and
nothing else: no advice, no limits, no placement. While the cgroup's major-fault count
(`pgmajfault` in the file it reads) grows from one read to the next — the program is swapping,
when the statistics go stale fastest — it reads every `fast_ms` (2) ms instead: BFS on a
uniform graph (scale 17, 4 trials) in a cgroup of 90 % of its footprint was OOM-killed in 3 of
3 runs with a read every 10 ms and in 0 of 3 with one every 2 ms (docs/benchmarks.md). Every
arm of a swap-tier experiment runs with the same reader and the same rule so that no arm is
denied the flush.

Invariant: the reader only opens and reads `memory.stat`; it never writes to the cgroup.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from objtier.errors import UsageError

DEFAULT_PERIOD_MS = 10  # the period of the runtime's pressure guard (OBJTIER_PRESSURE_MS)
FAST_PERIOD_MS = 2      # while the cgroup's major faults grow (never above period_ms)
MAX_PERIOD_MS = 10_000  # a longer period flushes no more than the kernel's own ~2 s


def check_period(period_ms: float, option: str = "--stat-flush") -> None:
    """A reader period from the command line: 0 (off) or in (0, MAX_PERIOD_MS] ms."""
    if not 0 <= period_ms <= MAX_PERIOD_MS:
        raise UsageError(f"{option} must be 0 (off) or a period of at most "
                         f"{MAX_PERIOD_MS} ms, got {period_ms:g}")


def stats_line(stats: "StatFlushStats") -> str:
    """One line of what the reader did, for a command's output."""
    if stats.period_ms <= 0:
        return "stat-flush reader off"
    fast = min(stats.fast_ms, stats.period_ms)
    text = (f"stat-flush reader: memory.stat every {stats.period_ms:g} ms"
            + (f" ({fast:g} ms while major faults grow)" if fast < stats.period_ms else "")
            + f", {stats.reads} read(s)"
            + (f" ({stats.fast_reads} fast)" if fast < stats.period_ms else "")
            + f", longest gap {stats.max_gap_ms:.0f} ms")
    return text + "".join(f"; {note}" for note in stats.notes)


@dataclass
class StatFlushStats:
    """What the reader did: reads made, and the longest gap between two reads (ms)."""
    period_ms: float
    fast_ms: float = FAST_PERIOD_MS
    reads: int = 0
    fast_reads: int = 0     # reads that found the major-fault count grown (next one fast)
    max_gap_ms: float = 0.0
    errors: int = 0
    running_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"period_ms": self.period_ms, "fast_ms": self.fast_ms, "reads": self.reads,
                "fast_reads": self.fast_reads,
                "max_gap_ms": round(self.max_gap_ms, 3), "errors": self.errors,
                "running_s": round(self.running_s, 3)}


def major_faults(stat: bytes) -> int:
    """The cgroup's own `pgmajfault` count in a memory.stat text (v1 and v2; not v1's
    hierarchical `total_pgmajfault`), -1 if absent."""
    for line in stat.splitlines():
        name, _, value = line.partition(b" ")
        if name == b"pgmajfault":
            return int(value) if value.isdigit() else -1
    return -1


class StatFlushReader:
    """Read `<cgroup>/memory.stat` every `period_ms` ms while inside the `with` block, every
    `fast_ms` ms (at most period_ms) while its pgmajfault count grows.

        with StatFlushReader(cgroup_path, period_ms=10) as reader:
            ... run the program in the cgroup ...
        reader.stats.reads   # how many flushes were made

    `period_ms <= 0` disables the reader (the block runs without it; stats.reads stays 0).
    """

    def __init__(self, cgroup_path: Path | str, period_ms: float = DEFAULT_PERIOD_MS,
                 fast_ms: float = FAST_PERIOD_MS):
        if period_ms < 0 or fast_ms <= 0:
            raise ValueError(f"stat-flush period must be >= 0 ms and its fast period > 0 ms, "
                             f"got {period_ms} and {fast_ms}")
        self.path = Path(cgroup_path) / "memory.stat"
        self.stats = StatFlushStats(period_ms=period_ms, fast_ms=fast_ms)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.stats.period_ms > 0

    def __enter__(self) -> "StatFlushReader":
        self._stop.clear()   # a reader may be entered again; its stats add up
        if self.enabled:
            self._thread = threading.Thread(target=self._loop, name="objtier-statflush",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        period_s = self.stats.period_ms / 1000.0
        fast_s = min(self.stats.fast_ms, self.stats.period_ms) / 1000.0
        faults = -1
        start = last = time.monotonic()
        try:
            fd = open(self.path, "rb", buffering=0)
        except OSError as error:
            self.stats.notes.append(f"cannot open {self.path}: {error.strerror}")
            self.stats.running_s += time.monotonic() - start
            return
        with fd:
            while not self._stop.is_set():
                wait_s = period_s
                try:
                    fd.seek(0)
                    chunks = []
                    while chunk := fd.read(65536):
                        chunks.append(chunk)
                    self.stats.reads += 1
                    now_faults = major_faults(b"".join(chunks))
                    if faults >= 0 and now_faults > faults:
                        self.stats.fast_reads += 1
                        wait_s = fast_s
                    faults = now_faults
                except OSError:
                    # The cgroup is being removed at the end of the run: stop quietly.
                    self.stats.errors += 1
                    if self.stats.errors > 3:
                        break
                now = time.monotonic()
                if self.stats.reads > 1:
                    self.stats.max_gap_ms = max(self.stats.max_gap_ms, (now - last) * 1000.0)
                last = now
                self._stop.wait(wait_s)
        self.stats.running_s += time.monotonic() - start
