"""bench/seeds/build.sh: its errors are one line with a non-zero exit, it builds a recipe from a
git upstream at the pinned commit (a local repository here, no network) and from a given
source directory, and the real Rodinia K-means recipe builds and runs from its source tree
when one is at hand (SEEDS_SRC, default /work/seeds-src; skipped otherwise)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "bench" / "seeds" / "build.sh"

RECIPE = """UPSTREAM={upstream}
COMMIT={commit}
build() {{
    work_copy "$1" "$2/work"
    cc -O1 -o "$2/hello" "$2/work/hello.c"
}}
"""


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(BUILD), *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[Path, str, str]:
    """A local git upstream with two commits of hello.c; returns (repo, first, second)."""
    if not shutil.which("git") or not shutil.which("cc"):
        pytest.skip("needs git and cc")
    repo = tmp_path / "up"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "hello.c").write_text('#include <stdio.h>\nint main(void){puts("one");}\n')
    git(repo, "add", "hello.c")
    git(repo, "commit", "-q", "-m", "one")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "hello.c").write_text('#include <stdio.h>\nint main(void){puts("two");}\n')
    git(repo, "commit", "-q", "-am", "two")
    git(repo, "config", "uploadpack.allowAnySHA1InWant", "true")
    return repo, first, git(repo, "rev-parse", "HEAD")


def recipes(tmp_path: Path, upstream: str, commit: str) -> dict:
    d = tmp_path / "recipes"
    d.mkdir(exist_ok=True)
    (d / "hello.sh").write_text(RECIPE.format(upstream=upstream, commit=commit))
    # clones go to a cache of the test's own: another test's clone must not satisfy this one
    return {"SEEDS_RECIPES": str(d), "SEEDS_CACHE": str(tmp_path / "cache")}


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_missing_source_dir_is_one_line(tmp_path: Path):
    r = run("--src", str(tmp_path / "absent"), "--out", str(tmp_path / "out"), "gapbs")
    assert r.returncode == 2
    assert "does not exist" in one_line(r.stderr)


def test_source_dir_without_the_program_is_one_line(tmp_path: Path):
    r = run("--src", str(tmp_path), "--out", str(tmp_path / "out"), "gapbs")
    assert r.returncode == 1
    assert f"{tmp_path}/gapbs" in one_line(r.stderr)


def test_unknown_program_and_no_program(tmp_path: Path):
    r = run("--out", str(tmp_path / "out"), "no-such-seed")
    assert r.returncode == 2 and "no recipe for no-such-seed" in one_line(r.stderr)
    r = run()
    assert r.returncode == 2 and "usage" in one_line(r.stderr)


def test_clones_the_pinned_commit(tmp_path: Path, upstream):
    repo, first, _ = upstream
    env = recipes(tmp_path, f"file://{repo}", first)
    out = tmp_path / "out"
    r = run("--out", str(out), "hello", env=env)
    assert r.returncode == 0, r.stderr
    # the first commit, not the branch head
    assert subprocess.run([str(out / "hello" / "hello")], capture_output=True,
                          text=True).stdout == "one\n"
    info = (out / "hello" / "BUILD-INFO").read_text()
    assert f"commit={first}" in info
    assert (out.stat().st_mode & 0o777) == 0o700


def test_unreachable_upstream_asks_for_src(tmp_path: Path, upstream):
    _, first, _ = upstream
    env = recipes(tmp_path, f"file://{tmp_path}/nowhere", first)
    r = run("--out", str(tmp_path / "out"), "hello", env=env)
    assert r.returncode == 1
    assert "pass --src" in one_line(r.stderr)


def test_builds_from_given_dir_without_writing_it(tmp_path: Path, upstream):
    repo, _, second = upstream
    src = tmp_path / "src"
    shutil.copytree(repo, src / "hello", ignore=shutil.ignore_patterns(".git"))
    before = sorted(p.name for p in (src / "hello").iterdir())
    env = recipes(tmp_path, "https://example.invalid/hello.git", second)
    r = run("--src", str(src), "--out", str(tmp_path / "out"), "hello", env=env)
    assert r.returncode == 0, r.stderr
    assert subprocess.run([str(tmp_path / "out" / "hello" / "hello")], capture_output=True,
                          text=True).stdout == "two\n"
    assert sorted(p.name for p in (src / "hello").iterdir()) == before


def test_bad_recipe_commit_is_one_line(tmp_path: Path, upstream):
    repo, _, _ = upstream
    env = recipes(tmp_path, f"file://{repo}", "main")
    r = run("--out", str(tmp_path / "out"), "hello", env=env)
    assert r.returncode == 1
    assert "40 hex" in one_line(r.stderr)


def test_rodinia_kmeans_builds_and_runs(tmp_path: Path):
    src = Path(os.environ.get("SEEDS_SRC", "/work/seeds-src"))
    if not (src / "rodinia-kmeans" / "openmp" / "kmeans").is_dir():
        pytest.skip(f"no Rodinia source at {src}/rodinia-kmeans (set SEEDS_SRC)")
    if not shutil.which("gcc"):
        pytest.skip("needs gcc")
    out = tmp_path / "out"
    r = run("--src", str(src), "--out", str(out), "rodinia-kmeans")
    assert r.returncode == 0, r.stderr
    rng = random.Random(5)
    data = tmp_path / "points.txt"
    data.write_text("".join(f"{i} " + " ".join(f"{rng.gauss(c, 0.1):.3f}" for _ in range(4))
                            + "\n" for i, c in enumerate([0, 5, 10] * 300)))
    for exe in ("kmeans_serial", "kmeans_openmp"):
        p = subprocess.run([str(out / "rodinia-kmeans" / exe), "-i", str(data), "-k", "3"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert "number of Clusters 3" in p.stdout
        assert "number of Attributes 4" in p.stdout
