"""`objtier plan` end to end on object tables written as Parquet and CSV."""

from __future__ import annotations

import contextlib

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from objtier.cli import main
from objtier.plan import build_id, load_plan, parse_text
from .plan_synthetic import PAGE, table

# object 0: hot 6 pages, 1: warm 5 pages, 2: cold 4 pages, 3: tiny hot 1 page
OBJECTS = table([6, 5, 4, 1], [600, 100, 0, 50])


@pytest.fixture
def objects_parquet(tmp_path):
    path = tmp_path / "objects.parquet"
    pq.write_table(pa.table(OBJECTS), path)
    return path


def run_cli(*argv):
    return main(["plan", *map(str, argv)])


def test_plan_from_a_parquet_table(objects_parquet, tmp_path, capsys):
    out = tmp_path / "plan.json"
    text = tmp_path / "plan.txt"
    rc = run_cli(objects_parquet, "--fast", "50%", "--algo", "spill", "-o", out, "--text", text,
                 "--exe", "/bin/true")
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    plan = load_plan(out)
    # footprint 16 pages -> 8 pages: object 3 (50/page) and 0 (100/page) whole = 7 pages,
    # object 1 split with the one page left
    tiers = {e["context_key"][-1]: (e["tier"], e["fast_bytes"]) for e in plan["entries"]}
    assert tiers == {"0": ("fast", 6 * PAGE), "1": ("split", PAGE), "2": ("slow", 0),
                     "3": ("fast", PAGE)}
    assert plan["budget"] == {"given": "50%", "bytes": 8 * PAGE, "percent": 50.0,
                              "footprint_bytes": 16 * PAGE, "page_bytes": PAGE}
    assert plan["binary"]["build_id"] == build_id("/bin/true")
    assert "spill: 3 of 4 objects fast (1 split)" in captured.out
    assert len(parse_text(text.read_text())["entries"]) == 4


def test_explain_says_why(objects_parquet, tmp_path, capsys):
    rc = run_cli(objects_parquet, "--fast", str(7 * PAGE), "--algo", "rank", "--explain",
                 "-o", tmp_path / "p.json")
    out = capsys.readouterr().out
    assert rc == 0
    for words in ("priority", "fill", "fits", "no sampled accesses", "main > alloc0"):
        assert words in out
    # the binary is unknown for a table input: warned, not fatal
    assert "binary is unknown" in load_plan(tmp_path / "p.json")["warnings"][0]


def test_phases_from_csv_tables(tmp_path, capsys):
    objects = tmp_path / "objects.csv"
    pacsv.write_csv(pa.table(OBJECTS), objects)
    phases = tmp_path / "phases.csv"
    pacsv.write_csv(pa.table({"phase": ["build", "solve"], "parent": ["", ""],
                              "start_ns": [0, 10**9], "end_ns": [10**9, 5 * 10**9]}), phases)
    accesses = tmp_path / "accesses.csv"
    pacsv.write_csv(pa.table({"phase": ["build", "solve", "solve"], "object": [1, 0, 3],
                              "accesses": [100.0, 600.0, 50.0]}), accesses)
    rc = run_cli(objects, "--fast", str(6 * PAGE), "--algo", "rank", "--phases",
                 "--phase-table", phases, "--phase-accesses", accesses, "--explain",
                 "-o", tmp_path / "plan.json")
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    plan = load_plan(tmp_path / "plan.json")
    fast = {(e["phase"], e["context_key"][-1]) for e in plan["entries"] if e["tier"] == "fast"}
    assert fast == {("build", "1"), ("solve", "0")}
    assert "phase build" in captured.out and "plan used" in captured.out


@pytest.mark.parametrize("argv, message", [
    (["--fast", "lots"], "bad budget 'lots'"),
    (["--fast", "70%", "--algo", "rank", "--alpha", "2"], "alpha and beta apply to"),
    (["--fast", "70%", "--phases"], "--phases with an object-table input needs"),
    (["--fast", "70%", "--algo", "fancy"], "invalid choice"),
])
def test_bad_arguments_give_one_line(objects_parquet, tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) if "invalid choice" in message else contextlib.nullcontext():
        rc = run_cli(objects_parquet, *argv, "-o", tmp_path / "p.json")
        assert rc == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "p.json").exists()


def test_unreadable_recording_is_one_line(tmp_path, capsys):
    run = tmp_path / "run.otr"
    run.mkdir()
    rc = run_cli(run, "--fast", "1G")
    err = capsys.readouterr().err
    assert rc != 0 and err.startswith("objtier plan: ") and err.count("\n") == 1


TRACES = __import__("pathlib").Path(__file__).resolve().parent.parent / "fixtures" / "traces"


@pytest.mark.skipif(not (TRACES / "basic.otr").exists(), reason="fixture trace missing")
def test_plan_from_a_recording_with_the_real_reader(tmp_path, capsys):
    # basic.otr (tests/fixtures/traces/make_traces.py): objects 0..3 of 64, 16, 32, 8 KiB with
    # 10, 2, 2, 2 accesses. Budget 14 pages; by accesses/byte: 3 (2 pages) fits, 0 (16) does
    # not, 1 (4) and 2 (8) fill the gap: 14 pages.
    out = tmp_path / "plan.json"
    rc = run_cli(TRACES / "basic.otr", "--fast", "56K", "--algo", "rank", "-o", out)
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    plan = load_plan(out)
    got = sorted((e["size_min"] // 1024, e["size_max"] // 1024, e["occurrence"], e["tier"])
                 for e in plan["entries"])
    # objects 1 and 3 come from one context and are both fast: one entry, any occurrence
    assert got == [(8, 16, None, "fast"), (32, 32, 0, "fast"), (64, 64, 0, "slow")]
    assert plan["binary"]["path"]  # the recorded program's path
    # spill gives object 0 the 12 pages left after object 3 (both live to the end), then
    # object 1 (live 0.2-1.0 s, before object 3 exists) the 14 - 12 = 2 pages left over its
    # lifetime; object 2 (never freed) finds no room
    rc = run_cli(TRACES / "basic.otr", "--fast", "56K", "--algo", "spill", "-o", out)
    assert rc == 0
    plan = load_plan(out)
    split = [e for e in plan["entries"] if e["tier"] == "split"]
    assert sorted((e["size_min"], e["fast_bytes"]) for e in split) == [(16384, 2 * PAGE),
                                                                       (65536, 12 * PAGE)]
    assert plan["summary"][0]["peak_fast_bytes"] == 14 * PAGE
    assert plan["summary"][0]["fast_bytes"] == 16 * PAGE
    # --no-lifetimes: every object counted as live at once, only object 0 is split
    rc = run_cli(TRACES / "basic.otr", "--fast", "56K", "--algo", "spill", "--no-lifetimes",
                 "-o", out)
    assert rc == 0
    split = [e for e in load_plan(out)["entries"] if e["tier"] == "split"]
    assert [(e["size_min"], e["fast_bytes"]) for e in split] == [(65536, 12 * PAGE)]


def test_lifetimes_in_explain_summary_and_no_lifetimes(tmp_path, capsys):
    # two 8-page objects with disjoint lifetimes and an 8-page budget: both fast over time
    t = table([8, 8], [80, 40])
    t["alloc_ns"] = [0, 100]
    t["free_ns"] = [100, 200]
    path = tmp_path / "objects.parquet"
    pq.write_table(pa.table(t), path)
    out = tmp_path / "p.json"
    assert run_cli(path, "--fast", str(8 * PAGE), "--algo", "rank", "--explain", "-o", out) == 0
    text = capsys.readouterr().out
    assert "peak live fast bytes: 32.0 KiB of 32.0 KiB" in text
    assert "rank: 2 of 2 objects fast (0 split), peak live 32.0 KiB of 32.0 KiB" in text
    plan = load_plan(out)
    assert [e["tier"] for e in plan["entries"]] == ["fast", "fast"]
    assert plan["summary"][0]["peak_fast_bytes"] == 8 * PAGE
    # the percentage refers to the peak of live bytes (8 pages) with or without --no-lifetimes
    assert run_cli(path, "--fast", "100%", "--algo", "rank", "--no-lifetimes", "-o", out) == 0
    text = capsys.readouterr().out
    assert "rank: 1 of 2 objects fast (0 split), 32.0 KiB of 32.0 KiB" in text
    plan = load_plan(out)
    assert [e["tier"] for e in plan["entries"]] == ["fast", "slow"]
    assert plan["budget"]["footprint_bytes"] == 8 * PAGE
