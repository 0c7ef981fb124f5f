"""Fixtures for the real-program suite: the case definitions of bench/real_programs.py, the
samplers `objtier record` offers (and what each runs on this machine, e.g. auto -> fault),
and each case prepared and run plain once per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import real_programs  # noqa: E402

SAMPLERS = real_programs.discover_samplers()
# choice -> the sampler it runs here ("auto" resolves per machine).
EFFECTIVE = {sampler: real_programs.resolve_sampler(sampler) for sampler in SAMPLERS}


class PreparedCase:
    """One case, prepared at the test size, with its plain run (or why it cannot run)."""

    def __init__(self, case, work: Path):
        self.case = case
        self.skip = case.needs()
        self.program = None
        self.plain = None
        if self.skip is None:
            self.program = case.prepare(work, False)
            self.plain = real_programs.run_program(self.program)


@pytest.fixture(scope="session")
def prepared_case(tmp_path_factory):
    work = tmp_path_factory.mktemp("realprog")
    cache: dict[str, PreparedCase] = {}

    def get(name: str) -> PreparedCase:
        if name not in cache:
            cache[name] = PreparedCase(real_programs.CASES_BY_NAME[name], work)
        return cache[name]

    return get
