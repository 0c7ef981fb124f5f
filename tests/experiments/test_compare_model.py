"""The kernel model on the real swap tier: a program that sweeps an array larger than its
memory limit every iteration (the kernel's LRU keeps none of it), planned by prediction — the
plan must lock part of the swept array, and the objtier arm must swap in fewer pages than
kernel reclaim alone, with each arm's prediction printed beside its measurement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from objtier.experiments.compare_swap import CompareSettings, run_compare

pytestmark = pytest.mark.root

PROGS = Path(__file__).parent / "progs"


@pytest.fixture
def cyclic(compile_c) -> Path:
    return compile_c((PROGS / "cyclic.c").read_text(), "cyclic")


@pytest.mark.heavy   # several minutes: 40 sweeps under pressure, four profiles, two arms
def test_a_swept_array_larger_than_memory_is_partly_locked_and_swaps_in_less(cyclic, tmp_path):
    said: list[str] = []
    settings = CompareSettings(local="50%", repeat=1, output=tmp_path / "out")
    # 40 sweeps (about 0.8 s unlimited): compare warns that profiles of runs under a second
    # are not to be trusted, and at 10 sweeps the model sometimes kept nothing locked
    result = run_compare([str(cyclic), "48", "4", "40"], settings, say=said.append)
    summary = result.summary
    model = summary["model_check"]
    assert model is not None and model["chosen"] != "nothing"
    med = summary["medians"]
    assert med["baseline"]["finished"] == med["objtier"]["finished"] == 1
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    swept = [e for e in plan["entries"] if e["size_min"] == 48 << 20]
    assert swept and 0 < swept[0]["fast_bytes"] < 48 << 20      # part of the sweep is locked
    assert med["objtier"]["locked_bytes"] >= swept[0]["fast_bytes"] - (1 << 20)
    assert med["objtier"]["memcg_refault_anon"] < 0.8 * med["baseline"]["memcg_refault_anon"]
    arms = model["arms"]
    assert arms["baseline"]["measured_swapins"] == med["baseline"]["memcg_refault_anon"]
    assert arms["objtier"]["predicted_swapins"] < arms["baseline"]["predicted_swapins"]
    assert any(line.startswith("model, baseline:") and "predicted" in line for line in said)
    # the same program, same output, under both arms
    outs = {p.read_text() for p in (tmp_path / "out" / "runs").glob("*.out")}
    assert len(outs) == 1 and next(iter(outs)).startswith("sum ")


@pytest.fixture
def rows(compile_c) -> Path:
    return compile_c((PROGS / "rows.c").read_text(), "rows")


@pytest.mark.heavy   # a few minutes: sweeps under pressure, four profiles, two arms
def test_a_matrix_of_small_rows_gets_its_site_partly_locked_and_swaps_in_less(rows, tmp_path):
    """The matrix lives in small blocks only (no tracked object holds it): compare sees that
    in its first profile and watches the sites in the others (the default, --profile
    sites unset), the model sees the site as a row of its own and locks the first chunks of
    its arena, and the objtier arm swaps in less than the kernel."""
    said: list[str] = []
    settings = CompareSettings(local="50%", repeat=1, output=tmp_path / "out")
    # 100k rows of 384 B (about 40 MiB with headers), 300 sweeps: about 2 s unlimited. With
    # 150 the profiles' windows sometimes saw too little of the sweep: the model predicted 6 %
    # fewer swap-ins with the site's chunks locked and placed none (5 of 25 runs, 1 of 6
    # before plans paid the runtime's room, by_model.RUNTIME_BYTES, 2026-12-02; 0 of 8 with 300)
    result = run_compare([str(rows), "100000", "300"], settings, say=said.append)
    summary = result.summary
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    fast = [s for s in plan.get("sites", []) if s["tier"] == "fast"]
    assert fast and fast[0]["lock_bytes"] >= 1 << 20, (plan.get("sites"), said)
    assert plan["model"]["chosen"] == "sites" or plan["model"]["chosen"].endswith("+sites")
    assert any(line.startswith("sites:") and "locked" in line for line in said), said
    assert any("in profiles 2-4: small blocks hold" in line for line in said), said
    med = summary["medians"]
    assert med["baseline"]["finished"] == med["objtier"]["finished"] == 1
    assert med["objtier"]["locked_bytes"] >= fast[0]["lock_bytes"]   # the arena's counts
    # every sweep misses on every unlocked page under LRU and on no locked one: the lock cuts
    # swap-ins by about its share of the site; at least half of that cut must show. Plans
    # lock 8-11 MiB of the 37-39 MiB site since they pay the runtime's room; measured 0.802x
    # the kernel's swap-ins with 8 MiB and 0.744x with 11 MiB (2026-12-03), where a fixed
    # bound of 0.8 failed the first
    cut = fast[0]["lock_bytes"] / fast[0]["est_peak_bytes"]
    assert med["objtier"]["memcg_refault_anon"] < (1 - cut / 2) * \
        med["baseline"]["memcg_refault_anon"], (cut, fast[0])
    arms = summary["model_check"]["arms"]
    assert arms["objtier"]["predicted_swapins"] < arms["baseline"]["predicted_swapins"]
    outs = {p.read_text() for p in (tmp_path / "out" / "runs").glob("*.out")}
    assert len(outs) == 1 and next(iter(outs)).startswith("sum ")
