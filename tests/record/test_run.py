"""`objtier run --plan`: bad plans are one-line errors; a plan for another binary warns and the
program still runs with its own exit status."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from objtier.trace import open_trace

from ..experiments.helpers import machine_state, objtier, one_line_error


@pytest.fixture
def plan_for_hotcold(hotcold, tmp_path) -> Path:
    """A plan made from a recording of hotcold (hot 8 MiB, cold 24 MiB)."""
    trace = tmp_path / "hc.otr"
    run = objtier("record", "-q", "--sampler", "fault", "-o", str(trace), "--", str(hotcold),
                  "8", "24", "2")
    assert run.returncode == 0, run.stderr
    plan = tmp_path / "plan.json"
    run = objtier("plan", str(trace), "--fast", "16M", "--algo", "rank", "-o", str(plan))
    assert run.returncode == 0, run.stderr
    return plan


def test_plan_for_another_binary_warns_and_keeps_the_exit_status(plan_for_hotcold, compile_c):
    other = compile_c('#include <stdio.h>\nint main(void) { puts("other ran"); return 7; }',
                      "other")
    run = objtier("run", "--plan", str(plan_for_hotcold), "--", str(other))
    assert run.returncode == 7
    assert "other ran" in run.stdout
    assert "warning: the plan was made for another binary" in run.stderr
    assert "Traceback" not in run.stderr


def test_plan_for_its_own_binary_matches_its_objects(plan_for_hotcold, hotcold, tmp_path):
    out = tmp_path / "run.otr"
    run = objtier("run", "--plan", str(plan_for_hotcold), "-o", str(out), "--", str(hotcold),
                  "8", "24", "1")
    assert run.returncode == 0, run.stderr
    assert "another binary" not in run.stderr
    assert "2 of 2 objects matched the plan" in run.stderr
    assert "FOM hotcold=" in run.stdout
    assert list(out.glob("proc-*.otr"))


@pytest.mark.parametrize("content", ["{not json", '{"format": "objtier-plan", "version": 9}',
                                     '{"format": "something-else"}'])
def test_bad_plan_file_is_a_one_line_error(tmp_path, content):
    plan = tmp_path / "bad.json"
    plan.write_text(content)
    run = objtier("run", "--plan", str(plan), "--", "/bin/true")
    assert run.returncode == 2
    assert one_line_error(run.stderr) and run.stderr.startswith("objtier run: ")


def test_missing_plan_and_wrong_options_are_one_line_errors(plan_for_hotcold, tmp_path):
    run = objtier("run", "--plan", str(tmp_path / "none.json"), "--", "/bin/true")
    assert run.returncode == 2 and one_line_error(run.stderr)
    run = objtier("run", "--plan", str(plan_for_hotcold), "--tier", "numa", "--local", "50%",
                  "--", "/bin/true")
    assert run.returncode == 2 and one_line_error(run.stderr) and "--local" in run.stderr
    run = objtier("run", "--plan", str(plan_for_hotcold), "--tier", "numa", "--nodes",
                  "zero/", "--", "/bin/true")
    assert run.returncode == 2 and one_line_error(run.stderr) and "--nodes" in run.stderr
    run = objtier("run", "--plan", str(plan_for_hotcold), "--tier", "numa", "--no-guard",
                  "--", "/bin/true")
    assert run.returncode == 2 and one_line_error(run.stderr) and "--no-guard" in run.stderr


@pytest.mark.root
def test_run_with_local_limit_restores_the_machine(plan_for_hotcold, hotcold, tmp_path):
    before = machine_state()
    spools = set(Path("/dev/shm").glob("objtier-spool-*"))
    trace = tmp_path / "run.otr"
    process = subprocess.Popen(
        [sys.executable, "-m", "objtier", "run", "--plan", str(plan_for_hotcold), "--local",
         "70%", "--mlock-margin", "4M", "-o", str(trace), "--", str(hotcold), "8", "24", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, stderr = process.communicate(timeout=300)
    after = machine_state()
    assert process.returncode == 0, stderr
    assert "local memory" in stderr and "at most" in stderr
    # the same stat-flush reader as compare's arms ran beside the program, at compare's period
    reads = re.search(r"stat-flush reader: memory.stat every 10 ms \(2 ms while major faults "
                      r"grow\), (\d+) read\(s\) \((\d+) fast\)", stderr)
    assert reads and int(reads.group(1)) > 0, stderr
    assert not Path(f"/sys/fs/cgroup/memory/objtier-{process.pid}").exists()
    assert set(after[0]) <= set(before[0])          # no swap device left on
    # the trace was written on tmpfs (tiers.spool) and landed whole in -o's directory
    assert set(Path("/dev/shm").glob("objtier-spool-*")) == spools
    (landed,) = trace.glob("proc-*.otr")
    assert "OBJTIER_OUTPUT=/dev/shm/objtier-spool-" in landed.read_bytes().decode("latin-1")
    assert open_trace(trace).placements.num_rows > 0


@pytest.mark.root
def test_run_stat_flush_off_warns_and_reads_nothing(plan_for_hotcold, hotcold):
    run = objtier("run", "--plan", str(plan_for_hotcold), "--local", "70%", "--mlock-margin",
                  "4M", "--stat-flush", "0", "--", str(hotcold), "8", "24", "1")
    assert run.returncode == 0, run.stderr
    assert "warning: --stat-flush 0: no stat-flush reader" in run.stderr
    assert "stat-flush reader off" in run.stderr and "read(s)" not in run.stderr


@pytest.mark.parametrize("args, message", [
    (["--stat-flush", "10"], "--stat-flush needs --local"),
    (["--local", "50%", "--stat-flush", "-1"], "--stat-flush must be 0 (off) or a period"),
    (["--local", "50%", "--stat-flush", "20000"], "--stat-flush must be 0 (off) or a period"),
    (["--tier", "numa", "--stat-flush", "5"], "--stat-flush applies to --tier swap only"),
])
def test_run_stat_flush_errors_are_one_line(plan_for_hotcold, args, message):
    run = objtier("run", "--plan", str(plan_for_hotcold), *args, "--", "/bin/true")
    assert run.returncode == 2 and one_line_error(run.stderr), run.stderr
    assert message in run.stderr



MLOCK, COLD = 1, 3  # enum ot_placement_action: OT_PLACE_MLOCK, OT_PLACE_COLD


def _actions(trace: Path, action: int) -> list[dict]:
    from objtier.trace import open_trace

    return [r for r in open_trace(trace).placements.to_pylist() if r["action"] == action]


def _cold_advice(trace: Path) -> list[dict]:
    return _actions(trace, COLD)


def _locked(trace: Path) -> list[dict]:
    return [r for r in _actions(trace, MLOCK) if r["result"] == 0]


@pytest.fixture
def hot_fast_plan(plan_for_hotcold, tmp_path) -> Path:
    """plan_for_hotcold with the hot array set fast and the cold one slow, whatever the short
    recording sampled (the entries are found by their allocation site)."""
    plan = json.loads(plan_for_hotcold.read_text())
    for entry in plan["entries"]:
        hot = entry["label"].startswith("alloc_hot")
        entry["tier"] = "fast" if hot else "slow"
        entry["fast_bytes"] = entry["size_max"] if hot else 0
    path = tmp_path / "hot-fast.json"
    path.write_text(json.dumps(plan))
    return path


PRESSURE_ENV = {"OBJTIER_PRESSURE_MS": "5", "OBJTIER_INACTIVE_PCT": "100"}


def _run_under_pressure(plan: Path, trace: Path, hotcold, *options: str):
    """`objtier run` of hotcold (8 MiB hot, 24 MiB cold, 4 rounds) under a 24 MiB memory
    cgroup (4 MiB mlock margin), the pressure watch every 5 ms with an inactive target of the
    whole limit (so it always advises when the guard is on), trace into `trace`."""
    return objtier("run", "--plan", str(plan), "--local", "24M", "--mlock-margin", "4M",
                   *options, "-o", str(trace), "--", str(hotcold), "8", "24", "4",
                   env={**os.environ, **PRESSURE_ENV})


@pytest.mark.root
def test_cold_advice_follows_cgroup_pressure(hot_fast_plan, hotcold, tmp_path):
    """Periodic advice is off by default, so MADV_COLD on the planned-slow array only comes
    from the pressure watch: under a memory cgroup at its limit (and an inactive list below
    the whole limit, which it always is) the slow array is advised; with no limit, never; with
    --no-guard, never either (while the fast array is still locked)."""
    limited, free = tmp_path / "limited.otr", tmp_path / "free.otr"
    run = _run_under_pressure(hot_fast_plan, limited, hotcold)
    assert run.returncode == 0, run.stderr
    advised = _cold_advice(limited)
    assert advised, "no MADV_COLD under a memory cgroup at its limit"
    assert all(r["result"] == 0 for r in advised)
    assert len({r["alloc_seq"] for r in advised}) == 1          # the cold array only
    run = objtier("run", "--plan", str(hot_fast_plan), "-o", str(free), "--", str(hotcold),
                  "8", "24", "4", env={**os.environ, **PRESSURE_ENV})
    assert run.returncode == 0, run.stderr
    assert _cold_advice(free) == []
    unguarded = tmp_path / "unguarded.otr"                     # --no-guard: none under the limit
    run = _run_under_pressure(hot_fast_plan, unguarded, hotcold, "--no-guard")
    assert run.returncode == 0, run.stderr
    assert _cold_advice(unguarded) == []
    assert _locked(unguarded), "--no-guard must still lock the fast array"


@pytest.mark.root
def test_a_plan_that_locks_nothing_runs_without_the_guard(hot_fast_plan, hotcold, tmp_path):
    """With every object slow there is nothing locked for the guard to make room around: under
    the same cgroup pressure that makes the guard advise the cold array (the test above), the
    all-slow plan advises nothing and says so; the program's output is that of a plain run."""
    plan = json.loads(hot_fast_plan.read_text())
    for entry in plan["entries"]:
        entry["tier"], entry["fast_bytes"] = "slow", 0
    all_slow = tmp_path / "all-slow.json"
    all_slow.write_text(json.dumps(plan))
    trace = tmp_path / "slow.otr"
    run = _run_under_pressure(all_slow, trace, hotcold)
    assert run.returncode == 0, run.stderr
    assert "the plan locks nothing: no pressure guard" in run.stderr
    assert _cold_advice(trace) == [] and _locked(trace) == []
    plain = subprocess.run([str(hotcold), "8", "24", "4"], capture_output=True, text=True)
    assert re.sub(r"\d+\.\d+", "T", run.stdout) == re.sub(r"\d+\.\d+", "T", plain.stdout)


@pytest.mark.root
def test_a_plan_that_does_nothing_runs_the_program_alone(hot_fast_plan, hotcold, tmp_path):
    """Under --local without -o, a plan that locks nothing and moves nothing runs the program
    without the runtime (as compare's objtier arm does): no trace, same output."""
    plan = json.loads(hot_fast_plan.read_text())
    for entry in plan["entries"]:
        entry["tier"], entry["fast_bytes"] = "slow", 0
    plan.pop("large_folios", None)
    all_slow = tmp_path / "all-slow.json"
    all_slow.write_text(json.dumps(plan))
    run = objtier("run", "--plan", str(all_slow), "--local", "24M", "--", str(hotcold), "8",
                  "24", "2")
    assert run.returncode == 0, run.stderr
    assert "it runs without the runtime" in run.stderr, run.stderr
    assert "matched the plan" not in run.stderr and "Traceback" not in run.stderr
    plain = subprocess.run([str(hotcold), "8", "24", "2"], capture_output=True, text=True)
    assert re.sub(r"\d+\.\d+", "T", run.stdout) == re.sub(r"\d+\.\d+", "T", plain.stdout)


@pytest.mark.root
def test_pressure_advice_on_a_pages_object_goes_between_its_ranges(hot_fast_plan, hotcold,
                                                                  tmp_path):
    """The cold array as a `pages` entry with 64 locked ranges: under pressure the guard
    advises all its gaps (up to 256 per call, process_madvise where the kernel has it), every
    call succeeds, and no advice overlaps a locked range (madvise fails on mlocked VMAs)."""
    mib, page = 1 << 20, 4096
    plan = json.loads(hot_fast_plan.read_text())
    ranges = [[i * 4 * page * 6, 4 * page] for i in range(64)]      # 16 KiB every 96 KiB
    for entry in plan["entries"]:
        if not entry["label"].startswith("alloc_hot"):
            entry.update(tier="pages", fast_bytes=64 * 4 * page, ranges=ranges)
    path = tmp_path / "pages.json"
    path.write_text(json.dumps(plan))
    trace = tmp_path / "pages.otr"
    run = _run_under_pressure(path, trace, hotcold)
    assert run.returncode == 0, run.stderr
    cold_seq = {r["alloc_seq"] for r in _actions(trace, MLOCK) if r["length"] < mib}
    locks = [r for r in _locked(trace) if r["alloc_seq"] in cold_seq]
    assert len(locks) == 64
    advised = [r for r in _cold_advice(trace) if r["alloc_seq"] in cold_seq]
    # records are kept for one pass a second; such a pass reached every gap: 63 between the
    # ranges and the tail after the last
    assert len({r["offset"] for r in advised}) >= 64, len(advised)
    assert all(r["result"] == 0 for r in advised), {r["result"] for r in advised}
    assert not any(a["offset"] < l["offset"] + l["length"] and l["offset"] < a["offset"] + a["length"]
                   for a in advised for l in locks)


# 20,000 rows of 200 B beside one 4 MiB array: a recording samples about 1 in 64 rows.
ROWS_AND_ARRAY = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) char *row(void) { char *p = malloc(200); __asm__ volatile("" ::: "memory"); return p; }
int main(void) {
    char *array = malloc(4 << 20);
    memset(array, 1, 4 << 20);
    char **rows = malloc(20000 * sizeof *rows);
    long sum = 0;
    for (int i = 0; i < 20000; i++) { rows[i] = row(); memset(rows[i], i, 200); sum += rows[i][7]; }
    for (int i = 0; i < (4 << 20); i += 4096) sum += array[i];
    printf("sum %ld\n", sum);
    return 0;
}
"""


def test_an_enforced_run_samples_no_small_blocks(compile_c, tmp_path):
    """A recording samples small blocks (SITE_ALLOC records); the run that enforces a plan
    made from it has no --overhead to pace them by and writes none."""
    exe = compile_c(ROWS_AND_ARRAY, name="rows_array", flags=("-O1", "-g", "-fno-builtin"))
    rec = tmp_path / "rec.otr"
    run = objtier("record", "-q", "--sampler", "none", "-o", str(rec), "--", str(exe))
    assert run.returncode == 0, run.stderr
    assert len(open_trace(rec).site_allocations) > 100
    plan = tmp_path / "plan.json"
    run = objtier("plan", str(rec), "--fast", "8M", "--algo", "rank", "-o", str(plan))
    assert run.returncode == 0, run.stderr
    out = tmp_path / "run.otr"
    run = objtier("run", "--plan", str(plan), "-o", str(out), "--", str(exe))
    assert run.returncode == 0, run.stderr
    assert "2 of 2 objects matched the plan" in run.stderr
    trace = open_trace(out)
    assert len(trace.site_allocations) == 0
    assert len(trace.allocations) >= 1
