"""Honest simulation of sampled recordings: a fault-sampled recording of a real program is
replayed as its estimated page touches, every absolute figure is labelled estimate or exact,
and too few samples for the fast tier give a printed warning."""

from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np
import pytest

from objtier.analysis.objects import object_table
from objtier.cli import main
from objtier.sim import load_preset, simulate
from objtier.sim.scaling import MIN_SAMPLES_PER_FAST_PAGE
from objtier.trace import open_trace
from objtier.trace import format as F

from .conftest import MS, write_trace

SWEEPS = r"""
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(void) {
    size_t n = (48u << 20) / sizeof(long), hot_n = (8u << 20) / sizeof(long);
    long *cold = malloc(n * sizeof(long)), *hot = malloc(hot_n * sizeof(long));
    long s = 0;
    for (size_t i = 0; i < n; i++) cold[i] = i;
    for (size_t i = 0; i < hot_n; i++) hot[i] = i;
    double end = now() + 1.5;
    while (now() < end) {                    /* hot swept often, cold now and then */
        for (int r = 0; r < 8; r++) for (size_t i = 0; i < hot_n; i += 512) s += hot[i]++;
        for (size_t i = 0; i < n; i += 4096) s += cold[i]++;
    }
    printf("%ld\n", s);
    free(cold); free(hot);
    return 0;
}
"""


@pytest.fixture(scope="module")
def fault_recording(tmp_path_factory):
    """A real program recorded with the fault sampler at two rates: (high, low)."""
    tmp = tmp_path_factory.mktemp("scaling")
    src = tmp / "sweeps.c"
    src.write_text(SWEEPS)
    exe = tmp / "sweeps"
    subprocess.run(["gcc", "-O1", "-g", "-o", str(exe), str(src)], check=True)
    out = {}
    for name, rate in (("high", "20000"), ("low", "20")):
        path = tmp / f"{name}.otr"
        rec = subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "-o", str(path),
                              "--sampler", "fault", "--rate", rate, "--counters-interval", "0",
                              "--", str(exe)], capture_output=True, text=True, timeout=120)
        if rec.returncode != 0:
            pytest.skip(f"the fault sampler is not usable here: {rec.stderr.strip()[-300:]}")
        out[name] = path
    return out["high"], out["low"]


def test_fault_recording_is_replayed_as_its_estimated_touches(fault_recording):
    high, _ = fault_recording
    trace = open_trace(high)
    if trace.windows.num_rows == 0:
        pytest.skip("the fault sampler wrote no scan windows")
    sim = simulate(trace, ["first-touch", "object"], "50%", load_preset("zram"))
    assert sim.basis == "estimate" and sim.scale.kind == "fault"
    assert "estimated page touches" in sim.scale.description
    estimated = float(np.nansum(object_table(trace, labels=False).column("est_touches")
                                .to_numpy(zero_copy_only=False).astype(float)))
    replayed = sim.results[0].counters["fast_loads"] + sim.results[0].counters["fast_stores"] \
        + sim.results[0].counters["slow_loads"] + sim.results[0].counters["slow_stores"]
    samples = trace.samples.num_rows
    assert estimated > 2 * samples          # the sampler watched part of the pages only
    # Poisson draws around the estimate (plus samples outside objects, kept as they are)
    assert abs(replayed - estimated) < 0.05 * estimated + 5 * np.sqrt(estimated) + samples
    rows = {r["policy"]: r for r in sim.rows()}
    assert rows["first-touch"]["swap_ins"] >= rows["first-touch"]["sampled_swap_ins"]
    # the same recording replayed sample by sample (--param expand=0) sees fewer swap-ins
    thin = simulate(trace, ["first-touch"], "50%", load_preset("zram"), {"expand": "0"})
    assert thin.results[0].counters["pswpin"] <= sim.results[0].counters["pswpin"]


def test_cli_labels_estimates_and_warns_on_too_few_samples(fault_recording, tmp_path, capsys):
    _, low = fault_recording
    out = tmp_path / "sim"
    assert main(["simulate", str(low), "--fast", "50%", "--preset", "zram", "--policy",
                 "first-touch", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    text = " ".join((captured.out + captured.err).split())
    assert "(est.)" in text and "are estimates" in text and "scale:" in text
    assert f"below the {MIN_SAMPLES_PER_FAST_PAGE:g} needed" in text
    rows = list(csv.DictReader(open(out / "simulate.csv")))
    assert rows[0]["basis"] == "estimate"


def test_exact_trace_is_labelled_exact_without_scaling(tmp_path, capsys):
    start = 1_000_000_000
    base = 0x7F0000000000
    pages = np.tile(np.arange(64), 4)
    samples = {"time_ns": start + MS + 1000 * np.arange(len(pages), dtype=np.uint64),
               "addr": base + pages.astype(np.uint64) * 4096}
    path = write_trace(tmp_path / "exact.otr", [(start, base, 64 * 4096, 1)], samples,
                       start_ns=start, source=F.SOURCE_TRACE)
    sim = simulate(open_trace(path), ["first-touch"], 32 * 4096, load_preset("zram"),
                   {"swap_reserve": "0"})
    assert sim.basis == "exact" and sim.warnings == []
    c = sim.results[0].counters
    assert sim.rows()[0]["swap_ins"] == c["pswpin"] > 0   # not scaled
    assert main(["simulate", str(path), "--fast", str(32 * 4096), "--preset", "zram",
                 "--policy", "first-touch"]) == 0
    assert "(exact)" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["scale=0", "scale=abc", "scale=nan", "expand=2", "seed=x"])
def test_bad_scale_settings_are_refused(hot_cold_trace, bad, capsys):
    assert main(["simulate", str(hot_cold_trace), "--fast", "50%", "--param", bad]) == 2
    err = capsys.readouterr().err
    assert "objtier simulate:" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_swept_objects_are_replayed_in_page_order(fault_recording):
    from objtier.sim.events import from_trace
    from objtier.sim.scaling import SWEPT_SHARE, expand_fault_samples

    high, _ = fault_recording
    trace = open_trace(high)
    table = object_table(trace, labels=False)
    sequential = table.column("sequential").to_pylist()
    swept = [i for i, q in enumerate(sequential) if q is not None and q >= SWEPT_SHARE]
    if not swept or trace.windows.num_rows == 0:
        pytest.skip("no object of this recording was seen sweeping")
    source = from_trace(trace)
    events, _ = expand_fault_samples(trace, source, 100_000_000)
    for obj in swept:
        mine = events[events["obj"] == obj]
        pages = (mine["addr"] - np.uint64(source.addr[obj])) // np.uint64(4096)
        pages = pages.astype(np.int64)
        steps = np.diff(pages)
        npages = max(int(source.size[obj]) // 4096, 1)
        # forward by one page, or wrapping around to the start of the object
        assert np.all((steps == 1) | (steps == 1 - npages)), np.unique(steps)[:10]
