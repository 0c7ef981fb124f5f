"""The C unit tests of native/sim (the same program CTest runs), compiled here with gcc."""

import subprocess
from pathlib import Path

SIM = Path(__file__).resolve().parents[2] / "native" / "sim"


def test_c_unit_tests(tmp_path):
    sources = [str(p) for p in sorted(SIM.glob("*.c"))] + [str(SIM / "tests" / "test_sim.c")]
    exe = tmp_path / "test_sim"
    build = subprocess.run(["gcc", "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror",
                            f"-I{SIM}", "-o", str(exe), *sources, "-lm"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all simulator tests passed" in run.stdout
