"""Where the built native parts live (src/objtier/_native, installed by `make build`)."""

from __future__ import annotations

import os
from pathlib import Path

from objtier.errors import EnvironmentProblem

NATIVE_DIR = Path(os.environ.get("OBJTIER_NATIVE_DIR", Path(__file__).parent / "_native"))


def runtime_library() -> Path:
    """The LD_PRELOAD runtime, libobjtier.so."""
    return _existing(NATIVE_DIR / "lib" / "libobjtier.so", "the objtier runtime")


def binary(name: str) -> Path:
    """A workload or helper binary installed into _native/bin."""
    return _existing(NATIVE_DIR / "bin" / name, f"the binary '{name}'")


def include_dir() -> Path:
    return _existing(NATIVE_DIR / "include", "the objtier headers")


def _existing(path: Path, what: str) -> Path:
    if not path.exists():
        raise EnvironmentProblem(f"{what} is not built ({path} missing); run `make build`")
    return path
