"""Run a program with the objtier runtime preloaded.

The one place that sets LD_PRELOAD. While the program runs, SIGINT and SIGTERM reach it (the
terminal delivers Ctrl-C to the whole foreground group; we forward SIGTERM) and objtier itself
waits, so that the trace and counters are closed properly after the program stops.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from objtier.errors import UsageError
from objtier.native import runtime_library


def runtime_env(settings: dict[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the program: LD_PRELOAD first in line, plus OBJTIER_* settings."""
    env = dict(os.environ if base is None else base)
    library = str(runtime_library())
    preload = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = f"{library}:{preload}" if preload else library
    env.update({k: str(v) for k, v in settings.items()})
    return env


def resolve_command(command: list[str]) -> list[str]:
    if not command:
        raise UsageError("no command given; usage: objtier record [options] -- CMD [ARGS...]")
    program = command[0]
    if "/" not in program:
        found = shutil.which(program)
        if not found:
            raise UsageError(f"command not found: {program}")
        program = found
    elif not Path(program).exists():
        raise UsageError(f"command not found: {program}")
    if not os.access(program, os.X_OK):
        raise UsageError(f"not executable: {program}")
    return [program, *command[1:]]


def exit_code(returncode: int) -> int:
    """Shell convention: a program killed by signal N exits 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


ESCALATE_AFTER_S = 5.0  # seconds between SIGINT and SIGTERM, and between SIGTERM and SIGKILL
_SIGINT_BIT = 1 << (signal.SIGINT - 1)


def _signal_masks(status_path: Path) -> dict[str, int]:
    masks = {}
    for line in status_path.read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("SigIgn", "SigBlk"):
            masks[name] = int(value.strip() or "0", 16)
    return masks


def sigint_refusal(pid: int) -> str | None:
    """'ignores' or 'blocks' when process pid cannot be stopped by SIGINT, else None: from
    its SigIgn mask (/proc/PID/status), or SIGINT in the SigBlk mask of every one of its
    threads (one thread that takes it is enough for the default action to end the process)."""
    try:
        if _signal_masks(Path(f"/proc/{pid}/status")).get("SigIgn", 0) & _SIGINT_BIT:
            return "ignores"
        tasks = list(Path(f"/proc/{pid}/task").glob("*/status"))
        if tasks and all(_signal_masks(t).get("SigBlk", 0) & _SIGINT_BIT for t in tasks):
            return "blocks"
    except OSError:  # the process (or a thread) is gone: it is stopping
        return None
    return None


class _Rearm(Exception):
    """Raised by the signal handler to leave a wait() that has no timeout."""


class _Escalation:
    """Ctrl-C on a program that ignores or blocks SIGINT: say so at once, then SIGTERM and
    SIGKILL, each ESCALATE_AFTER_S later (a further Ctrl-C takes the next step at once).
    A program that handles SIGINT is left to finish; a second Ctrl-C escalates it too."""

    STEPS = ((signal.SIGTERM, "SIGTERM"), (signal.SIGKILL, "SIGKILL"))

    def __init__(self, process: subprocess.Popen, name: str, delay_s: float):
        self.process = process
        self.name = name
        self.delay_s = delay_s
        self.step = 0               # index into STEPS of the next signal
        self.deadline: float | None = None
        self.interrupts = 0

    def say(self, text: str) -> None:
        sys.stderr.write(f"{self.name}: {text}\n")
        sys.stderr.flush()

    def interrupted(self) -> None:
        self.interrupts += 1
        if self.interrupts > 1 and self.step < len(self.STEPS):
            self.next_step()
            return
        refusal = sigint_refusal(self.process.pid)
        if refusal:
            self.say(f"the program {refusal} SIGINT; sending SIGTERM in "
                     f"{self.delay_s:g} s, then SIGKILL {self.delay_s:g} s later "
                     f"(Ctrl-C again to do it now); the trace keeps what was written")
            self.deadline = time.monotonic() + self.delay_s

    def next_step(self) -> None:
        if self.step >= len(self.STEPS):
            # every signal sent (a wait that timed out as the last Ctrl-C sent SIGKILL): only
            # the program's exit is left to wait for
            self.deadline = None
            return
        signum, name = self.STEPS[self.step]
        self.step += 1
        more = (f"; SIGKILL in {self.delay_s:g} s if it is still running"
                if self.step < len(self.STEPS) else "")
        self.say(f"sending {name} to the program (pid {self.process.pid}){more}")
        try:
            self.process.send_signal(signum)
        except ProcessLookupError:
            pass
        self.deadline = (time.monotonic() + self.delay_s) if self.step < len(self.STEPS) \
            else None

    def timeout(self) -> float | None:
        """Seconds until the next step is due (None: nothing pending)."""
        if self.deadline is None:
            return None
        return max(self.deadline - time.monotonic(), 0.0)


def run_program(command: list[str], env: dict[str, str],
                on_start: Callable[[int], None] | None = None,
                preexec: Callable[[], None] | None = None, name: str = "objtier",
                escalate_after_s: float = ESCALATE_AFTER_S) -> int:
    """Run command to completion; returns its raw returncode (negative = killed by signal).
    SIGINT, SIGTERM and SIGHUP reach the program; a program that will not stop on SIGINT is
    escalated (see _Escalation); `name` prefixes the messages ("objtier record")."""
    # The handlers go in before the program starts: it may be running (and the user may press
    # Ctrl-C) before Popen returns. A signal that comes first is kept and forwarded after.
    started: list[subprocess.Popen] = []
    pending: list[int] = []
    previous = {}
    interactive = os.isatty(0)
    waiting = [False]  # inside process.wait(): a handler may interrupt it
    escalation: list[_Escalation] = []

    def forward(signum, _frame):
        if not started:
            pending.append(signum)
            return
        process = started[0]
        if signum == signal.SIGINT:
            if not interactive:  # the terminal sends Ctrl-C to the whole group itself
                try:
                    process.send_signal(signum)
                except ProcessLookupError:
                    pass
            escalation[0].interrupted()
            if escalation[0].deadline is not None and waiting[0]:
                raise _Rearm  # out of a blocking wait(), back in with a timeout
            return
        try:
            process.send_signal(signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous[signum] = signal.signal(signum, forward)
    try:
        process = subprocess.Popen(command, env=env, preexec_fn=preexec)
    except BaseException:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        raise
    escalation.append(_Escalation(process, name, escalate_after_s))
    started.append(process)
    for signum in pending:
        forward(signum, None)
    try:
        if on_start:
            on_start(process.pid)
        while True:
            try:
                waiting[0] = True
                return process.wait(timeout=escalation[0].timeout())
            except subprocess.TimeoutExpired:
                escalation[0].next_step()
            except (KeyboardInterrupt, _Rearm):
                continue
            finally:
                waiting[0] = False
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
