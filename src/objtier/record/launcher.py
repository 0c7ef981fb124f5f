"""Noticing a launcher: the recorded program started other programs and held no object itself.

A shell script, `python`, `make`, `mpirun` or `srun` that runs the real program records only
itself unless --follow-forks is given, which gives 0 objects and no hint. While `record` runs,
ChildWatcher looks at /proc every POLL_S seconds for processes descended from the recorded
one (the record process's grandchildren and below) and keeps their command names; after the
run, launcher_hint() says to use --follow-forks when the root process recorded no object and
children existed. Children that live shorter than POLL_S may be missed (then no hint).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

POLL_S = 0.02
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

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(self.poll_s):
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
