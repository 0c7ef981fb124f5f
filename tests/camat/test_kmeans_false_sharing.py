"""The K-means case: `objtier camat --regions` on the two-thread kmeans_regions workload points
at update_centers_len (the per-thread counts sharing a line), and the padded variant does not
have it."""

from __future__ import annotations

import json
import os

import pytest

from tests.camat.conftest import REPO, build, camat, needs_clang, needs_libomp

SOURCES = [REPO / "workloads" / "kmeans" / "kmeans_regions.c", REPO / "workloads" / "common" / "wl.c"]


@pytest.fixture(scope="module")
def kmeans(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kmeans")
    return tmp, build(tmp, SOURCES, "kmeans_regions", ("-fopenmp",))


def _run(tmp, exe, padded):
    out = tmp / ("padded" if padded else "unpadded")
    env = dict(os.environ, OMP_NUM_THREADS="2")
    args = ["-n", "4000", "-i", "2"] + (["--padded"] if padded else [])
    run = camat("--regions", "--window", "0", "--stream", "1500000", "-o", str(out), "--", str(exe), *args,
                env=env)
    assert run.returncode == 0, run.stderr
    assert "verification: passed" in run.stdout  # the program's own output is untouched
    return json.loads((out / "camat.json").read_text()), run


@needs_clang
@needs_libomp
def test_regions_point_at_update_centers_len(kmeans):
    tmp, exe = kmeans
    doc, run = _run(tmp, exe, padded=False)
    regions = {r["region"]: r for r in doc["regions"]}
    worst = max(doc["regions"], key=lambda r: r["false_sharing_misses"])
    summary = [(r["region"], r["accesses"], r["false_sharing_misses"]) for r in doc["regions"]]
    assert worst["region"] == "update_centers_len", summary
    assert worst["false_sharing_misses"] > 0.1 * worst["accesses"], summary
    assert any("update_centers_len" in line and "false-sharing" in line
               for line in doc["findings"])
    assert doc["parameters"]["cores"] == 2

    padded, _ = _run(tmp, exe, padded=True)
    fixed = {r["region"]: r for r in padded["regions"]}["update_centers_len"]
    assert fixed["false_sharing_misses"] <= 0.01 * regions["update_centers_len"]["false_sharing_misses"], \
        (fixed, summary)
    assert not any("update_centers_len" in line for line in padded["findings"])
