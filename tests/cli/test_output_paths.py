"""Output paths: unwritable places, existing files, symbolic links. Each is a one-line error
and touches nothing; what objtier does create is private (directories 0700, files 0600)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from .helpers import (assert_one_line_error, assert_one_line_refusal, call, objtier,
                      seed_recording)


@pytest.fixture
def recording(tmp_path):
    return seed_recording(tmp_path / "run.otr")


def mode(path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_record_into_proc_is_refused(tmp_path):
    run = objtier("record", "-q", "-o", "/proc/x.otr", "--", "true")
    assert_one_line_error(run, "cannot create recording directory /proc/x.otr")


def test_record_force_through_a_symlink_to_a_directory_is_refused(tmp_path):
    target = tmp_path / "precious"
    target.mkdir()
    (target / "keep.otr").write_text("not a trace, but named like one")
    link = tmp_path / "link.otr"
    link.symlink_to(target)
    run = objtier("record", "-q", "-f", "-o", link, "--", "true")
    assert_one_line_error(run, "is a symbolic link")
    assert (target / "keep.otr").read_text().startswith("not a trace")
    assert link.is_symlink()


def test_record_into_a_dangling_symlink_is_refused(tmp_path):
    link = tmp_path / "dangling.otr"
    link.symlink_to(tmp_path / "nowhere")
    run = objtier("record", "-q", "-o", link, "--", "true")
    assert_one_line_error(run, "dangling")
    assert not (tmp_path / "nowhere").exists()


def test_record_onto_an_existing_file_is_refused_even_with_force(tmp_path):
    existing = tmp_path / "notes.txt"
    existing.write_text("keep")
    assert_one_line_error(objtier("record", "-q", "-o", existing, "--", "true"), "--force")
    assert_one_line_error(objtier("record", "-q", "-f", "-o", existing, "--", "true"),
                          "refusing to replace it")
    assert existing.read_text() == "keep"


def test_report_onto_an_existing_file_is_refused(tmp_path, recording):
    out = tmp_path / "out"
    out.write_text("keep")
    run = objtier("report", recording, "-o", out, "--no-symbols")
    assert_one_line_error(run, "report directory")
    assert out.read_text() == "keep"


@pytest.mark.parametrize("kind", ["symlink", "dangling"])
def test_report_output_through_a_symlink_is_refused(capsys, tmp_path, recording, kind):
    out = tmp_path / "out"
    (tmp_path / "elsewhere").mkdir()
    out.symlink_to(tmp_path / ("elsewhere" if kind == "symlink" else "missing"))
    code, stderr = call(capsys, "report", recording, "-o", out, "--no-symbols")
    assert_one_line_refusal(code, stderr, "is a symbolic link")
    assert not list((tmp_path / "elsewhere").iterdir()) and not (tmp_path / "missing").exists()


def test_simulate_output_onto_a_file_is_refused(capsys, tmp_path, recording):
    out = tmp_path / "out"
    out.write_text("keep")
    code, stderr = call(capsys, "simulate", recording, "--fast", "50%", "--policy",
                        "first-touch", "-o", out)
    assert_one_line_refusal(code, stderr, "exists and is not a directory")


def test_plan_output_into_a_missing_directory_is_one_line(capsys, tmp_path, recording):
    code, stderr = call(capsys, "plan", recording, "--fast", "50%", "-o",
                        tmp_path / "no" / "plan.json")
    assert_one_line_refusal(code, stderr, "cannot write")


def test_record_writes_a_private_directory_and_files(tmp_path, compile_c):
    program = compile_c("#include <stdlib.h>\n#include <string.h>\nint main(void) {\n"
                        "  char *p = malloc(1 << 20); memset(p, 1, 1 << 20); return p[7] - 1;\n}\n")
    out = tmp_path / "rec.otr"
    run = objtier("record", "-q", "-o", out, "--", program)
    assert run.returncode == 0, run.stderr
    assert mode(out) == 0o700
    files = sorted(out.glob("*.otr"))
    assert {f.name for f in files} >= {"counters.otr"} and len(files) >= 2
    assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)  # the usual umask: the modes checked below are objtier's doing
    yield
    os.umask(previous)


def test_plan_report_and_simulate_outputs_are_private(capsys, tmp_path, recording, umask_022):
    plan, text = tmp_path / "plan.json", tmp_path / "plan.txt"
    code, stderr = call(capsys, "plan", recording, "--fast", "50%", "-o", plan, "--text", text)
    assert code == 0, stderr
    assert json.loads(plan.read_text())["format"] == "objtier-plan"
    assert (mode(plan), mode(text)) == (0o600, 0o600)
    report = tmp_path / "report"
    code, stderr = call(capsys, "report", recording, "-o", report, "--no-symbols")
    assert code == 0, stderr
    assert mode(report) == 0o700
    written = {p.name: mode(p) for p in report.iterdir()}
    assert "index.html" in written and "objects.csv" in written and "objects.parquet" in written
    assert written == {name: 0o600 for name in written}
    sim = tmp_path / "sim"
    code, stderr = call(capsys, "simulate", recording, "--fast", "50%", "--policy",
                        "first-touch,object", "-o", sim)
    assert code == 0, stderr
    written = {p.name: mode(p) for p in sim.iterdir()}
    assert mode(sim) == 0o700 and any(n.endswith(".csv") for n in written)
    assert written == {name: 0o600 for name in written}
    assert os.umask(0o022) == 0o022  # objtier put the umask back
