"""Helpers for the exact-tracing tests: build with `objtier cc`, run with the trace sampler."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from objtier.trace import open_trace

OBJTIER = [sys.executable, "-m", "objtier"]


def have_clang() -> bool:
    return bool(shutil.which("clang-16") or shutil.which("clang"))


needs_clang = pytest.mark.skipif(not have_clang(), reason="clang-16 is not installed")


@pytest.fixture
def objtier_cc(tmp_path):
    """objtier_cc(source, name="prog", flags=(...)) -> executable path (built by objtier cc)."""

    def _build(source: str, name: str = "prog",
               flags: tuple[str, ...] = ("-O1", "-fno-vectorize", "-fno-unroll-loops")) -> Path:
        src = tmp_path / f"{name}.c"
        src.write_text(source)
        exe = tmp_path / name
        run = subprocess.run([*OBJTIER, "cc", *flags, "-o", str(exe), str(src)],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return exe

    return _build


@pytest.fixture
def run_exact(tmp_path):
    """run_exact(exe, *args, expect=0, **settings) -> (CompletedProcess, trace) with OBJTIER_SAMPLER=trace."""
    count = [0]

    def _run(exe, *args, expect: int = 0, **settings):
        count[0] += 1
        out = tmp_path / f"exact{count[0]}.otr"
        env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
        env.update(OBJTIER_OUTPUT=str(out), OBJTIER_SAMPLER="trace", OBJTIER_LOG="1")
        env.update({f"OBJTIER_{k.upper()}": str(v) for k, v in settings.items()})
        proc = subprocess.run([str(exe), *map(str, args)], env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == expect, proc.stderr
        return proc, open_trace(out)

    return _run
