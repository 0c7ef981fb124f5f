"""Reclaim on a spare CPU: the kernel's reclaim for the program's cgroup run ahead of its
faults, in a helper process on a CPU the program leaves idle (native/tools/spare_reclaim.c).

When it pays (decide): the program must leave a CPU idle (its CPU time over its wall time in
the unlimited run at most cpus - MIN_IDLE_CPUS), and one CPU must be able to reclaim as fast
as the run needs: the pages the plan's run is predicted to swap out per second (the kernel
model's swap-ins over its predicted time: at steady state every page swapped in pushes one
out) at most the pages one CPU reclaims per second, 1 / (kernel CPU time per swapped-out page
of a measured kernel-reclaim run). Measured here (docs/history/benchmarks-2026-11-28-details.md):
1.21-1.44x on five workloads with a CPU idle; STREAM, which swaps about 250 pages a ms, lost
(0.63x): the helper could not keep ahead and its compressions met the program's
decompressions.

Checked on the first run it is used in (check_first_run): the helper is meant to do the
kernel's reclaim elsewhere, not more of it. Where the objtier arm's first run both took longer
and swapped in more pages than the first kernel run, compare turns it off for the arm's
later runs and says so. Seen on DuckDB at 70 % local (2026-12-03, real, M1): with the helper
2.1x the kernel's swap-ins and 0.84x its speed (3 runs), without it 1.0x and 1.01x; where it
pays (SQLite at 50 %, 1.11x faster with 1.27x the swap-ins) the first run is faster, and a
first run slower by noise alone costs only the helper's gain, if it had any.

Machine state: the helper writes the cgroup's limit (lower by HEADROOM_KIB, then back); it
writes the original limit back when it stops (SIGTERM; also sent when this process dies,
PR_SET_PDEATHSIG), and the cgroup is removed with its tier in any case.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from objtier.restore import die_with_parent

HEADROOM_KIB = 1024      # reclaimed per lowering [KiB]
MIN_IDLE_CPUS = 0.5      # idle CPU the program must leave (in CPUs)
MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class Decision:
    use: bool
    why: str
    idle_cpus: float | None = None
    needed_pages_per_s: float | None = None
    capacity_pages_per_s: float | None = None
    off_after_first: str | None = None   # why check_first_run turned it off for the runs
                                         # after the first (use stays: that run had it)

    def as_dict(self) -> dict[str, Any]:
        return {"used": self.use, "why": self.why, "idle_cpus": self.idle_cpus,
                "needed_pages_per_s": self.needed_pages_per_s,
                "capacity_pages_per_s": self.capacity_pages_per_s,
                "off_after_first": self.off_after_first}


def check_first_run(kernel_wall_s: float, kernel_swapins: float, wall_s: float,
                    swapins: float) -> str | None:
    """Why the helper goes off after the objtier arm's first run (module docstring), or None
    to keep it: the run took longer than the first kernel run and swapped in more pages."""
    if wall_s > kernel_wall_s and swapins > kernel_swapins:
        return (f"the first run with it took {wall_s:.2f} s and {swapins:,.0f} swap-ins "
                f"against {kernel_wall_s:.2f} s and {kernel_swapins:,.0f} for kernel run 1")
    return None


def check_mode(mode: str) -> str:
    from objtier.errors import UsageError

    if mode not in MODES:
        raise UsageError(f"--spare-reclaim takes one of {', '.join(MODES)}, got {mode!r}")
    return mode


def idle_cpus(cpus: int, cpu_s: float | None, wall_s: float) -> float | None:
    """CPUs the program leaves idle on average: cpus - (user + system) / wall."""
    if cpu_s is None or wall_s <= 0:
        return None
    return cpus - cpu_s / wall_s


def decide(mode: str, cpus: int, unlimited_cpu_s: float | None, unlimited_wall_s: float,
           predicted_swapins: float | None, predicted_wall_s: float | None,
           kernel_system_s: float | None, kernel_swapouts: float | None) -> Decision:
    """Whether the plan's runs get the spare-CPU reclaimer (module docstring). mode: "on",
    "off" or "auto"; the rest from the unlimited run, the kernel model and one kernel-reclaim
    run (its system time and pages swapped out)."""
    if mode == "off":
        return Decision(False, "--spare-reclaim off")
    idle = idle_cpus(cpus, unlimited_cpu_s, unlimited_wall_s)
    if mode == "on":
        return Decision(True, "--spare-reclaim on", idle)
    if cpus < 2:
        return Decision(False, "one CPU: none to spare", idle)
    if idle is None or idle < MIN_IDLE_CPUS:
        return Decision(False, f"the program leaves {idle if idle is not None else 0:.2f} CPU "
                        f"idle (at least {MIN_IDLE_CPUS} needed)", idle)
    if not (predicted_swapins and predicted_wall_s and kernel_system_s and kernel_swapouts):
        return Decision(False, "no prediction of the plan's swap rate to decide by", idle)
    needed = predicted_swapins / predicted_wall_s
    capacity = kernel_swapouts / kernel_system_s
    if needed > capacity:
        return Decision(False, f"the run needs {needed:,.0f} pages/s reclaimed, one CPU "
                        f"reclaims {capacity:,.0f} (estimated)", idle, needed, capacity)
    return Decision(True, f"{idle:.2f} CPU idle; {needed:,.0f} pages/s to reclaim, one CPU "
                    f"reclaims {capacity:,.0f} (estimated)", idle, needed, capacity)


class SpareReclaimer:
    """The helper for one run: `with SpareReclaimer(cgroup_dir): run the program`; reclaims
    (lowerings) and seconds spent are in .reclaims and .seconds afterwards."""

    def __init__(self, cgroup_dir: Path, cpu: int | None = None,
                 headroom_kib: int = HEADROOM_KIB):
        self.cgroup_dir = Path(cgroup_dir)
        self.cpu = (os.cpu_count() or 1) - 1 if cpu is None else cpu
        self.headroom_kib = headroom_kib
        self.reclaims = 0
        self.seconds = 0.0
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> "SpareReclaimer":
        from objtier.native import binary

        self._proc = subprocess.Popen(
            [str(binary("objtier-spare-reclaim")), str(self.cgroup_dir),
             str(self.headroom_kib), str(self.cpu)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=die_with_parent(signal.SIGTERM))
        return self

    def __exit__(self, *exc) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        fields = out.split()
        if len(fields) == 4 and fields[0] == "reclaims":
            self.reclaims, self.seconds = int(fields[1]), int(fields[3]) / 1e9
