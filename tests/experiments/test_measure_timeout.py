"""run_measured's timeout ends the program and everything it started: a wrapper's children
must not keep running (in the cgroup of the next run) after the wrapper was killed."""

from __future__ import annotations

import os
import time

from objtier.experiments.measure import run_measured
from objtier.procfs import descendants


def test_timeout_kills_the_wrapper_and_its_children(tmp_path):
    pidfile = tmp_path / "child.pid"
    # the wrapper starts a long child, records its pid, and waits for it
    script = f"sleep 300 & echo $! > {pidfile}; wait"
    started = time.monotonic()
    m = run_measured("wrapper", ["sh", "-c", script], timeout_s=1.0)
    assert m.returncode != 0                       # killed, not finished
    assert time.monotonic() - started < 60         # did not wait for the child's 300 s
    child = int(pidfile.read_text())
    for _ in range(50):                            # the kill is delivered; reaping is init's
        try:
            os.kill(child, 0)
            state = open(f"/proc/{child}/stat").read().split(")")[-1].split()[0]
            if state == "Z":
                break
        except (ProcessLookupError, FileNotFoundError):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the wrapper's child {child} still runs after the timeout")


def test_descendants_lists_children_and_grandchildren():
    import subprocess

    p = subprocess.Popen(["sh", "-c", "sh -c 'sleep 30' & sleep 30 & wait"])
    try:
        for _ in range(50):
            found = descendants(p.pid)
            if len(found) >= 3:
                break
            time.sleep(0.05)
        assert len(found) >= 3, found   # inner sh, its sleep, and the outer sleep
    finally:
        from objtier.procfs import kill_tree
        kill_tree(p.pid)
        p.wait()
