"""Summary fields: the timed-region speedup of a program that prints no FOM line is its
wall-time speedup (and the summary says which one it is); failed and OOM-killed runs are a
summary warning, as printed."""

from __future__ import annotations

import pytest

from objtier.experiments.results import summarize

from .test_results import row


def test_without_fom_line_the_timed_speedup_is_wall_time_and_says_so():
    summary = summarize([row("baseline", 1, 9.0, 100), row("objtier", 1, 3.0, 10)])
    assert summary["ratios"]["timed_speedup"] == pytest.approx(3.0)
    assert "wall time" in summary["ratios"]["timed_speedup_basis"]


def test_with_fom_line_the_timed_speedup_is_the_timed_region():
    summary = summarize([row("baseline", 1, 9.0, 100, fom=1.0),
                         row("objtier", 1, 3.0, 10, fom=2.0)])
    assert summary["ratios"]["timed_speedup"] == pytest.approx(8.5 / 2.5)
    assert "FOM" in summary["ratios"]["timed_speedup_basis"]


def test_failed_and_oom_killed_runs_are_a_summary_warning():
    from objtier.experiments.results import run_warnings

    killed = row("baseline", 2, 3.0, 50, returncode=-9)
    killed.memcg_oom_kills = 1
    rows = [row("baseline", 1, 10.0, 900), killed, row("objtier", 1, 4.0, 300)]
    (warning,) = run_warnings(rows)
    assert warning.startswith("1 run(s) failed (1 baseline run(s) killed by")
    assert run_warnings(rows[:1] + rows[2:]) == []
