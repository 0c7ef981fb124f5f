"""Bad input to `objtier camat`: one line on stderr, non-zero exit, never a traceback."""

from __future__ import annotations

import pytest

from tests.camat.conftest import camat


def _one_line_error(run, text):
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert text in lines[0]
    assert "Traceback" not in run.stderr


def test_no_target():
    _one_line_error(camat(), "give one RECORDING")


def test_missing_recording(tmp_path):
    _one_line_error(camat(str(tmp_path / "nope.otr")), "nope.otr")


@pytest.mark.parametrize("value", ["0%", "150%", "abc", "-5"])
def test_local_out_of_range(tmp_path, value):
    _one_line_error(camat(str(tmp_path), "--local", value), "--local")


def test_recording_without_access_stream(tmp_path):
    from objtier.trace.writer import TraceWriter

    rec = tmp_path / "run.otr"
    rec.mkdir()
    with TraceWriter(rec / "proc-100.otr", pid=100, ppid=1, start_mono_ns=1_000):
        pass  # a readable recording with no ACCESS records
    _one_line_error(camat(str(rec)), "no ordered access stream")


def test_unknown_option_after_recording(tmp_path):
    run = camat(str(tmp_path), "--bogus")
    assert run.returncode == 2 and "Traceback" not in run.stderr


def test_pmu_with_a_recording_is_refused(tmp_path):
    _one_line_error(camat("--source", "pmu", str(tmp_path)), "-- CMD")
