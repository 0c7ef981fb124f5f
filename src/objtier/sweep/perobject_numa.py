"""`objtier sweep per-object --recording RUN.otr --tier numa`: the per-object arms on a NUMA tier.

An arm's plan has its slow set on the slow nodes and every other recorded object on the fast
nodes; the runtime enforces it at allocation with mbind (OBJTIER_TIER=numa, strict binding:
native/runtime/place/tier_numa.c). Objects under the plan's smallest size (and everything not
recorded: text, stacks) follow the kernel's default policy. No cgroup, no swap: the object under
test has all its pages on the slow node, so there is no "room" correction (room_share 0).

Every run also writes RESIDENCY records (a pass every RESIDENCY_MS and one at exit); the run's
row in sweep.csv keeps what they show: the share of the slow set's present pages that are on the
slow nodes (`slow_share_tested`, 1.0 when the binding held) and of the other recorded objects'
(`slow_share_rest`, 0.0 when they stayed fast), and the MBIND actions and failures. An object
freed before the first pass (short runs) has no residency; its share is then None.

The fast and slow nodes come from objtier.tiers.numa_topology (memory tiers, HMAT, CPU-less
nodes), or --fast-nodes/--slow-nodes. A machine with no slow node (one NUMA node, like the
development machines) is refused with one line; the two-node QEMU guest (objtier testbed) runs
the mechanics, where both nodes have the same speed, so its ratios measure nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from objtier.errors import EnvironmentProblem

RESIDENCY_MS = 200
MBIND = 5     # enum ot_placement_action


@dataclass
class NumaTiers:
    fast: list[int]
    slow: list[int]
    source: str

    @property
    def fast_list(self) -> str:
        return ",".join(map(str, self.fast))

    @property
    def slow_list(self) -> str:
        return ",".join(map(str, self.slow))

    def describe(self) -> dict[str, Any]:
        return {"fast_nodes": self.fast, "slow_nodes": self.slow, "source": self.source}


def numa_tiers(fast_nodes: str | None, slow_nodes: str | None,
               sysfs: str | Path = "/sys") -> NumaTiers:
    """The fast and slow nodes of this machine (or the given lists); EnvironmentProblem, one
    line, when there is no slow node."""
    from objtier.enforcement import check_nodes
    from objtier.tiers.numa_topology import detect_tiers, tier_map_from_sets

    fast_text = check_nodes(fast_nodes, "--fast-nodes")
    slow_text = check_nodes(slow_nodes, "--slow-nodes")
    overrides = tier_map_from_sets(fast_text, slow_text) if (fast_text or slow_text) else None
    decision = detect_tiers(sysfs, overrides)      # an unknown node: UsageError, one line
    if not decision.has_slow_tier or not decision.fast:
        raise EnvironmentProblem(f"--tier numa needs a fast and a slow NUMA node: "
                                 f"{decision.message}")
    return NumaTiers(sorted(decision.fast), sorted(decision.slow), decision.source)


def residency_shares(trace_dir: Path, slow_keys: set[str], slow_nodes: set[int]
                     ) -> dict[str, Any]:
    """From a run's trace: slow-node share of the present pages of the objects whose context
    key is in slow_keys (tested) and of the other objects (rest), from each object's last
    residency pass, and the MBIND actions (all, failed)."""
    from objtier.analysis.objects import object_table
    from objtier.errors import TraceError
    from objtier.experiments.compare_numa import last_residency, object_shares
    from objtier.trace import open_trace

    out: dict[str, Any] = {"slow_share_tested": None, "slow_share_rest": None,
                           "mbind": 0, "mbind_failed": 0}
    try:
        trace = open_trace(trace_dir)
        table = object_table(trace, labels=False)
        seqs = trace.allocations.column("seq").to_pylist()
        residency = trace.residency.to_pylist()
        placements = trace.placements.to_pylist()
    except (TraceError, OSError):
        return out
    binds = [p for p in placements if p["action"] == MBIND]
    out["mbind"] = len(binds)
    out["mbind_failed"] = sum(p["result"] < 0 for p in binds)
    shares = object_shares(last_residency(residency), frozenset(slow_nodes))
    keys = table.column("context_key").to_pylist()
    objects = table.column("object").to_pylist()
    pages = {"tested": [0, 0], "rest": [0, 0]}          # [slow, present]
    for obj, key in zip(objects, keys):
        share = shares.get(seqs[obj])
        if share is None or not key:
            continue
        which = pages["tested" if key in slow_keys else "rest"]
        which[0] += share["pages_slow"]
        which[1] += share["pages_slow"] + share["pages_fast"]
    for name, (slow, present) in pages.items():
        out[f"slow_share_{name}"] = round(slow / present, 6) if present else None
    return out


def run_numa_arms(command: list[str], objects, page: int, arms, settings, fom, tiers: NumaTiers,
                  say: Callable[[str], None], on_run: Callable[[int, int, str], None],
                  after_run: Callable[[int], None] = lambda footprint: None) -> int:
    """Every arm `settings.repeat` times in interleaved rounds, the plan enforced with mbind;
    each arm's FoMs go to arm.foms, every run to DIR/sweep.csv (with its residency shares)
    and its output to DIR/runs/. Returns the recorded objects' peak live bytes (no cgroup
    measures a footprint here)."""
    from objtier.experiments.measure import run_measured
    from objtier import enforcement as enforce
    from objtier.record.launch import runtime_env as launch_env
    from objtier.runtime_settings import runtime_env
    from objtier.sweep.output import write_private
    from objtier.sweep.perobject_arms import (judge_run, keep_run, live_peak, prepare_arms,
                                              write_runs)

    plans, runs_dir = prepare_arms(command, objects, page, arms, settings)
    footprint = live_peak(objects, np.flatnonzero(objects.plannable))
    say(f"NUMA tier: fast nodes {tiers.fast_list}, slow nodes {tiers.slow_list} "
        f"({tiers.source}); the object under test is bound to the slow nodes")
    records: list = []             # RunRecord, one per run
    timeout = settings.timeout_s
    order = [(r, arm) for r in range(1, settings.repeat + 1) for arm in arms]
    for i, (repeat, arm) in enumerate(order, 1):
        plan, plan_text = plans[arm.index]
        stem = runs_dir / f"{len(records) + 1:03d}-{arm.index:02d}"
        trace_dir = stem.with_suffix(".otr")
        trace_dir.mkdir()
        env = launch_env(runtime_env(
            **enforce.NO_SAMPLING, plan=plan_text.resolve(), tier="numa",
            fast_nodes=tiers.fast_list, slow_nodes=tiers.slow_list, numa_strict=True, min_size=enforce.plan_min_size(plan),
            stack_depth=settings.stack_depth, output=trace_dir.resolve(),
            residency_ms=RESIDENCY_MS), base=_clean_environ())
        m = run_measured(arm.label, command, env=env, timeout_s=timeout)
        write_private(stem.with_suffix(".out"), m.stdout.encode())
        judged = judge_run(m, fom, timeout, 0, first=not records)
        slow_keys = {str(objects.context_key[r]) for r in arm.slow_rows}
        shares = residency_shares(trace_dir, slow_keys, set(tiers.slow))
        found = enforce.read_enforcement(plan, trace_dir)
        timeout = keep_run(records, arm, repeat, m, judged,
                           f"{len(arm.slow_rows)} object(s) on node(s) {tiers.slow_list}",
                           {**shares, "matched": found.matched if found else None}, timeout)
        write_runs(settings.output, records)
        after_run(footprint)
        on_run(i, len(order), arm.label)
    return footprint


def _clean_environ() -> dict[str, str]:
    """This process's environment without OBJTIER_* settings (the arm's own are added)."""
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
