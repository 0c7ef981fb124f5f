"""Noticing a launcher: the recorded program started other programs and held no object itself.

A shell script, `python`, `make`, `mpirun` or `srun` that runs the real program records only
itself unless --follow-forks is given, which gives 0 objects and no hint. While `record` runs,
ChildWatcher looks at /proc for processes descended from the recorded one (the record
process's grandchildren and below) and keeps their command names; after the run,
launcher_hint() says to use --follow-forks when the root process recorded no object and
children existed.

How often: every POLL_S (20 ms) at first, then every POLL_SHARE of the time recorded so far,
at most POLL_MAX_S (1 s): a launcher starts its program at once, and a child alive for a tenth
of the run up to its start is seen. A scan reads every process's /proc/PID/stat (0.8 ms CPU
with 67 processes on the 2-vCPU VM, 2026-12-02; more on a busy server): at a fixed 20 ms it took
4 % of a CPU, and a 2-thread program on 2 CPUs ran 7-12 % slower under `record --sampler
none` (hnswlib, 3 interleaved runs each; 0-3 % with 1 s). Now a 10 s run has about 50 scans.
Children that live shorter than the interval may be missed (then no hint).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

POLL_S = 0.02        # s: the first intervals
POLL_SHARE = 0.1     # later: this share of the time since the watcher started
POLL_MAX_S = 1.0     # s: the longest interval
MAX_NAMES = 5


def _parents() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, command name) of every process, from /proc/PID/stat."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        name = text[text.find("(") + 1:text.rfind(")")]
        fields = text[text.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1].isdigit():
            out[int(entry.name)] = (int(fields[1]), name)
    return out


class ChildWatcher:
    """While active, records the processes descended from this process's children (the
    recorded program's children and their descendants): `children` maps pid -> name."""

    def __init__(self, poll_s: float = POLL_S):
        self.poll_s = poll_s
        self.children: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="objtier-child-watcher",
                                        daemon=True)

    def __enter__(self) -> "ChildWatcher":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def interval(self, elapsed_s: float) -> float:
        """Seconds to the next scan, elapsed_s after the watcher started (module docstring)."""
        return max(self.poll_s, min(POLL_MAX_S, POLL_SHARE * elapsed_s))

    def _run(self) -> None:
        me = os.getpid()
        started = time.monotonic()
        while not self._stop.wait(self.interval(time.monotonic() - started)):
            table = _parents()
            roots = {pid for pid, (ppid, _) in table.items() if ppid == me}
            frontier, seen = set(roots), set(roots)
            while frontier:   # breadth first: descendants of the recorded program
                frontier = {pid for pid, (ppid, _) in table.items()
                            if ppid in frontier and pid not in seen}
                seen |= frontier
                for pid in frontier:
                    self.children.setdefault(pid, table[pid][1])


def launcher_hint(trace, children: dict[int, str], follow_forks: bool) -> str | None:
    """One line when the recorded root process looks like a launcher: it recorded no object
    of at least --min-size and started child processes that were not recorded."""
    if follow_forks or not children or not trace.processes:
        return None
    return launcher_hint_of(trace.processes, trace.allocations.column("pid").to_pylist(),
                            children)


def launcher_hint_of(processes, allocation_pids, children: dict[int, str]) -> str | None:
    """launcher_hint from the recorded processes (pid, exe, start_mono_ns) and the pid of
    every recorded object."""
    if not children or not processes:
        return None
    root = min(processes, key=lambda p: p.start_mono_ns)
    if root.pid in allocation_pids:
        return None
    names = sorted(set(children.values()))
    shown = ", ".join(names[:MAX_NAMES]) + (", ..." if len(names) > MAX_NAMES else "")
    exe = os.path.basename(root.exe) if root.exe else "the program"
    return (f"{exe} recorded no object of its own and started {len(children)} child "
            f"process(es) ({shown}) that were not recorded: it looks like a launcher; "
            f"record again with --follow-forks")
