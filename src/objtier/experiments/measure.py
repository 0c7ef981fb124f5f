"""Run a program once and measure it: wall time, exit status, CPU time, peak RSS, major faults,
swap traffic (vmstat deltas), its figure of merit when it prints a FOM line."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from objtier.procfs import kill_tree
from objtier.tiers.swap import read_vmstat_swap


@dataclass
class Measurement:
    label: str
    returncode: int            # negative: killed by that signal
    wall_s: float
    max_rss_bytes: int
    major_faults: int
    pswpin: int                # pages swapped in during the run (system-wide vmstat delta)
    pswpout: int               # pages swapped out during the run
    stdout: str
    stderr: str
    user_s: float | None = None    # CPU time in user mode, all the program's threads [s]
    system_s: float | None = None  # CPU time in the kernel for the program: its page faults,
    #                                swap-ins, and the direct reclaim its allocations do [s]
    fom_name: str | None = None
    fom_value: float | None = None
    fom_unit: str | None = None
    fom_seconds: float | None = None
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_measured(label: str, command: list[str], env: dict[str, str] | None = None,
                 preexec: Callable[[], None] | None = None,
                 timeout_s: float | None = None) -> Measurement:
    """Run to completion. The child is reaped with wait4 so its own rusage is exact."""
    before = read_vmstat_swap()
    started = time.monotonic()
    process = subprocess.Popen(command, env=env, preexec_fn=preexec, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    chunks: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda n=n, f=f: chunks.__setitem__(n, f.read()))
               for n, f in (("out", process.stdout), ("err", process.stderr))]
    for reader in readers:
        reader.start()
    timer = None
    if timeout_s:
        # the program and what it started (a wrapper's children, mpirun's ranks): a timeout
        # must not leave any of them running in the cgroup
        timer = threading.Timer(timeout_s, kill_tree, (process.pid,))
        timer.start()
    try:
        _, status, usage = os.wait4(process.pid, 0)
    except BaseException:
        kill_tree(process.pid)
        os.waitpid(process.pid, 0)
        raise
    finally:
        if timer:
            timer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    for reader in readers:
        reader.join()
    after = read_vmstat_swap()
    measurement = Measurement(
        label=label, returncode=process.returncode, wall_s=wall,
        max_rss_bytes=usage.ru_maxrss * 1024, major_faults=usage.ru_majflt,
        pswpin=after["pswpin"] - before["pswpin"], pswpout=after["pswpout"] - before["pswpout"],
        user_s=usage.ru_utime, system_s=usage.ru_stime,
        stdout=chunks.get("out", b"").decode(errors="replace"),
        stderr=chunks.get("err", b"").decode(errors="replace"))
    _attach_fom(measurement)
    return measurement


def _attach_fom(measurement: Measurement) -> None:
    try:
        from objtier.workloads import parse_fom
    except ImportError:
        return
    try:
        fom = parse_fom(measurement.stdout)
    except Exception:
        return
    measurement.fom_name, measurement.fom_value = fom.name, fom.value
    measurement.fom_unit, measurement.fom_seconds = fom.unit, fom.seconds
