"""numab2 against the real kernel: the kernel's tiering counters in the QEMU two-node guest vs
numab2 simulated on the trace of the same run.

    python bench/sim_kernel_validation.py [--runs 32:96:6:fault,64:64:6:fault,32:96:6:trace]
        [--rate 20000] [--left-free-mib 100] [--workdir DIR] [--json OUT] [--param KEY=VALUE]
    python bench/sim_kernel_validation.py --resimulate OUT.json   # host only, kept recordings

For each run (HOT_MIB:COLD_MIB:SECS:SAMPLER of the hot/cold program,
objtier.experiments.numa_hotcold), in the guest with kernel.numa_balancing=2 and demotion_enabled=1
and node 0 shrunk to about --left-free-mib free (2 MiB hugetlb pages held on it, as
tests/testbed/test_guest_record.py does): `objtier record --rate R` records the program with
the counters timeline on (SAMPLER fault, or trace: the program built with `objtier cc`, an
exact address trace of its instrumented accesses). The kernel's counts are the moves of
vmstat.pgpromote_success, pgpromote_candidate, pgdemote_kswapd + pgdemote_direct,
numa_hint_faults and numa_pte_updates over the timeline; the kernel's sched_skip_vma_numa
events are counted by reason. On the host, `objtier.sim.simulate` replays the trace with numab2
and first-touch: fast tier = node 0's MemFree just before the run, 4 KiB pages, the kernel's
defaults for the scanner and thresholds, min_free_kbytes = node 0's share of the guest's (sum
of its zones' `min`), the remote-numa preset (costs do not enter the counts). Prints the table
kernel / simulated / ratio. The guest's settings (tiering knobs, hugetlb pool, tracing) are
restored and QEMU is stopped at the end, also on error. Results: docs/benchmarks.md,
"Simulator vs the real kernel".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from objtier.experiments.compare_numa import GuestState, node_free_bytes
from objtier.experiments.numa_hotcold import build_hotcold, parse_where
from objtier.sim import simulate
from objtier.sim.cost import load_preset
from objtier.testbed import Testbed, TestbedPaths
from objtier.testbed.paths import repo_root
from objtier.trace import open_trace

MIB = 1 << 20
TRACING = "/sys/kernel/debug/tracing"
KERNEL = {  # column -> vmstat counters summed
    "pgpromote_success": ("pgpromote_success",),
    "pgpromote_candidate": ("pgpromote_candidate",),
    "pgdemote": ("pgdemote_kswapd", "pgdemote_direct"),
    "numa_hint_faults": ("numa_hint_faults",),
    "numa_pte_updates": ("numa_pte_updates",),
}
SIMULATED = {
    "pgpromote_success": ("pgpromote_success",),
    "pgpromote_candidate": ("pgpromote_candidate",),
    "pgdemote": ("pgdemote_kswapd",),
    "numa_hint_faults": ("numa_hint_faults",),
    "numa_pte_updates": ("numa_pte_updates",),
}


def counter_moves(counters: dict, name: str) -> int:
    values = [v for n, v in zip(counters["name"], counters["value"]) if n == name]
    return int(values[-1] - values[0]) if values else 0


def kernel_counts(trace) -> tuple[dict, dict]:
    """The kernel's counter moves over the whole timeline, and up to the trace's last sample
    (+ one counter period): an address trace cut by --trace-limit covers only the start."""
    counters = trace.counters.to_pydict()
    sample_t = trace.samples.column("time_ns").to_numpy()
    whole = {col: sum(counter_moves(counters, f"vmstat.{n}") for n in names)
             for col, names in KERNEL.items()}
    last = int(sample_t.max()) if len(sample_t) else 0
    cut = {"name": [], "value": []}
    for n, v, t in zip(counters["name"], counters["value"], counters["time_ns"]):
        if t <= last + 100_000_000:
            cut["name"].append(n)
            cut["value"].append(v)
    window = {col: sum(counter_moves(cut, f"vmstat.{n}") for n in names)
              for col, names in KERNEL.items()}
    return whole, window


def node0_min_free_kbytes(tb) -> int:
    """Sum of node 0's zones' `min` watermark (pages) in KiB."""
    out = tb.run_checked("cat /proc/zoneinfo")
    node, total = None, 0
    for line in out.splitlines():
        words = line.split()
        if words[:1] == ["Node"] and len(words) > 1:
            node = int(words[1].rstrip(","))
        elif node == 0 and words[:1] == ["min"] and len(words) == 2:
            total += int(words[1])
    return total * 4


def record_run(tb, state: GuestState, exe: Path, run_dir: Path, hot: int, cold: int,
               secs: float, rate: int, sampler: str, trace_limit: int) -> dict:
    rec = run_dir / "rec.otr"
    tb.run_checked("sync; echo 3 > /proc/sys/vm/drop_caches")
    free = node_free_bytes(tb, [0])
    objtier = repo_root() / ".venv" / "bin" / "objtier"
    state.knobs("2", "1")
    # why the kernel's scanner passed VMAs by (sched_skip_vma_numa), best effort
    tb.run(f"cd {TRACING} && echo 0 > tracing_on && echo > trace && "
           "echo 1 > events/sched/sched_skip_vma_numa/enable && echo 1 > tracing_on")
    t0 = time.monotonic()
    extra = ["--trace-limit", str(trace_limit)] if sampler == "trace" else []
    rc, out, err = tb.run([str(objtier), "record", "-o", str(rec), "--force", "--sampler",
                           sampler, "--rate", str(rate), "--counters-interval", "100", *extra,
                           "--", str(exe), str(hot), str(cold), str(secs)], timeout=900)
    wall = time.monotonic() - t0
    state.knobs("0", "0")
    src, skips, _ = tb.run(f"cd {TRACING} && echo 0 > tracing_on && "
                           "echo 0 > events/sched/sched_skip_vma_numa/enable && "
                           "grep -o 'reason=[A-Za-z_]*' trace | sort | uniq -c; echo > trace")
    skipped = {w[1].split("=", 1)[1]: int(w[0]) for w in
               (line.split() for line in skips.splitlines()) if len(w) == 2} if src == 0 else {}
    if rc != 0:
        raise SystemExit(f"record failed ({rc}): {err[-2000:]}")
    trace = open_trace(rec)
    counters = trace.counters.to_pydict()
    sample_t = trace.samples.column("time_ns").to_numpy()
    kernel, kernel_window = kernel_counts(trace)
    times = [t for n, t in zip(counters["name"], counters["time_ns"])
             if n == "vmstat.numa_hint_faults"]
    fom = [w for w in out.split() if w.startswith("hot_passes=")]
    return {"hot_mib": hot, "cold_mib": cold, "secs": secs, "sampler": sampler,
            "node0_free": free, "trace": str(rec), "kernel": kernel,
            "kernel_to_last_sample": kernel_window, "samples": int(len(sample_t)),
            "sample_span_s": float(sample_t.max() - sample_t.min()) / 1e9 if len(sample_t) else 0,
            "where": parse_where(out), "vma_skips": skipped,
            "hot_passes_per_s": float(fom[0].split("=")[1]) if fom else None,
            "guest_wall_s": wall,
            "timeline_s": (times[-1] - times[0]) / 1e9 if len(times) > 1 else None}


def simulate_run(run: dict, min_free_kb: int, extra: dict[str, str]) -> dict:
    params = {"page": "4K", "numab2.min_free_kbytes": str(min_free_kb), **extra}
    sim = simulate(open_trace(run["trace"]), ["numab2", "first-touch"], run["node0_free"],
                   load_preset("remote-numa"), params)
    by = {r.policy: r.counters for r in sim.results}
    out = {col: sum(int(by["numab2"].get(n, 0)) for n in names)
           for col, names in SIMULATED.items()}
    ft = by["first-touch"]
    out["first_touch_slow_share"] = (ft["slow_loads"] + ft["slow_stores"]) / max(
        1, ft["slow_loads"] + ft["slow_stores"] + ft["fast_loads"] + ft["fast_stores"])
    out["footprint_mib"] = sim.footprint_bytes / MIB
    return out


def ratio(s: float, k: float) -> str:
    return f"{s / k:.3g}" if k else ("—" if not s else "∞")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="32:96:6:fault,64:64:6:fault,32:96:6:trace",
                    help="HOT_MIB:COLD_MIB:SECS:SAMPLER,... (SAMPLER fault, or trace: the "
                         "program built with `objtier cc`, a full address trace)")
    ap.add_argument("--trace-limit", type=int, default=10_000_000,
                    help="--sampler trace: SAMPLE records of the address trace")
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--left-free-mib", type=int, default=100)
    ap.add_argument("--param", action="append", default=[],
                    help="extra simulator parameter KEY=VALUE")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--resimulate", type=Path, default=None,
                    help="skip the guest: simulate again the recordings listed in this --json "
                         "output (kept with --workdir)")
    args = ap.parse_args(argv)
    runs = []
    for spec in args.runs.split(","):
        hot, cold, secs, sampler = spec.split(":")
        runs.append((int(hot), int(cold), float(secs), sampler))
    extra = dict(p.split("=", 1) for p in args.param)

    if args.resimulate:
        results = json.loads(args.resimulate.read_text())
        for run in results:
            run["kernel"], run["kernel_to_last_sample"] = kernel_counts(open_trace(run["trace"]))
            run["sim"] = simulate_run(run, run["min_free_kbytes"], extra)
        return report(results, args.json)

    base = TestbedPaths.default()
    paths = TestbedPaths(base.root, run_name=f"run-simval-{os.getpid()}")
    tb = Testbed(paths)
    tb.prepare()
    work = args.workdir or paths.run / "simval"
    results = []
    tb.start()
    try:
        work.mkdir(parents=True, exist_ok=True)
        exe = {"fault": build_hotcold(work / "hotcold")}
        if any(r[3] == "trace" for r in runs):
            exe["trace"] = work / "hotcold-traced"
            subprocess.run([str(repo_root() / ".venv" / "bin" / "objtier"), "cc", "-std=gnu11",
                            "-O1", "-o", str(exe["trace"]), str(work / "hotcold.c")],
                           check=True)
        state = GuestState(tb, [0])
        try:
            state.reserve([0], node_free_bytes(tb, [0]) - args.left_free_mib * MIB)
            min_kb = node0_min_free_kbytes(tb)
            for i, (hot, cold, secs, sampler) in enumerate(runs):
                run = record_run(tb, state, exe[sampler], work / f"run{i}", hot, cold, secs,
                                 args.rate, sampler, args.trace_limit)
                print(f"run {i}: {hot}+{cold} MiB, {secs} s, {sampler}, node 0 free "
                      f"{run['node0_free'] / MIB:.1f} MiB, kernel {run['kernel']}, "
                      f"where {run['where']}, VMA skips {run['vma_skips']}", flush=True)
                results.append(run)
        finally:
            state.restore()
    finally:
        tb.stop()
    for run in results:  # host side, after QEMU is gone
        run["min_free_kbytes"] = min_kb
        run["sim"] = simulate_run(run, min_kb, extra)
    shutil.rmtree(paths.run, ignore_errors=True)  # the guest's run state (and --workdir's default)
    return report(results, args.json)


def report(results: list[dict], json_out: Path | None) -> int:
    cols = list(KERNEL)
    print("| run | node 0 free | " + " | ".join(f"{c} kernel / sim / ratio" for c in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for run in results:
        # an address trace cut by --trace-limit: the kernel's counts up to its last sample
        k = run["kernel_to_last_sample"] if run["sampler"] == "trace" else run["kernel"]
        cells = [f"{k[c]} / {run['sim'][c]} / {ratio(run['sim'][c], k[c])}" for c in cols]
        print(f"| {run['hot_mib']}+{run['cold_mib']} MiB, {run['secs']:g} s, {run['sampler']} | "
              f"{run['node0_free'] / MIB:.0f} MiB | " + " | ".join(cells) + " |")
    if json_out:
        json_out.write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
