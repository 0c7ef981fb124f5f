"""The runtime's plan parser (native/runtime/place/plan.c) under libFuzzer with AddressSanitizer and
UndefinedBehaviorSanitizer: a short bounded run from the seed corpus in
tests/fixtures/plan-seeds/. Longer runs by hand: native/fuzz/build.sh (its header says how)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO / "tests" / "fixtures" / "plan-seeds"
RUNS = 20000


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory) -> Path:
    if not shutil.which("clang-16"):
        pytest.skip("clang-16 is not installed (it builds the libFuzzer target)")
    out = tmp_path_factory.mktemp("fuzzbuild")
    build = subprocess.run([str(REPO / "native" / "fuzz" / "build.sh"), str(out)],
                           capture_output=True, text=True)
    if build.returncode != 0 and "fuzzer" in build.stderr and "cannot find" in build.stderr:
        pytest.skip("clang-16 has no libFuzzer runtime here")
    assert build.returncode == 0, build.stderr[-3000:]
    return out / "fuzz_plan"


def test_seed_corpus_covers_every_record_kind():
    text = "".join(p.read_bytes().decode() for p in SEEDS.iterdir())
    for word in ("binary ", "budget ", "phase ", "folio ", " fast ", " slow ", " split ",
                 " pages ", "\r\n", "%"):
        assert word in text, word


def test_plan_parser_survives_a_bounded_fuzzing_run(fuzzer, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(SEEDS, corpus)  # libFuzzer adds the inputs it finds to its corpus
    run = subprocess.run([str(fuzzer), f"-runs={RUNS}", "-seed=1", "-timeout=10",
                          "-rss_limit_mb=1024", f"-artifact_prefix={tmp_path}/", str(corpus)],
                         capture_output=True, text=True, timeout=600)
    crashes = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(
        ("crash-", "leak-", "timeout-", "oom-")))
    assert run.returncode == 0 and not crashes, (crashes, run.stderr[-4000:])
    assert f"Done {RUNS} runs" in run.stderr or "DONE" in run.stderr, run.stderr[-2000:]
