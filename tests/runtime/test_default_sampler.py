"""The runtime preloaded by hand, without OBJTIER_SAMPLER, samples as `objtier record`'s default
does (docs/runtime.md): pageout when a swap device has free space, else perf's software
page-fault events (the runtime adds no swap device itself), and says why in the trace's
OBJTIER_SAMPLER_REASON. The program runs as it does without the runtime.

Each test compiles a program, preloads libobjtier.so with only OBJTIER_OUTPUT set and reads the
trace back with the real reader."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from objtier import native
from objtier.commands.record import sampler_swap
from objtier.record.sampler_choice import hardware_memory_sampling, perf_permitted, swap_active
from objtier.trace import open_trace
from objtier.trace.format import SAMPLE_SOURCES

from .conftest import SWEEP_C

SOURCE = {name: code for code, name in SAMPLE_SOURCES.items()}


def run_default(exe: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    """exe under the runtime with OBJTIER_OUTPUT only: no other OBJTIER_* variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env.update(LD_PRELOAD=str(native.runtime_library()), OBJTIER_OUTPUT=str(out))
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def sweep(compile_c):
    return compile_c(SWEEP_C, "sweep")


@pytest.fixture
def no_pmu():
    if hardware_memory_sampling():
        pytest.skip("PEBS/IBS here: the default is perf with hardware memory sampling")
    if not perf_permitted()[0]:
        pytest.skip("perf_event_open is not permitted: the default records allocations only")


def check_unchanged(sweep: Path, run: subprocess.CompletedProcess) -> None:
    plain = subprocess.run([str(sweep), "16", "4"], capture_output=True, text=True, timeout=60)
    assert run.returncode == plain.returncode == 0, run.stderr
    assert run.stdout == plain.stdout


def test_without_swap_the_default_is_perf_page_faults(sweep, tmp_path, no_pmu):
    if swap_active():
        pytest.skip("a swap device is active here: the default is pageout")
    out = tmp_path / "rec"
    run = run_default(sweep, out, "16", "4")
    check_unchanged(sweep, run)
    trace = open_trace(out)
    config = trace.processes[0].config
    assert config["OBJTIER_SAMPLER"] == "perf"
    reason = config["OBJTIER_SAMPLER_REASON"]
    assert "no active swap" in reason and "software page-fault" in reason, reason
    assert trace.allocations.num_rows >= 1
    stats = trace.sampler_stats.to_pylist()
    assert [s["source"] for s in stats] == [SOURCE["perf-swfault"]]
    # the 16 MiB array's first touches are page faults the sampler sees
    assert trace.samples.num_rows > 0
    assert set(trace.samples.column("source").to_pylist()) == {SOURCE["perf-swfault"]}


@pytest.mark.root
def test_with_swap_the_default_is_pageout(sweep, tmp_path, no_pmu):
    out = tmp_path / "rec"
    with sampler_swap("pageout", lambda text: None):  # zram while none is active; removed after
        assert swap_active()
        run = run_default(sweep, out, "16", "4")
    check_unchanged(sweep, run)
    trace = open_trace(out)
    config = trace.processes[0].config
    assert config["OBJTIER_SAMPLER"] == "pageout"
    assert "pushed to swap" in config["OBJTIER_SAMPLER_REASON"]
    assert trace.allocations.num_rows >= 1
    stats = trace.sampler_stats.to_pylist()
    assert [s["source"] for s in stats] == [SOURCE["pageout"]]


def test_a_named_sampler_keeps_its_reason(sweep, tmp_path):
    """OBJTIER_SAMPLER set: nothing is resolved and the reason given is kept as it was."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    out = tmp_path / "rec"
    env.update(LD_PRELOAD=str(native.runtime_library()), OBJTIER_OUTPUT=str(out),
               OBJTIER_SAMPLER="none", OBJTIER_SAMPLER_REASON="chosen by hand")
    run = subprocess.run([str(sweep), "16", "4"], env=env, capture_output=True, text=True,
                         timeout=120)
    check_unchanged(sweep, run)
    config = open_trace(out).processes[0].config
    assert (config["OBJTIER_SAMPLER"], config["OBJTIER_SAMPLER_REASON"]) == ("none",
                                                                             "chosen by hand")
