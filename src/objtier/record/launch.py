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


def run_program(command: list[str], env: dict[str, str],
                on_start: Callable[[int], None] | None = None,
                preexec: Callable[[], None] | None = None) -> int:
    """Run command to completion; returns its raw returncode (negative = killed by signal)."""
    process = subprocess.Popen(command, env=env, preexec_fn=preexec)
    previous = {}

    interactive = os.isatty(0)

    def forward(signum, _frame):
        if signum == signal.SIGINT and interactive:
            return  # the terminal already sent Ctrl-C to the program's process group
        try:
            process.send_signal(signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous[signum] = signal.signal(signum, forward)
    try:
        if on_start:
            on_start(process.pid)
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:
                continue
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
