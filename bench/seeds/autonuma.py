#!/usr/bin/env python3
"""The AutoNUMA graph-characterization seed's experiments on GAPBS itself (docs/seeds.md).

    bench/seeds/build.sh --src DIR gapbs        # once: build/seeds/gapbs/{bfs,bc,cc,pr,converter}
    sudo .venv/bin/python bench/seeds/autonuma.py [--scale 18] [--local 50,70] [--repeat 3]

For each kernel (bc, bfs, cc, pr) and graph (Kronecker -g, uniform -u, serialized once by GAPBS's
converter and read with -f, as the seed reads its inputs):

1. characterization: `objtier record` (the machine's default sampler, at --rate with no overhead
   bound so that every page is watched a few times), `objtier report`, then from the trace
   the objects, the watches per page (W), sampled touches per page (the seed's Fig. 4, which on
   a window sampler counts the scanner's visits as much as the program's touches), the share
   of pages never touched while watched and the mean share of watches that saw a touch (the
   watch rate accounted for), and the time from arming to first touch in the hottest object (Fig. 5's reuse);
2. placement: `objtier compare --tier swap --local P% --repeat N` (object-level static plan vs
   kernel reclaim, the seed's §7, on the swap tier — real).

Writes bench/seeds/results/autonuma.json and two CSVs; recordings and comparisons go to
build/seeds-runs/autonuma/ (git-ignored). Needs root (record's temporary zram, compare).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OBJTIER = ROOT / ".venv" / "bin" / "objtier"
GRAPHS = {"kron": "-g", "urand": "-u"}
# trials per kernel and graph for the recordings: a few seconds each at scale 18 on the 2-core
# VM, the kernel's own time dominating the graph read, so that the sampler watches each page
# about twice
TRIALS = {"bfs": {"kron": 256, "urand": 64}, "bc": {"kron": 32, "urand": 8},
          "cc": {"kron": 128, "urand": 32}, "pr": {"kron": 32, "urand": 8}}
# fewer for the comparisons: at 50 % local a trial runs up to 60x slower under kernel reclaim
# (BFS on the Kronecker graph: 1.2 s a trial against 0.02 s unlimited)
CMP_TRIALS = {"bfs": {"kron": 16, "urand": 4}, "bc": {"kron": 4, "urand": 1},
              "cc": {"kron": 8, "urand": 2}, "pr": {"kron": 4, "urand": 1}}


def fail(msg: str) -> None:
    print(f"autonuma.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load() -> float:
    return os.getloadavg()[0]


def run(cmd: list[str], log: Path) -> subprocess.CompletedProcess:
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True)
    return proc


def graph_file(bin_dir: Path, data: Path, graph: str, scale: int) -> Path:
    path = data / f"{graph}{scale}.sg"
    if not path.exists():
        data.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([str(bin_dir / "converter"), GRAPHS[graph], str(scale), "-b",
                               str(path)], capture_output=True, text=True)
        if proc.returncode != 0 or not path.exists():
            fail(f"converter failed for {graph} scale {scale}: {proc.stderr.strip()[-200:]}")
    return path


def lines_with(text: str, word: str) -> list[str]:
    return [ln.split("objtier record: ", 1)[-1] for ln in text.splitlines() if word in ln]


def characterize(otr: Path) -> dict:
    """Objects, watching, touches per page and reuse from one recording (module docstring)."""
    from objtier.analysis import pages
    from objtier.analysis.mapping import sample_objects
    from objtier.objects_view import objects_view
    from objtier.report import derive as D
    from objtier.trace.columns import column, distinct_counts, page_shift
    from objtier.trace.reader import open_trace

    trace = open_trace(otr)
    view = objects_view(trace, labels=True)
    objects = view.table
    mapped = sample_objects(trace)
    shift = page_shift(trace)
    samples = column(objects, "samples", np.int64)
    sizes = column(objects, "size", np.int64)
    order = np.argsort(-samples, kind="stable")
    total = int(samples.sum())
    cum = np.cumsum(samples[order]) / total if total else np.zeros(0)
    labels = objects.column("label").to_pylist()
    hot = int(order[0]) if total else None
    out: dict = {"objects": int(objects.num_rows), "objects_sampled": int((samples > 0).sum()),
                 "samples": int(view.total), "samples_outside": int(view.outside),
                 "objects_for_90pct": int(np.searchsorted(cum, 0.9) + 1) if total else 0,
                 "top_share": float(samples[hot] / total) if total else None,
                 "top_label": labels[hot] if hot is not None else None,
                 "top_size_bytes": int(sizes[hot]) if hot is not None else None}
    watch = D.watching(trace, objects, shift)
    raw = pages.touch_distribution(trace)
    share = raw.column("share").to_pylist()
    out["sampled_touches"] = dict(zip(["1", "2", "3+"], share))
    out["sampled_pages"] = int(sum(raw.column("pages").to_pylist()))
    if watch is not None:
        per_obj = watch.per_object
        out["watches_per_page"] = float(watch.mean)
        # per-page share of watches touched (the report's Fig. 4 for window samplers)
        hit = mapped >= 0
        obj = mapped[hit]
        addr = column(objects, "addr", np.uint64)
        page = column(trace.samples, "addr", np.uint64)[hit] >> np.uint64(shift)
        rel = (page - (addr[obj] >> np.uint64(shift))).astype(np.int64)
        use = per_obj >= 1.0
        keep = use[obj] & (rel >= 0) & (rel < watch.pages[obj])
        span = int(watch.pages.max()) + 1
        keys, counts = distinct_counts(obj[keep].astype(np.int64) * span + rel[keep])
        watched_pages = int(watch.pages[use].sum())
        frac = np.minimum(counts / per_obj[keys // span], 1.0) if len(keys) else np.zeros(0)
        out["pages_watched_1x"] = watched_pages
        out["never_touched_while_watched"] = (1 - len(keys) / watched_pages
                                              if watched_pages else None)
        out["mean_touch_share"] = (float(frac.sum() / watched_pages) if watched_pages
                                   else None)
    if hot is not None:
        rd = D.reuse(trace, mapped, hot, D.recorded_sampler(trace), shift, np.zeros(0))
        if rd.values is not None and len(rd.values):
            v = rd.values
            out["reuse_object"] = hot
            out["reuse_s"] = {"p25": float(np.percentile(v, 25)),
                              "p50": float(np.percentile(v, 50)),
                              "p75": float(np.percentile(v, 75)), "mean": float(v.mean()),
                              "max": float(v.max())}
            out["reuse_touched_share"] = float(len(v) / rd.total) if rd.total else None
            out["reuse_kind"] = rd.axis
    return out


def record(name: str, cmd: list[str], runs: Path, rate: int) -> dict:
    otr = runs / f"{name}.otr"
    log = runs / f"{name}.record.log"
    t0 = time.monotonic()
    proc = run([str(OBJTIER), "record", "-o", str(otr), "-f", "--rate", str(rate),
                "--overhead", "0", "--", *cmd], log)
    wall = time.monotonic() - t0
    text = log.read_text()
    if proc.returncode != 0:
        fail(f"record {name} failed (exit {proc.returncode}); see {log}")
    rep = run([str(OBJTIER), "report", str(otr), "-o", str(runs / f"{name}.report")],
              runs / f"{name}.report.log")
    if rep.returncode != 0:
        fail(f"report {name} failed; see {runs / f'{name}.report.log'}")
    result = characterize(otr)
    result.update(record_wall_s=wall, coverage=lines_with(text, "coverage:"),
                  sampler=lines_with(text, "sampler ")[:1],
                  cost=lines_with(text, "recorder cost"), load=load())
    return result


def compare(name: str, cmd: list[str], runs: Path, local: int, repeat: int) -> dict:
    out = runs / f"{name}-{local}"
    log = runs / f"{name}-{local}.compare.log"
    before = load()
    t0 = time.monotonic()
    proc = run([str(OBJTIER), "compare", "--tier", "swap", "--local", f"{local}%",
                "--repeat", str(repeat), "-o", str(out), "-f", "-q", "--", *cmd], log)
    wall = time.monotonic() - t0
    if proc.returncode != 0 or not (out / "summary.json").exists():
        return {"error": f"compare exit {proc.returncode}; see {log}", "load": before}
    s = json.loads((out / "summary.json").read_text())
    med = s["medians"]

    def arm(a: str) -> dict:
        m = med.get(a, {})
        return {k: m.get(k) for k in ("runs", "finished", "oom_killed", "wall_s",
                                      "fom_seconds", "pswpout", "memcg_refault_anon",
                                      "locked_bytes")}
    walls: dict[str, list[float]] = {}
    with open(out / "compare.csv") as f:
        for row in csv.DictReader(f):
            if row["returncode"] == "0":
                walls.setdefault(row["config"], []).append(float(row["wall_s"]))
    return {"local": local, "repeat": repeat, "footprint_bytes": s["unlimited"]
            .get("footprint_bytes"), "unlimited_wall_s": s["unlimited"].get("wall_s"),
            "baseline": arm("baseline"), "objtier": arm("objtier"),
            "walls": walls, "ratios": s.get("ratios"),
            "withheld": s.get("ratios_withheld"),
            "plan": {k: (s.get("plan") or {}).get(k) for k in ("fast_objects", "split_objects",
                                                                 "fast_bytes",
                                                                 "fast_access_share")},
            "spare_reclaim": {k: (s.get("spare_reclaim") or {}).get(k) for k in ("used", "why")},
            "command": " ".join(["objtier", "compare", "--tier", "swap", "--local",
                                 f"{local}%", "--repeat", str(repeat), "--", *cmd]),
            "compare_wall_s": wall, "load_before": before, "load_after": load()}


def write_csvs(res: dict, out: Path) -> None:
    with open(out / "autonuma-characterization.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "objects", "objects_sampled", "objects_for_90pct",
                    "top_share", "top_size_mib", "watches_per_page", "sampled_once",
                    "sampled_twice", "never_touched_while_watched", "mean_touch_share",
                    "reuse_p50_ms", "reuse_mean_ms", "load"])
        for name, c in res["characterization"].items():
            r = c.get("reuse_s") or {}
            w.writerow([name, c["objects"], c["objects_sampled"], c["objects_for_90pct"],
                        c["top_share"], (c["top_size_bytes"] or 0) / 2**20,
                        c.get("watches_per_page"), c["sampled_touches"]["1"],
                        c["sampled_touches"]["2"], c.get("never_touched_while_watched"),
                        c.get("mean_touch_share"),
                        r.get("p50", math.nan) * 1e3, r.get("mean", math.nan) * 1e3,
                        c["load"]])
    with open(out / "autonuma-placement.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "local_pct", "footprint_mib", "kernel_s", "objtier_s",
                    "speedup", "swapin_cut_cgroup", "swapout_cut_systemwide", "fast_bytes_mib", "kernel_ok",
                    "objtier_ok", "load_before", "load_after"])
        for key, c in res["placement"].items():
            if "error" in c:
                w.writerow([key, "", "", "", "", "", "", "", "", "", "", c["load"], ""])
                continue
            ra = c["ratios"] or {}
            b, o = c["baseline"], c["objtier"]
            cut = (b["memcg_refault_anon"] / o["memcg_refault_anon"]
                   if b.get("memcg_refault_anon") and o.get("memcg_refault_anon") else None)
            w.writerow([key.rsplit("-", 1)[0], c["local"], (c["footprint_bytes"] or 0) / 2**20,
                        c["baseline"]["wall_s"], c["objtier"]["wall_s"], ra.get("speedup"),
                        cut, ra.get("swapout_reduction"),
                        (c["plan"]["fast_bytes"] or 0) / 2**20,
                        f"{c['baseline']['finished']}/{c['baseline']['runs']}",
                        f"{c['objtier']['finished']}/{c['objtier']['runs']}",
                        c["load_before"], c["load_after"]])


def pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f} %"


def num(x, spec: str = ".2f") -> str:
    return "–" if x is None else format(x, spec)


def tables(res: dict) -> str:
    """docs/seeds.md's AutoNUMA tables (markdown) from autonuma.json."""
    out = ["| workload | objects (sampled) | objects for 90 % of samples | hottest object: "
           "share, size | W | pages never touched while watched | mean share of watches "
           "touched | pages sampled 1 / 2 / 3+ times | time to first touch p50 / mean "
           "[ms] | recorder cost | load |", "|" + "---|" * 11]
    for name, c in res.get("characterization", {}).items():
        r = c.get("reuse_s") or {}
        cost = (c.get("cost") or ["?"])[0].split("recorder cost: ")[-1].split(" of")[0]
        out.append(
            f"| {name} | {c['objects']} ({c['objects_sampled']}) | {c['objects_for_90pct']} | "
            f"{pct(c['top_share'])}, {(c['top_size_bytes'] or 0) / 2**20:.0f} MiB | "
            f"{num(c.get('watches_per_page'), '.1f')} | "
            f"{pct(c.get('never_touched_while_watched'))} | {pct(c.get('mean_touch_share'))} | "
            f"{' / '.join(pct(c['sampled_touches'][k]) for k in ('1', '2', '3+'))} | "
            f"{num(r.get('p50') and r['p50'] * 1e3, '.0f')} / "
            f"{num(r.get('mean') and r['mean'] * 1e3, '.0f')} | {cost} | {c['load']:.1f} |")
    out += ["", "| workload | local | footprint | kernel [s] | objtier [s] | speedup | "
            "swap-in cut (cgroup) | swap-out cut (system-wide) | locked | spare-CPU reclaim | "
            "finished k/o | load |", "|" + "---|" * 12]
    for key, c in res.get("placement", {}).items():
        if "error" in c:
            out.append(f"| {key} | | | | | {c['error']} | | | | | | {c['load']:.1f} |")
            continue
        ra = c.get("ratios") or {}
        b, o = c["baseline"], c["objtier"]
        cut = (b["memcg_refault_anon"] / o["memcg_refault_anon"]
               if b.get("memcg_refault_anon") and o.get("memcg_refault_anon") else None)
        out.append(
            f"| {key.rsplit('-', 1)[0]} | {c['local']} % | "
            f"{(c['footprint_bytes'] or 0) / 2**20:.0f} MiB | {num(b['wall_s'])} | "
            f"{num(o['wall_s'])} | {num(ra.get('speedup'))}× | "
            f"{num(cut)}× | {num(ra.get('swapout_reduction'))}× | "
            f"{(c['plan']['fast_bytes'] or 0) / 2**20:.0f} MiB | "
            f"{'yes' if (c.get('spare_reclaim') or {}).get('used') else 'no'} | "
            f"{b['finished']}/{b['runs']}, {o['finished']}/{o['runs']} | "
            f"{c['load_before']:.0f}–{c['load_after']:.0f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", type=Path, default=ROOT / "build" / "seeds" / "gapbs")
    ap.add_argument("--data", type=Path, default=ROOT / "build" / "seeds-data")
    ap.add_argument("--scale", type=int, default=18)
    ap.add_argument("--kernels", default="bc,bfs,cc,pr")
    ap.add_argument("--graphs", default="kron,urand")
    ap.add_argument("--local", default="50,70", help="local memory, %% of the footprint")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rate", type=int, default=5000,
                    help="record's --rate (5000: each page watched about twice in a few "
                         "seconds; the recorder's cost is printed and kept)")
    ap.add_argument("--skip-record", action="store_true")
    ap.add_argument("--skip-compare", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "seeds" / "results")
    ap.add_argument("--runs", type=Path, default=ROOT / "build" / "seeds-runs" / "autonuma")
    ap.add_argument("--reanalyze", action="store_true",
                    help="recompute the characterization from the recordings already in --runs")
    ap.add_argument("--table", action="store_true",
                    help="print the markdown tables of the results and stop")
    args = ap.parse_args()
    if args.table:
        path = args.out / "autonuma.json"
        if not path.exists():
            fail(f"no results at {path}")
        print(tables(json.loads(path.read_text())))
        return
    kernels = [k for k in args.kernels.split(",") if k]
    graphs = [g for g in args.graphs.split(",") if g]
    for k in kernels:
        if k not in TRIALS:
            fail(f"unknown kernel {k} (have {', '.join(TRIALS)})")
        if not os.access(args.bin / k, os.X_OK):
            fail(f"{args.bin / k} missing: run bench/seeds/build.sh gapbs first")
    for g in graphs:
        if g not in GRAPHS:
            fail(f"unknown graph {g} (have {', '.join(GRAPHS)})")
    try:
        locals_ = [int(p) for p in args.local.split(",") if p]
    except ValueError:
        fail(f"--local wants percentages like 50,70, not {args.local}")
    if os.geteuid() != 0:
        fail("needs root (record's temporary zram swap, compare's cgroup)")
    args.runs.mkdir(mode=0o700, parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "autonuma.json"
    res = json.loads(path.read_text()) if path.exists() else {}
    res.setdefault("characterization", {})
    res.setdefault("placement", {})
    res["machine"] = {"host": platform.node(), "kernel": platform.release(),
                      "cpus": os.cpu_count(), "cpu": platform.processor() or platform.machine()}
    res["scale"] = args.scale
    res["trials"] = {"record": TRIALS, "compare": CMP_TRIALS}
    res["rate"] = args.rate
    for g in graphs:
        sg = graph_file(args.bin, args.data, g, args.scale)
        for k in kernels:
            name = f"{k}_{g}"
            cmd = [str(args.bin / k), "-f", str(sg), "-n", str(TRIALS[k][g])]
            if args.reanalyze and name in res["characterization"]:
                res["characterization"][name].update(characterize(args.runs / f"{name}.otr"))
                path.write_text(json.dumps(res, indent=1))
            elif not args.skip_record:
                print(f"autonuma.py: record {name} (load {load():.1f})", file=sys.stderr)
                c = record(name, cmd, args.runs, args.rate)
                c["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
                c["command"] = " ".join(["objtier", "record", "--rate", str(args.rate),
                                         "--overhead", "0", "--", *cmd])
                res["characterization"][name] = c
                path.write_text(json.dumps(res, indent=1))
    if not args.skip_compare:
        for local in locals_:
            for g in graphs:
                sg = graph_file(args.bin, args.data, g, args.scale)
                for k in kernels:
                    name = f"{k}_{g}"
                    cmd = [str(args.bin / k), "-f", str(sg), "-n", str(CMP_TRIALS[k][g])]
                    print(f"autonuma.py: compare {name} at {local}% (load {load():.1f})",
                          file=sys.stderr)
                    c = compare(name, cmd, args.runs, local, args.repeat)
                    c["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
                    res["placement"][f"{name}-{local}"] = c
                    path.write_text(json.dumps(res, indent=1))
    path.write_text(json.dumps(res, indent=1))
    write_csvs(res, args.out)
    print(f"autonuma.py: {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
