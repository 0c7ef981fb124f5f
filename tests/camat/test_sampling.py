"""Sampled timing of the C-AMAT model (`camat --sample PERIOD`) against the exact model, on the
calibration streams and on a compiled program traced with the real runtime and read back with
the real reader: accesses and misses equal, C-AMAT, C_M and pAMP within the tolerances below,
the concurrency of a pointer chase and of streaming loads, the APC identity on the sampled
figures, the units' accounting, the labels of camat.json and the table, and bad values.

Tolerances (objtier.camat.sampling.TOLERANCE, docs/camat.md "Sampled timing"): C-AMAT of every
level with at least 200 measured accesses within 5 %; C_M within 5 % where the pure-miss term is
at least 10 % of the level's C-AMAT, pAMP within 10 % where it is at least 25 %
(objtier.camat.sampling.compare); on the traced program C_M and pAMP of L1 and L2 within 20 %
(its last-level figures move by more when the timing merely restarts once in the middle of an
all-timed run, see the docs)."""

from __future__ import annotations

import ctypes
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from objtier.camat.model import (ACCESS_DTYPE, PRESETS, Sampling, SimConfig, _library, hierarchy,
                                 simulate)
from objtier.camat.sampling import TOLERANCE, compare, max_error, unit_interval
from objtier.camat.terms import level_terms
from objtier.errors import UsageError
from tests.camat.conftest import build, camat, needs_clang
from tests.camat.test_cli import _one_line_error

HERE = Path(__file__).resolve().parent
PROGRAM_TERM_TOLERANCE = 0.20
N = 600_000
SAMPLE = Sampling(60_000, 5_000, 500)


def stream(kind: str, n: int = N, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = np.zeros(n, dtype=ACCESS_DTYPE)
    a["flags"] = 8 << 8
    a["object"] = rng.integers(0, 3, n)
    a["region"] = (np.arange(n) // 50_000) % 2
    if kind == "sequential":
        a["addr"] = 0x10000000 + np.arange(n, dtype=np.uint64) * 8
    elif kind in ("random", "chase"):
        a["addr"] = 0x10000000 + rng.integers(0, 1 << 26, n, dtype=np.uint64) // 8 * 8
        a["dep"] = kind == "chase"
    elif kind == "mix":  # two threads: a shared hot set with stores, a stream, random loads
        pick = rng.random(n)
        hot = 0x100000 + rng.integers(0, 4096, n, dtype=np.uint64) * 8
        seq = 0x10000000 + np.arange(n, dtype=np.uint64) * 8
        rnd = 0x40000000 + rng.integers(0, 1 << 27, n, dtype=np.uint64) // 8 * 8
        a["addr"] = np.where(pick < 0.8, hot, np.where(pick < 0.95, seq, rnd))
        a["core"] = np.arange(n) % 2
        a["flags"] |= (rng.random(n) < 0.25).astype(np.uint16)
    return a


def run_both(kind: str, hier=None, sample=SAMPLE, **cfg_kw):
    a = stream(kind)
    hier = hier or hierarchy("skylake")
    cfg = SimConfig(hier, int(a["core"].max()) + 1, 3, 2, **cfg_kw)
    return simulate(a, cfg), simulate(a, cfg, sample=sample)


def _assert_close(rows):
    compared = [r for r in rows if r["camat"] is not None]
    assert compared, rows  # the check is only one where the sample supports some level
    for r in rows:
        for key in ("camat", "C_M", "pAMP"):
            assert r[key] is None or r[key] <= TOLERANCE[key], (r["level"], key, r)


@pytest.mark.parametrize("kind", ["sequential", "random", "chase"])
def test_one_core_streams_match_the_exact_model(kind):
    exact, sampled = run_both(kind)
    rows = compare(exact, sampled)
    assert all(r["accesses_equal"] and r["misses_equal"] for r in rows), rows
    _assert_close(rows)
    assert sampled.sample["units"] == N // SAMPLE.period
    assert sampled.sample["measured"] == sampled.sample["units"] * SAMPLE.unit
    assert sampled.sample["accesses"] == N
    assert sampled.sample["detailed"] == sampled.sample["units"] * (SAMPLE.unit + 2 * SAMPLE.warm)
    # terms that must be compared somewhere: C-AMAT at every level the stream reaches
    assert sum(r["camat"] is not None for r in rows) >= 3


def test_two_cores_in_recorded_order_keep_exact_counts():
    """With the recorded interleaving (reorder 0) the caches see the same order in both modes,
    so every count that is not a cycle is exact, coherence included."""
    hier = replace(hierarchy("skylake"), reorder=0)
    exact, sampled = run_both("mix", hier)
    rows = compare(exact, sampled)
    assert all(r["accesses_equal"] and r["misses_equal"] for r in rows), rows
    for f in ("coherence_misses", "false_sharing", "invalidations"):
        assert np.array_equal(exact.totals[f], sampled.totals[f]), f
        assert np.array_equal(exact.by_object[f], sampled.by_object[f]), f
        assert np.array_equal(exact.by_region[f], sampled.by_region[f]), f
    assert exact.totals["coherence_misses"][0] > 1000
    _assert_close(rows)


def test_two_cores_by_clock_stay_close():
    """Clock-ordered interleaving is itself a timing result: between units the sampled model
    takes the threads in stream order, so counts differ slightly from the exact model's."""
    exact, sampled = run_both("mix")
    rows = compare(exact, sampled)
    for lv in range(exact.levels):
        e, s = (int(x.totals[lv]["accesses"]) for x in (exact, sampled))
        assert abs(s - e) <= 0.01 * e, lv
    _assert_close(rows)


def test_local_buffer_counts_stay_exact():
    """--local: the page-LRU buffer sees every access in both modes (with pinned objects too)."""
    for pinned in (None, np.array([1, 0, 0], dtype=np.uint8)):
        kw = {"local_pages": 4000}
        if pinned is not None:
            kw.update(pinned=pinned, pinned_pages=1000)
        exact, sampled = run_both("random", replace(hierarchy("small"), far_cycles=2000), **kw)
        assert exact.levels == 5
        rows = compare(exact, sampled)
        assert all(r["accesses_equal"] and r["misses_equal"] for r in rows), rows
        assert sampled.totals[4]["accesses"] > 10_000
        assert level_terms(sampled.totals[4], True)["camat"] is not None


def test_concurrency_of_a_chase_and_of_streaming_loads():
    registers = PRESETS["skylake"].l1.mshrs
    _, chase = run_both("chase")
    _, streaming = run_both("random")  # independent loads that miss
    assert 0.9 <= level_terms(chase.totals[0], True)["C_M"] <= 1.15
    assert 0.75 * registers <= level_terms(streaming.totals[0], True)["C_M"] <= registers + 1e-9


def test_apc_identity_and_accounting_on_sampled_figures():
    for kind in ("random", "mix"):
        _, s = run_both(kind)
        for lv in range(s.levels):
            t = level_terms(s.totals[lv], True)
            if t["camat"] is not None:
                assert abs(t["apc"] * t["camat"] - 1) < 0.02
            for part in (s.by_object[lv], s.by_region[lv]):
                for row in part:
                    r = level_terms(row, False)
                    if r["camat"] is not None:
                        assert abs(r["apc"] * r["camat"] - 1) < 0.02
        # the timed accesses' shares (counted or not) add up to the cycles the timelines counted
        for counted, shared in zip(s.sample["counted_active"], s.sample["shared_active"]):
            assert shared == pytest.approx(counted, rel=1e-9)
        assert s.sample["counted_active"][0] > 0


def test_unit_interval_from_the_units():
    exact, s = run_both("random")
    ci = unit_interval(s.units, s.levels)
    l1 = ci[0]
    assert l1["units"] == N // SAMPLE.period and l1["measured_accesses"] == s.sample["measured"]
    assert 0 < l1["camat_ci95_relative"] < 0.10
    for lv, row in enumerate(ci):  # the interval covers the exact model's C-AMAT
        e, m = (level_terms(x.totals[lv], True)["camat"] for x in (exact, s))
        assert abs(m - e) <= row["camat_ci95"], row
    # the units' pooled C-AMAT is the sampled L1 C-AMAT (one region stratum per half)
    pooled = s.units[:, 0, 1].sum() / s.units[:, 0, 0].sum()
    assert pooled == pytest.approx(level_terms(s.totals[0], True)["camat"], rel=0.02)
    # a stream whose units differ gets a wider interval than one whose units agree
    a = stream("random")
    a[: N // 2]["addr"] = 0x100000 + (np.arange(N // 2) % 512) * 8  # first half: L1 hits
    cfg = SimConfig(hierarchy("skylake"), 1, 3, 2)
    mixed = simulate(a, cfg, sample=SAMPLE)
    assert unit_interval(mixed.units, 4)[0]["camat_ci95_relative"] > 5 * l1["camat_ci95_relative"]


def test_exact_mode_is_the_default_and_untouched():
    a = stream("random", 50_000)
    cfg = SimConfig(hierarchy("small"), 1, 3, 2)
    one, two = simulate(a, cfg), simulate(a, cfg, sample=None)
    assert one.sample is None and one.units is None
    for part in ("totals", "by_object", "by_region"):
        assert getattr(one, part).tobytes() == getattr(two, part).tobytes()
    # a unit covering the whole stream times every access as the exact model does
    whole = simulate(a, cfg, sample=Sampling(len(a), len(a), 0))
    for f in ("accesses", "misses", "hit_phase", "miss_phase", "pure_phase", "pure_misses"):
        assert np.array_equal(whole.by_region[f], one.by_region[f]), f
    assert np.allclose(whole.totals["active_cycles"], one.totals["active_cycles"], rtol=1e-9,
                       atol=1)


@pytest.mark.parametrize("period,unit,warm,what", [
    (100, 10_000, 500, "--sample PERIOD"), (60_000, 0, 500, "--sample-unit"),
    (60_000, 5_000, -1, "--sample-warm"), (1 << 41, 5_000, 500, "--sample PERIOD"),
    (10_999, 10_000, 500, "--sample PERIOD")])
def test_bad_sampling_values_are_refused(period, unit, warm, what):
    with pytest.raises(UsageError, match=what):
        Sampling(period, unit, warm).check()


def test_native_refuses_bad_sampling_values():
    lib = _library()
    from objtier.camat.model import _c_config

    c, _ = _c_config(SimConfig(hierarchy("small"), 1, 1, 1))
    err = ctypes.c_char_p()
    m = lib.camat_create(ctypes.byref(c), ctypes.byref(err))
    try:
        assert lib.camat_sample(m, 100, 1000, 10) == b"period"
        assert lib.camat_sample(m, 100, 0, 10) == b"unit"
        assert lib.camat_sample(m, 10**12, 1000, 200_000_000) == b"warm"
        assert lib.camat_sample(m, 2000, 1000, 10) is None
        assert lib.camat_sample(m, 2000, 1000, 10) == b"model"  # once only
    finally:
        lib.camat_destroy(m)


@pytest.mark.parametrize("args,text", [
    (["--sample", "-5"], "--sample must be 0"), (["--sample", "100"], "--sample PERIOD"),
    (["--sample", "60000", "--sample-unit", "0"], "--sample-unit"),
    (["--sample", "60000", "--sample-warm", "-2"], "--sample-warm"),
    (["--sample", "60000", "--source", "pmu"], "--source sim")])
def test_cli_refuses_bad_sampling_values(tmp_path, args, text):
    _one_line_error(camat(str(tmp_path / "run.otr"), *args), text)


def test_cli_refuses_a_unit_without_sampling_before_running_anything():
    # a stream of the first accesses (--window 0) is timed whole unless --sample is given
    _one_line_error(camat("--window", "0", "--sample-unit", "100", "--", "true"), "need --sample")


# --- a compiled program traced by the runtime ----------------------------------------------


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("camat-sample")
    exe = build(tmp, [HERE / "kernels.c"], "kernels")
    exact_out, sampled_out = tmp / "exact", tmp / "sampled"
    run = camat("--preset", "small", "--regions", "--window", "0", "--stream", "3000000", "-o",
                str(exact_out), "--", str(exe))
    assert run.returncode == 0, run.stderr
    rec = exact_out / "run.otr"
    srun = camat(str(rec), "--preset", "small", "--regions", "--sample", "20000",
                 "--sample-unit", "2000", "-o", str(sampled_out))
    assert srun.returncode == 0, srun.stderr
    return (rec, json.loads((exact_out / "camat.json").read_text()),
            json.loads((sampled_out / "camat.json").read_text()), srun)


@needs_clang
def test_traced_program_sampled_matches_exact(program):
    rec, exact, sampled, _ = program
    assert exact["timing"] == {"mode": "exact"} and exact["cycles"] > 0
    assert sampled["timing"]["mode"] == "sampled" and sampled["cycles"] is None
    assert sampled["timing"]["units"] >= 50
    for e, s, ec, sc in zip(exact["levels"], sampled["levels"], exact["counts"],
                            sampled["counts"]):
        assert s["MR"] == e["MR"] and sc["accesses"] == ec["accesses"], e["level"]
        assert abs(s["camat"] - e["camat"]) <= TOLERANCE["camat"] * e["camat"], (e, s)
        if e["level"] in ("L1", "L2"):
            for key in ("C_M", "pAMP"):
                assert abs(s[key] - e[key]) <= PROGRAM_TERM_TOLERANCE * e[key], (key, e, s)
    # the same through the Python API, with the comparison the bench uses
    from objtier.camat.analyze import run_model
    from objtier.camat.stream import load_stream
    from objtier.trace import open_trace

    st = load_stream(open_trace(rec))
    ex, _ = run_model(st, hierarchy("small"))
    sm, _ = run_model(st, hierarchy("small"), sample=Sampling(20_000, 2_000, 500))
    rows = compare(ex, sm)
    assert all(r["accesses_equal"] and r["misses_equal"] for r in rows)
    assert max_error(rows, "camat") <= TOLERANCE["camat"]
    assert max_error(rows) is not None


@needs_clang
def test_traced_program_concurrency_and_apc_in_sampled_mode(program):
    _, _, doc, _ = program
    regions = {r["region"]: r for r in doc["regions"]}
    l1 = {name: next(lv for lv in regions[name]["levels"] if lv["level"] == "L1")
          for name in ("chase", "stream")}
    registers = PRESETS["small"].l1.mshrs
    assert 0.9 <= l1["chase"]["C_M"] <= 1.15
    assert 0.75 * registers <= l1["stream"]["C_M"] <= registers + 1e-9
    for lv, c in zip(doc["levels"], doc["counts"]):
        assert abs(c["apc"] * lv["camat"] - 1) < 0.02, lv["level"]
    assert doc["checks"]["apc_identity_max_error"] < 0.02
    assert doc["timing"]["accounting_max_error"] < 1e-9


@needs_clang
def test_traced_program_labels(program):
    _, _, doc, run = program
    t = doc["timing"]
    assert (t["period"], t["unit"], t["warm"]) == (20_000, 2_000, 500)
    assert t["accesses"] == doc["counts"][0]["accesses"]  # every access of the stream, once
    assert t["timed_fraction"] == pytest.approx(
        t["timed_accesses"] / t["accesses"]) and 0.1 < t["timed_fraction"] < 0.2
    assert "MR" in t["exact_terms"] and "camat" in t["estimated_terms"]
    assert "MR" not in t["estimated_terms"]
    conf = {c["level"]: c for c in t["confidence"]}
    assert conf["L1"]["camat_ci95"] > 0 and conf["L1"]["units"] == t["units"]
    assert all(c["camat_ci95"] is not None for c in doc["counts"])
    assert "sampled" in run.stdout and "estimated" in run.stdout and "95 % CI" in run.stdout


@needs_clang
def test_traced_program_html_says_sampled(program, tmp_path):
    from objtier.camat.html import page_html

    _, exact, sampled, _ = program
    page = page_html(sampled)
    assert "Sampled timing" in page and "every other term is an estimate" in page
    assert "Sampled timing" not in page_html(exact)
