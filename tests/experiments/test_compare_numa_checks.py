"""`compare --tier numa` without booting the guest: a command the guest cannot see is refused
before the guest is used (objtier.testbed.visible), and a comparison in which nothing was
tiered says so (objtier.experiments.compare_numa.tiering_summary).

The "nothing tiered" rows are those of the case that showed the problem: a solver whose 6 MiB
fit in the guest's 930 MiB of free fast memory ran entirely on the fast node in both arms
(slow share 0, no promotion, demotion or hint fault)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from objtier.errors import UsageError
from objtier.experiments.compare_numa import (NumaCompareSettings, NumaRunRow, arm_tiered,
                                              run_numa_compare, suggested_reserve,
                                              tiering_summary, write_outputs)
from objtier.testbed.visible import check_guest_command, hidden_by

MIB = 1 << 20
REPO = Path(__file__).resolve().parents[2]
PROGRAM = "int main(void) { return 0; }\n"


class UntouchableGuest:
    """A testbed that fails the test when the experiment uses it: the check must come first."""

    def __init__(self, repo: Path):
        self.repo = repo

    def __getattr__(self, name):
        raise AssertionError(f"the guest was used ({name}) before the command was checked")


def test_program_outside_what_the_guest_sees_is_refused_before_boot(compile_c, tmp_path,
                                                                     monkeypatch):
    """The guest mounts its own tmpfs over /tmp: a program built there fails in the guest
    with `env: ...: No such file or directory` after boot and profiling."""
    exe = compile_c(PROGRAM)
    assert str(exe).startswith("/tmp/"), exe     # pytest's tmp_path
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.setenv("OBJTIER_TESTBED_REPO", str(repo))
    settings = NumaCompareSettings(output=repo / "out", repeat=1)
    with pytest.raises(UsageError) as error:
        run_numa_compare([str(exe)], settings, testbed=UntouchableGuest(repo))
    message = str(error.value)
    assert "\n" not in message
    assert str(exe) in message and "/tmp (tmpfs)" in message, message
    assert not (repo / "out").exists()            # refused before anything was written


def test_visible_paths(compile_c, tmp_path):
    exe = compile_c(PROGRAM)
    assert hidden_by(exe, REPO) == "/tmp (tmpfs)"
    assert hidden_by("/dev/shm/x", REPO) == "/dev (devtmpfs)"
    assert hidden_by("/usr/bin/env", REPO) is None
    assert hidden_by(REPO / "src", REPO) is None
    assert hidden_by(exe, tmp_path) is None         # a project tree under /tmp is mounted
    link = tmp_path / "link"
    link.symlink_to(exe)
    assert hidden_by(link, tmp_path) is None
    outside = tmp_path.parent / "elsewhere"       # /tmp, outside that tree
    assert hidden_by(outside, tmp_path) == "/tmp (tmpfs)"


def test_guest_command_program_interpreter_and_arguments(compile_c, tmp_path):
    exe = compile_c(PROGRAM)
    repo = tmp_path / "repo"
    (repo / "bin").mkdir(parents=True)
    # a program in the project tree, run from the project root: its path made absolute
    inside = repo / "bin" / "prog"
    inside.write_bytes(exe.read_bytes())
    inside.chmod(0o755)
    assert check_guest_command(["bin/prog", "32", "out.csv"], repo, cwd=repo) == \
        [str(inside), "32", "out.csv"]
    # its argument is a file the guest does not see
    data = tmp_path / "input.mtx"
    data.write_text("1\n")
    for arg in (str(data), f"--input={data}"):
        with pytest.raises(UsageError, match="mounts over"):
            check_guest_command([str(inside), arg], repo, cwd=repo)
    # a relative argument that names a host file, from outside the project root
    with pytest.raises(UsageError, match="relative"):
        check_guest_command([str(inside), "input.mtx"], repo, cwd=tmp_path)
    # a script whose interpreter is where the guest does not look
    script = repo / "bin" / "run.sh"
    script.write_text(f"#!{exe}\n")
    script.chmod(0o755)
    with pytest.raises(UsageError, match="interpreter"):
        check_guest_command([str(script)], repo, cwd=repo)
    assert check_guest_command(["/usr/bin/env", "true"], repo, cwd=repo) == \
        ["/usr/bin/env", "true"]


def _run(config: str, order: int, **counters) -> NumaRunRow:
    values = dict(numa_hint_faults=0, numa_hint_faults_local=0, numa_pages_migrated=0,
                  pgpromote_success=0, pgpromote_candidate=0, pgdemote=0, pgdemote_kswapd=0,
                  pgdemote_direct=0, pgmigrate_success=0, objects=3, slow_share=0.0,
                  placement_actions=0 if config == "kernel" else 3, failed_actions=0)
    values.update(counters)
    return NumaRunRow(config, (order + 1) // 2, order, 0, 1.25, **values)


def test_nothing_tiered_is_said_and_flagged(tmp_path):
    rows = [_run(c, i + 1) for i, c in enumerate(["kernel", "objtier"] * 3)]
    footprint, free = 6 * MIB, 930 * MIB
    tiering, warning = tiering_summary(rows, footprint, free)
    assert tiering["tiered"] == {"kernel": False, "objtier": False}
    assert tiering["nothing_tiered"] is True
    assert warning.startswith("nothing was tiered") and "\n" not in warning
    reserve = suggested_reserve(free, footprint)
    assert reserve == 928 * MIB                       # 3 MiB of the 6 left free, 2 MiB pages
    assert f"--fast-reserve {reserve >> 20}M" in warning
    # as the experiment writes it
    summary = {"warnings": [warning], **tiering}
    write_outputs(rows, [], summary, tmp_path)
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["nothing_tiered"] is True and written["tiered"]["kernel"] is False


def test_tiering_seen_in_either_arm():
    # the kernel demoted and promoted: compared
    rows = [_run("kernel", 1, pgdemote=4000, pgpromote_success=120, slow_share=0.4),
            _run("objtier", 2, slow_share=0.75)]
    tiering, warning = tiering_summary(rows, 128 * MIB, 100 * MIB)
    assert tiering["tiered"] == {"kernel": True, "objtier": True}
    assert not tiering["nothing_tiered"] and warning is None
    # objtier's plan put objects on the slow node but the kernel never needed to
    rows = [_run("kernel", 1), _run("objtier", 2, slow_share=0.75)]
    tiering, warning = tiering_summary(rows, 128 * MIB, 930 * MIB)
    assert tiering["tiered"] == {"kernel": False, "objtier": True}
    assert not tiering["nothing_tiered"]
    assert warning.startswith("the kernel arm never used the slow nodes")


def test_unknown_is_not_untiered():
    """Runs that cannot tell (no residency, a counter missing, every run failed) are not
    reported as untiered."""
    assert arm_tiered([_run("kernel", 1, slow_share=None)], "kernel") is None
    assert arm_tiered([_run("kernel", 1, pgdemote=None)], "kernel") is None
    failed = _run("kernel", 1)
    failed.returncode = 1
    assert arm_tiered([failed], "kernel") is None
    rows = [_run("kernel", 1, slow_share=None), _run("objtier", 2)]
    tiering, warning = tiering_summary(rows, 6 * MIB, 930 * MIB)
    assert not tiering["nothing_tiered"] and warning is None

