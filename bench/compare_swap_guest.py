"""The swap-tier comparison in the QEMU guest: modern kernel baselines vs objtier (emulated).

    .venv/bin/python bench/compare_swap_guest.py [--local 50%,70%] [--repeat 3]
        [--workloads bfs_kron,bc_kron,cc_kron,bfs_urand,bc_urand,cc_urand,stream,gups,ptrchase,
                     kmeans] [--scale 18]
        [--programs cg,smallgraph,sqlite] [--arms kernel,damon-reclaim,psi-reclaim,damos-pageout,objtier]
        [--stat-flush 10] [-o bench-out/compare-guest] [--append-docs] [--table-only]
        [--results-dir bench/results | --no-results]

Boots the guest (objtier.testbed; Debian 6.12 kernel: cgroup v2, MGLRU, DAMON, zram) in a run
directory of its own (a guest of `objtier testbed up` is left alone; QEMU dies with this
process), and for each workload runs
objtier.experiments.guest_compare: footprint in the guest, recordings on the host (same binary,
same arguments), a plan per local size, then `--repeat` interleaved rounds of every arm under
one cgroup v2 memory.max with zram swap. Arms: kernel (MGLRU), damon-reclaim (DAMON_RECLAIM's
scheme on a paddr kdamond of the DAMON sysfs interface: min_age 1 s, always-on watermarks,
quotas 100 ms / 1 GiB per s; the guest kernel's damon_reclaim module runs without its scheme),
psi-reclaim (pressure-driven memory.reclaim, TMO/senpai approach, 1 s intervals, 0.1 % stall
target), damos-pageout (a DAMOS pageout scheme on the program's address space), objtier (plan +
pressure guard); objtier-noguard on request. Every arm has the stat-flush reader (memory.stat every
--stat-flush ms, from swaprun, outside the program).

--programs adds the third-party programs of bench/compare_suite.py (PROGRAMS, set up by
bench/third_party/setup.sh; the guest runs the host's files) at their drivers' own sizes; given
without --workloads, only they run. GUEST_CANNOT lists the programs the guest cannot run.
A results file (objtier.bench_results) goes to bench/results/ unless --no-results.

Times are the guest's clock under TCG: EMULATED (the CPU is emulated for every arm alike; the
guest clock also runs faster than the host's, equally for every arm), so only ratios within one
guest mean anything. The table: per workload and local size, each arm's survival (k of n), median
time, median swap-ins (the cgroup's workingset_refault_anon) and the ratio of the kernel arm's
median time to the arm's ("speedup"; none when any run of either arm died). Needs root and
qemu-system-x86; -o must lie in the project tree (the guest writes there).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import shutil
import signal
import sys
from pathlib import Path

from objtier import bench_results, workloads
from objtier.errors import ObjtierError
from objtier.experiments.guest_compare import (GuestCompareSettings, rows_from_csv,
                                               run_guest_compare, summarize)
from objtier.experiments.guest_swap import ARMS, GuestSwapSettings

import compare_suite  # bench/compare_suite.py, next to this script: the third-party programs

REPO = Path(__file__).resolve().parent.parent

#: third-party programs the guest cannot run, and why (checked 2026-12-02)
GUEST_CANNOT = {
    "vector": "hnswlib is built for the host's CPU (AVX-512); the guest's emulated CPU lacks it "
              "(the driver dies of SIGILL)",
}
GOAL = "guest with MGLRU: no program slower than the kernel (every median >= 0.97x)"

BIN = REPO / "src" / "objtier" / "_native" / "bin"
HEADING = "## Swap tier in the guest: modern kernel baselines (emulated)"


def fmt_time(v) -> str:
    return f"{v:.1f}" if v is not None else "–"


def table(results: dict[str, dict]) -> str:
    """One row per workload, local size and arm."""
    lines = ["| workload | local | arm | survived | time (s, emulated) | swap-ins | swap-outs | "
             "speedup vs kernel |", "|---|---|---|---|---|---|---|---|"]
    for name, summary in results.items():
        fp = summary["footprint_bytes"]
        for local, per in summary["arms"].items():
            pct = f"{100 * int(local) / fp:.0f}% of {fp >> 20} MiB"
            for arm, s in per.items():
                speed = f"{s['speedup_vs_kernel']:.2f}×" if s["speedup_vs_kernel"] else "–"
                swapins = f"{s['swapins']:.0f}" if s["swapins"] is not None else "–"
                swapouts = f"{s['pswpout']:.0f}" if s.get("pswpout") is not None else "–"
                lines.append(f"| {name} | {pct} | {arm} | {s['survived']}/{s['runs']}"
                             f"{' (' + str(s['oom_kills']) + ' OOM)' if s['oom_kills'] else ''} | "
                             f"{fmt_time(s['wall_s'])} | {swapins} | {swapouts} | {speed} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--local", default="50%")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workloads", default=None,
                   help=f"of {','.join(workloads.SUITE)} (default all, none with --programs)")
    p.add_argument("--programs", default="",
                   help="third-party programs of bench/compare_suite.py, comma-separated")
    p.add_argument("--scale", type=int, default=18)
    p.add_argument("--arms", default="kernel,damon-reclaim,psi-reclaim,damos-pageout,objtier")
    p.add_argument("--stat-flush", type=float, default=10.0)
    p.add_argument("-o", "--output", type=Path, default=REPO / "bench-out" / "compare-guest")
    p.add_argument("--append-docs", action="store_true")
    p.add_argument("--table-only", action="store_true",
                   help="run nothing: the table (and with --append-docs the rows) of -o")
    bench_results.add_arguments(p)
    args = p.parse_args()
    out = args.output.resolve()
    arms = tuple(a for a in args.arms.split(",") if a)
    bad = [a for a in arms if a not in ARMS]
    programs = [n for n in args.programs.split(",") if n]
    default = "" if programs else ",".join(workloads.SUITE)
    chosen = [w for w in (default if args.workloads is None else args.workloads).split(",") if w]
    known = workloads.suite("guest", graphs=out / "graphs", scale=args.scale, bin_dir=BIN)
    unknown = [w for w in chosen if w not in known]
    unknown += [n for n in programs if n not in compare_suite.PROGRAMS]
    cannot = [f"{n}: {GUEST_CANNOT[n]}" for n in programs if n in GUEST_CANNOT]
    if cannot:
        print("compare_swap_guest: " + "; ".join(cannot), file=sys.stderr)
        return 2
    for name in programs:
        if name in compare_suite.PROGRAMS:
            known[name] = compare_suite.program_command(name)
    chosen += programs
    if bad or unknown or args.repeat < 1:
        print(f"compare_swap_guest: unknown arm/workload or bad --repeat: {bad + unknown}",
              file=sys.stderr)
        return 2
    locals_ = tuple(x for x in args.local.split(",") if x)
    tag = "-".join(x.rstrip("%") for x in locals_)
    results: dict[str, dict] = {}
    if args.table_only:
        for name in chosen:
            f = out / f"{name}-{tag}" / "summary.json"
            if f.exists():   # summarized again from runs.csv: the current summary's fields
                results[name] = json.loads(f.read_text())
                results[name]["arms"] = summarize(rows_from_csv(f.parent / "runs.csv"))
        print(table(results))
        print(combined_text(combined(results)))
        if results:
            bench_results.save(args, lambda: results_record(
                results, bench_results.script_command(
                    [a for a in sys.argv[1:] if a != "--table-only"], "bench/compare_swap_guest.py"),
                None), tag=tag_of(results))
        if args.append_docs and results:
            date = next(iter(results.values())).get("date", "")
            append_docs(results, date, "python bench/compare_swap_guest.py " + " ".join(
                a for a in sys.argv[1:] if a not in ("--table-only", "--append-docs")),
                os.getloadavg()[0])
        return 0
    if os.geteuid() != 0:
        print("compare_swap_guest: needs root (guest cgroups and swap are fine, but the host "
              "recordings use the runtime's samplers)", file=sys.stderr)
        return 4
    from objtier.testbed import Testbed, TestbedPaths

    workloads.make_graphs(args.scale, out / "graphs", bin_dir=BIN, threads=1,
                          kinds=[k for k in workloads.GRAPH_KINDS
                                 if any(workloads.graph_kind(w) == k for w in chosen)])
    settings = GuestCompareSettings(locals=locals_, repeat=args.repeat, arms=arms,
                                    swap=GuestSwapSettings(flush_ms=args.stat_flush))
    base = TestbedPaths.default()
    tb = Testbed(TestbedPaths(base.root, run_name=f"run-bench-{os.getpid()}"),
                 log=lambda m: print(m, flush=True))
    say = lambda m: print(f"  {m}", flush=True)  # noqa: E731
    started = _dt.datetime.now(_dt.timezone.utc)

    def terminated(signum, frame):   # SIGTERM: the same clean-up as Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)
    tb.start()
    try:
        for name in chosen:
            print(f"== {name}: {' '.join(known[name])}", flush=True)
            try:
                results[name] = run_guest_compare(
                    tb, known[name], out / f"{name}-{tag}", settings, say=say,
                    on_row=lambda r: say(f"{r.arm}: {r.wall_s:.1f} s, status {r.status}, "
                                         f"swap-ins {r.refault_anon}, oom {r.oom_kills}"))
            except ObjtierError as error:
                print(f"compare_swap_guest: {name}: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted; the guest is stopped", file=sys.stderr)
        return 130
    finally:
        tb.stop()
        out.mkdir(parents=True, exist_ok=True)
        (out / f"console-{os.getpid()}.log").write_text(tb.console_tail(2000) + "\n")
        shutil.rmtree(tb.paths.run, ignore_errors=True)
    text = table(results)
    print(text)
    if results:
        loads = os.getloadavg()[0]
        bench_results.save(args, lambda: results_record(
            results, bench_results.script_command(sys.argv[1:], "bench/compare_swap_guest.py"),
            f"load {loads:.1f} at the end"), tag=tag_of(results))
    if args.append_docs and results:
        cmd = " ".join(["python", "bench/compare_swap_guest.py", "--local", args.local,
                        "--repeat", str(args.repeat), "--workloads", ",".join(chosen),
                        "--scale", str(args.scale), "--arms", ",".join(arms)])
        append_docs(results, f"{started:%Y-%m-%d}", cmd, os.getloadavg()[0])
    return 0


def tag_of(results: dict[str, dict]) -> str:
    """The results file's tag: the names run, shortened."""
    return "-".join(results)[:40]


def results_record(results: dict[str, dict], command: str, load: str | None) -> dict:
    """The results file of one guest run (objtier.bench_results): per program and local size,
    each arm's median time (guest clock, emulated) and swap-ins, the speedups vs the kernel arm,
    and the goal of no program slower than the kernel."""
    medians: dict[str, dict] = {}
    speedups: dict[str, float | None] = {}
    alive = cells = fewer = 0
    for name, summary in results.items():
        fp = summary["footprint_bytes"]
        for local, per in summary["arms"].items():
            pct = f"{100 * int(local) / fp:.0f}%"
            key = f"{name} {pct}"
            medians[key] = {arm: {"wall_s": s["wall_s"], "swapins": s["swapins"],
                                  "survived": f"{s['survived']}/{s['runs']}"}
                            for arm, s in per.items()}
            kernel, mine = per.get("kernel"), per.get("objtier")
            if not kernel or not mine:
                continue
            cells += 1
            speedups[key] = mine["speedup_vs_kernel"]
            alive += mine["survived"] == mine["runs"] and kernel["survived"] == kernel["runs"]
            fewer += (mine["swapins"] or 0) < (kernel["swapins"] or 0)
    judged = [v for v in speedups.values() if v]
    figure = (", ".join(f"{k} {fmt_ratio(v).replace('x', '×')}" for k, v in speedups.items())
              + " (objtier vs MGLRU, emulated)")
    finding = (f"both arms alive in {alive} of {cells} cells; objtier swapped in less in "
               f"{fewer} of {cells}")
    goal = GOAL + (": met" if judged and len(judged) == cells and min(judged) >= 0.97
                   else ": not met" if judged else ": not judged")
    first = next(iter(results.values()))
    return bench_results.make(
        "compare_swap_guest", "placement",
        title=f"QEMU guest ({first.get('guest_kernel', 'Linux')}, cgroup v2, MGLRU), swap "
              f"tier: kernel vs objtier's plan ({', '.join(results)})",
        kind="emulated (TCG guest clock), exact counts", command=command, figure=figure,
        finding=finding, goal=goal, medians=medians, ratios={"speedup": speedups},
        raw={name: {"command": summary.get("command"), "footprint_bytes": summary.get(
            "footprint_bytes"), "arms": summary["arms"]} for name, summary in results.items()},
        date=first.get("date"), load_=load)


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def combined(results: dict[str, dict]) -> dict[str, dict[str, dict]]:
    """Per local fraction (percent of each footprint, rounded) and arm, over all workloads:
    runs, survivors, OOM kills, and the geometric mean, min and max over workloads of the time
    speedup vs the kernel arm (only where every run of both survived), and the geometric mean
    of the arm's median swap-ins and swap-outs relative to the kernel arm's."""
    out: dict[str, dict[str, dict]] = {}
    for summary in results.values():
        fp = summary["footprint_bytes"]
        for local, per in summary["arms"].items():
            frac = f"{round(100 * int(local) / fp)}%"
            base = per.get("kernel", {})
            for arm, s in per.items():
                c = out.setdefault(frac, {}).setdefault(arm, {
                    "workloads": 0, "runs": 0, "survived": 0, "oom_kills": 0, "speedups": [],
                    "swapin_ratios": [], "swapout_ratios": []})
                c["workloads"] += 1
                c["runs"] += s["runs"]
                c["survived"] += s["survived"]
                c["oom_kills"] += s["oom_kills"]
                if s["speedup_vs_kernel"]:
                    c["speedups"].append(s["speedup_vs_kernel"])
                for key, ratios in (("swapins", "swapin_ratios"), ("pswpout", "swapout_ratios")):
                    if s.get(key) is not None and base.get(key):
                        c[ratios].append(s[key] / base[key])
    for per in out.values():
        for c in per.values():
            sp = c["speedups"]
            c["speedup_geomean"] = _geomean(sp)
            c["speedup_range"] = [min(sp), max(sp)] if sp else None
            c["swapins_vs_kernel"] = _geomean(c.pop("swapin_ratios"))
            c["swapouts_vs_kernel"] = _geomean(c.pop("swapout_ratios"))
    return out


def combined_text(comb: dict[str, dict[str, dict]]) -> str:
    lines = []
    for frac, per in comb.items():
        lines.append(f"at {frac} local:")
        for arm, c in per.items():
            sp, rng, n = c["speedup_geomean"], c["speedup_range"], len(c["speedups"])
            speed = f"{sp:.2f}x ({rng[0]:.2f}-{rng[1]:.2f}) over {n}" if sp else "-"
            lines.append(
                f"  {arm}: alive {c['survived']}/{c['runs']} in {c['workloads']} workloads, "
                f"{c['oom_kills']} OOM kills; speedup vs kernel geomean {speed}; swap-ins vs "
                f"kernel {fmt_ratio(c['swapins_vs_kernel'])}, swap-outs "
                f"{fmt_ratio(c['swapouts_vs_kernel'])}")
    return "\n".join(lines)


def fmt_ratio(value) -> str:
    return f"{value:.2f}x" if value else "-"


def spread(arm: dict) -> str:
    """" (lo–hi)" of an arm's surviving runs, when summary.json has it."""
    lo_hi = arm.get("wall_range_s")
    return f" ({lo_hi[0]:.1f}–{lo_hi[1]:.1f})" if lo_hi else ""


def kilo(value) -> str:
    """A median count in thousands (one decimal below 10 k), or – when no run survived."""
    if value is None:
        return "–"
    return f"{value / 1000:.1f} k" if value < 10_000 else f"{value / 1000:.0f} k"


def doc_rows(results: dict[str, dict], date: str, cmd: str, load: float) -> list[str]:
    """One docs/benchmarks.md row per workload and local size (the table's columns)."""
    rows = []
    for name, summary in results.items():
        fp = summary["footprint_bytes"]
        for local, per in summary["arms"].items():
            arms = list(per)
            pct = f"{100 * int(local) / fp:.0f} %"
            times = " / ".join(fmt_time(per[a]["wall_s"]) + spread(per[a]) for a in arms)
            swapins = " / ".join(kilo(per[a]["swapins"]) for a in arms)
            swapouts = " / ".join(kilo(per[a].get("pswpout")) for a in arms)
            alive = " / ".join(f"{per[a]['survived']}/{per[a]['runs']}"
                               + (f" ({per[a]['oom_kills']} OOM)" if per[a]["oom_kills"] else "")
                               for a in arms)
            ratios = ", ".join(f"{a} {per[a]['speedup_vs_kernel']:.2f}×" for a in arms
                               if a != "kernel" and per[a]["speedup_vs_kernel"])
            rows.append(
                f"| swap tier in the guest, {name} at {pct} local ({fp >> 20} MiB): "
                f"{' / '.join(arms)} | emulated | QEMU guest (TCG; {summary['guest_kernel']}, "
                f"MGLRU, cgroup v2, zram) on the test VM, shared (load {load:.0f}) | {date} | "
                f"time {times} s (guest clock); swap-ins {swapins}; swap-outs {swapouts} | "
                f"alive {alive}; "
                f"time ratio vs kernel: {ratios or '–'} | `{cmd}` |")
    return rows


def append_docs(results: dict[str, dict], date: str, cmd: str, load: float) -> None:
    """Add the rows under HEADING at the end of docs/benchmarks.md (re-read right before)."""
    docs = REPO / "docs" / "benchmarks.md"
    current = docs.read_text().rstrip("\n")
    if HEADING not in current:
        current += ("\n\n" + HEADING + "\n\n| measurement | kind | machine | date | median | "
                    "ratio / goal | command |\n|---|---|---|---|---|---|---|")
    docs.write_text(current + "\n" + "\n".join(doc_rows(results, date, cmd, load)) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
