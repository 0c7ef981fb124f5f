"""The ordered access stream of a real compiled program, read back with the real reader, and
the C-AMAT model over it through `objtier camat`: the checks that can fail (APC identity,
pointer-chase and streaming concurrency, per-object sums), the camat.json schema, file modes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from objtier.camat.model import PRESETS
from objtier.trace import open_trace
from tests.camat.conftest import build, camat, needs_clang

HERE = Path(__file__).resolve().parent
class _Built:
    """The kernels executable the module fixture built (for tests that run it directly)."""

    exe: Path | None = None


LEVEL_KEYS = ["level", "H", "C_H", "MR", "pMR", "pAMP", "C_M", "kappa", "camat", "amat"]
OBJECT_KEYS = ["object", "H", "C_H", "pMR", "pAMP", "C_M", "kappa", "camat", "levels"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("camat")
    exe = build(tmp, [HERE / "kernels.c"], "kernels")
    out = tmp / "out"
    run = camat("--preset", "small", "--regions", "--window", "0", "--stream", "3000000", "-o", str(out), "--",
                str(exe))
    assert run.returncode == 0, run.stderr
    _Built.exe = exe
    return out, json.loads((out / "camat.json").read_text()), run


@needs_clang
def test_stream_records_order_dependences_and_threads(report):
    out, _, _ = report
    trace = open_trace(out / "run.otr")
    acc = trace.accesses
    assert acc.num_rows > 500_000
    order = acc.column("order").to_numpy()
    assert np.all(np.diff(order.astype(np.int64)) > 0)  # sorted, unique
    assert set(acc.column("tid").to_pylist()) == {trace.processes[0].pid}
    dep = acc.column("dep").to_numpy()
    # the 40000 steps of the chase each load the address the previous load returned
    assert 39_000 <= int((dep == 1).sum()) <= 60_000
    writes = (acc.column("flags").to_numpy() & 1).sum()
    assert writes > 500_000  # the initialisation loops store


@needs_clang
def test_json_schema_and_file_modes(report):
    out, doc, _ = report
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o700
    for p in out.iterdir():
        if p.is_file():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    for name in ("camat-levels.csv", "camat-objects.parquet", "camat-regions.csv"):
        assert (out / name).exists()
    page = (out / "camat.html").read_text()
    assert 'id="camat"' in page and "<svg" in page and "chase" in page
    assert [lv["level"] for lv in doc["levels"]] == ["L1", "L2", "LLC", "MEM"]
    assert all(list(lv) == LEVEL_KEYS for lv in doc["levels"])
    assert doc["objects"] and all(list(o)[:len(OBJECT_KEYS)] == OBJECT_KEYS for o in doc["objects"])
    assert all(list(lv) == LEVEL_KEYS for o in doc["objects"] for lv in o["levels"])
    assert doc["source"] == "sim" and doc["tool_version"] and doc["machine"]["arch"]
    assert doc["parameters"]["hierarchy"]["name"] == "small"


@needs_clang
def test_apc_identity_within_two_percent(report):
    _, doc, _ = report
    for lv, c in zip(doc["levels"], doc["counts"]):
        assert c["apc"] is not None and lv["camat"] is not None
        assert abs(c["apc"] * lv["camat"] - 1) < 0.02, lv["level"]
    assert doc["checks"]["apc_identity_max_error"] < 0.02


def _region(doc, name):
    return next(r for r in doc["regions"] if r["region"] == name)


def _l1(entry):
    return next(lv for lv in entry["levels"] if lv["level"] == "L1")


@needs_clang
def test_pointer_chase_is_serial_and_streaming_is_concurrent(report):
    _, doc, _ = report
    chase, stream = _l1(_region(doc, "chase")), _l1(_region(doc, "stream"))
    registers = PRESETS["small"].l1.mshrs
    assert 0.9 <= chase["C_M"] <= 1.15, chase
    assert 0.75 * registers <= stream["C_M"] <= registers + 1e-9, stream
    assert chase["camat"] > 0.6 * registers * stream["camat"]  # serial vs overlapped misses


@needs_clang
def test_per_object_and_per_region_sums_match_totals(report):
    _, doc, _ = report
    counts = {c["level"]: c for c in doc["counts"]}
    for key in ("objects", "regions"):
        for level in ("L1", "L2", "LLC", "MEM"):
            n = active = 0.0
            for e in doc[key]:
                lv = next((x for x in e["levels"] if x["level"] == level), None)
                if lv is None:
                    continue
                n += e["level_accesses"][level]
                active += e["level_accesses"][level] * lv["camat"]
            assert n == counts[level]["accesses"], (key, level)
            # N_o x C-AMAT_o summed over the entries is the level's active cycles
            assert active == pytest.approx(counts[level]["active_cycles"], rel=1e-6), (key, level)


@needs_clang
def test_findings_name_the_latency_bound_object(report):
    _, doc, run = report
    assert "chase" in {r["region"] for r in doc["regions"]}
    assert "C-AMAT per level" in run.stdout
    assert "code regions" in run.stdout


@needs_clang
def test_stream_budget_is_exact_and_output_unchanged(report, tmp_path):
    import subprocess

    exe = _Built.exe
    plain = subprocess.run([str(exe)], capture_output=True, text=True)
    env = dict(os.environ, OBJTIER_OUTPUT=str(tmp_path / "r.otr"), OBJTIER_SAMPLER="trace",
               OBJTIER_TRACE_STREAM="100000")
    traced = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
    assert (traced.returncode, traced.stdout) == (plain.returncode, plain.stdout)
    assert open_trace(tmp_path / "r.otr").accesses.num_rows == 100_000
