"""Phase merging (DAPHICX §2.2) and per-phase placements."""

from __future__ import annotations

import numpy as np
import pytest

from objtier.errors import UsageError
from objtier.plan import ROOT, merge_phases, object_table, phase_table, plan_phases, rank
from .plan_synthetic import PAGE, fast_pages, table

MS = 1_000_000

# Objects: 0 = init buffer, 1 = compute array, 2 = touched outside any phase; 4 pages each.
#   init      top level, 100 ms, reads object 0
#   compute   top level, 500 ms (two runs of 250 ms), reads object 1
#   tiny      in compute, 1 ms per run -> merged by duration
#   inner     in compute, 200 ms, reads object 1 like compute -> merged by similarity
#   scan      in compute, 300 ms, reads object 0 only -> keeps its own plan
PHASES = {
    "phase": ["init", "compute", "compute", "tiny", "inner", "scan"],
    "parent": [None, None, None, "compute", "compute", "compute"],
    "start_ns": [0, 100 * MS, 400 * MS, 110 * MS, 150 * MS, 420 * MS],
    "end_ns": [100 * MS, 350 * MS, 650 * MS, 111 * MS, 350 * MS, 620 * MS],
}
ACCESSES = {
    "phase": ["init", "compute", "tiny", "tiny", "inner", "scan"],
    "object": [0, 1, 0, 2, 1, 0],
    "accesses": [100.0, 300.0, 5.0, 5.0, 200.0, 80.0],
}
# totals: object 0 = 100 + 5 + 80 = 185, object 1 = 500, object 2 = 5 + 20 outside phases
OBJECTS = object_table(table([4, 4, 4], [185, 500, 25]))


def merged(**kw):
    return merge_phases(OBJECTS, phase_table(PHASES, ACCESSES), **kw)


def target_of(merge):
    return dict(zip(merge.name, merge.target))


def test_short_and_similar_phases_merge_into_their_parent():
    m = merged(min_duration_ns=10 * MS, similarity=0.9)
    assert target_of(m) == {ROOT: ROOT, "init": "init", "compute": "compute",
                            "tiny": "compute", "inner": "compute", "scan": "scan"}
    reasons = dict(zip(m.name, m.reason))
    assert reasons["tiny"] == "shorter than 10 ms per execution"
    assert reasons["inner"].startswith("access mix similar to its parent's (cosine 1.000)")
    assert reasons["scan"] == "own plan"
    assert dict(zip(m.name, m.mean_duration_ns))["compute"] == 250 * MS
    # compute's accesses now include tiny's and inner's
    assert m.vectors["compute"].tolist() == [5.0, 500.0, 5.0]
    # the root keeps what no phase accounts for
    assert m.vectors[ROOT].tolist() == [0.0, 0.0, 20.0]
    assert m.survivors() == [ROOT, "init", "compute", "scan"]


def test_lower_thresholds_keep_more_phases():
    m = merged(min_duration_ns=0, similarity=1.0)
    # similarity 1.0 still merges inner (identical mix); tiny survives the duration rule
    assert target_of(m)["tiny"] == "tiny"
    assert target_of(m)["inner"] == "compute"


def test_hint_budget_merges_the_most_similar_leaf_first():
    m = merged(min_duration_ns=10 * MS, similarity=0.9, hint_budget=2)
    t = target_of(m)
    # survivors before the budget: init, compute, scan (scan is compute's child).
    # leaves: init (cosine to root 0), scan (cosine to compute [5,500,5] ~ 0.01) -> scan goes
    assert t["scan"] == "compute"
    assert t["init"] == "init" and t["compute"] == "compute"
    assert dict(zip(m.name, m.reason))["scan"] == "over the hint budget of 2 phase(s)"
    m0 = merged(hint_budget=0)
    assert set(m0.target) == {ROOT}


def test_per_phase_placements_pick_each_phase_hot_set():
    result = plan_phases(OBJECTS, PHASES, ACCESSES, rank, 4 * PAGE, PAGE,
                         min_duration_ns=10 * MS, similarity=0.9)
    hot = {name: fast_pages(p) for name, p in result.placements.items()}
    assert hot == {ROOT: [0, 0, 4], "init": [4, 0, 0], "compute": [0, 4, 0], "scan": [4, 0, 0]}


def test_phase_table_errors():
    with pytest.raises(UsageError, match="unknown parent"):
        phase_table({**PHASES, "parent": [None, None, None, "nope", "compute", "compute"]},
                    ACCESSES)
    with pytest.raises(UsageError, match="unknown phase"):
        phase_table(PHASES, {**ACCESSES, "phase": ["x"] * 6})
    with pytest.raises(UsageError, match="end_ns before start_ns"):
        phase_table({**PHASES, "end_ns": [0] * 6}, ACCESSES)
    cyc = {"phase": ["a", "b"], "parent": ["b", "a"], "start_ns": [0, 0],
           "end_ns": [100 * MS, 100 * MS]}
    with pytest.raises(UsageError, match="cycle"):
        merge_phases(OBJECTS, phase_table(cyc, {"phase": [], "object": np.array([], int),
                                                "accesses": np.array([])}))


def test_unlocked_room_counts_only_objects_live_while_their_phase_plan_is_in_force():
    from objtier.plan import phase_spans, spill, unlocked_live_bytes

    # 0 = graph, 1 = comp, 2 = verification array (allocated at the verify phase),
    # 3 = offsets; everything freed at 1000 ms
    cols = table([100, 10, 20, 30], [1100, 500, 2000, 30])
    cols["alloc_ns"] = np.array([0, 0, 900, 0]) * MS
    cols["free_ns"] = np.array([1000, 1000, 1000, 1000]) * MS
    objects = object_table(cols)
    executions = {"phase": ["work", "verify"], "parent": [None, None],
                  "start_ns": [0, 900 * MS], "end_ns": [900 * MS, 1000 * MS]}
    accesses = {"phase": ["work", "work", "work", "verify", "verify", "verify"],
                "object": [0, 1, 3, 0, 1, 2],
                "accesses": [1000.0, 500.0, 30.0, 100.0, 50.0, 2000.0]}
    result = plan_phases(objects, phase_table(executions, accesses), None, spill,
                         100 * PAGE, PAGE)
    work, verify = result.placements["work"], result.placements["verify"]
    # work: comp whole, graph split at the rest; the verification array does not exist yet
    assert fast_pages(work) == [90, 10, 0, 0]
    # verify: the verification array and comp whole, less of the graph
    assert fast_pages(verify) == [70, 10, 20, 0]
    spans = phase_spans(result.merge, executions, end_ns=1000 * MS)
    assert spans == {ROOT: [], "work": [(0, 900 * MS)], "verify": [(900 * MS, 1000 * MS)]}
    # room: offsets (unlocked in both phases, live in both); the verification array is
    # unlocked under work's plan but not live then, locked under verify's
    assert unlocked_live_bytes(work, objects, spans["work"]) == 30 * PAGE
    assert unlocked_live_bytes(verify, objects, spans["verify"]) == 30 * PAGE
    assert unlocked_live_bytes(work) == 50 * PAGE  # the whole run: every wholly slow object
    # a verification array live from the start would need its room under work's plan
    cols["alloc_ns"] = np.zeros(4, dtype=np.int64)
    early = object_table(cols)
    assert unlocked_live_bytes(work, early, spans["work"]) == 50 * PAGE
    # without an end, the root's plan is in force after the last phase, for ever
    assert phase_spans(result.merge, executions)[ROOT] == [(1000 * MS, np.iinfo(np.int64).max)]
