#!/usr/bin/env python3
"""Table I of Foyer & Goglin (MCHPC'21) on the seed's own programs, with `objtier sweep --suite`.

    .venv/bin/python bench/seeds/table1.py [--knob local|bandit] [--levels 100,90,75,50]
        [--repeat 10] [--timeout 60] [--only ptrchase,xsbench,...] [--seeds build/seeds]
        [-o DIR] [--results bench/seeds/results]

The programs are the seed's (pointer chase: the project's ptrchase, the seed's own being
unpublished in a form we build; XSBench, NPB BT, LULESH, miniFE from bench/seeds/build.sh;
STREAM from Debian's hpcc, StarSTREAM_Triad), each run with 2 OpenMP threads
(OMP_WAIT_POLICY=passive: on this shared 2-core VM a spinning OpenMP barrier ran LULESH 30x
slower) at sizes that run a few seconds. The knob is one this machine has: `local` (share of
the footprint in memory, zram behind it: real) or `bandit` (a co-running memory load:
emulated); the seed's knob, resctrl MBA, is not available here. Writes
RESULTS/table1_<knob>.json and .md: our thresholds and per-level ratios beside the seed's
Table I, the ordering of the programs in both, and what was measured that bears on a
difference (footprint, swap-ins, the co-runner's GB/s, the load average).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OBJTIER = REPO / ".venv" / "bin" / "objtier"
BIN = REPO / "src" / "objtier" / "_native" / "bin"
ENV = ["env", "OMP_NUM_THREADS=2", "OMP_WAIT_POLICY=passive"]

# The seed's Table I (AMD EPYC 7502, 8 threads, resctrl MB levels 10..100; "0" = not reached;
# a larger level means the program lost that share at a milder throttle: more sensitive).
PAPER = {
    "ptrchase": {"fom": 8033367, "unit": "deref/s", "T50": 0, "T75": 0, "T90": 0},
    "xsbench": {"fom": 2530884, "unit": "lookups/s", "T50": 10, "T75": 10, "T90": 20},
    "npb-bt": {"fom": 37475, "unit": "Mop/s (class C)", "T50": 0, "T75": 10, "T90": 30},
    "lulesh": {"fom": 8695, "unit": "z/s (200^3)", "T50": 20, "T75": 30, "T90": 40},
    "stream": {"fom": 128791, "unit": "MB/s Triad", "T50": 40, "T75": 60, "T90": 70},
    "minife": {"fom": 13845, "unit": "CG Mflops (256^3)", "T50": 40, "T75": 60, "T90": 90},
}
# The seed's order, least sensitive first (Table I's rows for these programs).
PAPER_ORDER = ["ptrchase", "xsbench", "npb-bt", "lulesh", "stream", "minife"]


def programs(seeds: Path, hpcc_log: Path) -> dict[str, list[str]]:
    """name -> command; sizes: the seed's where they fit, else scaled down (docs/seeds.md)."""
    return {
        "ptrchase": [*ENV, str(BIN / "ptrchase"), "-s", "64M", "-n", "1000000", "-t", "2"],
        "xsbench": [*ENV, str(seeds / "xsbench" / "xsbench-run"), "-t", "2", "-s", "small",
                    "-m", "history", "-p", "10000"],
        "npb-bt": [*ENV, str(seeds / "npb-bt" / "bt-run"), "A", "4"],
        "lulesh": [*ENV, str(seeds / "lulesh" / "lulesh-run"), "-s", "30", "-i", "20"],
        "minife": [*ENV, str(seeds / "minife" / "minife-run"), "-nx", "45", "-ny", "45",
                   "-nz", "45"],
        "stream": [*ENV, f"HPCC_SUMMARY_LOG={hpcc_log}", str(seeds / "hpcc" / "hpcc-run"),
                   "1000", "1"],
    }


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's usage block is not one line
        fail(message)


def fail(message: str) -> None:
    print(f"table1.py: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("--knob", default="local", choices=["local", "bandit"])
    p.add_argument("--levels", help="default: local 100,90,75,50; bandit 0,50,100")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--only", default=",".join(PAPER_ORDER))
    p.add_argument("--seeds", type=Path, default=REPO / "build" / "seeds")
    p.add_argument("-o", "--output", type=Path)
    p.add_argument("--results", type=Path, default=REPO / "bench" / "seeds" / "results")
    p.add_argument("--merge", type=Path, action="append", default=[],
                   help="an earlier -o DIR of the same knob and levels: programs this run "
                   "did not sweep are reported from it")
    p.add_argument("--report-only", action="store_true",
                   help="write the tables from an existing -o DIR without running")
    args = p.parse_args(argv)
    if args.repeat < 1:
        fail(f"--repeat {args.repeat}: must be at least 1")
    if args.timeout <= 0:
        fail(f"--timeout {args.timeout:g}: must be positive")
    args.levels = args.levels or ("100,90,75,50" if args.knob == "local" else "0,50,100")
    try:
        levels = [float(x) for x in args.levels.split(",")]
    except ValueError:
        fail(f"--levels {args.levels!r}: not a comma-separated list of numbers")
    if len(levels) < 2:
        fail(f"--levels {args.levels!r}: need at least two levels")
    unknown = [n for n in args.only.split(",") if n not in PAPER]
    if unknown:
        fail(f"--only: unknown program {unknown[0]!r} (known: {', '.join(PAPER_ORDER)})")
    args.output = args.output or Path(f"/tmp/seeds-table1-{args.knob}")
    missing = [d for d in args.merge if not (d / "suite.json").exists()]
    if missing:
        fail(f"--merge {missing[0]}: no suite.json there")
    args.all = [n for n in PAPER_ORDER if n in args.only.split(",") or any(
        (d / "suite.json").exists() and any(d.glob(f"[0-9][0-9]-{n}")) for d in args.merge)]
    return args


def uptime() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def level_rows(sweep: dict) -> list[dict]:
    rows = []
    for lv in sweep.get("levels", []):
        measured = lv.get("measured") or {}
        numbers = {k: [x for x in v if isinstance(x, (int, float))] if isinstance(v, list) else v
                   for k, v in measured.items()}
        med = {k: statistics.median(v) for k, v in numbers.items()
               if isinstance(v, list) and v}
        rows.append({"level": lv.get("level"), "label": lv.get("label"), "kind": lv.get("kind"),
                     "runs": len(lv.get("fom") or []),
                     "failures": sum(1 for f in lv.get("fom") or [] if f is None),
                     "median": lv.get("median"), "performance": lv.get("performance"),
                     "ratio_ci": lv.get("ratio_ci"), "sides": lv.get("sides"),
                     "measured_median": med})
    return rows


def paper_rule(levels: list[dict]) -> dict[str, float | None]:
    """The seed's own rule: the first level whose median falls below the line (no intervals;
    objtier's thresholds also ask that the drop be beyond the noise)."""
    out: dict[str, float | None] = {}
    for line in ("90", "75", "50"):
        below = [lv["level"] for lv in levels
                 if lv["performance"] is not None and lv["performance"] < int(line) / 100]
        out[line] = below[0] if below else None
    return out


def rank_key(thresholds: dict, levels: list[float]) -> tuple:
    """Most sensitive first, as `sweep --suite` ranks: the index of the level where T90 is
    reached, then T75, then T50; not reached / not resolved after the last level."""
    key = []
    for line in ("90", "75", "50"):
        level = thresholds.get(line)
        key.append(levels.index(level) if level in levels else len(levels))
    return tuple(key)


def spearman(a: list[str], b: list[str]) -> float | None:
    common = [x for x in a if x in b]
    n = len(common)
    if n < 3:
        return None
    ra = {x: i for i, x in enumerate([x for x in a if x in common])}
    rb = {x: i for i, x in enumerate([x for x in b if x in common])}
    d2 = sum((ra[x] - rb[x]) ** 2 for x in common)
    return 1 - 6 * d2 / (n * (n * n - 1))


def report(args: argparse.Namespace, load_before: str, load_after: str) -> dict:
    dirs = [args.output, *args.merge]
    suites = {d: json.loads((d / "suite.json").read_text()) for d in dirs
              if (d / "suite.json").exists()}
    levels = [float(x) for x in args.levels.split(",")]
    entries = []
    for name in args.all:
        # this run's sweep of the program, else the first --merge directory that has one
        found = [(d, sub) for d in suites for sub in sorted(d.glob(f"[0-9][0-9]-{name}"))
                 if (sub / "sweep.json").exists()]
        if not found:
            continue
        src, d = found[0]
        row = next((r for r in suites[src]["programs"] if r["program"] == name), {})
        entry = {"program": name, "paper": PAPER[name], "from": str(src),
                 "command": row.get("command"),
                 "error": row.get("error"), "baseline": row.get("baseline"),
                 "unit": row.get("unit"), "T50": row.get("T50"), "T75": row.get("T75"),
                 "T90": row.get("T90"), "thresholds": {}, "levels": [], "footprint": None}
        if (d / "sweep.json").exists():
            sweep = json.loads((d / "sweep.json").read_text())
            entry["thresholds"] = sweep.get("thresholds", {})
            entry["levels"] = level_rows(sweep)
            entry["kind"] = sorted({lv["kind"] for lv in entry["levels"] if lv["kind"]})
            entry["footprint"] = (sweep.get("config") or {}).get("footprint_bytes")
            entry["paper_rule"] = paper_rule(entry["levels"])
            entry["warnings"] = sweep.get("warnings", [])
            entry["machine"] = sweep.get("machine")
        entries.append(entry)
    ok = [e for e in entries if e["thresholds"]]
    ours = [e["program"] for e in sorted(ok, key=lambda e: rank_key(e["thresholds"], levels),
                                         reverse=True)]
    by_rule = [e["program"] for e in sorted(ok, key=lambda e: rank_key(e["paper_rule"], levels),
                                            reverse=True)]
    paper = [p for p in PAPER_ORDER if p in ours]
    return {"knob": args.knob, "levels": levels, "repeat": args.repeat,
            "kind": "real" if args.knob == "local" else "emulated",
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "cpus": os.cpu_count(),
            "load_before": load_before, "load_after": load_after,
            "order_least_sensitive_first": {
                "ours": ours, "paper": paper, "spearman": spearman(ours, paper),
                "ours_paper_rule": by_rule, "spearman_paper_rule": spearman(by_rule, paper)},
            "programs": entries}


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}"


def markdown(doc: dict) -> str:
    knob = doc["knob"]
    unit = "% local" if knob == "local" else "% bandit duty"
    lines = [f"Table I on the seed's programs, knob `{knob}` ({doc['kind']}), levels "
             f"{', '.join(f'{x:g}' for x in doc['levels'])} ({unit}), {doc['repeat']} runs per "
             f"level, 2 OpenMP threads; {doc['date']}, {doc['cpus']} CPUs, load "
             f"{doc['load_before']} before / {doc['load_after']} after.", "",
             "| program | our max avg FoM | T50 | T75 | T90 | T50/T75/T90, paper's rule | "
             "% of baseline per level | failed runs per level | "
             + ("co-runner GB/s (median)" if knob == "bandit" else "swap-ins per run (median)")
             + " per level | paper FoM | paper T50/T75/T90 (resctrl) | footprint |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in doc["programs"]:
        p = e["paper"]
        if e["error"] or not e["levels"]:
            lines.append(f"| {e['program']} | failed: {e['error']} | | | | | {p['fom']} | "
                         f"{p['T50']}/{p['T75']}/{p['T90']} | |")
            continue
        per = " / ".join(_pct(lv["performance"]) for lv in e["levels"])
        failed = " / ".join(str(lv["failures"]) for lv in e["levels"])
        extra = "bandit_gbps" if doc["knob"] == "bandit" else "swap_ins"
        meas = " / ".join(f"{lv['measured_median'].get(extra, '-'):.3g}"
                          if extra in lv["measured_median"] else "-" for lv in e["levels"])
        rule = "/".join("-" if e["paper_rule"][x] is None else f"{e['paper_rule'][x]:g}"
                        for x in ("50", "75", "90"))
        fp = f"{e['footprint'] / 2**20:.0f} MiB" if isinstance(e["footprint"], (int, float)) \
            else "-"
        lines.append(f"| {e['program']} | {e['baseline']:.4g} {e['unit'] or ''} | {e['T50']} | "
                     f"{e['T75']} | {e['T90']} | {rule} | {per} | {failed} | {meas} | "
                     f"{p['fom']} {p['unit']} | {p['T50']}/{p['T75']}/{p['T90']} | {fp} |")
    o = doc["order_least_sensitive_first"]
    rho = "-" if o["spearman"] is None else f"{o['spearman']:.2f}"
    rho2 = "-" if o["spearman_paper_rule"] is None else f"{o['spearman_paper_rule']:.2f}"
    lines += ["", f"Order, least sensitive first: objtier's thresholds {' < '.join(o['ours'])} "
              f"(Spearman {rho} against the paper); the paper's rule "
              f"{' < '.join(o['ours_paper_rule'])} (Spearman {rho2}); the paper "
              f"{' < '.join(o['paper'])}. Ties keep the paper's order."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    names = args.only.split(",")
    hpcc_log = args.output.parent / f"{args.output.name}.hpcc-summary.log"
    cmds = programs(args.seeds.resolve(), hpcc_log)
    exe = {n: next(a for a in cmds[n] if a.startswith("/")) for n in names}
    missing = [n for n in names if not Path(exe[n]).exists()]
    if missing and not args.report_only:
        fail(f"{missing[0]}: not built ({exe[missing[0]]}); run bench/seeds/build.sh first")
    load_before = uptime()
    if not args.report_only:
        if not OBJTIER.exists():
            fail(f"no {OBJTIER}; run make build first")
        args.output.parent.mkdir(parents=True, exist_ok=True)
        suite = args.output.parent / f"{args.output.name}.suite.txt"
        suite.write_text("".join(f"{n}: {' '.join(cmds[n])}\n" for n in names))
        if hpcc_log.exists():
            hpcc_log.unlink()
        cmd = [str(OBJTIER), "sweep", "--suite", str(suite), "--knob",
               f"{args.knob}={args.levels}", "--repeat", str(args.repeat), "--timeout",
               f"{args.timeout:g}", "-o", str(args.output), "-f"]
        print(" ".join(cmd), flush=True)
        rc = subprocess.run(cmd).returncode
        if rc != 0 and not (args.output / "suite.json").exists():
            fail(f"objtier sweep exited {rc} without a suite.json")
    loads = args.output / "loads.json"
    if not args.report_only:
        loads.write_text(json.dumps({"before": load_before, "after": uptime(), "date": _dt.datetime.now(
            _dt.timezone.utc).isoformat(timespec="seconds")}) + "\n")
    measured = json.loads(loads.read_text()) if loads.exists() else {"before": load_before,
                                                                     "after": uptime()}
    doc = report(args, measured["before"], measured["after"])
    doc["date"] = measured.get("date", doc["date"])
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / f"table1_{args.knob}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (args.results / f"table1_{args.knob}.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
