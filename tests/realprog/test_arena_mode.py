"""The real-program suite with segregated arenas on (OBJTIER_ARENA=all: every small block of
the program served from an arena of its calling address, docs/runtime.md "Arenas"), under
every sampler: the same verdicts as test_real_programs.py — same exit status and output as the
plain run, objects where it allocates large buffers — and the runtime's counts
(OBJTIER_ARENA_STATS) show that arenas served the program's blocks. The same holds with the
program's largest sites watched while recording (`record --sites`, OBJTIER_ARENA_SITES) under
the pageout sampler, the one that arms the watched arenas."""

from __future__ import annotations

import pytest

from objtier.errors import UsageError

from tests.realprog.conftest import real_programs
from tests.realprog.test_real_programs import FAST, SLOW, params

# Cases whose program never runs with the runtime serving (nothing to count): the
# AddressSanitizer build refuses a preloaded allocator ahead of its own.
NO_COUNTS = {"asan"}
# Cases whose program makes no small heap block to serve: gzip works in static buffers.
NO_SMALL_BLOCKS = {"gzip"}


def check_arenas(prepared_case, tmp_path, monkeypatch, name: str, sampler: str) -> None:
    prepared = prepared_case(name)
    if prepared.skip:
        pytest.skip(prepared.skip)
    case, plain = prepared.case, prepared.plain
    assert plain.exit_status == 0, f"the plain run failed: {plain.stderr[-400:]}"
    stats = tmp_path / "arena-stats"
    monkeypatch.setenv("OBJTIER_ARENA", "all")
    monkeypatch.setenv("OBJTIER_ARENA_STATS", str(stats))
    recorded = real_programs.run_recorded(prepared.program, sampler, tmp_path / "run.otr")
    outcome, why = real_programs.verdict(case, plain, recorded)
    if outcome == "refused" and not case.may_refuse:
        pytest.skip(f"objtier record --sampler {sampler} refused here: {why}")
    assert real_programs.passed(case, outcome), (
        f"{name} under --sampler {sampler} with arenas: {why}\n"
        f"--- stderr ---\n{recorded.stderr[-1500:]}")
    if outcome != "pass":
        return
    assert recorded.exit_status == plain.exit_status
    assert recorded.checksum == plain.checksum
    if case.objects_expected:
        assert recorded.objects and recorded.objects > 0
    if name not in NO_COUNTS:
        lines = stats.read_text().splitlines() if stats.exists() else []
        blocks = [int(f.split("=", 1)[1]) for line in lines for f in line.split()
                  if f.startswith("blocks=")]
        assert blocks, f"the runtime wrote no arena counts for {name}"
        if name not in NO_SMALL_BLOCKS:
            assert max(blocks) > 0, f"no arena served {name}'s blocks: {lines}"


@pytest.mark.parametrize(("name", "sampler"), params(FAST, marks=[pytest.mark.heavy]))
def test_real_program_with_arenas(prepared_case, tmp_path, monkeypatch, name, sampler):
    check_arenas(prepared_case, tmp_path, monkeypatch, name, sampler)


@pytest.mark.parametrize(("name", "sampler"), params(SLOW, marks=[pytest.mark.slow,
                                                                 pytest.mark.heavy]))
def test_real_program_heavy_with_arenas(prepared_case, tmp_path, monkeypatch, name, sampler,
                                        request):
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("heavy case: run with `-m slow`")
    check_arenas(prepared_case, tmp_path, monkeypatch, name, sampler)


def check_watched(prepared_case, tmp_path, monkeypatch, name: str, how: str) -> None:
    """The 8 largest sites of a first recording (no sampler) watched in a second one, or
    learned by the runtime while it records."""
    from objtier.record.watch_sites import largest_sites, sites_text

    prepared = prepared_case(name)
    if prepared.skip:
        pytest.skip(prepared.skip)
    plain = prepared.plain
    assert plain.exit_status == 0, f"the plain run failed: {plain.stderr[-400:]}"
    stats = tmp_path / "arena-stats"
    monkeypatch.setenv("OBJTIER_ARENA_STATS", str(stats))
    if how == "learned":
        monkeypatch.setenv("OBJTIER_ARENA_LEARN", "8")
        return check_watched_run(prepared, tmp_path, name, stats)
    first = real_programs.run_recorded(prepared.program, "none", tmp_path / "first.otr")
    if not first.objects and not (tmp_path / "first.otr").exists():
        pytest.skip(f"{name}: the first recording wrote no trace")
    try:
        sites = largest_sites(tmp_path / "first.otr", 8)
    except UsageError as error:   # a program with no small block of its own (gzip)
        pytest.skip(f"{name}: no sites to watch ({error})")
    sites_file = tmp_path / "sites.txt"
    sites_file.write_text(sites_text(sites))
    monkeypatch.setenv("OBJTIER_ARENA_SITES", str(sites_file))
    check_watched_run(prepared, tmp_path, name, stats)


def check_watched_run(prepared, tmp_path, name: str, stats) -> None:
    case, plain = prepared.case, prepared.plain
    recorded = real_programs.run_recorded(prepared.program, "pageout", tmp_path / "run.otr")
    outcome, why = real_programs.verdict(case, plain, recorded)
    if outcome == "refused" and not case.may_refuse:
        pytest.skip(f"objtier record --sampler pageout refused here: {why}")
    assert real_programs.passed(case, outcome), (
        f"{name} with watched sites: {why}\n--- stderr ---\n{recorded.stderr[-1500:]}")
    if outcome != "pass":
        return
    assert recorded.exit_status == plain.exit_status
    assert recorded.checksum == plain.checksum
    if name not in NO_COUNTS:
        lines = stats.read_text().splitlines() if stats.exists() else []
        assert any("mode=watch" in line for line in lines), f"no watched arena: {lines}"


@pytest.mark.parametrize("how", ["from-run", "learned"])
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.heavy, pytest.mark.root])
                                  for n in FAST])
def test_real_program_with_watched_sites(prepared_case, tmp_path, monkeypatch, name, how):
    check_watched(prepared_case, tmp_path, monkeypatch, name, how)
