"""Results of an A/B comparison: one row per run, medians per configuration, ratios, files.

Configurations: "baseline" (kernel reclaim alone) and "objtier" (plan enforced). Ratios are
always baseline / objtier for costs (time, swap traffic, faults: > 1 means objtier is better)
and objtier / baseline for the figure of merit (a rate: > 1 means objtier is better).
Medians are over the successful runs (exit status 0) of a configuration only; failed runs
(among them those the memory cgroup's OOM killer ended: `oom_killed`) are counted, never timed.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

CONFIGS = ("baseline", "objtier")


@dataclass
class RunRow:
    config: str                   # baseline | objtier
    repeat: int                   # 1..N within the configuration
    order: int                    # 1..2N: position in the interleaved sequence
    returncode: int               # negative: killed by that signal
    timed_out: bool
    wall_s: float                 # whole run, fork to reap [s]
    user_s: float | None          # the program's CPU time in user mode, all threads (wait4) [s]
    system_s: float | None        # the program's CPU time in the kernel: faults, swap-ins,
    #                               direct reclaim (wait4) [s]
    fom_name: str | None
    fom_value: float | None       # the workload's figure of merit, in fom_unit
    fom_unit: str | None
    fom_seconds: float | None     # the workload's timed region [s]
    pswpin: int                   # /proc/vmstat delta, system-wide [pages]
    pswpout: int                  # /proc/vmstat delta, system-wide [pages]
    major_faults: int             # the program's own (wait4 rusage)
    max_rss_bytes: int            # the program's peak RSS (wait4 rusage) [bytes]
    memcg_peak_bytes: int | None  # the cgroup's peak charge during the run [bytes]
    memcg_pgmajfault: int | None  # memcg memory.stat delta [faults]
    memcg_refault_anon: int | None  # memcg workingset_refault_anon delta: swap-ins [pages]
    memcg_pswpout: int | None     # memcg pswpout delta (cgroup v2 only) [pages]
    memcg_oom_kills: int | None   # memcg OOM kills during the run
    objects_matched: int | None   # objtier: objects whose context is in the plan
    placement_actions: int | None  # objtier: PLACEMENT records written by the runtime
    locked_bytes: int | None      # objtier: bytes the runtime mlocked [bytes]

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def oom_killed(self) -> bool:
        """Killed by the memory cgroup's OOM killer (a failed run, never a fast one)."""
        return not self.ok and bool(self.memcg_oom_kills)


COLUMNS = [f.name for f in fields(RunRow)]

#: Per-configuration medians reported (row field -> summary key).
MEDIAN_FIELDS = ("wall_s", "user_s", "system_s", "fom_value", "fom_seconds", "pswpin",
                 "pswpout", "major_faults", "max_rss_bytes", "memcg_peak_bytes",
                 "memcg_pgmajfault", "memcg_refault_anon", "memcg_pswpout", "locked_bytes")


def median_of(rows: list[RunRow], name: str) -> float | None:
    values = [getattr(r, name) for r in rows if r.ok and getattr(r, name) is not None]
    return float(statistics.median(values)) if values else None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator; None when either is unknown; inf when only the
    denominator is 0 (e.g. no swap-outs at all with objtier); 1 when both are 0."""
    if numerator is None or denominator is None:
        return None
    if denominator == 0:
        return 1.0 if numerator == 0 else math.inf
    return numerator / denominator


def summarize(rows: list[RunRow]) -> dict[str, Any]:
    """Medians per configuration and the objtier-vs-baseline ratios."""
    per: dict[str, dict[str, Any]] = {}
    for config in CONFIGS:
        mine = [r for r in rows if r.config == config]
        per[config] = {"runs": len(mine), "failed": sum(not r.ok for r in mine),
                       "oom_killed": sum(r.oom_killed for r in mine),
                       **{f: median_of(mine, f) for f in MEDIAN_FIELDS}}
    base, obj = per["baseline"], per["objtier"]
    ratios = {
        "speedup": ratio(base["wall_s"], obj["wall_s"]),
        "timed_speedup": ratio(base["fom_seconds"], obj["fom_seconds"]),
        "fom_ratio": ratio(obj["fom_value"], base["fom_value"]),
        "swapout_reduction": ratio(base["pswpout"], obj["pswpout"]),
        "swapin_reduction": ratio(base["pswpin"], obj["pswpin"]),
        "major_fault_reduction": ratio(base["major_faults"], obj["major_faults"]),
    }
    return {"medians": per, "ratios": ratios}


def _json_safe(value: Any) -> Any:
    """JSON has no infinity: inf -> the string "inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def write_csv(rows: list[RunRow], path: Path) -> None:
    from objtier.outputs import open_private

    with open_private(path, binary=False, what="results") as f:  # mode 0600
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in asdict(row).items()})


def write_summary(summary: dict[str, Any], path: Path) -> None:
    from objtier.outputs import write_private

    write_private(path, json.dumps(_json_safe(summary), indent=1) + "\n", "summary")


def read_summary(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())
