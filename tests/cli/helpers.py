"""Running the installed `objtier` entry point as a user would, and checking its errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

OBJTIER = Path(sys.executable).with_name("objtier")


def objtier(*args, timeout: float = 300, umask: int | None = 0o022, **kwargs
            ) -> subprocess.CompletedProcess:
    """Run `objtier ARGS...` (stdin closed, so not interactive); the umask is the usual 022
    unless told, so that the modes objtier sets are its own doing."""
    preexec = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([str(OBJTIER), *map(str, args)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, preexec_fn=preexec,
                          **kwargs)


def assert_one_line_error(run: subprocess.CompletedProcess, fragment: str = "") -> str:
    """A refusal: non-zero exit, exactly one line on stderr, no traceback, no internal error,
    and `fragment` in that line. Returns the line."""
    lines = run.stderr.splitlines()
    assert run.returncode != 0, f"exit 0; stderr: {run.stderr!r}"
    assert len(lines) == 1, f"expected one line on stderr, got: {run.stderr!r}"
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    return lines[0]


def seed_recording(directory: Path) -> Path:
    """A recording directory written by the real trace writer (no program run)."""
    from tests.fuzz.seeds import write_counters_trace, write_process_trace

    directory.mkdir()
    write_process_trace(directory / "proc-4242.otr")
    write_counters_trace(directory / "counters.otr")
    return directory


def call(capsys, *argv) -> tuple[int, str]:
    """objtier.cli.main(argv) in this process -> (exit code, stderr): the same parser and
    error handling as the entry point (which only calls main), without an interpreter start
    per case."""
    from objtier.cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse's refusals
        code = exit_.code
    return code, capsys.readouterr().err


def assert_one_line_refusal(code: int, stderr: str, fragment: str = "") -> str:
    lines = stderr.splitlines()
    assert code != 0, f"exit 0; stderr: {stderr!r}"
    assert len(lines) == 1, f"expected one line on stderr, got: {stderr!r}"
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    return lines[0]
