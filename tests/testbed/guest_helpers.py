"""Helpers for guest tests: read guest files, /proc/vmstat, placement program output."""

from __future__ import annotations

from objtier.testbed import Testbed


def guest_read(tb: Testbed, path: str) -> str:
    rc, out, err = tb.run(["cat", path])
    assert rc == 0, err
    return out.strip()


def vmstat(tb: Testbed) -> dict[str, int]:
    text = guest_read(tb, "/proc/vmstat")
    return {k: int(v) for k, v in (line.split() for line in text.splitlines())}


def parse_placement(out: str) -> dict[str, int]:
    """`pages=N node0=A node1=B absent=C other=D` -> dict."""
    return {k: int(v) for k, v in (w.split("=") for w in out.split())}
