"""`objtier export-damos` read back by damo's own parser (offline: nothing is applied and DAMON's
sysfs is never opened): every scheme must come back with the action and address range the file
gives. damo (PyPI `damo`, 3.4.3 checked) is not a dependency of objtier; without it installed in
the test environment this module skips, naming the package."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tiers.test_damos import objtier, recorded  # noqa: F401  (the module's fixture)

# damo's modules import each other by their bare names (`import _damon`), so its package
# directory goes on the reader's PYTHONPATH, in a process of its own.
READER = r"""
import json, sys
import _damon

doc = json.loads(open(sys.argv[1]).read())
ctx = _damon.Kdamond.from_kvpairs(doc["kdamonds"][0]).contexts[0]
print(json.dumps({
    "ops": ctx.ops, "pids": [t.pid for t in ctx.targets],
    "schemes": [{"action": s.action, "start": s.filters[0].address_range.start,
                 "end": s.filters[0].address_range.end, "matching": s.filters[0].matching}
                for s in ctx.schemes]}))
"""


def damo_dir() -> Path:
    spec = importlib.util.find_spec("damo")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("damo is not installed here (pip install damo==3.4.3)")
    return Path(next(iter(spec.submodule_search_locations)))


def test_damo_reads_every_scheme_back_as_written(recorded, tmp_path):  # noqa: F811
    where = damo_dir()
    trace, plan, _, _ = recorded
    out = tmp_path / "schemes.json"
    run = objtier("export-damos", "--plan", str(plan), "--trace", str(trace), "-o", str(out))
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    env = dict(os.environ, PYTHONPATH=str(where))
    read = subprocess.run([sys.executable, "-c", READER, str(out)], capture_output=True,
                          text=True, env=env, timeout=60)
    assert read.returncode == 0, f"damo could not parse the export:\n{read.stderr[-1500:]}"
    got = json.loads(read.stdout)
    ctx = doc["kdamonds"][0]["contexts"][0]
    assert got["ops"] == ctx["ops"]
    assert got["pids"] == [t["pid"] for t in ctx["targets"]]
    wanted = ctx["schemes"]
    assert len(got["schemes"]) == len(wanted) > 0
    for scheme, want in zip(got["schemes"], wanted):
        rng = want["filters"][0]["address_range"]
        assert (scheme["action"], scheme["start"], scheme["end"]) == (
            want["action"], rng["start"], rng["end"])
        assert scheme["matching"] is False
