"""One way to do each thing on the command line (issue 37, part 5): at most 20 options per
subcommand, the swap tier's options with one set of defaults in run, compare and sweep, plan
and compare planning alike, plans that carry their recording's stack depth, and the previous
release's spellings rewritten with a one-line note."""

from __future__ import annotations

import argparse
import json
import re

import pytest

from objtier.cli import build_parser, main, rewrite_argv

from ..experiments.helpers import PROGS, objtier

MAX_OPTIONS = 20


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _leaf_parsers():
    for name, parser in _subparsers(build_parser()).items():
        inner = _subparsers(parser)
        if inner:
            yield from ((f"{name} {sub}", p) for sub, p in inner.items())
        else:
            yield name, parser


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [a.option_strings[-1] for a in parser._actions
            if a.option_strings and not isinstance(a, argparse._HelpAction)]


def test_no_subcommand_has_more_than_20_options():
    counts = {name: len(_options(p)) for name, p in _leaf_parsers()}
    assert {"plan", "compare", "run", "sweep knob", "sweep per-object", "sweep calibrate",
            "sweep suite", "sweep sim"} <= set(counts)
    over = {name: n for name, n in counts.items() if n > MAX_OPTIONS}
    assert not over, over


def _parse(words: list[str]) -> argparse.Namespace:
    return build_parser(words[0]).parse_args(rewrite_argv(words))


def test_the_swap_options_have_one_set_of_defaults():
    from objtier.commands import _swap_options as swap

    parsed = {"run": _parse(["run", "--plan", "p.json", "--", "true"]),
              "compare": _parse(["compare", "--", "true"]),
              "sweep per-object": _parse(["sweep", "per-object", "--recording", "r.otr",
                                          "--", "true"]),
              "sweep knob": _parse(["sweep", "knob", "--knob", "local=50", "--", "true"])}
    for name, args in parsed.items():
        assert args.swap == "zram", name
        if hasattr(args, "stat_flush"):
            assert swap.stat_flush_period(args) == 10, name
    for name in ("run", "compare"):
        args = parsed[name]
        assert args.guard is True and args.mlock_margin is None
        assert swap.large_folio(args) == "16K"
    assert parsed["run"].local is None and parsed["compare"].local == "70%"
    # the experiment controls are one group in --help
    for command in (["run", "--help"], ["compare", "--help"], ["sweep", "knob", "--help"]):
        text = objtier(*command).stdout
        controls = text[text.index("experiment controls:"):]
        assert "--stat-flush" in controls, command
    assert "--arm" in objtier("compare", "--help").stdout.split("experiment controls:")[1]


def test_plan_and_compare_default_to_the_same_algorithm_and_backfill():
    from objtier.commands._swap_options import backfill

    plan = _parse(["plan", "r.otr", "--local", "50%"])
    compare = _parse(["compare", "--", "true"])
    assert plan.algo is None and compare.algo is None   # both resolve to auto, model's choice
    assert backfill(plan, swap_tier=True) is backfill(compare, swap_tier=True) is False
    assert backfill(_parse(["plan", "r.otr", "--fast", "50%"]), swap_tier=False) is True
    assert backfill(_parse(["plan", "r.otr", "--local", "50%", "--backfill"]), True) is True
    assert backfill(_parse(["plan", "r.otr", "--fast", "8M", "--no-backfill"]), False) is False


@pytest.mark.parametrize("old, new", [
    (["sweep", "--knob", "threads=1", "--", "x"], ["sweep", "knob", "--knob", "threads=1",
                                                   "--", "x"]),
    (["sweep", "--per-object", "r.otr", "--slow-nodes", "2", "--", "x"],
     ["sweep", "per-object", "--nodes", "/2", "--recording", "r.otr", "--", "x"]),
    (["sweep", "--suite", "f.txt", "--knob", "threads=1"],
     ["sweep", "suite", "f.txt", "--knob", "threads=1"]),
    (["sweep", "--calibrate", "--knob", "bandit=0"], ["sweep", "calibrate", "--knob",
                                                      "bandit=0"]),
    (["sweep", "--knob", "sim=1,2", "--recording", "r"],
     ["sweep", "sim", "--knob", "sim=1,2", "--recording", "r"]),
    (["sweep", "knob", "--knob", "threads=1", "--lower-is-better"],
     ["sweep", "knob", "--knob", "threads=1", "--better", "lower"]),
    (["plan", "r.otr", "--alpha", "2", "--min-phase-ms=5"],
     ["plan", "r.otr", "--param", "alpha=2", "--param", "min_phase_ms=5"]),
    (["compare", "--rate", "500", "--fast-nodes", "0", "--", "prog", "--rate", "1"],
     ["compare", "--profile", "rate=500", "--nodes", "0/", "--", "prog", "--rate", "1"]),
    (["run", "--plan", "p", "--fast-nodes", "0", "--slow-nodes", "2", "--", "x"],
     ["run", "--nodes", "0/2", "--plan", "p", "--", "x"]),
])
def test_the_previous_spelling_is_rewritten(old, new):
    assert rewrite_argv(old) == new
    assert rewrite_argv(new) == new       # this release's spelling is left alone


def test_old_sweep_spelling_runs_the_same_sweep_with_a_note(tmp_path):
    """A real threads sweep of /bin/true, once in each spelling: the same knob and levels in
    sweep.json; only the old spelling prints the note, after the tables."""
    docs = {}
    for spelling, words in (("old", ["sweep"]), ("new", ["sweep", "knob"])):
        out = tmp_path / spelling
        run = objtier(*words, "--knob", "threads=1,2", "--repeat", "1", "--time", "-q", "-o",
                      str(out), "--", "true")
        assert run.returncode == 0, run.stderr
        docs[spelling] = json.loads((out / "sweep.json").read_text())
        notes = [line for line in run.stderr.splitlines() if "note:" in line]
        assert len(notes) == (spelling == "old"), run.stderr
    assert docs["old"]["knob"] == docs["new"]["knob"] == "threads"
    assert [lv["level"] for lv in docs["old"]["levels"]] == \
        [lv["level"] for lv in docs["new"]["levels"]]


def test_old_spelling_refused_as_before(capsys):
    """A refusal through the old spelling is still one line naming the option given."""
    code = main(["plan", "none.otr", "--fast", "50%", "--alpha", "-1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--alpha: must be from 0 to 16" in err[0], err
    code = main(["sweep", "--knob", "local=50", "--pairs", "3", "--", "true"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--pairs: only with --per-object" in err[0], err


def test_a_plan_carries_its_recording_depth_and_run_uses_it(compile_c, tmp_path):
    """Recorded with --stack-depth 4, planned, run without --stack-depth: the plan says 4,
    the run's runtime used 4 frames, and the plan's objects matched."""
    from objtier.plan import load_plan
    from objtier.trace import open_trace

    hotcold = compile_c((PROGS / "hotcold.c").read_text(), "hotcold")
    trace = tmp_path / "hc.otr"
    run = objtier("record", "-q", "--sampler", "fault", "--stack-depth", "4", "-o", str(trace),
                  "--", str(hotcold), "8", "24", "2")
    assert run.returncode == 0, run.stderr
    plan_path = tmp_path / "plan.json"
    run = objtier("plan", str(trace), "--fast", "16M", "--algo", "rank", "-o", str(plan_path))
    assert run.returncode == 0, run.stderr
    plan = load_plan(plan_path)
    assert plan["recording"] == {"stack_depth": 4, "min_size": 131072}
    out = tmp_path / "run.otr"
    run = objtier("run", "--plan", str(plan_path), "-o", str(out), "--", str(hotcold), "8",
                  "24", "1")
    assert run.returncode == 0, run.stderr
    assert open_trace(out).processes[0].config["OBJTIER_STACK_DEPTH"] == "4"
    assert re.search(r"\b[1-9][0-9]* of [0-9]+ objects matched the plan", run.stderr), run.stderr
    # a different depth given is a warning: no context of the plan would match
    run = objtier("run", "--plan", str(plan_path), "--stack-depth", "8", "--", str(hotcold),
                  "8", "24", "1")
    assert run.returncode == 0 and "differs from the 4 frames" in run.stderr, run.stderr
