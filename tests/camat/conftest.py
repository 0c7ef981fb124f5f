"""Helpers for the C-AMAT tests: build small programs with `objtier cc`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

OBJTIER = [sys.executable, "-m", "objtier"]
REPO = Path(__file__).resolve().parents[2]

needs_clang = pytest.mark.skipif(not (shutil.which("clang-16") or shutil.which("clang")),
                                 reason="clang-16 is not installed")
needs_libomp = pytest.mark.skipif(not Path("/usr/lib/llvm-16/lib/libomp.so").exists(),
                                  reason="libomp-16-dev is not installed")


def build(tmp_path: Path, sources: list[Path], name: str, flags: tuple[str, ...] = ()) -> Path:
    exe = tmp_path / name
    run = subprocess.run([*OBJTIER, "cc", "-O1", *flags, "-o", str(exe), *map(str, sources),
                          "-lm"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return exe


def camat(*args: str, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*OBJTIER, "camat", *args], capture_output=True, text=True, env=env,
                          cwd=cwd)
