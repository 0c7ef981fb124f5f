"""Fixtures of the record and run tests: the hot/cold test program."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..experiments.helpers import PROGS


@pytest.fixture
def hotcold(compile_c) -> Path:
    """hotcold HOT_MIB COLD_MIB ROUNDS [sleep]: one hot and one cold array (progs/hotcold.c)."""
    return compile_c((PROGS / "hotcold.c").read_text(), "hotcold")
