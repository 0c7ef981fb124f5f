"""Terminal output: one rich Console factory, wide enough for tables when output is piped."""

from __future__ import annotations

import sys

PIPED_WIDTH = 160  # columns used when the stream is not a terminal (files, CI logs)


def make_console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else PIPED_WIDTH)
