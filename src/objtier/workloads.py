"""The workload binaries (workloads/, installed into _native/bin) and their FOM line.

Every workload prints exactly one line

    FOM <name>=<value> <unit> time=<seconds>

for its timed region. parse_fom() reads it back; run_workload() runs a workload and parses it.
docs/workloads.md describes each workload's objects and which of them is expected to be hot.
"""

from __future__ import annotations

import math
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from objtier import native
from objtier.errors import ObjtierError, UsageError

#: name -> one-line description, in the order `objtier bench --list` shows them.
WORKLOADS: dict[str, str] = {
    "graphgen": "write a Kronecker (-g) or uniform (-u) CSR graph file for bfs/bc/cc -f",
    "bfs": "direction-optimizing breadth-first search (MTEPS)",
    "bc": "betweenness centrality, Brandes from sampled sources (MTEPS)",
    "cc": "connected components, Afforest (MEdges/s)",
    "stream": "STREAM copy/scale/add/triad, best bandwidth (MB/s)",
    "ptrchase": "dependent random pointer chasing, 128-B elements (deref/s)",
    "gups": "HPCC RandomAccess table updates (GUP/s)",
    "kmeans": "OpenMP K-means, per-thread partial centers; --padded (Mpoints/s)",
}

# Whole line: FOM <name>=<value> <unit> time=<seconds>; name is [A-Za-z0-9_.-], unit has no
# spaces, numbers are C printf %g / %f output (possibly with an exponent).
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)"
_FOM_LINE = re.compile(
    rf"^FOM (?P<name>[A-Za-z0-9_.-]+)=(?P<value>{_NUMBER}) (?P<unit>\S+) time=(?P<seconds>{_NUMBER})$"
)


@dataclass(frozen=True)
class FigureOfMerit:
    name: str       # the workload's name for its metric (e.g. "bfs")
    value: float    # in `unit`
    unit: str       # e.g. "MTEPS", "MB/s", "GUP/s", "deref/s"
    seconds: float  # duration of the timed region that `value` describes


class FomError(ObjtierError):
    """A workload's output has no FOM line, several, or a malformed one."""

    exit_code = 3


def parse_fom(text: str) -> FigureOfMerit:
    """The figure of merit in a workload's output; exactly one `FOM ` line must be present."""
    lines = [line.rstrip("\r") for line in text.splitlines() if line.startswith("FOM")]
    if not lines:
        raise FomError("no FOM line in the workload output")
    if len(lines) > 1:
        raise FomError(f"{len(lines)} FOM lines in the workload output, expected exactly one")
    line = lines[0]
    match = _FOM_LINE.match(line.strip())
    if not match:
        raise FomError(f"malformed FOM line {line[:120]!r}: expected "
                       "'FOM <name>=<value> <unit> time=<seconds>'")
    value, seconds = float(match["value"]), float(match["seconds"])
    if not math.isfinite(value) or not math.isfinite(seconds) or seconds < 0:
        raise FomError(f"FOM line with a non-finite value or negative time: {line[:120]!r}")
    return FigureOfMerit(match["name"], value, match["unit"], seconds)


def workload_binary(name: str) -> Path:
    """Path of an installed workload binary; UsageError for an unknown name."""
    if name not in WORKLOADS:
        raise UsageError(f"unknown workload '{name}' (known: {', '.join(WORKLOADS)})")
    return native.binary(name)


def run_workload(name: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 timeout: float | None = None,
                 ) -> tuple[subprocess.CompletedProcess[str], FigureOfMerit]:
    """Run workload `name` with `args`; returns (completed process, its figure of merit).

    `env` replaces the environment when given (as subprocess does). Raises FomError (with the
    workload's last stderr line) when it exits non-zero or its output has no single FOM line,
    and ObjtierError when it exceeds `timeout` seconds.
    """
    exe = workload_binary(name)
    cmd = [str(exe), *map(str, args)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=None if env is None
                              else dict(env), timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise ObjtierError(f"{name} did not finish within {timeout:g} s") from error
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise FomError(f"{name} exited with status {proc.returncode}: {last}")
    return proc, parse_fom(proc.stdout)
