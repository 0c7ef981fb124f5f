"""`record` notices a launcher: a shell script that runs the real program records no object
of its own, and `record` says to use --follow-forks (and only then)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from objtier.errors import EnvironmentProblem

WORKLOAD = r"""
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    size_t n = 8u << 20;
    char *a = malloc(n);
    for (int r = 0; r < 20; r++) { memset(a, r, n); usleep(10000); }
    printf("%d\n", a[n - 1]);
    free(a);
    return 0;
}
"""


def _record(tmp_path, name, *args):
    from objtier import native

    try:
        native.runtime_library()
    except EnvironmentProblem as error:
        pytest.skip(f"needs the built runtime: {error}")
    out = tmp_path / f"{name}.otr"
    return subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "-o", str(out),
                           "--sampler", "fault", "--counters-interval", "0", *args],
                          capture_output=True, text=True, timeout=120)


def test_a_launcher_script_gets_the_follow_forks_hint(compile_c, tmp_path):
    exe = compile_c(WORKLOAD, name="workload")
    script = tmp_path / "launch.sh"
    script.write_text(f"#!/bin/sh\necho launching\n{exe}\necho finished\n")
    script.chmod(0o755)

    launched = _record(tmp_path, "script", "--", str(script))
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout.split() == ["launching", "19", "finished"]   # output unchanged
    hints = [line for line in launched.stderr.splitlines() if "--follow-forks" in line]
    assert len(hints) == 1, launched.stderr
    assert "workload" in hints[0] and "launcher" in hints[0]

    followed = _record(tmp_path, "followed", "--follow-forks", "--", str(script))
    assert followed.returncode == 0, followed.stderr
    assert "--follow-forks" not in followed.stderr

    direct = _record(tmp_path, "direct", "--", str(exe))
    assert direct.returncode == 0, direct.stderr
    assert "--follow-forks" not in direct.stderr


def test_child_watcher_polls_less_as_the_run_grows():
    """20 ms at first, then a tenth of the time recorded so far, at most 1 s: a 10 s run
    scans /proc about 50 times, not 500."""
    from objtier.record.launcher import ChildWatcher

    watcher = ChildWatcher()
    assert watcher.interval(0.0) == 0.02
    assert watcher.interval(0.1) == 0.02
    assert watcher.interval(2.0) == pytest.approx(0.2)
    assert watcher.interval(30.0) == 1.0
    elapsed, scans = 0.0, 0
    while elapsed < 10.0:
        elapsed += watcher.interval(elapsed)
        scans += 1
    assert 30 <= scans <= 70, scans
