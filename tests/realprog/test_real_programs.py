"""Real programs (Debian/PyPI packages and small C/C++ programs in common build modes) run
under `objtier record` with every sampler the CLI offers must behave as they do plain: same
exit status, same output, objects in the trace where they allocate large buffers, and no
traceback (AddressSanitizer builds may instead be refused with one line).

Cases a sampler breaks today are strict xfails naming the behaviour; they are keyed by the
sampler that actually runs (so `auto` is xfail only while it resolves to a broken sampler).
A known-broken case is tried up to KNOWN_BROKEN_ATTEMPTS times and fails at the first broken
run (the breakage depends on where scan windows fall); when a fix lands every attempt passes,
the test XPASSes and the suite fails until the mark is removed."""

from __future__ import annotations

import pytest

from tests.realprog.conftest import EFFECTIVE, SAMPLERS, real_programs

FAST = [case.name for case in real_programs.CASES if case.fast]
SLOW = [case.name for case in real_programs.CASES if not case.fast]
KNOWN_BROKEN_ATTEMPTS = 5

# (case, sampler that runs) -> what breaks. Empty: node (V8) under the fault sampler, marked
# here on 2026-11-25 (SIGSEGV, exit 139), has passed every attempt since 2026-11-27.
KNOWN_BROKEN: dict[tuple[str, str], str] = {}
# case -> what breaks it under every sampler.
KNOWN_BROKEN_ALL: dict[str, str] = {}


def broken(name: str, sampler: str) -> str | None:
    return KNOWN_BROKEN.get((name, EFFECTIVE[sampler])) or KNOWN_BROKEN_ALL.get(name)


def params(names: list[str], marks=()):
    out = []
    for name in names:
        for sampler in SAMPLERS:
            reason = broken(name, sampler)
            case_marks = list(marks)
            if reason:
                case_marks.append(pytest.mark.xfail(strict=True, reason=reason))
            out.append(pytest.param(name, sampler, id=f"{name}-{sampler}", marks=case_marks))
    return out


def check(prepared_case, tmp_path, name: str, sampler: str) -> None:
    prepared = prepared_case(name)
    if prepared.skip:
        pytest.skip(prepared.skip)
    case, plain = prepared.case, prepared.plain
    assert plain.exit_status == 0, f"the plain run failed: {plain.stderr[-400:]}"
    attempts = KNOWN_BROKEN_ATTEMPTS if broken(name, sampler) else 1
    for attempt in range(attempts):
        recorded = real_programs.run_recorded(prepared.program, sampler,
                                              tmp_path / f"run{attempt}.otr")
        outcome, why = real_programs.verdict(case, plain, recorded)
        if outcome == "refused" and not case.may_refuse:
            # A sampler this machine cannot run (root, a PMU, a guest) refuses before starting.
            pytest.skip(f"objtier record --sampler {sampler} refused here: {why}")
        assert real_programs.passed(case, outcome), (
            f"{name} under --sampler {sampler} (attempt {attempt + 1}): {why}\n"
            f"--- stderr ---\n{recorded.stderr[-1500:]}")
        if outcome == "pass":
            assert recorded.exit_status == plain.exit_status
            assert recorded.checksum == plain.checksum
            if case.objects_expected:
                assert recorded.objects and recorded.objects > 0


def test_samplers_discovered():
    assert SAMPLERS, "objtier record --help lists no --sampler choices"
    assert len(set(SAMPLERS)) == len(SAMPLERS)
    assert set(EFFECTIVE) == set(SAMPLERS)


def test_verdict_flags_a_changed_program(prepared_case, tmp_path):
    """The comparison can fail: a run whose output differs from the plain run is a failure."""
    prepared = prepared_case("dlopen")
    if prepared.skip:
        pytest.skip(prepared.skip)
    case, plain = prepared.case, prepared.plain
    changed = real_programs.Prepared([*prepared.program.command[:-1], "2"],
                                     prepared.program.cwd)
    recorded = real_programs.run_recorded(changed, "none", tmp_path / "run.otr")
    assert real_programs.verdict(case, plain, recorded) == ("fail", "output differs")


@pytest.mark.parametrize(("name", "sampler"), params(FAST, marks=[pytest.mark.heavy]))
def test_real_program(prepared_case, tmp_path, name, sampler):
    check(prepared_case, tmp_path, name, sampler)


@pytest.mark.parametrize(("name", "sampler"), params(SLOW, marks=[pytest.mark.slow,
                                                                 pytest.mark.heavy]))
def test_real_program_heavy(prepared_case, tmp_path, name, sampler, request):
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("heavy case: run with `-m slow` or bench/real_programs.py")
    check(prepared_case, tmp_path, name, sampler)
