"""The C unit tests of native/camat (the program CTest runs), built here with gcc under
AddressSanitizer and UndefinedBehaviorSanitizer."""

import subprocess

from tests.camat.conftest import REPO

CAMAT = REPO / "native" / "camat"


def test_c_unit_tests_under_sanitizers(tmp_path):
    exe = tmp_path / "test_camat"
    build = subprocess.run(["gcc", "-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", "-Werror",
                            "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                            f"-I{CAMAT}", "-o", str(exe), str(CAMAT / "tests" / "test_camat.c"),
                            *sorted(map(str, CAMAT.glob("*.c"))), "-lm"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all camat tests passed" in run.stdout
