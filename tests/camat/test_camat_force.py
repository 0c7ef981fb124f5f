"""camat -- CMD -o DIR a second time: refused in one line that names --force, which camat
then takes (it replaces DIR/run.otr/)."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = "int main(void){static char a[1 << 16]; long s = 0; " \
          "for (int i = 0; i < (1 << 16); i += 64) s += a[i]; return (int)s;}"


def camat(*args):
    return subprocess.run([sys.executable, "-m", "objtier", "camat", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_second_run_needs_force_and_force_is_taken(compile_c, tmp_path):
    exe = compile_c(PROGRAM, name="tiny")
    out = tmp_path / "cam"
    camat("-o", out, "--stream", "100", "--", exe)
    assert (out / "run.otr").is_dir()
    again = camat("-o", out, "--stream", "100", "--", exe)
    assert again.returncode != 0
    assert "--force" in again.stderr and "Traceback" not in again.stderr
    forced = camat("-f", "-o", out, "--stream", "100", "--", exe)
    assert "exists" not in forced.stderr and "Traceback" not in forced.stderr
    assert (out / "run.otr").is_dir()
