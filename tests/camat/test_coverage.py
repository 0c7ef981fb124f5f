"""What of the run `camat` models (issue 40, case 2): by default windows spread over the whole
run, so a program whose first millions of accesses are initialisation is modelled on its work
too; and wherever the stream leaves part of the run out, the table, camat.json and stderr say
how much. A real program built with `objtier cc`, recorded by the runtime and modelled through
the real CLI; the run's total is the trace sampler's exact count."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from tests.camat.conftest import build, camat, needs_clang

HERE = Path(__file__).resolve().parent
N = 1 << 21                      # init_then_work.c
RUN = 2 * N + 4 * 2 * N          # init: two stores per element; work: 4 passes, two loads each
WORK_SHARE = 8 * N / RUN         # 0.8 of the run's accesses are in `work`


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return build(tmp_path_factory.mktemp("coverage"), [HERE / "init_then_work.c"], "itw")


def _run(exe, tmp_path, *args):
    out = tmp_path / "out"
    run = camat("--regions", *args, "-o", str(out), "--", str(exe))
    assert run.returncode == 0, run.stderr
    return json.loads((out / "camat.json").read_text()), run


def _accesses(doc, region):
    return next((r["accesses"] for r in doc["regions"] if r["region"] == region), 0)


@needs_clang
def test_default_models_windows_spread_over_the_whole_run(exe, tmp_path):
    doc, run = _run(exe, tmp_path)
    cov = doc["coverage"]
    assert cov["mode"] == "windows" and cov["run_accesses"] == RUN
    assert cov["share"] == 1.0 and not cov["cut"]
    assert cov["windows_modelled"] >= 8
    assert "warning" not in run.stderr and "spread over the whole run" in run.stdout
    # the model sees the run's work in proportion, not only its initialisation
    modelled = sum(r["accesses"] for r in doc["regions"])
    assert modelled == cov["modelled_accesses"]
    assert abs(_accesses(doc, "work") / modelled - WORK_SHARE) < 0.1
    assert doc["timing"]["mode"] == "sampled" and doc["timing"]["units"] == cov["windows_modelled"]


@needs_clang
def test_first_accesses_only_says_the_share_and_warns(exe, tmp_path):
    doc, run = _run(exe, tmp_path, "--window", "0", "--stream", "1000000")
    cov = doc["coverage"]
    assert cov["mode"] == "first" and cov["cut"]
    assert cov["share"] == pytest.approx(1_000_000 / RUN)
    assert _accesses(doc, "work") == 0  # the first million accesses are all initialisation
    assert "only the first 4.77 % of the run was modelled" in run.stderr
    assert "modelled: the first 1,000,000 of the run's" in run.stdout


@needs_clang
def test_windows_past_the_budget_are_reported_as_cut(exe, tmp_path):
    doc, run = _run(exe, tmp_path, "--stream", "200000")
    cov = doc["coverage"]
    assert cov["mode"] == "windows" and cov["cut"]
    assert cov["share"] < 0.02
    assert "budget ran out" in run.stderr
    page = html.unescape((tmp_path / "out" / "camat.html").read_text())
    assert "Warning: the stream's budget ran out" in page


def _grid(n: int, per: int = 16) -> list[int]:
    """The runtime's window positions (trace_stream.c, grid_step): n of them."""
    out, g = [], 0
    while len(out) < n:
        out.append(g)
        step = 1
        while g >= per * step:
            step *= 2
        g += step
    return out


def test_windows_at_multiples_of_the_last_spacing_are_kept_at_one_length():
    import numpy as np

    from objtier.camat.coverage import select_windows

    grid = _grid(30)  # 0..15, 16, 18, ... 30, 32, 36, ... 52
    assert grid[15:18] == [15, 16, 18] and grid[-3:] == [44, 48, 52]
    sizes = [100] * 29 + [30]  # the run ended inside the last window
    sizes[4] = 99  # a window (g = 4) that lost a record to a dropped claim
    opened = np.cumsum([0] + sizes[:-1])
    order = np.arange(sum(sizes), dtype=np.uint64)
    got = select_windows(order, (np.array(grid), opened, None))
    step = grid[-1] - grid[-2]
    assert step == 4
    kept = [g for g, n in zip(grid, sizes) if g % step == 0 and n >= 75]
    # 0, 4, 8, 12; 16, 20, 24, 28; 32, 36, ... 48 (52 ended early)
    assert got["windows_modelled"] == len(kept) == 13 and got["window"] == 99
    assert got["modelled_accesses"] == 13 * 99 == got["mask"].sum()
    assert got["grid_step_accesses"] == 4 * 100 and got["reaches"] is None
    first = order[got["mask"]][:99]  # window g = 0, cut to the common length
    assert (first == np.arange(99)).all()
    assert select_windows(order, (np.array(grid), opened, 60))["reaches"] == 60 * 100
