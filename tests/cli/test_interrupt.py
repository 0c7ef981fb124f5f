"""Ctrl-C on `objtier record` when the program will not stop on SIGINT: objtier says so at
once, sends SIGTERM after the stated delay and SIGKILL after another, and the trace written
so far stays readable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from objtier.record.launch import ESCALATE_AFTER_S, sigint_refusal
from objtier.trace import open_trace

from .helpers import OBJTIER

STUBBORN = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    signal(SIGINT, SIG_IGN);
    if (strcmp(argv[1], "ignore-term") == 0)
        signal(SIGTERM, SIG_IGN);
    char *p = malloc(4 << 20);
    memset(p, 1, 4 << 20);
    printf("ready\n");
    fflush(stdout);
    for (unsigned i = 0;; i++) {
        p[(i * 4096u) % (4u << 20)]++;
        usleep(1000);
    }
}
"""


def interrupt_recording(program, mode: str, out) -> tuple[int, str]:
    """Record `program mode`, wait until it runs, send SIGINT to objtier; (exit code, stderr)."""
    process = subprocess.Popen([str(OBJTIER), "record", "-o", str(out), "--", str(program),
                                mode], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "ready\n"
        os.kill(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=120)  # a guard against a hang, not a timing
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, stderr


def test_a_program_ignoring_sigint_is_told_then_terminated(compile_c, tmp_path):
    program = compile_c(STUBBORN, name="stubborn")
    out = tmp_path / "ignore.otr"
    code, stderr = interrupt_recording(program, "ignore", out)
    lines = stderr.splitlines()
    told = [i for i, line in enumerate(lines) if "the program ignores SIGINT" in line]
    term = [i for i, line in enumerate(lines) if "sending SIGTERM to the program" in line]
    assert told and term and told[0] < term[0], stderr
    assert f"sending SIGTERM in {ESCALATE_AFTER_S:g} s" in lines[told[0]]
    assert "Traceback" not in stderr
    assert code == 128 + signal.SIGTERM, stderr
    trace = open_trace(out)  # what was flushed before the signal is readable
    assert trace.allocations.num_rows >= 1
    assert (trace.allocations.column("size").to_numpy() >= 4 << 20).any()


def test_further_ctrl_c_take_the_next_step_at_once(compile_c, tmp_path):
    """SIGINT and SIGTERM both ignored: the second Ctrl-C sends SIGTERM, the third SIGKILL,
    without waiting for the delays."""
    program = compile_c(STUBBORN, name="stubborn")
    out = tmp_path / "kill.otr"
    process = subprocess.Popen([str(OBJTIER), "record", "-o", str(out), "--", str(program),
                                "ignore-term"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []

    def read_until(fragment: str) -> None:
        for line in process.stderr:  # ends at EOF if objtier exits first
            seen.append(line)
            if fragment in line:
                return
        raise AssertionError(f"{fragment!r} never came; stderr: {''.join(seen)!r}")

    try:
        assert process.stdout.readline() == "ready\n"
        os.kill(process.pid, signal.SIGINT)
        read_until("the program ignores SIGINT")
        os.kill(process.pid, signal.SIGINT)
        read_until("sending SIGTERM to the program")
        os.kill(process.pid, signal.SIGINT)
        read_until("sending SIGKILL to the program")
        seen.append(process.communicate(timeout=120)[1])  # a guard against a hang
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 128 + signal.SIGKILL, "".join(seen)
    trace = open_trace(out)  # readable; killed this early, the runtime may not have flushed yet
    assert trace.counters.num_rows >= 1
    trace.allocations  # builds without error


def test_a_process_whose_only_thread_blocks_sigint_is_recognized():
    child = subprocess.Popen([sys.executable, "-c", (
        "import signal, sys, time\n"
        # SIGINT's default action first: a test run in the background inherits it ignored
        "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        assert sigint_refusal(child.pid) == "blocks"
        assert sigint_refusal(os.getpid()) is None  # this test process takes SIGINT
    finally:
        child.kill()
        child.wait()


def test_a_step_due_after_the_last_signal_only_waits(capsys):
    """A wait that times out just as the last Ctrl-C sent SIGKILL asks for one step more than
    there are (once an internal error in a loaded full test run): it is a no-op that leaves
    nothing pending, and the program is still reaped."""
    from objtier.record.launch import _Escalation

    process = subprocess.Popen(["sleep", "30"])
    try:
        escalation = _Escalation(process, "objtier record", 5.0)
        for _ in _Escalation.STEPS:
            escalation.next_step()
        assert escalation.deadline is None and escalation.step == len(_Escalation.STEPS)
        escalation.next_step()                       # one more: nothing to send
        assert escalation.deadline is None and escalation.timeout() is None
        assert process.wait(timeout=30) == -signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    said = capsys.readouterr().err
    assert said.count("sending ") == len(_Escalation.STEPS), said
