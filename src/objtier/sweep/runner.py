"""The sweep: every (thread count, repeat, level) run of the program, in interleaved rounds.

Order: for each --threads value (or once), `repeat` rounds; each round runs every level once,
from least to most throttled. Interleaving spreads the machine's drift (other load, thermal)
over all levels instead of biasing the last ones. Every run is appended to sweep.csv as it
ends; sweep.json, sweep.parquet and sweep.png are written at the end, also on Ctrl-C or an
error, so what finished is kept and --resume runs only what is missing. A failed run (exit
status, OOM kill, timeout, no FoM) is a data point, never the end of the sweep — except the
very first run: when the program fails or prints no FoM with no throttling at all, the sweep
stops with that one-line error.

With --repeat auto (settings.auto) the sweep starts with `repeat` rounds (AUTO_START) and then
adds runs while a threshold is "not resolved" (metric: a level's interval spans its line): each
step gives the levels that decide an unresolved threshold, and the baseline level (its noise is
in every ratio), more runs, interleaved, up to the runs the metric estimates would resolve it,
but at most twice the runs they have and at most max_repeat. It stops when every threshold of
every series is resolved or the cap is reached, and says which in config.repeat_auto.stopped.
Each step is a look at the data: few looks (doubling) keep the chance that noise separates by
luck small, but not zero (docs/sweep.md).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from objtier.errors import ObjtierError, UsageError
from objtier.sweep.fom import FomSource, extract
from objtier.sweep.knobs import Knob, with_threads
from objtier.sweep.metric import Metric
from objtier.sweep.metric import THRESHOLDS
from objtier.sweep.output import (LevelInfo, RunRecord, SweepOutcome, append_record,
                                  build_document, machine_info, prepare_output, read_records,
                                  series_metric, tool_version, write_files)

MIN_TIMEOUT_S = 60.0
TIMEOUT_FACTOR = 30.0   # default timeout: this many times the first run's wall time
AUTO_START = 3          # --repeat auto: rounds before the first look
AUTO_MAX = 20           # --repeat auto: runs per level at most (--max-repeat)


@dataclass
class SweepSettings:
    repeat: int = 10
    fom: FomSource = field(default_factory=lambda: FomSource("line"))
    threads: list[int] | None = None
    output: Path = Path("sweep-out")
    timeout_s: float | None = None
    force: bool = False
    resume: bool = False
    bisect: bool = False
    auto: bool = False            # --repeat auto: add runs until resolved (repeat = the start)
    max_repeat: int = AUTO_MAX    # --repeat auto: the cap, runs per level


def status_of(returncode: int, timed_out: bool, oom_kills: int, fom_problem: str | None) -> str:
    if timed_out:
        return "timeout"
    if oom_kills:
        return "OOM-killed"
    if returncode < 0:
        return f"killed by signal {-returncode}"
    if returncode > 0:
        return f"exit {returncode}"
    return "no FoM" if fom_problem else "ok"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


def plan_runs(knob: Knob, threads: list[int | None], repeat: int
              ) -> list[tuple[int | None, int, float]]:
    """(threads, repeat, level) in run order: rounds of every level, per thread count."""
    return [(t, r, level) for t in threads for r in range(1, repeat + 1) for level in knob.levels]


def auto_step(metric: Metric, cap: int) -> dict[float, int]:
    """--repeat auto, one step for one series: {level: runs it should have} for the levels
    that decide an unresolved threshold and the baseline level; {} when every threshold is
    resolved or those levels are at the cap. The target: the runs the metric estimates would
    resolve them (twice the runs when it cannot tell), at most twice the runs they have, at
    least one more, at most cap."""
    unresolved = metric.unresolved()
    if not unresolved:
        return {}
    have = {s.level: len(s.foms) for s in metric.levels}
    wanted = {level for d in unresolved for level in d.noise}
    if metric.baseline_level is not None:
        wanted.add(metric.baseline_level)
    n = max(have[level] for level in wanted)
    estimates = [d.repeats_needed for d in unresolved]
    want = max(estimates) if None not in estimates else 2 * n
    target = min(cap, max(n + 1, min(want, 2 * n)))
    return {level: target for level in wanted if have[level] < target}


def auto_stopped(metrics: list[Metric], cap: int, threads: list[int | None]) -> str:
    """The sentence config.repeat_auto.stopped holds once auto_step has nothing to add."""
    left = [(t, d) for t, m in zip(threads, metrics) for d in m.unresolved()]
    if not left:
        return "every threshold resolved"
    names = ", ".join(f"T{d.percent}" + (f" ({t} threads)" if t is not None else "")
                      for t, d in left)
    return f"stopped at the cap of {cap} runs per level (--max-repeat): {names} not resolved"


def run_sweep(command: list[str], knob: Knob, settings: SweepSettings,
              say: Callable[[str], None] = lambda text: None,
              on_record: Callable[[RunRecord, int, int], None] = lambda r, i, n: None
              ) -> SweepOutcome:
    """Run the sweep (see the module docstring); writes into settings.output."""
    from objtier.experiments.measure import run_measured

    if settings.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {settings.repeat}")
    if settings.auto and settings.bisect:
        raise UsageError("--bisect picks its levels from the first runs' medians: use a fixed "
                         "--repeat with it, not --repeat auto")
    if settings.auto and settings.max_repeat < settings.repeat:
        raise UsageError(f"--max-repeat must be at least {settings.repeat}, got "
                         f"{settings.max_repeat}")
    prepare_output(settings.output, settings.force, settings.resume)
    threads: list[int | None] = list(settings.threads) if settings.threads else [None]
    records = read_records(settings.output) if settings.resume else []
    done = {(r.threads, r.repeat, r.level) for r in records}
    levels = [LevelInfo(v, knob.label(v), knob.kind, "") for v in knob.levels]
    unit = next((r.unit for r in records if r.unit), None)
    if settings.fom.kind == "time":
        unit = "s"
    head = {"knob": knob.name, "kind": knob.kind, "command": command}
    timeout = settings.timeout_s
    machine = machine_info()      # read once: the document is rebuilt after every run
    auto: dict[str, Any] | None = ({"start": settings.repeat, "max": settings.max_repeat,
                                    "runs": {}, "stopped": "interrupted"}
                                   if settings.auto else None)

    def document() -> tuple[dict[str, Any], list[Metric]]:
        repeat: dict[str, Any] = {"repeat": settings.repeat}
        if auto is not None:
            auto["runs"] = {f"{t}:{info.label}" if t is not None else info.label:
                            sum(r.level == info.level and r.threads == t for r in records)
                            for t in threads for info in levels}
            repeat = {"repeat": "auto", "repeat_auto": auto}
        full = {**head, "fom": {"source": settings.fom.describe(), "unit": unit,
                                "higher_is_better": settings.fom.higher_is_better},
                "config": {**repeat, "levels": knob.levels,
                           "threads": settings.threads, "timeout_s": timeout,
                           **knob.describe()},
                "tool_version": tool_version(), "machine": machine}
        return build_document(records, levels, threads, full, settings.fom.higher_is_better)

    plan = plan_runs(knob, threads, settings.repeat)
    todo = [run for run in plan if run not in done]
    total = len(plan)
    if settings.resume:
        say(f"resuming: {len(plan) - len(todo)} of {len(plan)} runs already done")
    try:
        with knob:
            first_threads = threads[0]
            base_cmd, base_env = with_threads(command, _environ(), first_threads)
            knob.prepare(base_cmd, say)
            def run_one(t: int | None, repeat: int, level: float) -> None:
                nonlocal unit, timeout
                if (t, repeat, level) in done:
                    return
                done.add((t, repeat, level))
                started = time.monotonic()
                cmd, env = with_threads(command, _environ(), t)
                with knob.level(level, cmd, env) as setup:
                    m = run_measured(knob.label(level), setup.command, env=setup.env,
                                     preexec=setup.preexec, timeout_s=timeout)
                if m.returncode == -signal.SIGINT:
                    raise KeyboardInterrupt
                timed_out = (timeout is not None and m.wall_s >= timeout
                             and m.returncode == -signal.SIGKILL)
                value, fom_unit, problem = extract(settings.fom, m.stdout, m.wall_s)
                status = status_of(m.returncode, timed_out, setup.oom_kills, problem)
                if status != "ok":
                    value = None
                if not records and status != "ok":
                    _first_run_failed(status, problem, m)
                unit = unit or fom_unit
                record = RunRecord(order=len(records) + 1, threads=t, level=level,
                                   label=knob.label(level), repeat=repeat, kind=knob.kind,
                                   applied=setup.applied, status=status, returncode=m.returncode,
                                   fom=value, unit=fom_unit, wall_s=round(m.wall_s, 6),
                                   reason=None if status == "ok" else (
                                       problem if status == "no FoM"
                                       else _last_line(m.stderr) or None),
                                   extra=setup.extra)
                records.append(record)
                for info in levels:
                    if info.level == level and not info.applied:
                        info.applied = setup.applied
                if timeout is None and status == "ok":
                    timeout = max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * m.wall_s)
                record.overhead_s = round(time.monotonic() - started - m.wall_s, 6)
                append_record(settings.output, record)
                on_record(record, len(records), max(total, len(records)))

            if settings.bisect:
                for t in threads:
                    def measure(i: int, t=t) -> None:
                        for repeat in range(1, settings.repeat + 1):
                            run_one(t, repeat, knob.levels[i])

                    bisect_levels(len(knob.levels), measure, lambda t=t: series_metric(
                        records, levels, t, settings.fom.higher_is_better))
            else:
                for t, repeat, level in todo:
                    run_one(t, repeat, level)
            if auto is not None:
                while True:
                    metrics = [series_metric(records, levels, t, settings.fom.higher_is_better)
                               for t in threads]
                    step = {(t, level): n for t, m in zip(threads, metrics)
                            for level, n in auto_step(m, settings.max_repeat).items()}
                    if not step:
                        auto["stopped"] = auto_stopped(metrics, settings.max_repeat, threads)
                        say(f"--repeat auto: {auto['stopped']}")
                        break

                    def runs(t, level):
                        return max((r.repeat for r in records
                                    if r.threads == t and r.level == level), default=0)

                    more = sum(n - runs(t, level) for (t, level), n in step.items())
                    total = len(records) + more
                    say(f"--repeat auto: {more} more run(s) at "
                        + ", ".join(sorted({knob.label(level) for _, level in step},
                                           key=lambda label: [knob.label(v) for v in
                                                              knob.levels].index(label)))
                        + f" (up to {max(step.values())} per level)")
                    pending = [key for t in threads for level in knob.levels
                               if (key := (t, level)) in step]
                    while pending:           # round-robin over the levels: interleaved
                        for t, level in list(pending):
                            if runs(t, level) >= step[(t, level)]:
                                pending.remove((t, level))
                                continue
                            run_one(t, runs(t, level) + 1, level)
    finally:
        # sweep.csv gets every run as it ends; sweep.json (the metric), the Parquet copy and
        # the figure are written at the end, also when the sweep is interrupted
        if records:
            from objtier.sweep.figure import plot_sweep
            from objtier.sweep.page import write_sweep_page

            doc, _ = document()
            write_files(settings.output, doc, records)
            plot_sweep(doc, settings.output / "sweep.png")
            write_sweep_page(settings.output, doc)
    doc, metrics = document()
    return SweepOutcome(records, doc, metrics)


def bisect_levels(count: int, measure: Callable[[int], None],
                  metric: Callable[[], Metric]) -> None:
    """Measure only the levels a binary search for T90, T75 and T50 needs: the first and the
    last level, then for each threshold the midpoints between the last level known above its
    line and the first known below it. measure(i) runs level i (every repeat; a level run
    before is not run again); metric() is the metric over the levels measured so far.
    Assumes the FoM does not recover with more throttling; the thresholds are then those of
    the full grid, found in about 2 + 3 log2(count) levels instead of count."""
    measure(0)
    if count > 1:
        measure(count - 1)
    for percent in THRESHOLDS:
        line = percent / 100.0

        def below(i: int) -> bool:
            stats = metric().levels[i]
            return stats.performance is not None and stats.performance < line

        if count == 1 or below(0) or not below(count - 1):
            continue              # reached at the first level, or not reached at all
        # start from what is known: high = the first measured level below the line, low = the
        # last measured level above it before high (the search for T90 measured some)
        known = [i for i, s in enumerate(metric().levels) if s.performance is not None]
        high = next(i for i in known if below(i))
        low = max(i for i in known if i < high)
        while high - low > 1:
            mid = (low + high) // 2
            measure(mid)
            if below(mid):
                high = mid
            else:
                low = mid


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


def _first_run_failed(status: str, problem: str | None, m) -> None:
    """The least throttled level's first run must work: stop with its one-line reason."""
    if status == "no FoM":
        raise UsageError(f"the first run printed no figure of merit: {problem}; pass "
                         f"--fom REGEX or --time")
    detail = _last_line(m.stderr) or _last_line(m.stdout)
    raise ObjtierError(f"the program failed at the least throttled level ({status})"
                       + (f": {detail}" if detail else ""))
