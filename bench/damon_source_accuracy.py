"""DAMON as a source: how `record --sampler damon` recordings rank objects against an exact
trace, and what the damon sampler costs, in the QEMU guest (the only machine here whose kernel
has DAMON vaddr).

Per program (bfs from workloads/graph at the registry's "trace" size, cg: bench/cg.c, the C
CG solver): build an instrumented copy with `objtier cc -O2 -fopenmp` (bench/exact_accuracy.py's
build) into the guest's run directory, take the exact recordings on the host (OBJTIER_SAMPLER=
trace, the same binary and arguments: loads and LLC-model misses per object, with this
machine's LLC model, on the development VM 300 MiB, so its misses are first touches of lines,
and a 4 MiB one), then boot the guest (objtier.testbed, its own run directory; powered off at
the end, on error and Ctrl-C too) and run REPEATS rounds, interleaved, of: the binary alone
(runtime inert), `objtier record --sampler damon` and, when the guest has swap or can add zram
(the guest kernel's zram module; removed again at the end), `objtier record --sampler pageout`.
Each recording's objects table (accesses: DAMON's estimated page-accesses, or the pageout
windows' estimated touches) is scored against each exact table by
objtier.analysis.accuracy.score_tables (Spearman over objects holding >= 1% of the exact loads
or misses). Coverage: the share of the samples' weight (and of the samples) that falls in a
tracked object. Wall times are of the whole command, timed in the guest by its own clock: the
guest is emulated (TCG), so they are emulated times, comparable only with each other; the
overhead of the damon sampler is its median wall over the plain program's median wall.

--damon NAME=VALUE (repeatable) runs the damon recordings with a module setting of
objtier.record.damon_source changed (MIN_REGIONS, MAX_REGIONS, SAMPLE_US, AGGR_US,
UPDATE_US, CHUNK_BYTES), to measure a setting before changing it.

Usage: python bench/damon_source_accuracy.py [--repeats 3] [--only bfs,cg] [--no-pageout]
    [--damon MIN_REGIONS=100] [--results-dir bench/results] [--no-results]

Also writes a results file (objtier.bench_results): every round's Spearman, coverage and wall.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import sys
from pathlib import Path

import numpy as np

from exact_accuracy import (EXACT_LLC_MODELS, REPO, WORKLOADS, build,  # bench/, beside this
                            exact_object_tables, median_range)

from objtier import bench_results
from objtier.analysis.accuracy import METRICS, sampled_on_exact, score_tables
from objtier.analysis.mapping import sample_objects
from objtier.analysis.objects import object_table
from objtier.errors import EnvironmentProblem, ObjtierError
from objtier.trace import open_trace

BENCH = Path(__file__).resolve().parent
CASES = {  # name: (sources, arguments: the exact trace's and the guest recordings')
    "bfs": WORKLOADS["bfs"],
    "cg": ([str(BENCH / "cg.c")], ["-n", "100000", "-i", "25"]),
}
GUEST_ATTEMPTS = 2
GUEST_TIMEOUT_S = 1800.0
ZRAM_MIB = 512
SETTINGS = ("MIN_REGIONS", "MAX_REGIONS", "SAMPLE_US", "AGGR_US", "UPDATE_US", "CHUNK_BYTES")
OBJTIER_GUEST = str(REPO / ".venv" / "bin" / "python")
FAILURES: list[str] = []
KIND = "real, estimated (Spearman vs exact); emulated (times)"


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def exact_tables(name: str, exe: Path, args: list[str], work: Path) -> dict[str, object]:
    """exact_accuracy.exact_object_tables, with the exact recordings removed after."""
    tables = exact_object_tables(name, exe, args, work, FAILURES)
    for llc in EXACT_LLC_MODELS:
        shutil.rmtree(work / f"{name}-exact-{llc or 'machine'}.otr", ignore_errors=True)
    return tables


class GuestSwap:
    """zram swap in the guest for the pageout sampler, when the guest has no swap; undone by
    close() (swapoff, reset, the module unloaded)."""

    def __init__(self, tb, work: Path):
        self.tb, self.work, self.undo = tb, work, []
        self.why_not: str | None = None

    def open(self) -> bool:
        swaps = self.tb.run_checked("cat /proc/swaps").splitlines()[1:]
        if any(line.split()[2:4] and int(line.split()[2]) > int(line.split()[3])
               for line in swaps if len(line.split()) >= 4):
            return True
        try:
            if self.tb.run("test -e /sys/class/zram-control").returncode == 0:
                dev = self.tb.run_checked("cat /sys/class/zram-control/hot_add").strip()
                self.undo.append(f"echo {dev} > /sys/class/zram-control/hot_remove")
                zram = f"zram{dev}"
            else:
                mods = self._modules()
                self.tb.run_checked("; ".join(f"busybox insmod {shlex.quote(str(m))} || exit 1"
                                              for m in mods))
                self.undo.append("; ".join(f"busybox rmmod {m.stem}" for m in reversed(mods)))
                zram = "zram0"
            self.tb.run_checked(f"echo {ZRAM_MIB}M > /sys/block/{zram}/disksize && "
                                f"mkswap /dev/{zram} >/dev/null && swapon /dev/{zram}")
            self.undo.append(f"swapoff /dev/{zram}; echo 1 > /sys/block/{zram}/reset")
        except (ObjtierError, OSError) as error:
            self.why_not = f"no swap in the guest and no zram: {error}"
            self.close()
            return False
        return True

    def _modules(self) -> list[Path]:
        from objtier.testbed.fetch import KernelImage
        from objtier.testbed.modules import unpack_modules

        image = KernelImage.load(self.tb.paths)
        if image is None:
            raise EnvironmentProblem("no guest kernel")
        return unpack_modules(Path(image.modules), ("zram",), self.work)

    def close(self) -> None:
        while self.undo:
            step = self.undo.pop()
            try:
                self.tb.run(step, timeout=120)
            except (ObjtierError, OSError) as error:
                print(f"guest: could not undo `{step}`: {error}", file=sys.stderr)


def guest_timed(tb, command: list[str], err: Path) -> tuple[int, float]:
    """(exit status, wall seconds by the guest's clock) of command in the guest, its stdout
    discarded and its stderr in err."""
    script = (f"t0=$(date +%s%N); {shlex.join(command)} >/dev/null 2>{shlex.quote(str(err))}; "
              "rc=$?; t1=$(date +%s%N); echo \"$rc $((t1 - t0))\"")
    rc, out, _ = tb.run(script, timeout=GUEST_TIMEOUT_S)
    status, ns = out.split()[-2:]
    return int(status), int(ns) / 1e9


def record_command(out: Path, sampler: str, command: list[str],
                   settings: dict[str, int]) -> list[str]:
    """`objtier record` in the guest; with damon settings, through a -c that changes them."""
    argv = ["record", "-f", "--sampler", sampler, "-o", str(out), "--", *command]
    if sampler != "damon" or not settings:
        return [OBJTIER_GUEST, "-m", "objtier", *argv]
    code = ("import sys; from objtier.record import damon_source as d; "
            + "; ".join(f"d.{k} = {v}" for k, v in settings.items())
            + "; from objtier.cli import main; sys.exit(main(sys.argv[1:]))")
    return [OBJTIER_GUEST, "-c", code, *argv]


def coverage(trace) -> tuple[float, float]:
    """Shares of the samples, and of their weight, that fall in a tracked object."""
    mapped = sample_objects(trace)
    if not len(mapped):
        return float("nan"), float("nan")
    weight = trace.samples.column("weight").to_numpy().astype(np.float64)
    hit = mapped >= 0
    return float(hit.mean()), float(weight[hit].sum() / weight.sum()) if weight.sum() else \
        float("nan")


def guest_record(tb, out: Path, sampler: str, command: list[str],
                 settings: dict[str, int]) -> tuple[float, str]:
    err = out.with_suffix(".err")
    for attempt in range(GUEST_ATTEMPTS):
        shutil.rmtree(out, ignore_errors=True)
        rc, wall = guest_timed(tb, record_command(out, sampler, command, settings), err)
        text = err.read_text(errors="replace") if err.exists() else ""
        if rc == 0 and out.exists() and open_trace(out).samples.num_rows:
            return wall, text
        FAILURES.append(f"record --sampler {sampler} {Path(command[0]).name}: exit {rc}"
                        + ("" if rc else " (no samples)") + f": {text.strip()[-200:]}")
        print(f"  {FAILURES[-1]} (attempt {attempt + 1})", flush=True)
    raise SystemExit(f"{command[0]}: no {sampler} recording in the guest")


DAMON_LINE = re.compile(r"DAMON: (\d+) (?:listings|aggregations \(tracepoint\)) of (\d+) regions")
RUN_LINE = re.compile(r"process\(es\),.* in ([\d.]+)s$", re.M)   # the program's run under record


def one(tb, name: str, exe: Path, args: list[str], exacts: dict, work: Path, repeats: int,
        samplers: list[str], settings: dict[str, int]) -> dict:
    command = [str(exe), *args]
    walls = {"alone": [], **{s: [] for s in samplers},
             **{f"{s} (program)": [] for s in samplers}}
    scores = {f"{s} / LLC {llc}": [] for s in samplers for llc in exacts}
    cover = {s: [] for s in samplers}
    listings, loads, samples = [], [], {s: [] for s in samplers}
    for i in range(repeats):
        loads.append(load())
        rc, wall = guest_timed(tb, command, work / f"{name}-alone.err")
        if rc:
            raise SystemExit(f"{name} exited {rc} in the guest")
        walls["alone"].append(wall)
        for sampler in samplers:
            out = work / f"{name}-{sampler}{i}.otr"
            wall, err = guest_record(tb, out, sampler, command, settings)
            walls[sampler].append(wall)
            trace = open_trace(out)
            samples[sampler].append(trace.samples.num_rows)
            table = object_table(trace, labels=False)
            if sampler == "damon":
                damon_table = table
            for llc, exact in exacts.items():
                scores[f"{sampler} / LLC {llc}"].append(score_tables(exact, table))
            cover[sampler].append(coverage(trace))
            ran = RUN_LINE.search(err)
            walls[f"{sampler} (program)"].append(float(ran[1]) if ran else float("nan"))
            found = DAMON_LINE.search(err)
            if sampler == "damon" and found:
                listings.append((int(found[1]), int(found[2])))
            shutil.rmtree(out, ignore_errors=True)
    _, matched = sampled_on_exact(exacts["machine"], damon_table)
    return {"name": name, "args": " ".join(args), "objects": exacts["machine"].num_rows,
            "matched": matched, "walls": walls, "scores": scores, "coverage": cover,
            "listings": listings, "samples": samples, "loads": loads}


def fmt(values: list[float]) -> str:
    mid, lo, hi = median_range(values)
    return "n/a" if np.isnan(mid) else f"{mid:.3f} ({lo:.2f}–{hi:.2f})"


def results_record(found: dict[str, dict], command: str, samplers: list[str],
                   settings: dict[str, int], swap_note: str | None) -> dict:
    raw, medians, ratios, loads = {}, {}, {}, []
    for name, r in found.items():
        raw[name] = {"args": r["args"], "walls": r["walls"], "loads": r["loads"],
                     "listings_regions": r["listings"], "samples": r["samples"],
                     "coverage_samples_weight": r["coverage"],
                     "spearman": {kind: {m: [s[m].spearman for s in runs] for m in METRICS}
                                  for kind, runs in r["scores"].items()}}
        medians[name] = {
            "walls": {k: float(np.nanmedian(v)) for k, v in r["walls"].items() if v},
            "spearman": {k: {m: float(np.nanmedian(v)) for m, v in d.items()}
                         for k, d in raw[name]["spearman"].items()},
            "coverage_weight": {s: float(np.nanmedian([c[1] for c in v]))
                                for s, v in r["coverage"].items()}}
        w = medians[name]["walls"]
        ratios[name] = {f"{s}_over_alone": w[s] / w["alone"] for s in samplers}
        loads += [float(x) for x in r["loads"]]
    rho = {n: medians[n]["spearman"]["damon / LLC machine"]["llc_misses"] for n in found}
    rho4 = {n: medians[n]["spearman"]["damon / LLC 4M"]["llc_misses"] for n in found}
    figure = ("median Spearman vs exact misses, 300M/4M LLC model: "
              + ", ".join(f"{n} {rho[n]:.2f}/{rho4[n]:.2f}" for n in found)
              + "; damon record wall ×plain "
              + "/".join(f"{ratios[n]['damon_over_alone']:.2f}" for n in found) + " (emulated)")
    met = [n for n in found if min(rho[n], rho4[n]) >= 0.9]
    note = "; ".join(x for x in (
        f"damon settings changed: {settings}" if settings else "",
        swap_note or "") if x) or None
    return bench_results.make(
        "damon_source_accuracy", "prediction",
        title="objects ranked by record --sampler damon (guest) against an exact trace's "
              f"LLC-model misses ({', '.join(found)})",
        kind=KIND, command=command, figure=figure,
        finding=f"Spearman ≥ 0.9 at the median, both models, on {len(met)} of {len(found)}; "
                "times emulated (TCG)",
        goal="Spearman ≥ 0.9", medians=medians, ratios=ratios, raw=raw, note=note,
        load_=f"load {bench_results.span(loads)}" if loads else None)


def parse_settings(items: list[str]) -> dict[str, int]:
    settings = {}
    for item in items:
        key, _, value = item.partition("=")
        if key not in SETTINGS or not value.isdigit():
            raise SystemExit(f"--damon {item}: expected NAME=INTEGER, NAME one of "
                             f"{', '.join(SETTINGS)}")
        settings[key] = int(value)
    return settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--no-pageout", action="store_true")
    parser.add_argument("--damon", action="append", default=[], metavar="NAME=VALUE")
    bench_results.add_arguments(parser)
    args = parser.parse_args()
    settings = parse_settings(args.damon)
    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    if not names:
        raise SystemExit(f"--only {args.only}: none of {', '.join(CASES)}")

    from objtier.testbed import Testbed, TestbedPaths

    base = TestbedPaths.default()
    tb = Testbed(TestbedPaths(base.root, run_name=f"run-damonsrc-{os.getpid()}"),
                 log=lambda m: print(m, flush=True))
    # SIGTERM as Ctrl-C: the guest is powered off and the run directory removed either way
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    found: dict[str, dict] = {}
    swap_note = None
    try:
        tb.prepare()
        work = tb.paths.run / "damon-accuracy"   # the guest writes here (the project tree)
        work.mkdir(parents=True, exist_ok=True)
        built, exacts = {}, {}
        for name in names:                       # on the host, before the guest takes the CPUs
            sources, run_args = CASES[name]
            built[name] = build(name, sources, work)
            exacts[name] = exact_tables(name, built[name], run_args, work)
            print(f"{name}: exact recordings done (load {load()})", flush=True)
        tb.start()
        swap = GuestSwap(tb, work)
        samplers = ["damon"]
        try:
            if args.no_pageout:
                swap_note = "pageout not run (--no-pageout)"
            elif swap.open():
                samplers.append("pageout")
            else:
                swap_note = f"pageout not run: {swap.why_not}"
                print(swap_note, flush=True)
            for name in names:
                r = one(tb, name, built[name], CASES[name][1], exacts[name], work,
                        args.repeats, samplers, settings)
                found[name] = r
                print(f"{name} ({r['args']}): {r['objects']} objects, {r['matched']} matched; "
                      f"samples {r['samples']}; DAMON (listings or aggregations, regions) {r['listings']}; "
                      f"load at round starts {r['loads']}")
                for kind, runs in r["scores"].items():
                    print(f"  {kind:18s} " + "; ".join(
                        f"spearman vs {m} {fmt([s[m].spearman for s in runs])}, top-k "
                        f"{fmt([s[m].overlap for s in runs])}" for m in METRICS))
                for sampler, cov in r["coverage"].items():
                    print(f"  {sampler} coverage in objects: samples "
                          f"{fmt([c[0] for c in cov])}, weight {fmt([c[1] for c in cov])}")
                med = {k: float(np.nanmedian(v)) for k, v in r["walls"].items()}
                print("  wall (emulated) median " + ", ".join(
                    f"{k} {v:.1f}s" for k, v in med.items()) + "; " + ", ".join(
                    f"{s} x{med[s] / med['alone']:.2f}" for s in samplers) + "; all: " +
                    "; ".join(f"{k} " + " ".join(f"{x:.1f}" for x in v)
                              for k, v in r["walls"].items()), flush=True)
        finally:
            swap.close()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        tb.stop()
        shutil.rmtree(tb.paths.run, ignore_errors=True)
    print(f"runs that failed and were run again: {len(FAILURES)}")
    for failure in FAILURES:
        print(f"  {failure}")
    if found:
        bench_results.save(args, lambda: results_record(
            found, bench_results.script_command(sys.argv[1:], "bench/damon_source_accuracy.py"),
            samplers, settings, swap_note))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
