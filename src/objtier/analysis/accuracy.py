"""How well a sampled object table agrees with the exact one of the same program, scored
against each exact metric: loads, and LLC-model misses (what leaves the caches, the metric
the planner reads for a traced recording).

    from objtier.analysis.accuracy import score_tables
    scores = score_tables(exact_table, sampled_table)      # {"loads": Score, "llc_misses": Score}

`exact_table` is the objects view of a recording made with --sampler trace
(objtier.objects_view.objects_view(trace).table: columns loads, stores, llc_misses);
`sampled_table` an object table of a sampled recording of the same binary (its `accesses`).
Objects are matched by context key, occurrence and size (page_samples.matched_rows); an exact
object with no sampled match counts as 0 sampled accesses, sampled objects with no exact match
are left out.

Per metric (a Score):
  spearman   rank correlation (scipy.stats.spearmanr) of sampled accesses vs the exact metric,
             over the scored objects: those holding at least `min_share` of the exact loads
             or of the exact LLC-model misses (one set for both metrics, so that the scores
             differ by the metric only); nan with fewer than two such objects or when the
             sampled or exact values are all equal
  overlap    share of the k scored objects first by sampled accesses that are among the k first
             by the exact metric (k = `top_k`, default a third of the scored objects, >= 1; an
             object tied with the exact k-th counts as among them)
  regret     exact metric the sampled plan leaves in slow memory minus what the plan from the
             exact metric leaves there, as a share of the metric's total over all objects.
             Both plans: the same algorithm (`spill` by default) and fast-tier budget
             (`budget_share` of the footprint, peak live bytes when lifetimes are known) over
             the exact table's rows, the one with the exact metric as `accesses`, the other
             with the sampled accesses; a split object counts its fast bytes pro rata. 0 when
             the sampled table is the exact one; negative when the greedy plan from exact
             counts is beaten by the sampled one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from scipy.stats import spearmanr

from objtier.analysis.page_samples import matched_rows
from objtier.plan import algorithm as plan_algorithm
from objtier.plan.budget import footprint
from objtier.plan.table import object_table as plan_table

METRICS = ("loads", "llc_misses")


@dataclass(frozen=True)
class Score:
    """One exact metric's agreement with the sampled accesses (module docstring)."""

    metric: str            # "loads" or "llc_misses" (a column of the exact table)
    objects: int           # exact objects scored (>= min_share of loads or of misses)
    matched: int           # exact objects with a sampled match (all objects, not only scored)
    spearman: float        # rank correlation over the scored objects; nan when undefined
    top_k: int             # k of the overlap
    overlap: float         # share of the sampled top k in the exact top k, 0..1
    regret: float          # share of the metric's total, -1..1
    slow_sampled: float    # exact metric (count) left in slow memory by the sampled plan
    slow_exact: float      # exact metric (count) left in slow memory by the exact plan
    total: float           # the metric's total over all exact objects (count)


def sampled_on_exact(exact: pa.Table, sampled: pa.Table) -> tuple[np.ndarray, int]:
    """(sampled accesses per exact row, 0 where unmatched; number of exact rows matched)."""
    rows = matched_rows(exact, sampled)
    values = np.zeros(exact.num_rows, dtype=np.float64)
    accesses = sampled.column("accesses").to_numpy(zero_copy_only=False).astype(np.float64)
    keep = rows >= 0
    np.add.at(values, rows[keep], np.nan_to_num(accesses[keep]))
    return values, int(len(np.unique(rows[keep])))


def slow_left(exact: pa.Table, placement, counts: np.ndarray) -> float:
    """Sum of `counts` (per exact row) in slow memory under `placement` (split pro rata)."""
    size = exact.column("size").to_numpy().astype(np.float64)
    fast = np.minimum(placement.fast_bytes.astype(np.float64), size)
    fast_share = np.where(size > 0, fast / np.maximum(size, 1.0), 1.0)
    return float(((1.0 - fast_share) * counts).sum())


def _with_accesses(exact: pa.Table, values: np.ndarray) -> pa.Table:
    return exact.set_column(exact.schema.get_field_index("accesses"), "accesses",
                            pa.array(values.astype(np.float64)))


def budget_bytes(exact: pa.Table, share: float) -> int:
    """`share` of the table's footprint (peak live bytes when lifetimes are known) [bytes]."""
    objects = plan_table(exact)
    return int(share * footprint(objects.size, objects.alloc_ns, objects.free_ns))


def top_overlap(sampled: np.ndarray, exact: np.ndarray, k: int) -> float:
    """Share of the k objects first by `sampled` that are among the k first by `exact`; an
    object tied with the k-th by `exact` counts as among them (ties by `sampled` at the k-th
    place are broken by row order)."""
    if len(exact) == 0:
        return float("nan")
    k = min(k, len(exact))
    chosen = np.argsort(-sampled, kind="stable")[:k]
    kth = np.sort(exact)[::-1][k - 1]
    return float((exact[chosen] >= kth).sum() / k)


def score_tables(exact: pa.Table, sampled: pa.Table, metrics: tuple[str, ...] = METRICS, *,
                 algorithm: str = "spill", budget_share: float = 0.5, min_share: float = 0.01,
                 top_k: int | None = None) -> dict[str, Score]:
    """Score `sampled` against each exact metric of `exact` (module docstring)."""
    missing = [m for m in (*METRICS, *metrics) if m not in exact.column_names]
    if missing:
        raise ValueError(f"the exact table has no {', '.join(missing)} column (use "
                         "objects_view(trace).table of a recording made with --sampler trace)")
    got, matched = sampled_on_exact(exact, sampled)
    counts = {m: exact.column(m).to_numpy().astype(np.float64) for m in {*METRICS, *metrics}}
    scored = np.zeros(exact.num_rows, dtype=bool)
    for m in METRICS:
        total = counts[m].sum()
        if total > 0:
            scored |= counts[m] >= min_share * total
    idx = np.flatnonzero(scored)
    k = max(1, len(idx) // 3) if top_k is None else max(1, min(int(top_k), max(len(idx), 1)))
    plan = plan_algorithm(algorithm)
    budget = budget_bytes(exact, budget_share)
    sampled_plan = plan(_with_accesses(exact, got), budget)
    out = {}
    for m in metrics:
        truth = counts[m]
        rho = float("nan")
        if len(idx) >= 2 and np.ptp(got[idx]) > 0 and np.ptp(truth[idx]) > 0:
            rho = float(spearmanr(got[idx], truth[idx]).statistic)
        overlap = top_overlap(got[idx], truth[idx], k)
        total = float(truth.sum())
        slow_s = slow_left(exact, sampled_plan, truth)
        slow_e = slow_left(exact, plan(_with_accesses(exact, truth), budget), truth)
        out[m] = Score(metric=m, objects=int(len(idx)), matched=matched, spearman=rho,
                       top_k=k, overlap=float(overlap),
                       regret=(slow_s - slow_e) / total if total > 0 else 0.0,
                       slow_sampled=slow_s, slow_exact=slow_e, total=total)
    return out
