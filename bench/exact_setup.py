"""Set-up shared by the benchmarks that replay exact traces (swap_ceiling.py): build a workload with `objtier cc` (instrumented, so an exact recording and
the measured runs have the same allocation contexts), its graph inputs, its arguments, and
one exact recording with the trace sampler (every load and store to a tracked object)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO))

# kernel -> its trial option; few trials keep an exact trace at 40-80 M accesses at scale 17
TRIAL_OPTION = {"bfs": "-n", "cc": "-n", "bc": "-i"}
ALTERNATING_ARGS = ["16", "4", "20", "4096"]  # 16 MiB arrays, 4 rounds, 20 sweeps per phase


def build_exact(kernel: str, bin_dir: Path) -> Path:
    """bin_dir/KERNEL_exact, built once: a graph kernel or the alternating program."""
    from objtier.native import include_dir

    exe = bin_dir / f"{kernel}_exact"
    if exe.exists():
        return exe
    bin_dir.mkdir(parents=True, exist_ok=True)
    if kernel == "alternating":
        from tests.alternating_program import SOURCE

        src = bin_dir / "alternating.c"
        src.write_text(SOURCE)
        sources, flags = [src], ["-O1", "-fno-vectorize", "-fno-unroll-loops"]
    else:
        wl = REPO / "workloads"
        sources = [wl / "graph" / f"{kernel}.c", wl / "graph" / "graph_gen.c",
                   wl / "graph" / "graph_io.c", wl / "common" / "wl.c"]
        flags = ["-O2", "-g", "-fno-omit-frame-pointer", "-fopenmp"]
    subprocess.run([PY, "-m", "objtier", "cc", *flags, f"-I{include_dir()}", "-o", str(exe),
                    *map(str, sources), "-lm"], check=True)
    return exe


def graph_args(name: str, scale: int, trials: dict[str, str], graphs: Path
               ) -> tuple[str, list[str]]:
    """(kernel, its arguments) of a workload named KERNEL_KIND (bfs_urand, cc_kron, …) at
    `scale`, one thread; the graph files are made in `graphs` if missing."""
    from compare_swap import make_graphs

    from objtier.native import NATIVE_DIR

    kernel, kind = name.split("_")
    make_graphs(scale, graphs, NATIVE_DIR / "bin")
    return kernel, ["-f", str(graphs / f"{kind}{scale}.csr"), TRIAL_OPTION[kernel],
                    trials[kernel], "-t", "1"]


def record_exact(exe: Path, args: list[str], trace: Path) -> None:
    """One exact recording of exe args into trace (kept: made once)."""
    if trace.exists():
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env.update(OBJTIER_SAMPLER="trace", OBJTIER_TRACE_LIMIT=str(1 << 40),
               OBJTIER_OUTPUT=str(trace))
    subprocess.run([str(exe), *args], env=env, check=True, stdout=subprocess.DEVNULL)
