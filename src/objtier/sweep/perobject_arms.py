"""The arms of a per-object sweep (sweep.perobject), one by one: what an arm is, the plan that
puts its slow set on the slow tier, and how each of its runs is judged, kept and written. Shared
by the swap-tier arms (sweep.perobject) and the NUMA ones (sweep.perobject_numa)."""

from __future__ import annotations

import csv
import io
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from objtier.errors import UsageError


@dataclass
class Arm:
    index: int                 # 0 = all fast; i = the i-th arm under test
    label: str
    slow_rows: tuple[int, ...] = ()   # rows of the object table that are slow; () = none
    size: int = 0              # bytes of the slow objects
    share: float = 0.0         # their share of the sampled accesses
    context_key: str = ""      # the slow object's, for a one-object arm
    occurrence: int = 0
    foms: list[float | None] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)   # each run's: ok | timeout | ... (runner)
    walls: list[float | None] = field(default_factory=list)   # each run's wall time [s]
    room_bytes: int = 0        # unlocked room added to the arm's cgroup limit [bytes]: lets
                               # arms with different fast sets run under one limit
    kind: str = "object"       # "all fast" | "object" (one slow) | "pair" (two slow) | "set"


def live_peak(objects, rows: np.ndarray) -> int:
    """The most bytes of the given objects live at once (their summed sizes when the table
    has no lifetimes) [bytes]."""
    from objtier.plan import peak_live_bytes

    rows = np.asarray(rows, dtype=np.int64)
    if objects.alloc_ns is None or objects.free_ns is None:
        return int(objects.size[rows].sum())
    return peak_live_bytes(objects.size[rows], objects.alloc_ns[rows], objects.free_ns[rows])


def slow_set_placement(objects, slow_rows: tuple[int, ...], page_bytes: int):
    """Placement: every plannable object fast except the slow_rows ones."""
    from objtier.plan.placement import finish, pages

    n = len(objects)
    fast = np.where(objects.plannable, objects.size, 0).astype(np.int64)
    chosen = objects.plannable.copy()
    reason = np.array(["kept fast"] * n, dtype=object)
    rows = list(slow_rows)
    fast[rows] = 0
    chosen[rows] = False
    reason[rows] = "under test"
    reason[~objects.plannable] = "unknown allocation context"
    capacity = int(pages(fast, page_bytes).sum()) * page_bytes
    fill = np.cumsum(pages(fast, page_bytes) * page_bytes)
    return finish("slow-set", {"slow_objects": [int(objects.object[r]) for r in rows]},
                  objects, capacity, page_bytes, fast, np.zeros(n), np.arange(n), fill, reason,
                  chosen=chosen)


def prepare_arms(command: list[str], objects, page: int, arms: list[Arm],
                 settings
                 ) -> tuple[dict[int, tuple[dict[str, Any], Path]], Path]:
    """The output directory with its runs/ (returned second), and {arm index: (plan, its text
    file DIR/plan-NN.txt)}: each arm's slow set slow, every other plannable object fast.
    Refuses a runtime that does not enforce plans."""
    from objtier import plan as planner
    from objtier import enforcement as enforce
    from objtier.sweep.output import prepare_output, write_private

    if not enforce.runtime_supports_plans():
        raise UsageError("this objtier runtime does not enforce plans (no OBJTIER_PLAN): "
                         "sweep per-object needs it")
    prepare_output(settings.output, settings.force)
    runs_dir = settings.output / "runs"
    runs_dir.mkdir(mode=0o700)
    plans = {}
    for arm in arms:
        plan = planner.build_plan(objects, slow_set_placement(objects, arm.slow_rows, page),
                                  # the fast budget: every object (the placement is explicit)
                                  planner.Budget(max(1, int(objects.size.sum())), "slow-set",
                                                 0.0, None),
                                  planner.identity(command[0]), source=str(settings.recording))
        path = settings.output / f"plan-{arm.index:02d}.txt"
        write_private(path, planner.to_text(plan).encode())
        plans[arm.index] = (plan, path)
    return plans, runs_dir


def judge_run(m, fom, timeout: float | None, oom_kills: int, first: bool
              ) -> tuple[float | None, str | None, str | None, str]:
    """(FoM or None when the run failed, unit, problem, status) of a finished arm run; Ctrl-C
    in the program ends the sweep, and a failed first run (the all-fast arm) stops it."""
    from objtier.sweep.fom import extract
    from objtier.sweep.runner import status_of

    if m.returncode == -signal.SIGINT:
        raise KeyboardInterrupt
    value, unit, problem = extract(fom, m.stdout, m.wall_s)
    timed_out = (timeout is not None and m.wall_s >= timeout
                 and m.returncode == -signal.SIGKILL)
    status = status_of(m.returncode, timed_out, oom_kills, problem)
    if first and status != "ok":
        raise UsageError(f"the all-fast run failed ({status}"
                         f"{': ' + problem if problem else ''}); is the recording of this "
                         f"program?")
    return (value if status == "ok" else None), unit, problem, status


def keep_run(records: list, arm: Arm, repeat: int, m, judged, applied: str,
             extra: dict[str, Any], timeout: float | None) -> float | None:
    """Append a judged run (judge_run) to arm.foms and records; returns the timeout for the
    next runs (max(60 s, 30 x the first successful run) unless one was given)."""
    from objtier.sweep.output import RunRecord

    value, unit, problem, status = judged
    arm.foms.append(value)
    arm.statuses.append(status)
    arm.walls.append(m.wall_s)
    records.append(RunRecord(
        order=len(records) + 1, threads=None, level=float(arm.index), label=arm.label,
        repeat=repeat, kind="real", applied=applied, status=status, returncode=m.returncode,
        fom=value, unit=unit, wall_s=round(m.wall_s, 6), reason=problem, extra=extra))
    if timeout is None and status == "ok":
        return max(60.0, 30.0 * m.wall_s)
    return timeout


def write_runs(out: Path, records) -> None:
    from objtier.sweep.output import CSV_FIELDS, runs_table, write_private

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=CSV_FIELDS)
    writer.writeheader()
    writer.writerows(runs_table(records))
    write_private(out / "sweep.csv", text.getvalue().encode())
