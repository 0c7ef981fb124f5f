"""Results of an A/B comparison: one row per run, medians per configuration, ratios, files.

Configurations (arms): "baseline" (kernel reclaim alone, with the stat-flush reader),
"objtier" (plan enforced, with the same reader), and on request "objtier-noguard" (plan
enforced without the runtime's pressure guard, with the reader) and "kernel-raw" (kernel
reclaim without the reader: reported for survival only, never given a ratio).

Ratios are always baseline / objtier for costs (time, swap traffic, faults: > 1 means objtier
is better) and objtier / baseline for the figure of merit (a rate: > 1 means objtier is
better). Medians are over the successful runs (exit status 0) of a configuration only; failed
runs (among them those the memory cgroup's OOM killer ended: `oom_killed`) are counted, never
timed. A ratio is given only when both of its arms finished every run: an arm that died even
once gets none (the medians of its survivors would flatter it), and the summary says why.
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
#: every arm in the order a repetition runs them; the last two only on request
ARMS = ("baseline", "objtier", "objtier-noguard", "kernel-raw")
#: arms compared with the baseline (ratios baseline / arm); kernel-raw never is
RATIO_ARMS = ("objtier", "objtier-noguard")


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
    stat_flush_ms: float = 0.0    # the stat-flush reader's period during the run; 0: no reader
    stat_flush_reads: int = 0     # reads of memory.stat the reader made during the run
    stat_flush_max_gap_ms: float = 0.0  # longest time between two of its reads [ms]

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def oom_killed(self) -> bool:
        """Killed by the memory cgroup's OOM killer (a failed run, never a fast one): the
        cgroup's oom_kill counter rose during the run, or, where the kernel has no such
        counter, the program died of SIGKILL that no timeout sent."""
        if self.ok:
            return False
        if self.memcg_oom_kills is not None:
            return self.memcg_oom_kills > 0
        return self.returncode == -9 and not self.timed_out

    @property
    def status(self) -> str:
        """ok | OOM-killed | timeout | killed by signal N | exit N."""
        if self.ok:
            return "ok"
        if self.oom_killed:
            return "OOM-killed"
        if self.timed_out:
            return "timeout"
        if self.returncode < 0:
            return f"killed by signal {-self.returncode}"
        return f"exit {self.returncode}"


#: CSV columns: the row's fields, then its status (derived; read back as text)
COLUMNS = [f.name for f in fields(RunRow)] + ["status"]

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


def survival(rows: list[RunRow]) -> dict[str, int]:
    """How an arm's runs ended: runs, finished, died (= failed), of those OOM-killed and
    timed out."""
    return {"runs": len(rows), "finished": sum(r.ok for r in rows),
            "failed": sum(not r.ok for r in rows),
            "oom_killed": sum(r.oom_killed for r in rows),
            "timed_out": sum(r.timed_out and not r.oom_killed for r in rows)}


def survival_text(alive: dict[str, int]) -> str:
    """'5/5 finished' or '1/5 finished (4 OOM-killed)'."""
    why = ", ".join(text for text in (
        f"{alive['oom_killed']} OOM-killed" if alive["oom_killed"] else "",
        f"{alive['timed_out']} timed out" if alive["timed_out"] else "",
        f"{alive['failed'] - alive['oom_killed'] - alive['timed_out']} failed otherwise"
        if alive["failed"] - alive["oom_killed"] - alive["timed_out"] else "") if text)
    return f"{alive['finished']}/{alive['runs']} finished" + (f" ({why})" if why else "")


def run_warnings(rows: list[RunRow]) -> list[str]:
    """The warnings the runs themselves give (failed and OOM-killed runs), as printed by
    `compare` and kept in summary.json."""
    failed = sum(not r.ok for r in rows)
    if not failed:
        return []
    arms = sorted({r.config for r in rows if not r.ok})
    oom = {c: sum(r.oom_killed for r in rows if r.config == c) for c in arms}
    detail = "" if not any(oom.values()) else (
        " (" + ", ".join(f"{n} {c}" for c, n in oom.items() if n)
        + " run(s) killed by the memory cgroup's OOM killer)")
    return [f"{failed} run(s) failed{detail}; their rows are in the CSV, they are left out "
            f"of the medians, and an arm with a failed run gets no ratio"]


def _ratios(base: dict[str, Any], arm: dict[str, Any]) -> dict[str, Any]:
    # the timed region is the program's FOM line's; a program without one is timed whole
    has_fom = base["fom_seconds"] is not None and arm["fom_seconds"] is not None
    timed = "fom_seconds" if has_fom else "wall_s"
    return {
        "speedup": ratio(base["wall_s"], arm["wall_s"]),
        "timed_speedup": ratio(base[timed], arm[timed]),
        "timed_speedup_basis": ("the program's timed region (FOM line)" if has_fom
                                else "wall time (the program prints no FOM line)"),
        "fom_ratio": ratio(arm["fom_value"], base["fom_value"]),
        "swapout_reduction": ratio(base["pswpout"], arm["pswpout"]),
        "swapin_reduction": ratio(base["pswpin"], arm["pswpin"]),
        "major_fault_reduction": ratio(base["major_faults"], arm["major_faults"]),
    }


def withheld_because(per: dict[str, dict[str, Any]], arm: str) -> str | None:
    """Why the ratios of arm over the baseline are not given (an arm died), or None."""
    reasons = [f"{name}: {survival_text(per[name])}" for name in ("baseline", arm)
               if per[name]["runs"] == 0 or per[name]["finished"] < per[name]["runs"]]
    if not reasons:
        return None
    return "; ".join(reasons) + " — an arm that died gets no ratio"


def summarize(rows: list[RunRow]) -> dict[str, Any]:
    """Medians and survival per arm (baseline and objtier always, other arms where they ran)
    and the ratios of each objtier arm over the baseline: `ratios` for objtier, `arm_ratios`
    for every ratio arm. Ratios whose arms did not both finish every run are None, with the
    reason in `ratios_withheld` / `arm_ratios[arm]["withheld"]`."""
    per: dict[str, dict[str, Any]] = {}
    present = [a for a in ARMS if a in CONFIGS or any(r.config == a for r in rows)]
    present += sorted({r.config for r in rows} - set(present))
    for config in present:
        mine = [r for r in rows if r.config == config]
        per[config] = {**survival(mine), **{f: median_of(mine, f) for f in MEDIAN_FIELDS}}
    arm_ratios: dict[str, dict[str, Any]] = {}
    for arm in RATIO_ARMS:
        if arm not in per:
            continue
        why = withheld_because(per, arm)
        values = _ratios(per["baseline"], per[arm])
        arm_ratios[arm] = {**({k: None for k in values} if why else values), "withheld": why}
    ratios = {k: v for k, v in arm_ratios["objtier"].items() if k != "withheld"}
    return {"medians": per, "ratios": ratios,
            "ratios_withheld": arm_ratios["objtier"]["withheld"], "arm_ratios": arm_ratios}


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
            writer.writerow({**{k: ("" if v is None else v) for k, v in asdict(row).items()},
                             "status": row.status})


def write_summary(summary: dict[str, Any], path: Path) -> None:
    from objtier.outputs import write_private

    write_private(path, json.dumps(_json_safe(summary), indent=1) + "\n", "summary")


def read_summary(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def prepare_output(output: Path, force: bool) -> Path:
    """A comparison's output directory (either tier): new, empty, or an earlier comparison's
    (one with summary.json or plan.json), replaced only with --force; created mode 0700,
    never through a symbolic link."""
    from objtier.outputs import replace_dir

    return replace_dir(output, force, is_comparison, what="comparison directory",
                       reuse_empty=True)


def is_comparison(path: Path) -> bool:
    return (path / "summary.json").exists() or (path / "plan.json").exists()
