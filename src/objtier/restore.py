"""Undo what an experiment changed on the machine, whatever way it ends.

A Restorer is a stack of undo actions. Leaving its `with` block — normally, by an exception, by
Ctrl-C (KeyboardInterrupt) or by SIGTERM/SIGHUP (turned into SystemExit while the block is
active) — runs the actions in reverse order. Each action runs even if an earlier one failed;
failures are collected and reported, never silently dropped.
"""

from __future__ import annotations

import ctypes
import signal
import sys
from collections.abc import Callable


class Restorer:
    def __init__(self) -> None:
        self._undo: list[tuple[str, Callable[[], None]]] = []
        self._previous: dict[int, object] = {}
        self.failures: list[str] = []

    def push(self, what: str, action: Callable[[], None]) -> None:
        """Register an undo action; `what` names it in failure messages."""
        self._undo.append((what, action))

    def __enter__(self) -> "Restorer":
        for signum in (signal.SIGTERM, signal.SIGHUP):
            self._previous[signum] = signal.signal(signum, self._terminate)
        return self

    @staticmethod
    def _terminate(signum, _frame) -> None:
        raise SystemExit(128 + signum)

    def restore(self) -> None:
        while self._undo:
            what, action = self._undo.pop()
            try:
                action()
            except Exception as error:  # keep undoing the rest
                self.failures.append(f"could not undo {what}: {error}")
        for message in self.failures:
            sys.stderr.write(f"objtier: warning: {message}\n")

    def __exit__(self, *exc) -> None:
        # Block further SIGINT/SIGTERM while restoring so the undo stack runs to its end.
        blocked = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            self.restore()
        finally:
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


PR_SET_PDEATHSIG = 1   # prctl(2)


def die_with_parent(sig: int) -> Callable[[], None]:
    """A preexec_fn for subprocess.Popen: the child gets signal `sig` when this process dies
    (PR_SET_PDEATHSIG), so a helper or a QEMU it started cannot outlive it."""
    def arm() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    return arm
