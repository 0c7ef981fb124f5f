"""The workload binaries (workloads/, installed into _native/bin) and their FOM line.

Every workload prints exactly one line

    FOM <name>=<value> <unit> time=<seconds>

for its timed region. parse_fom() reads it back; run_workload() runs a workload and parses it.
The second half is the one registry of the suite and its sizes (SUITE, SIZES, suite()) that the
benchmarks in bench/ and the tests build their workload commands from.
docs/workloads.md describes each workload's objects and which of them is expected to be hot.
"""

from __future__ import annotations

import math
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
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


# --- The registry: the suite's workloads and the sizes the benchmarks and tests run them at ---
#
# A suite name is a program (above) or KERNEL_KIND for a graph kernel on a graph file of KIND
# (bfs_kron: BFS on a Kronecker graph). A size maps suite names to argument templates: "{graph}"
# is the graph file the workload loads, "{t}" its thread count; suite() fills both in.

#: graph kinds and graphgen's flag for each
GRAPH_KINDS: dict[str, str] = {"kron": "-g", "urand": "-u"}
#: the graph kernels' trial option (repetitions of the timed kernel)
TRIAL_OPTION: dict[str, str] = {"bfs": "-n", "cc": "-n", "bc": "-i"}
_GRAPH_SOURCES = ["graph/graph_gen.c", "graph/graph_io.c"]
#: program -> its sources under workloads/ (common/wl.c is linked into every one)
SOURCES: dict[str, list[str]] = {
    **{k: [f"graph/{k}.c", *_GRAPH_SOURCES] for k in ("graphgen", "bfs", "bc", "cc")},
    **{p: [f"{p}/{p}.c"] for p in ("stream", "ptrchase", "gups", "kmeans")},
}
#: the suite of the swap-tier comparisons, in their table order
SUITE = ["bfs_kron", "bc_kron", "cc_kron", "bfs_urand", "bc_urand", "cc_urand", "stream", "gups",
         "ptrchase", "kmeans"]


def program_of(name: str) -> str:
    """The program a suite name runs: bfs_kron -> bfs, kmeans_padded -> kmeans."""
    return name.partition("_")[0]


def graph_kind(name: str) -> str | None:
    """The graph kind a suite name loads (bfs_kron -> kron), None when it names none."""
    kind = name.partition("_")[2]
    return kind if kind in GRAPH_KINDS else None


def _host(trials: float = 1.0, factor: float = 1.0, gups_log2: int | None = None,
          gups_updates: int | None = None) -> dict[str, list[str]]:
    """The host swap-tier suite (bench/compare_swap.py). trials scales the graph kernels'
    repetitions (at 1.0 BFS 256 sources, BC 12, CC 128: about 4 s each unlimited at scale 20
    on the 2-core VM, 15-40 s under a 70 % limit; at least 1); factor scales STREAM, GUPS and
    K-means (1.0 = about 100 MiB each). gups_log2 overrides GUPS's table size (2^N words,
    4 x 2^N updates), which otherwise follows factor: GUPS's random updates fault on about every
    other access under a 50 % limit, so it needs a much smaller table than the others to finish
    in the same time. gups_updates (GUPS -u) caps the updates instead, so that a table large
    enough for the limit to leave the program room still finishes."""
    n = lambda base: str(max(1, round(base * trials)))  # noqa: E731
    graph = {f"{k}_{kind}": ["-f", "{graph}", TRIAL_OPTION[k], n(base)]
             for kind in GRAPH_KINDS for k, base in (("bfs", 256), ("bc", 12), ("cc", 128))}
    log2 = gups_log2 if gups_log2 is not None else max(16, 24 + round(math.log2(max(factor,
                                                                                  1e-9))))
    return {**graph,
            "stream": ["-s", str(int(4_000_000 * factor)), "-n", "10"],
            "gups": ["-l", str(log2)] + (["-u", str(gups_updates)] if gups_updates else []),
            "ptrchase": ["-s", f"{max(1, int(100 * factor))}M", "-n",
                         str(max(1000, int(2_000_000 * trials)))],
            "kmeans": ["-n", str(int(700_000 * factor)), "-i", "5"]}


def _fixed(table: dict[str, list[str]]) -> Callable[[], dict[str, list[str]]]:
    return lambda: {name: list(args) for name, args in table.items()}


@dataclass(frozen=True)
class Size:
    description: str
    arguments: Callable[..., dict[str, list[str]]]   # keyword parameters -> name -> template


SIZES: dict[str, Size] = {
    "defaults": Size("every workload at its built-in defaults (bench/workloads_defaults.py)",
                     _fixed({"bfs": [], "bc": [], "cc": [], "stream": [], "ptrchase": [],
                             "gups": [], "kmeans": [], "kmeans_padded": ["--padded"]})),
    "host": Size("the swap-tier suite on the host (bench/compare_swap.py); parameters trials, "
                 "factor, gups_log2, gups_updates", _host),
    "guest": Size("the host suite sized for the emulated guest (bench/compare_swap_guest.py): "
                  "each a few seconds unlimited on the guest clock, seconds to tens of seconds "
                  "under a 50 % limit; GUPS and the pointer chase fault on about every other "
                  "access there (some 140 us per swap-in under TCG), so they take few steps",
                  _fixed({"bfs_kron": ["-f", "{graph}", "-n", "16"],
                          "bc_kron": ["-f", "{graph}", "-i", "2"],
                          "cc_kron": ["-f", "{graph}", "-n", "8"],
                          "bfs_urand": ["-f", "{graph}", "-n", "12"],
                          "bc_urand": ["-f", "{graph}", "-i", "1"],
                          "cc_urand": ["-f", "{graph}", "-n", "4"],
                          "stream": ["-s", "1200000", "-n", "3", "-t", "1"],
                          "gups": ["-l", "22", "-u", "100000", "-t", "1"],
                          "ptrchase": ["-s", "32M", "-n", "30000", "-t", "1"],
                          "kmeans": ["-n", "200000", "-i", "3", "-t", "1"]})),
    "record": Size("recording's cost (bench/record_overhead.py): graph kernels on one graph",
                   _fixed({"bfs": ["-f", "{graph}", "-n", "16"],
                           "bc": ["-f", "{graph}", "-i", "4"],
                           "cc": ["-f", "{graph}", "-n", "8"],
                           "stream": ["-s", "20000000"], "gups": [], "kmeans": []})),
    "sim": Size("simulate vs the real swap tier (bench/sim_vs_measured.py): a few seconds each "
                "unlimited; GUPS's random updates are slow under swap at any local size",
                _fixed({"bfs": ["-u", "19", "-n", "4"], "kmeans": ["-n", "400000", "-i", "8"],
                        "stream": ["-s", "6000000", "-n", "6"], "gups": ["-l", "22"]})),
    "trace": Size("sizes that trace in seconds on 2 cores, with trial counts long enough for the "
                  "fault sampler (passes of ~250 ms) to pass several times over the kernels' "
                  "objects (bench/exact_accuracy.py)",
                  _fixed({"bfs": ["-g", "17", "-n", "4", "-t", "2"],
                          "bc": ["-g", "15", "-i", "16", "-n", "4", "-t", "2"],
                          "cc": ["-g", "17", "-n", "2", "-t", "2"],
                          "stream": ["-s", "2000000", "-n", "16", "-t", "2"],
                          "ptrchase": ["-s", "64M", "-n", "1000000", "-t", "2"],
                          "gups": ["-l", "22", "-t", "2"],
                          "kmeans": ["-n", "200000", "-i", "15", "-t", "2"]})),
    "camat-trace": Size("C-AMAT's traced runs (bench/camat_xmem.py), one thread",
                        _fixed({"ptrchase": ["-s", "4M", "-n", "300000", "-t", "1"],
                                "gups": ["-l", "16", "-t", "1"],
                                "stream": ["-s", "100000", "-n", "3", "-t", "1"],
                                "kmeans": ["-n", "8000", "-d", "16", "-i", "2", "-t", "1"]})),
    "camat-swap": Size("C-AMAT's swap-tier runs (bench/camat_xmem.py), one thread",
                       _fixed({"ptrchase": ["-s", "64M", "-n", "2000000", "-t", "1"],
                               "gups": ["-l", "22", "-t", "1"],
                               "stream": ["-s", "2000000", "-n", "4", "-t", "1"],
                               "kmeans": ["-n", "200000", "-d", "34", "-i", "4", "-t", "1"]})),
    "sweep": Size("per-object sweeps (bench/sweep_perobject.py, sweep_sensitivity_plan.py); BFS "
                  "loads a graph written once by graphgen, so generation's temporaries are not "
                  "in the recording",
                  _fixed({"stream": ["-s", "3000000", "-n", "4", "-t", "{t}"],
                          "kmeans": ["-n", "250000", "-d", "34", "-i", "6", "-t", "{t}"],
                          "bfs": ["-f", "{graph}", "-n", "4", "-t", "{t}"]})),
    "sweep-suite": Size("`sweep --suite` (bench/sweep_suite.py): runs that stay short under swap",
                        _fixed({"stream": ["-s", "1500000", "-n", "4", "-t", "{t}"],
                                "ptrchase": ["-s", "48M", "-n", "300000", "-t", "{t}"],
                                "kmeans": ["-n", "250000", "-d", "34", "-i", "6", "-t", "{t}"],
                                "gups": ["-l", "22", "-t", "{t}"],
                                "bfs": ["-f", "{graph}", "-n", "4", "-t", "{t}"],
                                "cc": ["-f", "{graph}", "-n", "2", "-t", "{t}"]})),
    "test": Size("the smallest useful runs, well under a second each (tests)",
                 _fixed({"bfs_kron": ["-f", "{graph}", "-n", "2", "-t", "{t}"],
                         "bc_kron": ["-f", "{graph}", "-i", "2", "-t", "{t}"],
                         "cc_urand": ["-f", "{graph}", "-n", "2", "-t", "{t}"],
                         "stream": ["-s", "100000", "-n", "2", "-t", "{t}"],
                         "ptrchase": ["-s", "1M", "-n", "10000", "-t", "{t}"],
                         "gups": ["-l", "12", "-t", "{t}"],
                         "kmeans": ["-n", "2000", "-i", "2", "-t", "{t}"]})),
}


def arguments(size: str, **params) -> dict[str, list[str]]:
    """Argument templates of every workload of `size` ({graph} and {t} unfilled)."""
    if size not in SIZES:
        raise UsageError(f"unknown workload size '{size}' (known: {', '.join(SIZES)})")
    return SIZES[size].arguments(**params)


def graph_path(graphs: Path, kind: str, scale: int) -> Path:
    """Where make_graphs() writes the graph of `kind` at `scale` in `graphs`."""
    return graphs / f"{kind}{scale}.csr"


def fill(template: Sequence[str], graph: Path | str | None = None,
         threads: int | str | None = None) -> list[str]:
    """A template with {graph} and {t} replaced where given (left as they are otherwise)."""
    out = []
    for arg in template:
        if graph is not None:
            arg = arg.replace("{graph}", str(graph))
        if threads is not None:
            arg = arg.replace("{t}", str(threads))
        out.append(arg)
    return out


def suite(size: str, names: Sequence[str] | None = None, *, graphs: Path | None = None,
          scale: int | None = None, graph: Path | None = None, threads: int | None = None,
          bin_dir: Path | None = None, **params) -> dict[str, list[str]]:
    """Commands (program path first) of the workloads `names` (default: all) of `size`.

    {graph} becomes `graph` when given, else graphs/KINDSCALE.csr of the name's graph kind;
    {t} becomes `threads` when given. Programs come from bin_dir (default: the installed
    _native/bin). UsageError names an unknown size or workload."""
    table = arguments(size, **params)
    unknown = [n for n in names or () if n not in table]
    if unknown:
        raise UsageError(f"unknown workload '{unknown[0]}' at size {size} "
                         f"(known: {', '.join(table)})")
    out: dict[str, list[str]] = {}
    for name in names or list(table):
        kind = graph_kind(name)
        where = graph if graph is not None else (
            graph_path(graphs, kind, scale) if kind and graphs is not None and scale else None)
        exe = bin_dir / program_of(name) if bin_dir is not None else workload_binary(
            program_of(name))
        out[name] = [str(exe), *fill(table[name], where, threads)]
    return out


def make_graphs(scale: int, graphs: Path, kinds: Sequence[str] = tuple(GRAPH_KINDS),
                bin_dir: Path | None = None, threads: int | None = None) -> None:
    """Write graphs/KINDSCALE.csr of every kind that is not there yet (graphgen, untimed)."""
    graphs.mkdir(parents=True, exist_ok=True)
    for kind in kinds:
        path = graph_path(graphs, kind, scale)
        if path.exists():
            continue
        exe = bin_dir / "graphgen" if bin_dir is not None else workload_binary("graphgen")
        cmd = [str(exe), GRAPH_KINDS[kind], str(scale), "-o", str(path)]
        if threads is not None:
            cmd[3:3] = ["-t", str(threads)]
        subprocess.run(cmd, check=True, capture_output=True)
