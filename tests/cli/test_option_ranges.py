"""Numeric options out of range are refused with the valid range, before anything runs.

The cases the issue names run the installed entry point; the sweep over every subcommand's
numeric options calls objtier.cli.main in this process (same parser, same code, no
interpreter start per case)."""

from __future__ import annotations

import json

import pytest

from .helpers import assert_one_line_error, call, objtier, seed_recording


@pytest.mark.parametrize("rate", ["1e12"])  # more rates in the sweep below
def test_record_rate_out_of_range_is_refused_with_the_range(tmp_path, rate):
    run = objtier("record", "-q", "--rate", rate, "-o", tmp_path / "r.otr", "--", "true")
    line = assert_one_line_error(run, "argument --rate:")
    assert "from 1 to 10000000" in line or "integer" in line
    assert not (tmp_path / "r.otr").exists()  # nothing recorded


@pytest.mark.parametrize("fast", ["-1"])  # more budgets in the sweep below
def test_plan_negative_zero_or_huge_budgets_are_refused(tmp_path, fast):
    recording = seed_recording(tmp_path / "run.otr")
    run = objtier("plan", recording, f"--fast={fast}", "-o", tmp_path / "plan.json")
    assert_one_line_error(run, "budget")
    assert not (tmp_path / "plan.json").exists()


def test_plan_file_with_size_max_1e30_is_refused_by_run(tmp_path):
    from tests.fuzz.seeds import plan_document

    plan = plan_document()
    plan["entries"][0]["size_max"] = 10 ** 30
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    run = objtier("run", "--plan", path, "--", "true")
    assert_one_line_error(run, "size_max must be an integer from 0 to")


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return seed_recording(tmp_path_factory.mktemp("rec") / "run.otr")


SWEEP = [
    # record
    (["record", "--stack-depth", "0"], "--stack-depth: must be from 1 to 32"),
    (["record", "--stack-depth", "33"], "--stack-depth: must be from 1 to 32"),
    (["record", "--min-size", "0"], "--min-size: size must be from 1 byte"),
    (["record", "--min-size", "99999999T"], "--min-size: invalid size"),
    (["record", "--counters-interval", "-1"], "--counters-interval: must be from 0 to 3600000"),
    (["record", "--counters-interval", "3600001"], "--counters-interval: must be from 0"),
    (["record", "--trace-limit", "-1"], "--trace-limit: must be from 0"),
    (["record", "--rate", "inf"], "--rate: must be an integer"),
    (["record", "--rate", "-1"], "--rate: must be from 1 to 10000000"),
    (["record", "--rate", "0"], "--rate: must be from 1 to 10000000"),
    (["record", "--rate", "10000001"], "--rate: must be from 1 to 10000000"),
    (["record", "--rate", "2.5"], "--rate: must be an integer from 1 to 10000000"),
    (["record", "--llc", "32M,0,64", "--", "true"], "--llc ways must be from 1 to 64"),
    (["record", "--llc", "32M,16,65", "--", "true"], "--llc line must be a power of two"),
    (["record", "--llc", "2T,16,64", "--", "true"], "--llc size must be from 1 byte to 1 TiB"),
    # report, objects, dump
    (["report", "{rec}", "--top", "0"], "--top: must be at least 1"),
    (["objects", "{rec}", "--top", "-3"], "--top: must be at least 1"),
    (["dump", "{rec}", "--limit", "-1"], "--limit: must be at least 0"),
    # plan
    (["plan", "{rec}", "--fast", "50%", "--alpha", "-1"], "--alpha: must be from 0 to 16"),
    (["plan", "{rec}", "--fast", "50%", "--beta", "nan"], "--beta: must be from 0 to 16"),
    (["plan", "{rec}", "--fast", "50%", "--max-cells", "0"], "--max-cells: must be at least 1"),
    (["plan", "{rec}", "--fast", "50%", "--page-bytes", "0"], "--page-bytes: must be from 1"),
    (["plan", "{rec}", "--fast", "50%", "--page-bytes", "4G"], "--page-bytes: must be an integer"),
    (["plan", "{rec}", "--fast", "50%", "--min-phase-ms", "-1"], "--min-phase-ms: must be from 0"),
    (["plan", "{rec}", "--fast", "50%", "--similarity", "1.5"], "--similarity: must be from 0 to 1"),
    (["plan", "{rec}", "--fast", "50%", "--hint-budget", "-1"], "--hint-budget: must be from 0"),
    (["plan", "{rec}", "--fast", "50%", "--explain-rows", "-1"], "--explain-rows: must be at least 0"),
    (["plan", "{rec}", "--fast", "50%", "--footprint", "0"], "--footprint must be from 1 byte"),
    (["plan", "{rec}", "--fast", "-1"], "bad budget '-1'"),
    (["plan", "{rec}", "--fast=-5%"], "bad budget '-5%'"),
    (["plan", "{rec}", "--fast", "0%"], "a percentage must be in (0, 100]"),
    (["plan", "{rec}", "--fast", "101%"], "a percentage must be in (0, 100]"),
    (["plan", "{rec}", "--fast", "0"], "the fast tier needs at least one byte"),
    (["plan", "{rec}", "--fast", "1e30"], "bad budget '1e30'"),
    # run
    (["run", "--plan", "p.json", "--stack-depth", "0", "--", "true"], "--stack-depth: must be from 1"),
    # simulate
    (["simulate", "{rec}", "--fast", "50%", "--param", "bin_ms=0"], "--param bin_ms must be greater than 0"),
    (["simulate", "{rec}", "--fast", "50%", "--param", "bin_ms=inf"], "--param bin_ms must be"),
    (["simulate", "{rec}", "--fast", "50%", "--param", "period=0"], "--param period must be from 1"),
    (["simulate", "{rec}", "--fast", "50%", "--param", "scale=-2"], "--param scale must be from 1"),
    (["simulate", "{rec}", "--fast", "50%", "--param", "chunk=0"], "--param chunk must be from 1"),
    (["simulate", "{rec}", "--fast", "50%", "--param", "swap_reserve=1"], "--param swap_reserve must be in [0, 1)"),
    (["simulate", "{rec}", "--fast", "50%", "--param", "swap_reserve=nan"], "must be a finite number"),
    (["simulate", "{rec}", "--fast", "50%", "--param", "numab2.hot_threshold_ms=nan"], "must be a finite number"),
    (["simulate", "{rec}", "--fast", "0"], "budget"),
    # compare, testbed
    (["compare", "--repeat", "0", "--", "true"], "--repeat: must be at least 1"),
    (["compare", "--profiles", "0", "--", "true"], "--profiles: must be at least 1"),
    (["compare", "--rate", "1e12", "--", "true"], "--rate: must be from 1 to 10000000"),
    (["compare", "--timeout", "nan", "--", "true"], "--timeout: must be greater than 0 s"),
    (["testbed", "up", "--cpus", "0"], "--cpus: must be at least 1"),
    (["testbed", "up", "--fast-mib", "-1"], "--fast-mib: must be at least 1"),
    (["testbed", "run", "--timeout", "0", "--", "true"], "--timeout: must be greater than 0 s"),
]


@pytest.mark.parametrize("argv, fragment", SWEEP, ids=[" ".join(a[:1] + a[-2:]) for a, _ in SWEEP])
def test_every_numeric_option_is_range_checked(capsys, tmp_path, recording, argv, fragment):
    argv = [str(recording) if a == "{rec}" else a for a in argv]
    if argv[0] == "record" and "--" not in argv:
        argv += ["-o", str(tmp_path / "x.otr"), "--", "true"]
    code, err = call(capsys, *argv)
    assert code != 0
    lines = err.splitlines()
    assert len(lines) == 1 and fragment in lines[0], err
    assert not (tmp_path / "x.otr").exists()
