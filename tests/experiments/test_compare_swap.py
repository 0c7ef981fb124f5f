"""`objtier compare` on the real swap tier: a program with one hot and one cold array under a
tight memory cgroup with zram behind it; results on disk, and nothing left on the machine —
also when SIGINT arrives mid-run."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import (default_sigint, leftovers, machine_state, needs_enforcement,
                             objtier, one_line_error)
from objtier.errors import UsageError
from objtier.experiments.compare_swap import (SHORT_PROFILE_S, CompareSettings, run_compare,
                                              short_profile_warning)
from ..phased_program import phased_source

pytestmark = pytest.mark.root

# hot 24 MiB, cold 72 MiB: footprint ~97 MiB; local 60% ~58 MiB; plan budget = local - 8 MiB.
# The profile samples at a high rate so that a run of a second sees both arrays.


def compare(exe: Path, out: Path, repeat: int = 2, rounds: str = "3"):
    """run_compare in this process, with a machine snapshot taken after the first run."""
    snapshots = []
    settings = CompareSettings(local="60%", repeat=repeat, margin="8M", algo="rank",
                               rate=200_000, output=out)
    result = run_compare([str(exe), "24", "72", rounds], settings,
                         on_row=lambda row: snapshots.append(machine_state()))
    return result, snapshots[0]


def test_compare_writes_one_row_per_run_and_restores_the_machine(hotcold, tmp_path):
    before = machine_state()
    result, during = compare(hotcold, tmp_path / "out")
    after = machine_state()
    assert f"objtier-{os.getpid()}" in during[1]      # the cgroup existed while running
    assert leftovers(before, during, after) == []
    assert f"objtier-{os.getpid()}" not in after[1]

    out = tmp_path / "out"
    with open(out / "compare.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["config"] for r in rows] == ["baseline", "objtier", "baseline", "objtier"]
    assert [int(r["order"]) for r in rows] == [1, 2, 3, 4]
    # The plan never makes the program fail: every run exits 0, none is OOM-killed.
    assert all(r["returncode"] == "0" and r["memcg_oom_kills"] == "0" for r in rows)
    # The cgroup limit held the program below its footprint, so it went through swap.
    local = result.summary["local"]["bytes"]
    assert all(int(r["memcg_peak_bytes"]) <= local for r in rows)
    assert all(int(r["major_faults"]) > 0 for r in rows)
    # CPU time is the program's own: swapping costs kernel time; no more than its threads
    # (at most one per CPU here) can have spent in the run's wall time.
    assert all(0 < float(r["system_s"]) and 0 < float(r["user_s"]) for r in rows)
    assert all(float(r["user_s"]) + float(r["system_s"])
               <= float(r["wall_s"]) * os.cpu_count() + 0.05 for r in rows)
    assert all(r["fom_name"] == "hotcold" for r in rows)

    summary = json.loads((out / "summary.json").read_text())
    assert summary["medians"]["baseline"]["runs"] == 2
    assert summary["medians"]["objtier"]["runs"] == 2
    assert summary["unlimited"]["footprint_bytes"] > 90 << 20
    assert summary["local"]["mlock_limit_bytes"] == local - (8 << 20)
    assert summary["ratios"]["speedup"] > 0
    assert summary["same_command"] is False      # the objtier arm ran the plan
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The plan put the hot array (and not the cold one) in fast memory.
    plan = json.loads((out / "plan.json").read_text())
    fast = [e for e in plan["entries"] if e["tier"] == "fast"]
    assert [e["size_min"] for e in fast] == [24 << 20]
    # The objtier runs used the runtime: it recorded both arrays and matched them to the plan.
    assert all(r["objects_matched"] == "2" for r in rows if r["config"] == "objtier")
    # profiles of a run under a second, by a windowed sampler, come with a warning
    short = [w for w in result.warnings if "without a limit: the profiles' sampler" in w]
    assert len(short) == (summary["unlimited"]["wall_s"] < SHORT_PROFILE_S), result.warnings


def test_short_profile_warning_only_for_short_windowed_runs():
    assert "ran 0.10 s without a limit" in short_profile_warning(0.1, True)
    assert short_profile_warning(0.1, False) is None        # PEBS/IBS, perf: not windowed
    assert short_profile_warning(SHORT_PROFILE_S, True) is None


@needs_enforcement
def test_default_margin_is_fitted_to_what_the_plan_leaves_unlocked(hotcold, tmp_path):
    # local 80% of ~97 MiB: the default 32 MiB margin leaves a budget of ~46 MiB, so spill
    # locks the hot array and splits the cold one; no object stays wholly unlocked, so the
    # margin shrinks to its 8 MiB floor and the plan is made again for local - 8 MiB.
    settings = CompareSettings(local="80%", repeat=1, rate=200_000, algo="spill", profiles=1,
                               output=tmp_path / "out")
    # Four rounds: with two, the profile saw few scan windows on the hot array's loop, and
    # once (in a full run of the suite) the plan left the hot array unlocked.
    result = run_compare([str(hotcold), "24", "72", "4"], settings)
    local = result.summary["local"]
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    placed = [(e["tier"], e["size_min"], round(e.get("accesses", 0))) for e in plan["entries"]]
    assert local["margin_bytes"] == 8 << 20, placed
    assert local["mlock_limit_bytes"] == local["bytes"] - (8 << 20)
    assert plan["budget"]["bytes"] == local["mlock_limit_bytes"]
    tiers = sorted(e["tier"] for e in plan["entries"])
    assert tiers == ["fast", "split"]
    assert all(r.ok for r in result.rows)


def _wait_for_processes(cgroup: Path, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if (cgroup / "cgroup.procs").read_text().strip():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{cgroup} never held a process")


@pytest.mark.heavy
def test_sigint_mid_run_restores_the_machine(hotcold, tmp_path):
    before = machine_state()
    process = subprocess.Popen(
        [sys.executable, "-m", "objtier", "compare", "--local", "60%", "--repeat", "3",
         "--mlock-margin", "8M", "-o", str(tmp_path / "out"), "--", str(hotcold), "8", "40",
         "10"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint)
    cgroup = Path(f"/sys/fs/cgroup/memory/objtier-{process.pid}")
    try:
        _wait_for_processes(cgroup)
        during = machine_state()
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    after = machine_state()
    assert process.returncode == 130
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert not cgroup.exists()
    assert leftovers(before, during, after) == []


def test_errors_are_one_line(tmp_path, compile_c):
    small = compile_c("int main(void) { return 0; }", "small")
    run = objtier("compare", "-q", "-o", str(tmp_path / "a"), "--", str(small))
    assert run.returncode != 0 and one_line_error(run.stderr)
    assert "footprint too small" in run.stderr

    failing = compile_c('#include <stdio.h>\nint main(void) { fputs("bad input\\n", stderr); '
                        'return 3; }', "failing")
    run = objtier("compare", "-q", "-o", str(tmp_path / "b"), "--", str(failing))
    assert run.returncode != 0 and one_line_error(run.stderr)
    assert re.search(r"failed in the unlimited run \(exit status 3\): bad input", run.stderr)

    run = objtier("compare", "-q", "--swap", "/dev/no-such-swap", "-o", str(tmp_path / "c"), "--",
                  str(small))
    assert run.returncode != 0 and one_line_error(run.stderr)
    assert "no swap possible" in run.stderr


@pytest.mark.parametrize("args, message", [
    (["--profiles", "2", "--algo", "spill"], "--profiles applies to --algo auto and pages"),
    (["--profiles", "0", "--algo", "pages"], "--profiles: must be at least 1"),
    (["--tier", "numa", "--profiles", "2", "--algo", "pages"], "applies to --tier swap only"),
    (["--tier", "numa", "--phases"], "--phases applies to --tier swap only"),
])
def test_profiles_errors_are_one_line(tmp_path, args, message):
    run = objtier("compare", "-q", *args, "-o", str(tmp_path / "a"), "--", "true")
    assert run.returncode != 0 and one_line_error(run.stderr) and message in run.stderr


@needs_enforcement
@pytest.mark.heavy
def test_pages_plan_from_two_profiles(hotcold, tmp_path):
    """--algo pages with --profiles 2: both recordings are kept, the plan holds the hot array's
    pages (touched in many windows of both), and the plan never makes the program fail."""
    out = tmp_path / "out"
    settings = CompareSettings(local="60%", repeat=1, margin="8M", algo="pages", profiles=2,
                               rate=200_000, output=out)
    result = run_compare([str(hotcold), "24", "72", "3"], settings)
    assert (out / "profile.otr").is_dir() and (out / "profile-2.otr").is_dir()
    assert all(r.returncode == 0 for r in result.rows)
    plan = json.loads((out / "plan.json").read_text())
    hot = [e for e in plan["entries"] if e["size_min"] == 24 << 20]
    assert len(hot) == 1 and hot[0]["tier"] in ("fast", "pages")
    assert hot[0]["fast_bytes"] >= (24 << 20) - 2 * 4096      # every whole page of it
    assert plan["algorithm"]["name"] == "pages"
    # no phase markers in the program: one placement for the whole run, not an error
    assert [p["name"] for p in plan["phases"]] == ["*"]
    assert result.summary["plan"]["phases_with_own_plan"] == ["*"]


@needs_enforcement
def test_phases_give_each_phase_its_plan_and_switch_it(compile_c, tmp_path):
    """A program that marks phases gets one plan per phase by default (settings.phases None,
    as with no --phases): the plan in force in each phase locks that phase's array; the objtier
    run unlocks one array at the phase change and locks the other (PLACEMENT records), and does
    not fail (the kernel alone may be OOM-killed here: docs/compare.md)."""
    from objtier.native import NATIVE_DIR
    from objtier.trace import open_trace

    exe = compile_c(phased_source(32), "phased",
                    flags=("-O1", "-g", f"-I{NATIVE_DIR / 'include'}", "-ldl"))
    out = tmp_path / "out"
    settings = CompareSettings(local="60%", repeat=1, margin="12M", algo="spill",
                               rate=200_000, output=out)
    result = run_compare([str(exe)], settings)
    assert [r.returncode for r in result.rows if r.config == "objtier"] == [0]
    plan = json.loads((out / "plan.json").read_text())
    # a phase merged into the root runs under the root's plan ("target")
    targets = {p["name"]: p["target"] for p in plan["phases"]}
    assert targets["build"] != targets["query"]
    assert set(result.summary["plan"]["phases_with_own_plan"]) == set(targets.values())

    def most_fast(phase: str) -> str:
        entries = [e for e in plan["entries"] if e["phase"] == phase]
        return max(entries, key=lambda e: e["fast_bytes"])["context_key"]

    # each phase's plan locks its own array most
    assert most_fast(targets["build"]) != most_fast(targets["query"])
    trace = open_trace(next(out.glob("runs/*-objtier-*.otr")))
    rows = sorted(zip(*(trace.placements.column(c).to_pylist()
                        for c in ("time_ns", "action", "result"))))
    locks = [i for i, (_, action, result) in enumerate(rows) if action == 1 and result == 0]
    unlocks = [i for i, (_, action, result) in enumerate(rows) if action == 2 and result == 0]
    # MLOCK = 1, MUNLOCK = 2 (enum ot_placement_action): a lock at start, an unlock at the
    # phase change and a lock after it
    assert len(locks) >= 2 and unlocks and unlocks[0] < locks[-1]


@needs_enforcement
def test_phases_asked_of_a_program_without_markers_is_a_clear_error(hotcold, tmp_path):
    child = subprocess.Popen([sys.executable, "-m", "objtier", "compare", "-q", "--phases",
                              "--repeat", "1", "--local", "60%", "--mlock-margin", "8M", "-o",
                              str(tmp_path / "out"), "--", str(hotcold), "24", "72", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, stderr = child.communicate(timeout=300)
    assert child.returncode != 0 and one_line_error(stderr)
    assert "no phase markers" in stderr
    # the error comes before the swap tier exists; the footprint run's cgroup is gone
    # (other experiments on the machine may add devices and cgroups of their own meanwhile)
    assert [c for c in machine_state()[1] if c.startswith(f"objtier-{child.pid}")] == []


def test_not_root_is_a_clear_error(monkeypatch, tmp_path):
    from objtier.errors import EnvironmentProblem
    from objtier.tiers import swap

    monkeypatch.setattr(swap.os, "geteuid", lambda: 1000)
    with pytest.raises(EnvironmentProblem, match="needs root"):
        run_compare(["/bin/true"], CompareSettings(output=tmp_path / "out"))
    assert not (tmp_path / "out").exists()


@needs_enforcement
@pytest.mark.heavy
def test_plan_keeps_the_hot_array_resident_and_cuts_swap_outs(hotcold, tmp_path):
    result, _ = compare(hotcold, tmp_path / "out", repeat=3, rounds="4")
    out = tmp_path / "out"
    assert all(r.ok for r in result.rows)          # the plan never makes the program fail
    for r in result.rows:
        text = next((out / "runs").glob(f"{r.order:02d}-{r.config}-*.out")).read_text()
        resident = float(re.search(r"hot_resident=([\d.]+)", text).group(1))
        locked_kb = int(re.search(r"hot_locked_kb=(-?\d+)", text).group(1))
        if r.config == "objtier":
            assert resident == 1.0                 # mincore: every hot page in memory
            assert locked_kb >= (24 << 10) - 8     # the hot array is mlocked (VmLck, KiB)
            assert r.locked_bytes >= (24 << 20) - 2 * 4096  # whole pages inside the object
    medians = result.summary["medians"]
    assert medians["objtier"]["pswpout"] < medians["baseline"]["pswpout"]


@needs_enforcement
@pytest.mark.heavy
def test_every_arm_gets_the_stat_flush_reader_but_kernel_raw(hotcold, tmp_path):
    """--arm kernel-raw --arm objtier-noguard: four arms per repetition, in order; the reader
    runs in every arm but kernel-raw (reads counted per run), the unguarded arm gets no pressure
    advice, kernel-raw gets survival and no ratio, and the terminal and summary say so."""
    from objtier.trace import open_trace

    out = tmp_path / "out"
    run = objtier("compare", "-q", "--local", "60%", "--repeat", "1", "--mlock-margin", "8M",
                  "--algo", "rank", "--rate", "200000", "--arm", "kernel-raw", "--arm",
                  "objtier-noguard", "-o", str(out), "--", str(hotcold), "24", "72", "3")
    assert run.returncode == 0, run.stderr
    with open(out / "compare.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["config"] for r in rows] == ["baseline", "objtier", "objtier-noguard",
                                          "kernel-raw"]
    assert all(r["status"] == "ok" and r["memcg_oom_kills"] == "0" for r in rows)
    flushed = {r["config"]: (float(r["stat_flush_ms"]), int(r["stat_flush_reads"]))
               for r in rows}
    assert flushed["kernel-raw"] == (0.0, 0)
    assert all(ms == 10.0 and reads > 0 for c, (ms, reads) in flushed.items()
               if c != "kernel-raw"), flushed
    unguarded = next(out.glob("runs/*-objtier-noguard-1.otr"))
    cold = [p for p in open_trace(unguarded).placements.to_pylist() if p["action"] == 3]
    assert cold == []                              # OT_PLACE_COLD: the guard's advice

    summary = json.loads((out / "summary.json").read_text())
    assert summary["arms"] == ["baseline", "objtier", "objtier-noguard", "kernel-raw"]
    flush = summary["stat_flush"]
    assert flush["period_ms"] == 10.0
    assert flush["arms_with_reader"] == ["baseline", "objtier", "objtier-noguard"]
    assert flush["arms_without_reader"] == ["kernel-raw"]
    assert flush["per_arm"]["baseline"]["reads"] == flushed["baseline"][1]
    assert set(summary["arm_ratios"]) == {"objtier", "objtier-noguard"}
    assert summary["medians"]["kernel-raw"]["finished"] == 1
    assert "stat-flush reader: memory.stat every 10 ms in baseline, objtier, " \
           "objtier-noguard; without it: kernel-raw (survival only)" in run.stdout
    assert "survival: baseline 1/1 finished; objtier 1/1 finished;" in run.stdout


@pytest.mark.parametrize("args, message", [
    (["--stat-flush", "-1"], "--stat-flush must be 0 (off) or a period of at most"),
    (["--stat-flush", "20000"], "--stat-flush must be 0 (off) or a period of at most"),
    (["--arm", "objtier-noguard", "--no-guard"], "already runs without the guard"),
    (["--tier", "numa", "--stat-flush", "5"], "apply to --tier swap only"),
])
def test_stat_flush_and_arm_errors_are_one_line(tmp_path, args, message):
    run = objtier("compare", "-q", *args, "-o", str(tmp_path / "a"), "--", "true")
    assert run.returncode != 0 and one_line_error(run.stderr) and message in run.stderr


def test_an_unknown_arm_is_refused_before_anything_runs(tmp_path):
    settings = CompareSettings(arms=("kernel-mglru",), output=tmp_path / "out")
    with pytest.raises(UsageError, match="unknown arm 'kernel-mglru'"):
        run_compare(["true"], settings)
    assert not (tmp_path / "out").exists()


def test_stat_flush_off_is_warned_before_anything_runs(tmp_path, compile_c):
    small = compile_c("int main(void) { return 0; }", "small")
    run = objtier("compare", "-q", "--stat-flush", "0", "-o", str(tmp_path / "a"), "--",
                  str(small))
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode != 0 and len(lines) == 2, run.stderr
    assert "--stat-flush 0" in lines[0] and "ratios are not fair" in lines[0]
    assert "footprint too small" in lines[1]


# 48 MiB in 4 KiB blocks (all below --min-size): no tracked object, so no plan can act.
SMALL_BLOCKS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    enum { N = 12288, B = 4096 };
    static char *blocks[N];
    for (int i = 0; i < N; i++) { blocks[i] = malloc(B); memset(blocks[i], i, B); }
    long sum = 0;
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < N; i++) sum += blocks[i][(round * 64) % B];
    printf("FOM small=%ld sum time=0.1\n", sum);
    return 0;
}
"""


def test_a_plan_that_does_nothing_runs_the_program_alone(compile_c, tmp_path):
    """When the plan locks nothing and moves nothing (here: no object at all), the objtier
    arm runs the program without the runtime, so that it is exactly the kernel's run."""
    exe = compile_c(SMALL_BLOCKS, "small_blocks")
    out = tmp_path / "out"
    said = []
    settings = CompareSettings(local="70%", repeat=1, profiles=1, output=out)
    result = run_compare([str(exe)], settings, say=said.append)
    assert all(r.ok for r in result.rows)
    assert any("leaves the program to the kernel" in line for line in said), said
    plan = json.loads((out / "plan.json").read_text())
    assert not [e for e in plan["entries"] if e["tier"] in ("fast", "split")]
    with open(out / "compare.csv") as f:
        rows = list(csv.DictReader(f))
    objtier_rows = [r for r in rows if r["config"] == "objtier"]
    assert objtier_rows and all(r["objects_matched"] == "" for r in objtier_rows)
    assert not list((out / "runs").glob("*objtier*.otr"))     # no runtime, no trace
    # the summary says so: the two arms' ratio is the spread between identical runs
    assert json.loads((out / "summary.json").read_text())["same_command"] is True
