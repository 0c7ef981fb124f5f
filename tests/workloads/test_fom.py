"""The FOM-line parser and run_workload(), which later parts reuse."""

from __future__ import annotations

import pytest

from objtier.errors import ObjtierError, UsageError
from objtier.workloads import WORKLOADS, FigureOfMerit, parse_fom, run_workload


def test_parses_a_line_among_other_output():
    text = "graph: generated ...\ntrial 0: 1.0 s\nFOM bfs=721.067 MTEPS time=0.042233\ndone\n"
    assert parse_fom(text) == FigureOfMerit("bfs", 721.067, "MTEPS", 0.042233)


@pytest.mark.parametrize("line, value, unit, seconds", [
    ("FOM ptrchase=1.75294e+06 deref/s time=5.704695", 1.75294e6, "deref/s", 5.704695),
    ("FOM gups=0.0603265 GUP/s time=1.112428", 0.0603265, "GUP/s", 1.112428),
    ("FOM stream=29432 MB/s time=1", 29432.0, "MB/s", 1.0),
    ("FOM x.y-z_1=5E-3 u time=0.5\r", 5e-3, "u", 0.5),
])
def test_number_formats(line, value, unit, seconds):
    fom = parse_fom(line + "\n")
    assert fom.value == pytest.approx(value)
    assert fom.unit == unit
    assert fom.seconds == pytest.approx(seconds)


def test_no_fom_line():
    with pytest.raises(ObjtierError, match="no FOM line"):
        parse_fom("trial 0\nverification: passed\n")


def test_two_fom_lines():
    with pytest.raises(ObjtierError, match="2 FOM lines"):
        parse_fom("FOM a=1 x time=1\nFOM b=2 x time=1\n")


@pytest.mark.parametrize("line", [
    "FOM bfs=721.0 MTEPS",                     # no time
    "FOM bfs=fast MTEPS time=1.0",             # value not a number
    "FOM bfs=1.0 M TEPS time=1.0",             # unit with a space
    "FOM =1.0 MTEPS time=1.0",                 # no name
    "FOM bfs=1.0 MTEPS time=1.0 extra",        # trailing words
    "FOM bfs=1.0 MTEPS time=abc",              # time not a number
    "FOMbfs=1.0 MTEPS time=1.0",               # no space after FOM
    "FOM bfs=nan MTEPS time=1.0",              # not finite
    "FOM bfs=1.0 MTEPS time=-1",               # negative time
])
def test_malformed_lines(line):
    with pytest.raises(ObjtierError) as info:
        parse_fom(f"header\n{line}\n")
    message = str(info.value)
    assert "\n" not in message and message


def test_errors_are_one_line_objtier_errors():
    with pytest.raises(ObjtierError) as info:
        parse_fom("")
    assert info.value.exit_code != 0


def test_workload_table_names_every_binary(workload_bin):
    for name in WORKLOADS:
        assert (workload_bin / name).exists(), name


def test_run_workload_returns_process_and_fom(workload_bin):
    proc, fom = run_workload("stream", ["-s", "20000", "-n", "3"], timeout=60)
    assert proc.returncode == 0
    assert fom.name == "stream" and fom.unit == "MB/s"
    assert fom.value > 0 and fom.seconds > 0
    assert "verification: passed" in proc.stdout


def test_run_workload_unknown_name():
    with pytest.raises(UsageError, match="unknown workload"):
        run_workload("no-such-workload")


def test_run_workload_reports_failure_status(workload_bin):
    with pytest.raises(ObjtierError, match=r"exited with status 2: .*-Q"):
        run_workload("gups", ["-Q"], timeout=60)


def test_run_workload_passes_environment(workload_bin):
    proc, fom = run_workload("kmeans", ["-n", "2000", "-i", "2"], env={"OMP_NUM_THREADS": "1"},
                             timeout=60)
    assert "1 threads" in proc.stdout and fom.name == "kmeans"
