"""`objtier sweep per-object --recording RUN.otr`: how much each object alone costs when it is slow.

From a recording of the program (`objtier record`), every object with at least 1 % of the
sampled accesses (MIN_SHARE) gets an arm in which only it is on the slow side, on the swap tier:

    arm "all fast"   a plan with every recorded object fast (mlocked by the runtime); cgroup
                     limit = the measured footprint (as --knob local=100)
    arm <object X>   a plan with X slow (MADV_COLD by the runtime, its pages free to be
                     swapped) and every other object fast (mlocked; mlock limit = the most
                     bytes of them live at once); cgroup limit = that + the footprint outside
                     the recorded objects (text, stacks, small allocations; at least
                     MIN_UNLOCKED_BYTES), so X's pages are the ones that do not fit at the
                     fast objects' peak — except the RUNTIME_UNLOCKED_BYTES (4 MiB) the
                     runtime keeps unlocked under any limit, which X may hold: an object of a
                     few MiB is then mostly resident and its arm understates its sensitivity
                     (`room_share` in the output: that room / its size). Where objects live at
                     different times (a program's set-up temporaries), X may also find room
                     while the others are below their peak

Arms run in interleaved rounds (all fast, X1, X2, ..., all fast, X1, ...), `repeat` rounds,
each run with the stat-flush reader. Per object: median FoM and its ratio to the all-fast
median (performance: < 1 = slower), sorted most sensitive first. An arm is a measurement only
when more than half its runs succeeded (arm_result); otherwise what its runs say is:

    bound     every failed run ran into the timeout: the median run took at least
              N x the all-fast median wall time, "≥ N× slower" (N: the median over the arm's
              runs of wall time / the all-fast median wall time, a timed-out run counting its
              wall time, which its finish would have exceeded); the ratio is at most 1/N and
              the loss at least N - 1
    killed    a failed run was killed (OOM kill, signal): nothing about its speed
    failed    a failed run exited non-zero or printed no FoM With `pairs`, one more arm
per pair of the most accessed objects (both slow). The cumulative curve predicts the FoM when
the objects are made fast one by one in the order of measured loss per byte (the most loss
avoided per fast byte first), by the multiplicative model, or the pairwise one when pairs
were measured (objtier.sweep.interaction):

    loss_i       = 1 / ratio_i - 1                      (extra time when i alone is slow)
    FoM(S fast)  = model's prediction with the measured objects not in S slow
    fast bytes   = (bytes of S + bytes of the objects under MIN_SHARE, kept fast) / all bytes

The curve is estimated, not measured; docs/sweep.md says how to check it.
Outputs in DIR: perobject.json (sweep.json's "objects" and "curve"), sensitivity.csv (one row
per measured object: context_key, occurrence, size, label, median_ratio, loss, loss_per_mib,
result; a bound's loss is its lower bound N - 1, a killed or failed arm's inf),
sweep.csv (every run), runs/ (each run's trace of PLACEMENT records).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from objtier.errors import UsageError
from objtier.sweep.metric import bootstrap_median_ci, performance, worst
from objtier.sweep.perobject_arms import (Arm, judge_run, keep_run, live_peak, prepare_arms,
                                          write_runs)

MIN_SHARE = 0.01
MIN_UNLOCKED_BYTES = 2 << 20   # the least room an arm gets for what is outside the objects
#: the runtime never locks within 4 MiB of its cgroup's limit (native/runtime/place/tier_swap.c
#: MIN_UNLOCKED): every arm's limit carries it, and it is room the slow objects can hold
RUNTIME_UNLOCKED_BYTES = 4 << 20
ALL_FAST = "all fast"


def candidate_rows(objects, min_share: float = MIN_SHARE) -> np.ndarray:
    """Rows of the plannable objects with at least min_share of all sampled accesses, most
    accessed first."""
    total = float(objects.accesses.sum())
    if total <= 0:
        return np.zeros(0, dtype=np.int64)
    share = objects.accesses / total
    rows = np.flatnonzero((share >= min_share) & objects.plannable & (objects.size > 0))
    return rows[np.argsort(-objects.accesses[rows], kind="stable")]


def _median(values, higher_is_better: bool) -> float | None:
    counted = [v if v is not None else worst(higher_is_better) for v in values]
    return float(np.median(counted)) if counted else None


def _statuses(arm: Arm) -> list[str]:
    """Each run's status (an arm made by hand may have none: then ok or failed)."""
    if len(arm.statuses) == len(arm.foms):
        return list(arm.statuses)
    return ["ok" if v is not None else "failed" for v in arm.foms]


def _slower(value: float) -> str:
    return f"≥ {value:.3g}× slower"


def arm_result(arm: Arm, all_fast: Arm, higher_is_better: bool) -> dict[str, Any]:
    """What an arm's runs say (the module docstring): result (measured | bound | killed |
    failed), result_text as shown, median_fom and median_ratio (measured only), ratio_at_most
    and slower_at_least (bound only), failures {status: runs}."""
    statuses = _statuses(arm)
    failures: dict[str, int] = {}
    for status in statuses:
        if status != "ok":
            failures[status] = failures.get(status, 0) + 1
    out: dict[str, Any] = {"result": "measured", "result_text": "", "median_fom": None,
                           "median_ratio": None, "ratio_at_most": None,
                           "slower_at_least": None, "failures": failures}
    ok = sum(v is not None for v in arm.foms)
    if arm.foms and 2 * ok > len(arm.foms):
        m = _median(arm.foms, higher_is_better)
        ratio = performance(m, _median(all_fast.foms, higher_is_better), higher_is_better)
        out.update(median_fom=m, median_ratio=ratio,
                   result_text="-" if ratio is None else f"{ratio:.3f}")
        return out
    base = [w for w, v in zip(all_fast.walls, all_fast.foms) if v is not None and w]
    walls = [w for w in arm.walls if w]
    if failures and set(failures) == {"timeout"} and base and len(walls) == len(arm.foms):
        slower = float(np.median(walls)) / float(np.median(base))
        out.update(result="bound", slower_at_least=slower, ratio_at_most=1.0 / slower,
                   result_text=_slower(slower))
        return out
    killed = [s for s in failures if s == "OOM-killed" or s.startswith("killed")]
    if killed or "timeout" in failures:
        out.update(result="killed", result_text="killed (" + ", ".join(
            f"{failures[s]} {s}" for s in failures) + ")")
    else:
        out.update(result="failed", result_text="failed (" + ", ".join(
            f"{failures[s]} {s}" for s in failures) + ")" if failures else "no runs")
    return out


def _loss(result: dict[str, Any]) -> float:
    """1 / ratio - 1 for a measurement, the lower bound N - 1 for a bound, inf otherwise."""
    if result["result"] == "measured":
        ratio = result["median_ratio"]
        return (1.0 / ratio - 1.0) if ratio else float("inf")
    if result["result"] == "bound":
        return result["slower_at_least"] - 1.0
    return float("inf")


def _sort_key(row: dict[str, Any]) -> float:
    """Most sensitive first: the ratio, or its bound; killed and failed arms before all."""
    for key in ("median_ratio", "ratio_at_most"):
        if row.get(key) is not None:
            return row[key]
    return -1.0


def ratios(arms: list[Arm], higher_is_better: bool,
           room: int = RUNTIME_UNLOCKED_BYTES) -> list[dict[str, Any]]:
    """Per object arm (arms[1:] but pairs): what its runs say (arm_result), the median FoM's
    bootstrap interval (measured arms), the loss (a lower bound for a bound: loss_is_bound);
    sorted most sensitive (lowest ratio or ratio bound) first. Failed runs count as the worst
    FoM in a measured arm's median, as in the metric. room: bytes the slow object could keep
    in fast memory anyway (the swap tier's unlocked room; 0 on the NUMA tier)."""
    out = []
    for arm in arms[1:]:
        if arm.kind == "pair":
            continue
        result = arm_result(arm, arms[0], higher_is_better)
        counted = [v if v is not None else worst(higher_is_better) for v in arm.foms]
        low, high = (bootstrap_median_ci(counted) if counted and result["result"] == "measured"
                     else (None, None))
        loss = _loss(result)
        out.append({"object": arm.label, "context_key": arm.context_key,
                    "occurrence": arm.occurrence, "size": arm.size,
                    "access_share": round(arm.share, 6),
                    "room_share": round(min(1.0, room / max(arm.size, 1)), 4),
                    "runs": len(arm.foms),
                    "failed": sum(v is None for v in arm.foms), **result,
                    "ci": [low, high], "loss": loss,
                    "loss_is_bound": result["result"] == "bound",
                    "loss_per_mib": loss / max(arm.size / (1 << 20), 1e-9)})
    out.sort(key=_sort_key)
    return out


def pair_ratios(arms: list[Arm], higher_is_better: bool) -> list[dict[str, Any]]:
    """Per pair arm: the two objects (labels), runs, failures and what its runs say
    (arm_result: the median ratio to all fast, or a bound)."""
    out = []
    for arm in arms[1:]:
        if arm.kind != "pair":
            continue
        out.append({"objects": list(arm.label.split(" + ", 1)), "size": arm.size,
                    "runs": len(arm.foms), "failed": sum(v is None for v in arm.foms),
                    **arm_result(arm, arms[0], higher_is_better)})
    return out


def pair_table(pairs: list[dict[str, Any]]) -> dict[frozenset, float]:
    """{frozenset of the two labels: median ratio} of pair_ratios() rows; a bound pair by its
    ratio bound (its loss is then a lower bound), a killed or failed one by None."""
    return {frozenset(p["objects"]): p["median_ratio"] if p.get("median_ratio") is not None
            else p.get("ratio_at_most") for p in pairs}


def cumulative_curve(rows: list[dict[str, Any]], total_bytes: int,
                     model: str = "multiplicative",
                     terms: dict[frozenset, float] | None = None) -> list[dict[str, Any]]:
    """The cumulative curve: objects made fast in order of loss per byte; each point is
    (fraction of bytes fast, predicted relative FoM by `model` (objtier.sweep.interaction),
    the additive model's prediction, the object just made fast; upper_bound: a slow object's
    loss is a lower bound (a timed-out arm), so the prediction is at most that)."""
    from objtier.sweep.interaction import predict

    order = sorted(rows, key=lambda r: -r["loss_per_mib"])
    losses = {r["object"]: r["loss"] for r in rows}
    bounds = {r["object"] for r in rows if r.get("loss_is_bound")}
    measured = sum(r["size"] for r in rows)
    fast_bytes = max(0, total_bytes - measured)   # objects under MIN_SHARE: kept fast
    points = []
    for k in range(len(order) + 1):
        fast_bytes += order[k - 1]["size"] if k else 0
        # inf when a slow object failed; a negative loss (faster when slow: noise) counts 0
        slow = [r["object"] for r in order[k:]]
        points.append({"fast_fraction": fast_bytes / total_bytes if total_bytes else 0.0,
                       "predicted_fom": predict(model, slow, losses, terms),
                       "predicted_additive": predict("additive", slow, losses),
                       "added": order[k - 1]["object"] if k else None,
                       "upper_bound": bool(bounds.intersection(slow))})
    return points


def sensitivity_csv(rows: list[dict[str, Any]]) -> str:
    text = io.StringIO()
    fields = ("context_key", "occurrence", "size", "label", "access_share", "median_ratio",
              "loss", "loss_per_mib", "runs", "failed", "result")
    writer = csv.DictWriter(text, fieldnames=fields)
    writer.writeheader()
    for r in rows:
        writer.writerow({**{k: r.get(k) for k in fields}, "label": r["object"]})
    return text.getvalue()


@dataclass
class PerObjectSettings:
    recording: Path
    repeat: int = 5
    stack_depth: int = 8
    swap: str = "zram"
    min_share: float = MIN_SHARE
    timeout_s: float | None = None
    output: Path = Path("sweep-out")
    force: bool = False
    pairs: int = 0                 # pair arms among this many most accessed objects (0: none)
    tier: str = "swap"             # swap | numa
    fast_nodes: str | None = None  # numa: node lists (default: detected)
    slow_nodes: str | None = None


def load_objects(recording: Path):
    """(object table, page size) of a recording."""
    from objtier import plan as planner
    from objtier.analysis.objects import object_table
    from objtier.trace import open_trace
    from objtier.trace.columns import page_bytes

    trace = open_trace(recording)
    return planner.object_table(object_table(trace)), page_bytes(trace)


def object_arms(objects, rows, pairs: int = 0) -> list[Arm]:
    """The all-fast arm, then one arm per row with only that object slow, then one arm per
    pair of the first `pairs` rows (the most accessed) with those two slow."""
    total = float(objects.accesses.sum()) or 1.0
    arms = [Arm(0, ALL_FAST, kind="all fast")] + [
        Arm(i, str(objects.label[r]), (int(r),), int(objects.size[r]),
            float(objects.accesses[r]) / total, str(objects.context_key[r]),
            int(objects.occurrence[r])) for i, r in enumerate(rows, 1)]
    import itertools

    for a, b in itertools.combinations([int(r) for r in rows[:max(0, pairs)]], 2):
        arms.append(Arm(len(arms), f"{objects.label[a]} + {objects.label[b]}", (a, b),
                        int(objects.size[a] + objects.size[b]),
                        float(objects.accesses[a] + objects.accesses[b]) / total, kind="pair"))
    return arms


def run_per_object(command: list[str], settings: PerObjectSettings, fom,
                   say: Callable[[str], None] = lambda text: None,
                   on_run: Callable[[int, int, str], None] = lambda i, n, s: None
                   ) -> dict[str, Any]:
    """One arm per object (see the module docstring); returns perobject.json's content."""
    from objtier.sweep.output import write_private

    if settings.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {settings.repeat}")
    if settings.pairs < 0 or settings.pairs == 1:
        raise UsageError(f"--pairs must be 0 or at least 2, got {settings.pairs}")
    if settings.tier not in ("swap", "numa"):
        raise UsageError(f"--tier must be swap or numa, got {settings.tier!r}")
    numa = None
    if settings.tier == "numa":
        from objtier.sweep.perobject_numa import numa_tiers

        numa = numa_tiers(settings.fast_nodes, settings.slow_nodes)   # refuses one node
    objects, page = load_objects(settings.recording)
    rows = candidate_rows(objects, settings.min_share)
    if not len(rows):
        raise UsageError(f"{settings.recording}: no object has {settings.min_share:.0%} of the "
                         f"sampled accesses (record with a higher --rate?)")
    arms = object_arms(objects, rows, settings.pairs)
    fast_total = int(objects.size[objects.plannable].sum())   # the curve's "all bytes"
    singles = sum(arm.kind == "object" for arm in arms)
    say(f"{singles} object(s) with >= {settings.min_share:.0%} of the accesses"
        f"{f', {len(arms) - 1 - singles} pair(s)' if len(arms) - 1 > singles else ''}; "
        f"{len(arms) * settings.repeat} runs on the {settings.tier} tier")

    def document(footprint: int) -> dict[str, Any]:
        from objtier.sweep.interaction import pair_terms

        ranked = ratios(arms, fom.higher_is_better,
                        0 if settings.tier == "numa" else RUNTIME_UNLOCKED_BYTES)
        pairs = pair_ratios(arms, fom.higher_is_better)
        terms = pair_terms({r["object"]: r["loss"] for r in ranked}, pair_table(pairs))
        model = "pairwise" if pairs else "multiplicative"
        # the timeout: as given, or (the default, set after the first run) what the runs it
        # killed lasted
        timed = [w for arm in arms for w, s in zip(arm.walls, arm.statuses)
                 if s == "timeout" and w]
        timeout = settings.timeout_s or (round(min(timed), 1) if timed else None)
        return {**_head(command, settings, fom), "footprint_bytes": footprint,
                "timeout_s": timeout,
                "tier": settings.tier, **({"numa": numa.describe()} if numa else {}),
                "all_fast": {"fom": arms[0].foms}, "objects": ranked, "pairs": pairs,
                "model": model, "curve": cumulative_curve(ranked, fast_total, model, terms)}

    def save(fp: int) -> None:
        write_private(settings.output / "perobject.json",
                      (json.dumps(document(fp), indent=1) + "\n").encode())

    if numa is not None:
        from objtier.sweep.perobject_numa import run_numa_arms

        footprint = run_numa_arms(command, objects, page, arms, settings, fom, numa, say,
                                  on_run, save)
    else:
        footprint = run_arms(command, objects, page, arms, settings, fom, say, on_run, save)
    doc = document(footprint)
    write_private(settings.output / "perobject.json", (json.dumps(doc, indent=1) + "\n").encode())
    write_private(settings.output / "sensitivity.csv", sensitivity_csv(doc["objects"]).encode())
    from objtier.sweep.page import write_sweep_page

    write_sweep_page(settings.output, perobject=doc)
    return doc


def _head(command, settings, fom) -> dict[str, Any]:
    from objtier.sweep.output import machine_info, tool_version

    return {"knob": "per-object", "kind": "real", "command": command, "tier": settings.tier,
            "recording": str(settings.recording), "repeat": settings.repeat,
            "tool_version": tool_version(), "machine": machine_info(),
            "fom": {"source": fom.describe(), "higher_is_better": fom.higher_is_better}}


def run_arms(command: list[str], objects, page: int, arms: list[Arm],
             settings: PerObjectSettings, fom, say: Callable[[str], None],
             on_run: Callable[[int, int, str], None],
             after_run: Callable[[int], None] = lambda footprint: None) -> int:
    """Run every arm `settings.repeat` times in interleaved rounds on one swap tier; each
    arm's FoMs go to arm.foms, every run to DIR/sweep.csv. Returns the footprint [bytes]."""
    from objtier import enforcement as enforce
    from objtier.experiments.measure import run_measured
    from objtier.tiers.spool import Spool
    from objtier.record.launch import runtime_env
    from objtier.sweep.knobs import KnobOptions, LocalKnob

    plans, runs_dir = prepare_arms(command, objects, page, arms, settings)
    plannable = np.flatnonzero(objects.plannable)
    outside_objects = None        # footprint - peak of the recorded objects: set once measured
    knob = LocalKnob([100], KnobOptions(swap=settings.swap))
    records: list = []             # RunRecord, one per run
    timeout = settings.timeout_s
    order = [(r, arm) for r in range(1, settings.repeat + 1) for arm in arms]
    with knob:
        knob.prepare(command, say)
        footprint = knob.footprint
        outside_objects = max(footprint - live_peak(objects, plannable), MIN_UNLOCKED_BYTES)
        for i, (repeat, arm) in enumerate(order, 1):
            plan, plan_text = plans[arm.index]
            # locked: the fast objects, at most as many bytes as are live at once; unlocked
            # room: what the program holds outside the recorded objects (text, stacks, small
            # allocations), so the slow ones have none at the fast objects' peak
            fast_rows = np.setdiff1d(plannable, np.asarray(arm.slow_rows, dtype=np.int64))
            mlock = max(live_peak(objects, fast_rows), 1)
            limit = mlock + outside_objects + RUNTIME_UNLOCKED_BYTES + arm.room_bytes
            trace_dir = runs_dir / f"{len(records) + 1:03d}-{arm.index:02d}.otr"
            trace_dir.mkdir(mode=0o700)
            with Spool(trace_dir) as spool:   # the trace waits on tmpfs (tiers.spool)
                run = enforce.PlanRun(plan_text, mlock, enforce.plan_min_size(plan),
                                      settings.stack_depth, spool.path)
                env = runtime_env(run.settings())
                with knob.at_bytes(limit, command, env) as setup:
                    m = run_measured(arm.label, command, env=env, preexec=setup.preexec,
                                     timeout_s=timeout)
            judged = judge_run(m, fom, timeout, setup.oom_kills, first=not records)
            found = enforce.read_enforcement(plan, trace_dir)
            timeout = keep_run(records, arm, repeat, m, judged,
                               f"{limit >> 20} MiB, {len(arm.slow_rows)} object(s) slow",
                               {**setup.extra, "matched": found.matched if found else None,
                                "locked_bytes": found.locked_bytes if found else None},
                               timeout)
            write_runs(settings.output, records)
            after_run(footprint)
            on_run(i, len(order), arm.label)
    return footprint


