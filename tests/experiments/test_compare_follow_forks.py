"""`objtier compare --follow-forks` on a launcher script: the profile records the program the
script starts, the plan holds that program's section, and the objtier runs apply it in the
child (objects matched, no "another binary" warning) under the real memory cgroup and zram."""

from __future__ import annotations

import json
import os

import pytest

from .helpers import machine_state, needs_enforcement
from objtier.experiments.compare_swap import CompareSettings, run_compare

pytestmark = pytest.mark.root


@needs_enforcement
def test_compare_follows_a_launcher_into_its_program(hotcold, tmp_path):
    script = tmp_path / "launch.sh"
    script.write_text(f"#!/bin/sh\necho launching\n{hotcold} 24 72 3\n")
    script.chmod(0o755)
    out = tmp_path / "out"
    settings = CompareSettings(local="60%", repeat=1, margin="8M", algo="rank",
                               rate=200_000, output=out, follow_forks=True)
    result = run_compare([str(script)], settings)
    assert not [c for c in machine_state()[1] if c.startswith(f"objtier-{os.getpid()}")]
    plan = json.loads((out / "plan.json").read_text())
    assert [p["path"] for p in plan["programs"]] == [str(hotcold)]
    # both of the child's objects are in its section; which of them the plan keeps fast is
    # the planner's choice from the sampled densities (tested with the planner), but never
    # the cold array alone
    entries = [(e["tier"], e["size_min"], round(e["accesses"])) for e in plan["entries"]]
    assert sorted(size for _, size, _ in entries) == [24 << 20, 72 << 20], (entries,
                                                                            plan["budget"])
    assert all(e["program"] == 0 for e in plan["entries"])
    assert [size for tier, size, _ in entries if tier == "fast"] in ([24 << 20], []), entries
    assert not [w for w in result.warnings if "another binary" in w or "--follow-forks" in w]
    objtier = [r for r in result.rows if r.config == "objtier"]
    assert [r.objects_matched for r in objtier] == [2]
    assert all(r.returncode == 0 and r.memcg_oom_kills == 0 for r in result.rows)
