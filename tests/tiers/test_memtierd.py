"""`objtier export-memtierd`: the recording and plan of test_damos (a program that prints where
its arrays are, one planned fast, one slow), exported as memtierd commands and read back as
memtierd parses them; the cgroup v2 settings against the plan; bad input refused in one line."""

from __future__ import annotations

import json

import pytest

from objtier.errors import UsageError
from objtier.plan.planfile import load_plan
from objtier.tiers import damos, memtierd
from objtier.trace import open_trace
from tests.tiers.test_damos import objtier, recorded  # noqa: F401  (the fixture)


def _overlaps(spans, start, end):
    return any(s < end and start < e for s, e in spans)


def test_swap_script_names_the_printed_addresses(recorded, tmp_path):  # noqa: F811
    trace, plan, (hot0, hot1), (cold0, cold1) = recorded
    out, settings = tmp_path / "memtierd.cmds", tmp_path / "cgroup.json"
    run = objtier("export-memtierd", "--plan", str(plan), "--trace", str(trace), "-o", str(out),
                  "--cgroup-out", str(settings))
    assert run.returncode == 0, run.stderr
    assert out.stat().st_mode & 0o777 == 0o600 and settings.stat().st_mode & 0o777 == 0o600
    lines = out.read_text().splitlines()
    parsed = memtierd.parse_script(lines)
    assert parsed.problems == []
    doc = json.loads(settings.read_text())
    assert parsed.pid == doc["objtier"]["pid"] == doc["objtier"]["traced_pid"]
    # the cold array is swapped out: every whole page of it, and not one byte of the hot one
    out_spans = parsed.ranges["out"]
    first, last = -(-cold0 // 4096) * 4096, cold1 // 4096 * 4096
    assert sum(min(e, last) - max(s, first) for s, e in out_spans
               if s < last and first < e) == last - first
    assert not _overlaps(out_spans, hot0, hot1)
    # the hot array is swapped in, whole
    assert any(s <= hot0 and hot1 <= e for s, e in parsed.ranges["in"])
    assert parsed.ranges["status"] == out_spans
    # the cgroup settings: memory.low = the planned-fast bytes alive, memory.high = budget
    plan_doc = json.loads(plan.read_text())
    cg = doc["cgroup_v2"]
    assert cg["memory.high"] == plan_doc["budget"]["bytes"]
    assert cg["memory.low"] == sum(e - s for s, e in parsed.ranges["in"]) == \
        doc["objtier"]["hot_bytes"]
    assert cg["memory.low"] >= hot1 - hot0
    assert cg["memory.swap.max"] == "max"
    assert "planned slow -> swap out" in run.stdout


def test_numa_script_moves_hot_and_cold_to_their_nodes(recorded, tmp_path):  # noqa: F811
    trace, plan, (hot0, hot1), (cold0, cold1) = recorded
    out = tmp_path / "numa.cmds"
    run = objtier("export-memtierd", "--plan", str(plan), "--trace", str(trace), "-o", str(out),
                  "--tier", "numa", "--fast-node", "0", "--slow-node", "1")
    assert run.returncode == 0, run.stderr
    lines = out.read_text().splitlines()
    parsed = memtierd.parse_script(lines)
    assert parsed.problems == []
    assert any(s <= hot0 and hot1 <= e for s, e in parsed.ranges["node-0"])
    assert _overlaps(parsed.ranges["node-1"], cold0, cold1)
    assert not _overlaps(parsed.ranges["node-1"], hot0, hot1)
    assert lines.count("mover -wait") == 2 and "in" not in parsed.ranges


def test_script_lines_match_the_ranges_and_reach_no_shell(recorded):  # noqa: F811
    trace, plan, _, _ = recorded
    ranges, pid = damos.plan_ranges(load_plan(plan), open_trace(trace))
    lines = memtierd.command_script(ranges, pid, source={"plan": "/tmp/a|rm -rf /;x y'z"})
    assert "|" not in "\n".join(lines) and "'" not in lines[0]
    parsed = memtierd.parse_script(lines)
    assert parsed.problems == []
    assert parsed.ranges["out"] == [(r.start, r.end) for r in ranges if not r.hot]
    assert parsed.ranges["in"] == [(r.start, r.end) for r in ranges if r.hot]


def test_the_check_finds_what_memtierd_would_misread():
    bad = memtierd.parse_script([
        "swap -pid=7 -in -ranges=1000-3000",
        "swap -pid=7 -out -ranges=2000-4000,0x5000-6000,7000-7000,8001-9000",
        "swap -pid=8 -out -ranges=a000-b000",
        "stats | sh", "policy -create age", "mover -pages-to=1"])
    text = "\n".join(bad.problems)
    for expected in ("both in and out", "not START-END", "is empty", "not page-aligned",
                     "names 2 processes", "would run a shell", "not a command",
                     "mover without selected pages"):
        assert expected in text, (expected, text)


@pytest.mark.parametrize("kwargs, message", [
    (dict(tier="numa"), "needs --fast-node"),
    (dict(tier="numa", fast_node=0, slow_node=0), "must differ"),
    (dict(tier="numa", fast_node=-1, slow_node=1), "from 0 to 1023"),
    (dict(fast_node=0), "--tier numa only"),
    (dict(tier="ssd"), "--tier must be one of"),
])
def test_bad_options_are_refused(kwargs, message):
    ranges = [damos.Range(0x10000, 0x20000, False, "a")]
    with pytest.raises(UsageError, match=message):
        memtierd.command_script(ranges, 5, **kwargs)


@pytest.mark.parametrize("extra, message", [
    (["--tier", "numa", "--fast-node", "1"], "needs --slow-node"),
    (["--at", "-1"], "--at must be >= 0"),
    (["--target-pid", "0"], "--target-pid must be a process id"),
    (["--phase", "nosuch"], "no entries for phase"),
])
def test_cli_refuses_bad_input_in_one_line(recorded, tmp_path, extra, message):  # noqa: F811
    trace, plan, _, _ = recorded
    run = objtier("export-memtierd", "--plan", str(plan), "--trace", str(trace),
                  "-o", str(tmp_path / "x.cmds"), *extra)
    assert run.returncode == 2 and message in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
    assert not (tmp_path / "x.cmds").exists()


def test_cli_refuses_a_corrupt_trace_and_an_existing_output(recorded, tmp_path):  # noqa: F811
    trace, plan, _, _ = recorded
    junk = tmp_path / "junk.otr"
    junk.write_bytes(b"not a trace at all")
    run = objtier("export-memtierd", "--plan", str(plan), "--trace", str(junk),
                  "-o", str(tmp_path / "y.cmds"))
    assert run.returncode != 0 and len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr
    existing = tmp_path / "z.cmds"
    existing.write_text("keep\n")
    run = objtier("export-memtierd", "--plan", str(plan), "--trace", str(trace),
                  "-o", str(existing))
    assert run.returncode == 2 and "exists" in run.stderr and existing.read_text() == "keep\n"
