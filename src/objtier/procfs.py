"""Facts about this machine read from /proc (procfs)."""

from __future__ import annotations

from pathlib import Path


def meminfo_bytes(field: str, path: Path = Path("/proc/meminfo")) -> int | None:
    """A /proc/meminfo field ("MemTotal", "MemAvailable", ...) in bytes; None if absent."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, _, rest = line.partition(":")
        if name == field:
            return int(rest.split()[0]) * 1024  # the file's unit is kB
    return None


def descendants(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """Every live descendant of pid, children before grandchildren, from each task's
    /proc/PID/task/TID/children (pids that end while being read are skipped)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop(0)
        try:
            tasks = list((proc / str(parent) / "task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
            for kid in kids:
                if kid not in found:
                    found.append(kid)
                    todo.append(kid)
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL to pid and every descendant (the descendants are collected first, stopped, then
    killed, so none re-parents away in between)."""
    import os
    import signal

    kids = descendants(pid)
    for p in [pid, *kids]:
        try:
            os.kill(p, signal.SIGSTOP)
        except OSError:
            pass
    for p in [*descendants(pid), *kids, pid]:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
