"""`objtier simulate` end to end: table, files, plans, presets and one-line errors."""

import csv
import json

import pytest

from objtier.cli import main
from objtier.sim.cost import PRESETS, load_preset, stall_ns
from objtier.sim.engine import BIN

import numpy as np


def test_cli_writes_table_csv_and_plots(hot_cold_trace, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["simulate", str(hot_cold_trace), "--fast", "40%", "--preset", "optane",
                 "--policy", "first-touch,numab2,oracle", "--param", "scan_delay_ms=10",
                 "-o", str(out)])
    assert code == 0
    assert "numab2" in capsys.readouterr().out
    rows = list(csv.DictReader(open(out / "simulate.csv")))
    assert [r["policy"] for r in rows] == ["first-touch", "numab2", "oracle"]
    assert int(rows[0]["fast_bytes"]) == int(0.4 * 20 * 2**20)
    assert float(rows[2]["speedup"]) > 1.0
    for name in ("simulate-fast-share.png", "simulate-migrations.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    counters = list(csv.DictReader(open(out / "simulate-counters.csv")))
    assert any(r["counter"] == "pgpromote_success" and r["policy"] == "numab2" for r in counters)


def test_cli_object_policy_follows_a_plan_file(hot_cold_trace, tmp_path):
    from objtier.trace import open_trace

    ctx = open_trace(hot_cold_trace).contexts
    keys = dict(zip(ctx.column("context").to_pylist(), ctx.column("key").to_pylist()))
    plan = {"format": "objtier-plan", "version": 1, "entries": [
        {"phase": "*", "context_key": keys[2], "occurrence": None, "size_min": 0,
         "size_max": 1 << 40, "tier": "fast", "fast_bytes": 1 << 40}]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    from objtier.sim import load_preset, simulate
    from objtier.sim.placement import plan_file_fast_bytes
    from objtier.sim.events import from_trace

    trace = open_trace(hot_cold_trace)
    fb = plan_file_fast_bytes(trace, from_trace(trace), plan)
    assert fb.tolist() == [0, 4 * 2**20]
    sim = simulate(trace, ["first-touch", "object"], 8 * 2**20, load_preset("cxl"),
                   plan_doc=plan)
    ft, obj = sim.results
    assert obj.counters["fast_loads"] > 5 * ft.counters["fast_loads"]


def test_pages_entries_become_page_bits(hot_cold_trace):
    """A "pages" entry's ranges (from the first whole page) set exactly those pages; another
    entry's prefix stays a prefix; the object policy runs the bitmap."""
    from objtier.sim import load_preset, simulate
    from objtier.sim.events import from_trace
    from objtier.sim.placement import plan_file_page_bits
    from objtier.trace import open_trace

    trace = open_trace(hot_cold_trace)
    ctx = trace.contexts
    keys = dict(zip(ctx.column("context").to_pylist(), ctx.column("key").to_pylist()))
    pg = 4096
    entries = [
        {"phase": "*", "context_key": keys[1], "occurrence": None, "size_min": 0,
         "size_max": 1 << 40, "tier": "pages", "fast_bytes": 3 * pg,
         "ranges": [[0, pg], [10 * pg, 2 * pg]]},
        {"phase": "*", "context_key": keys[2], "occurrence": None, "size_min": 0,
         "size_max": 1 << 40, "tier": "split", "fast_bytes": 5 * pg}]
    plan = {"format": "objtier-plan", "version": 1, "entries": entries}
    source = from_trace(trace)
    bits, base = plan_file_page_bits(trace, source, plan, 12)
    cold = bits[int(base[0]):int(base[1])]          # page-aligned object: page 0 is whole
    hot = bits[int(base[1]):]
    assert np.flatnonzero(cold).tolist() == [0, 10, 11]
    assert np.flatnonzero(hot).tolist() == [0, 1, 2, 3, 4]
    assert plan_file_page_bits(trace, source, {"entries": entries[1:]}, 12) is None
    sim = simulate(trace, ["object"], 8 * 2**20, load_preset("cxl"), plan_doc=plan)
    assert sim.results[0].counters["fast_loads"] > 0


@pytest.mark.parametrize("argv, message", [
    (["--preset", "nosuch"], "unknown preset"),
    (["--policy", "first-touch,bogus"], "unknown policy"),
    (["--param", "numab2.nosuch=1", "--policy", "numab2"], "no selected policy has a parameter"),
    (["--param", "hot_threshold_ms=abc", "--policy", "numab2"], "is not a number"),
    (["--param", "page=3K"], "use 4K or 2M"),
    (["--fast", "lots"], "bad budget"),
])
def test_cli_errors_are_one_line(hot_cold_trace, capsys, argv, message):
    args = ["simulate", str(hot_cold_trace), "--fast", "8M", *argv]
    if "--fast" in argv:
        args = ["simulate", str(hot_cold_trace), *argv]
    assert main(args) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_missing_trace_is_one_line(tmp_path, capsys):
    assert main(["simulate", str(tmp_path / "none.otr"), "--fast", "1G"]) != 0
    assert "no such trace" in capsys.readouterr().err


def test_every_preset_loads_with_sources():
    for name in PRESETS:
        model = load_preset(name)
        assert model.slow.load_ns > 0 and model.fast.read_gbps > 0
        assert model.sources["slow"] and model.sources["fast"], name


def test_user_preset_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text("[fast]\nload_ns = 80\nbandwidth_gbps = 100\n"
                    "[slow]\nload_ns = 400\nbandwidth_gbps = 10\n")
    model = load_preset(str(path))
    assert model.name == "mine" and model.slow.store_ns == 400
    (tmp_path / "bad.toml").write_text("[fast]\nload_ns = 80\n")
    with pytest.raises(Exception, match="needs"):
        load_preset(str(tmp_path / "bad.toml"))


def test_cost_model_queueing_and_tiers():
    model = load_preset("cxl")
    b = np.zeros(1, dtype=BIN)
    b["slow_loads"] = 1000
    slow = stall_ns(b, model, 100_000_000, 4096)["total_ns"]
    assert slow == pytest.approx(1000 * 170, rel=0.01)  # idle: no queueing at low load
    b2 = np.zeros(1, dtype=BIN)
    b2["fast_loads"] = 1000
    assert stall_ns(b2, model, 100_000_000, 4096)["total_ns"] < slow
    heavy = b.copy()
    heavy["slow_loads"] = 40_000_000  # 2.56 GB in 0.1 s against 3.2 GB per 0.1 s
    per_access = stall_ns(heavy, model, 100_000_000, 4096)["slow_ns"] / 40_000_000
    assert per_access > 170 * 1.05
