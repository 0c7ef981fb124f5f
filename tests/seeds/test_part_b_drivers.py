"""bench/seeds/table1.py and camat_xmem.py: bad input is one line on stderr and exit status 2,
before anything runs; the Rodinia K-means padding the study applies matches the source."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TABLE1 = REPO / "bench" / "seeds" / "table1.py"
CAMAT = REPO / "bench" / "seeds" / "camat_xmem.py"


def run(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("args, message", [
    (["--repeat", "0"], "--repeat 0: must be at least 1"),
    (["--timeout", "-1"], "--timeout -1: must be positive"),
    (["--levels", "100,x"], "not a comma-separated list of numbers"),
    (["--levels", "100"], "need at least two levels"),
    (["--only", "ptrchase,hpl"], "unknown program 'hpl'"),
    (["--knob", "mba"], "invalid choice"),
])
def test_table1_rejects_bad_input_in_one_line(args: list[str], message: str,
                                              tmp_path: Path) -> None:
    r = run(TABLE1, *args, "-o", str(tmp_path / "out"), "--results", str(tmp_path / "res"))
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "res").exists() and not (tmp_path / "out").exists()


def test_table1_names_an_unbuilt_program(tmp_path: Path) -> None:
    r = run(TABLE1, "--seeds", str(tmp_path / "nothing"), "--only", "xsbench", "-o",
            str(tmp_path / "out"), "--results", str(tmp_path / "res"))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"table1.py: xsbench: not built ({tmp_path / 'nothing' / 'xsbench' / 'xsbench-run'}); "
        "run bench/seeds/build.sh first"]


@pytest.mark.parametrize("args, message", [
    (["real", "--repeat", "0"], "--repeat 0: must be at least 1"),
    (["sim", "--timeout", "0"], "--timeout 0: must be positive"),
    (["kmeans", "--points", "10"], "--points 10: at least 1000"),
    (["real", "--only", "minife;rm"], "a comma-separated list of program names"),
    (["xmem"], "invalid choice"),
])
def test_camat_xmem_rejects_bad_input_in_one_line(args: list[str], message: str) -> None:
    r = run(CAMAT, *args)
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_kmeans_padding_matches_rodinia_source() -> None:
    """The two replacements the padded variant makes are in the K-means source the seed build
    compiles (skipped when it is not built)."""
    src = REPO / "build" / "seeds" / "rodinia-kmeans" / "work" / "kmeans_openmp" / \
        "kmeans_clustering.c"
    if not src.exists():
        pytest.skip("rodinia-kmeans not built (bench/seeds/build.sh rodinia-kmeans)")
    sys.path.insert(0, str(CAMAT.parent))
    try:
        import camat_xmem
    finally:
        sys.path.pop(0)
    text = src.read_text()
    for old, new in camat_xmem.PAD:
        assert text.count(old) == 1
        text = text.replace(old, new)
    assert "nclusters+16" in text
