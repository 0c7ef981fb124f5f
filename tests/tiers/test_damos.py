"""`objtier export-damos`: a real recording of a program that prints where its arrays are, a plan
that makes one fast and one slow, and the scheme set checked against the printed addresses; the
sysfs rendering, the format check, and the DAMON busy check (on a copied tree and on this host,
whose DAMON context is only read)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from objtier.tiers import damos

PROG = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) static char *alloc_hot(size_t n) { return malloc(n); }
__attribute__((noinline)) static char *alloc_cold(size_t n) { return malloc(n); }
__attribute__((noinline)) static char *alloc_gone(size_t n) { return malloc(n); }
int main(void) {
    size_t hn = 4u << 20, cn = 12u << 20, gn = 6u << 20;
    char *hot = alloc_hot(hn), *cold = alloc_cold(cn), *gone = alloc_gone(gn);
    memset(cold, 1, cn); memset(gone, 2, gn);
    unsigned long sum = 0;
    for (int r = 0; r < 40; r++) { memset(hot, r, hn); sum += hot[r * 4096] + gone[r]; }
    free(gone);
    printf("hot=%p %zu cold=%p %zu sum=%lu\n", (void *)hot, hn, (void *)cold, cn, sum);
    return 0;  /* hot and cold stay allocated to the end */
}
"""


def objtier(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "objtier", *args], capture_output=True,
                          text=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(trace, plan with hot fast and cold and gone slow, printed addresses)."""
    tmp = tmp_path_factory.mktemp("damos")
    (tmp / "arrays.c").write_text(PROG)
    exe = tmp / "arrays"
    subprocess.run(["gcc", "-std=gnu11", "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(exe),
                    str(tmp / "arrays.c")], check=True)
    trace = tmp / "rec.otr"
    run = objtier("record", "-q", "--min-size", "1M", "-o", str(trace), "--", str(exe))
    assert run.returncode == 0, run.stderr
    found = re.search(r"hot=(0x[0-9a-f]+) (\d+) cold=(0x[0-9a-f]+) (\d+)", run.stdout)
    assert found, run.stdout
    hot, hot_n, cold, cold_n = (int(found.group(i), 0) for i in (1, 2, 3, 4))
    plan_path = tmp / "plan.json"
    run = objtier("plan", str(trace), "--fast", "8M", "--algo", "rank", "-o", str(plan_path))
    assert run.returncode == 0, run.stderr
    plan = json.loads(plan_path.read_text())
    for entry in plan["entries"]:          # hot fast, the others slow, whatever was sampled
        fast = entry["label"].startswith("alloc_hot")
        entry["tier"] = "fast" if fast else "slow"
        entry["fast_bytes"] = entry["size_max"] if fast else 0
    assert sorted(e["label"].split(" ")[0] for e in plan["entries"]) == [
        "alloc_cold", "alloc_gone", "alloc_hot"]
    plan_path.write_text(json.dumps(plan))
    return trace, plan_path, (hot, hot + hot_n), (cold, cold + cold_n)


def test_export_maps_the_live_objects_to_their_addresses(recorded, tmp_path):
    trace, plan, (hot0, hot1), (cold0, cold1) = recorded
    out = tmp_path / "schemes.json"
    run = objtier("export-damos", "--plan", str(plan), "--trace", str(trace), "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert out.stat().st_mode & 0o777 == 0o600
    doc = json.loads(out.read_text())
    assert damos.validate_scheme_set(doc) == []
    info = doc["objtier"]
    cold = [r for r in info["ranges"] if r["tier"] == "slow"]
    hot = [r for r in info["ranges"] if r["tier"] == "fast"]
    # the freed array is not alive at the trace's end: only the cold array is paged out,
    # inside its bytes and page-aligned; the hot array is covered whole, never paged out
    assert len(cold) == 1 and len(hot) == 1, info["ranges"]
    assert cold0 <= cold[0]["start"] < cold0 + 4096 and cold1 - 4096 < cold[0]["end"] <= cold1
    assert hot[0]["start"] <= hot0 and hot[0]["end"] >= hot1
    assert "alloc_cold" in cold[0]["objects"] and "alloc_hot" in hot[0]["objects"]
    schemes = doc["kdamonds"][0]["contexts"][0]["schemes"]
    assert [s["action"] for s in schemes] == ["pageout" if r["tier"] == "slow" else "stat"
                                             for r in info["ranges"]]
    target = doc["kdamonds"][0]["contexts"][0]["targets"][0]["pid"]
    assert doc["kdamonds"][0]["contexts"][0]["ops"] == "vaddr" and target == info["pid"]
    assert info["cgroup_v2"]["memory.low"] == hot[0]["end"] - hot[0]["start"]
    assert "not running" in run.stderr           # the traced process has exited
    assert re.search(r"DAMON is (busy|free) here|no DAMON sysfs interface", run.stderr)

    # while the freed array was still alive (just after the start), it is exported too
    early = tmp_path / "early.json"
    run = objtier("export-damos", "--plan", str(plan), "--trace", str(trace), "--at", "0.0",
                  "-o", str(early))
    assert run.returncode != 0 and "nothing to export" in run.stderr   # nothing alive at 0


def test_sysfs_rendering_of_a_scheme_set(recorded, tmp_path):
    trace, plan, _, (cold0, cold1) = recorded
    from objtier.plan.planfile import load_plan
    from objtier.trace import open_trace

    ranges, pid = damos.plan_ranges(load_plan(plan), open_trace(trace))
    doc = damos.scheme_set(ranges, pid, min_age_s=2.0)
    writes = dict(damos.sysfs_writes(doc))
    base = "kdamonds/0/contexts/0"
    assert writes[f"{base}/operations"] == "vaddr"
    assert writes[f"{base}/targets/0/pid_target"] == str(pid)
    assert writes[f"{base}/schemes/nr_schemes"] == str(len(ranges))
    cold = next(i for i, r in enumerate(ranges) if not r.hot)
    s = f"{base}/schemes/{cold}"
    assert writes[f"{s}/action"] == "pageout"
    assert writes[f"{s}/access_pattern/age/min"] == "20"          # 2 s of 100 ms intervals
    assert writes[f"{s}/access_pattern/nr_accesses/max"] == "0"
    assert writes[f"{s}/filters/0/type"] == "addr" and writes[f"{s}/filters/0/matching"] == "N"
    assert cold0 <= int(writes[f"{s}/filters/0/addr_start"]) < int(
        writes[f"{s}/filters/0/addr_end"]) <= cold1


def test_format_check_finds_what_the_kernel_would_refuse():
    good = damos.scheme_set([damos.Range(0x10000, 0x20000, False, "a"),
                             damos.Range(0x20000, 0x30000, True, "b")], pid=42)
    assert damos.validate_scheme_set(good) == []
    bad = json.loads(json.dumps(good))
    ctx = bad["kdamonds"][0]["contexts"][0]
    ctx["schemes"][1]["action"] = "lru_prio"                      # paddr only
    ctx["schemes"][0]["filters"][0]["address_range"] = {"start": 0x10001, "end": 0x28000}
    problems = damos.validate_scheme_set(bad)
    assert any("'lru_prio' is not one vaddr implements" in p for p in problems)
    assert any("not page-aligned" in p for p in problems)
    ctx["schemes"][0]["filters"][0]["address_range"] = {"start": 0x10000, "end": 0x28000}
    assert any("overlaps" in p for p in damos.validate_scheme_set(bad))
    assert damos.validate_scheme_set({"kdamonds": 3}) == ["no kdamonds[].contexts[]"]


def test_many_ranges_are_merged_without_covering_a_hot_one():
    ranges = [damos.Range(i * 0x10000, i * 0x10000 + 0x4000, i % 50 == 25, str(i))
              for i in range(400)]
    capped = damos._capped(ranges, 20)
    assert sum(not r.hot for r in capped) <= 20 + 8 and sum(r.hot for r in capped) == 8
    for c in (r for r in capped if not r.hot):
        assert not any(h.start < c.end and c.start < h.end for h in capped if h.hot)


def _tree(root: Path, states: list[str]) -> Path:
    kd = root / "kdamonds"
    kd.mkdir(parents=True)
    (kd / "nr_kdamonds").write_text(f"{len(states)}\n")
    for i, state in enumerate(states):
        (kd / str(i) / "contexts" / "0").mkdir(parents=True)
        (kd / str(i) / "state").write_text(state + "\n")
        (kd / str(i) / "pid").write_text(f"{100 + i}\n")
        (kd / str(i) / "contexts" / "nr_contexts").write_text("1\n")
        (kd / str(i) / "contexts" / "0" / "operations").write_text("paddr\n")
    return root


def test_busy_kdamond_is_detected_and_named(tmp_path):
    status = damos.damon_status(_tree(tmp_path / "a", ["off", "on"]))
    assert status.available and status.busy == [1]
    assert "busy" in status.message() and "kdamond 1 (pid 101, ops paddr)" in status.message()
    free = damos.damon_status(_tree(tmp_path / "b", ["off"]))
    assert free.busy == [] and "free" in free.message()
    assert not damos.damon_status(tmp_path / "none").available


@pytest.mark.root
def test_this_hosts_damon_is_read_and_left_alone():
    admin = damos.DAMON_SYSFS
    if not (admin / "kdamonds" / "nr_kdamonds").exists():
        pytest.skip("this kernel has no DAMON sysfs interface")
    files = sorted(p for p in (admin / "kdamonds").rglob("*") if p.is_file())
    before = {p: (p.stat().st_mtime_ns, p.read_text() if p.name in ("state", "nr_kdamonds")
                  else None) for p in files if p.name in ("state", "nr_kdamonds", "pid")}
    status = damos.damon_status()
    after = {p: (p.stat().st_mtime_ns, p.read_text() if p.name in ("state", "nr_kdamonds")
                 else None) for p in before}
    assert after == before
    on = [i for i, k in enumerate(status.kdamonds) if k["state"] == "on"]
    assert status.available and status.busy == on
    assert ("busy" in status.message()) == bool(on)


def test_with_aslr_off_a_traced_run_gives_the_next_runs_addresses(recorded, tmp_path):
    """The export's addresses are the traced process's. With address-space randomization off
    (setarch -R), a second run in the same mode (`objtier run`) puts the objects at the same
    addresses, so the scheme set exported from the first run's trace fits the second."""
    import shutil

    trace, plan, _, _ = recorded
    if not shutil.which("setarch"):
        pytest.skip("no setarch here")
    exe = next(trace.parent.glob("arrays"))
    first = tmp_path / "first.otr"
    runs = [subprocess.run(["setarch", "-R", sys.executable, "-m", "objtier", "run", "--plan",
                            str(plan), *(["-o", str(first)] if i == 0 else []), "--", str(exe)],
                           capture_output=True, text=True, timeout=300) for i in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr + runs[1].stderr
    printed = [re.search(r"hot=(0x[0-9a-f]+) \d+ cold=(0x[0-9a-f]+)", r.stdout) for r in runs]
    assert printed[0].groups() == printed[1].groups()
    out = tmp_path / "s.json"
    run = objtier("export-damos", "--plan", str(plan), "--trace", str(first), "--target-pid",
                  "4242", "-o", str(out))
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    assert doc["kdamonds"][0]["contexts"][0]["targets"][0]["pid"] == 4242
    assert doc["objtier"]["traced_pid"] != 4242
    ranges = doc["objtier"]["ranges"]
    cold = int(printed[1].group(2), 16)
    assert any(r["tier"] == "slow" and cold <= r["start"] < cold + 4096 for r in ranges)


def test_bad_input_is_a_one_line_error(recorded, tmp_path):
    trace, plan, _, _ = recorded
    out = str(tmp_path / "s.json")
    cases = [(["--plan", str(tmp_path / "none.json"), "--trace", str(trace)], "cannot read plan"),
             (["--plan", str(plan), "--trace", str(tmp_path / "none.otr")], "cannot read trace"),
             (["--plan", str(plan), "--trace", str(trace), "--min-age", "-1"], "--min-age"),
             (["--plan", str(plan), "--trace", str(trace), "--at", "-2"], "--at must be"),
             (["--plan", str(plan), "--trace", str(trace), "--pid", "1"], "no objects of process")]
    for args, message in cases:
        run = objtier("export-damos", *args, "-o", out)
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        assert run.returncode != 0 and len(lines) == 1 and message in lines[0], (args, run.stderr)
    Path(out).write_text("keep")
    run = objtier("export-damos", "--plan", str(plan), "--trace", str(trace), "-o", out)
    assert run.returncode != 0 and "exists" in run.stderr and Path(out).read_text() == "keep"
