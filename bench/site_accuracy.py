"""Watched sites (`objtier record --sites N`, docs/watched-sites.md): how well the pageout
sampler's estimated touches rank small-block sites, on three programs, each recorded --repeats
times (interleaved) with the pageout sampler and sites learned while recording:

1. hotcold: tests/runtime/watch_program.c (gcc -O1 -g), a hot and a cold site of --rows rows of
   400 B each, the hot rows read --passes times, the cold ones once at the end; `--sites 2`.
   Per site: estimated touches, touch rate, share of bytes armed, raw samples in its arena.
2. maps: bench/site_maps.cc (g++ -O2 -g), six std::map<int, Payload<K>> of about 5 MiB each
   looked up 0, 1, 3, 10, 30, 100 thousand times a round (--map-rounds); `--sites 6`. Scored
   against one exact recording of an `objtier c++ -O2` build (--exact-rounds rounds) with
   `--sampler trace --min-size 1`, where every node is an object: per site (K, from the
   label's Payload<K>), exact loads + stores per byte against estimated touches per byte
   (est_touches / est_peak_bytes), by Spearman's rank correlation.
3. python: bench/site_dicts.py under the system's python3 (--python, not objtier's venv), 40000
   dict rows with 800 B item arrays read 1000 times and 40000 1 KiB strings written once;
   `--sites 2`. Per site: estimated touches per MiB; the coverage (analysis.coverage): tracked
   objects' and the sites' share of the footprint, the share of it the sampler's pages cover
   (objects and the arenas), and the footprint of the same program recorded without --sites.

    .venv/bin/python bench/site_accuracy.py [--repeats 3] [--only hotcold,maps,python]
        [--map-rounds 60] [--exact-rounds 20] [--passes 3000] [--keep DIR]
        [--results-dir DIR] [--no-results]

Needs root: the pageout sampler adds a temporary zram swap device when the machine has none.
Every figure from a pageout recording is an estimate; the exact counts are exact. Writes one
results file per program (objtier.bench_results): every run's figures, their medians.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from objtier import bench_results

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OBJTIER = REPO / ".venv" / "bin" / "objtier"
MAPS_CC = BENCH / "site_maps.cc"
DICTS_PY = BENCH / "site_dicts.py"
WATCH_C = REPO / "tests" / "runtime" / "watch_program.c"
PARTS = ("hotcold", "maps", "python")
LOOKUPS = (0, 1, 3, 10, 30, 100)   # thousands a round, map K = 0..5 (site_maps.cc)
MIB = 2**20
KIND = "real, estimated (pageout) vs exact (trace)"


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}


def loadavg() -> float:
    return os.getloadavg()[0]


def run(command: list, what: str, timeout: float = 900) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], env=clean_env(), capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"{what}: exit {done.returncode}: {tail[0]}")
    return done


def build(work: Path, parts: list[str]) -> dict[str, Path]:
    """The programs: plain builds for the pageout recordings, an `objtier c++` one for the
    exact trace."""
    exes = {}
    if "hotcold" in parts:
        exes["hotcold"] = work / "watch_program"
        run(["gcc", "-std=gnu11", "-O1", "-g", "-fno-omit-frame-pointer", "-o",
             exes["hotcold"], WATCH_C], "gcc watch_program.c")
    if "maps" in parts:
        exes["maps"] = work / "site_maps"
        run(["g++", "-O2", "-g", "-o", exes["maps"], MAPS_CC], "g++ site_maps.cc")
        exes["maps-exact"] = work / "site_maps_exact"
        run([OBJTIER, "c++", "-O2", "-o", exes["maps-exact"], MAPS_CC], "objtier c++ site_maps.cc")
    return exes


WATCHED_LINE = re.compile(r"watched sites: (\d+) with arenas")


def record(out: Path, command: list, *options: str) -> str:
    """`objtier record -f OPTIONS -o OUT -- COMMAND` (one retry); its stderr."""
    for attempt in range(2):
        shutil.rmtree(out, ignore_errors=True)
        done = subprocess.run([str(OBJTIER), "record", "-f", *options, "-o", str(out), "--",
                               *map(str, command)], env=clean_env(), capture_output=True,
                              text=True, timeout=900)
        if done.returncode == 0 and out.exists():
            return done.stderr
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        print(f"  record {Path(str(command[0])).name}: exit {done.returncode}: {tail} "
              f"(attempt {attempt + 1})", flush=True)
    raise SystemExit(f"{command[0]}: no recording")


def watched_sites(out: Path) -> list[dict]:
    """The watched rows of the site table of a recording (analysis.sites, site_watch)."""
    from objtier.analysis.sites import site_table
    from objtier.trace import open_trace

    return [r for r in site_table(open_trace(out)).to_pylist() if r["watched"]]


def site_figures(row: dict) -> dict:
    peak = row["est_peak_bytes"] or 0
    touches = row["est_touches"] or 0.0
    return {"est_peak_mib": peak / MIB, "est_touches": touches,
            "touches_per_mib": touches / (peak / MIB) if peak else 0.0,
            "touch_rate": row["touch_rate"], "armed_share": row["armed_share"],
            "arena_share": row["arena_share"], "arena_mib": row["arena_bytes"] / MIB,
            "region_samples": row["region_samples"], "mean_size": row["mean_size"]}


# --- 1. hot and cold rows ----------------------------------------------------------------------

def hotcold_run(exe: Path, args: argparse.Namespace, out: Path) -> dict:
    err = record(out, [exe, args.rows, args.passes], "-q", "--sites", "2")
    sites = {}
    for row in watched_sites(out):
        name = "hot" if "hot_row" in row["label"] else "cold" if "cold_row" in row["label"] \
            else None
        if name:
            sites[name] = site_figures(row)
    if set(sites) != {"hot", "cold"}:
        raise SystemExit(f"watch_program: watched sites {sorted(sites)}, not hot and cold "
                         f"({err.strip().splitlines()[-1:]})")
    return sites


# --- 2. six maps against the exact trace -----------------------------------------------------

PAYLOAD = re.compile(r"Payload<(\d+)>")


def map_of(label: str) -> int | None:
    found = PAYLOAD.search(label or "")
    return int(found[1]) if found else None


def exact_maps(exe: Path, rounds: int, out: Path) -> dict[int, dict]:
    """K -> exact loads, stores and bytes of map K's nodes (every node an object)."""
    from objtier.objects_view import objects_view
    from objtier.trace import open_trace

    record(out, [exe, rounds], "-q", "--sampler", "trace", "--min-size", "1")
    table = objects_view(open_trace(out), labels=True).table
    maps: dict[int, dict] = {}
    for label, loads, stores, size in zip(table.column("label").to_pylist(),
                                          table.column("loads").to_pylist(),
                                          table.column("stores").to_pylist(),
                                          table.column("size").to_pylist()):
        k = map_of(label)
        if k is None:
            continue
        m = maps.setdefault(k, {"objects": 0, "loads": 0, "stores": 0, "bytes": 0})
        m["objects"] += 1
        m["loads"] += int(loads or 0)
        m["stores"] += int(stores or 0)
        m["bytes"] += int(size)
    if sorted(maps) != list(range(len(LOOKUPS))):
        raise SystemExit(f"exact site_maps: maps found {sorted(maps)}, not 0..5")
    for m in maps.values():
        m["accesses_per_byte"] = (m["loads"] + m["stores"]) / m["bytes"]
    return maps


def maps_run(exe: Path, args: argparse.Namespace, out: Path, exact: dict[int, dict]) -> dict:
    err = record(out, [exe, args.map_rounds], "--sites", str(len(LOOKUPS)))
    found = WATCHED_LINE.search(err)
    sites = {}
    for row in watched_sites(out):
        k = map_of(row["label"])
        if k is not None:
            sites[k] = site_figures(row)
            sites[k]["touches_per_byte"] = sites[k]["touches_per_mib"] / MIB
    missing = sorted(set(exact) - set(sites))
    keys = sorted(sites)
    rho = float(spearmanr([sites[k]["touches_per_byte"] for k in keys],
                          [exact[k]["accesses_per_byte"] for k in keys]).statistic) \
        if len(keys) >= 3 else float("nan")
    order = sorted(keys, key=lambda k: sites[k]["touches_per_byte"])
    return {"spearman": rho, "watched": int(found[1]) if found else len(sites),
            "unwatched_maps": missing, "order_by_estimate": order,
            "sites": {str(k): v for k, v in sites.items()}}


# --- 3. CPython: dict rows and strings -------------------------------------------------------

def coverage_figures(out: Path) -> dict:
    from objtier.analysis.coverage import coverage
    from objtier.trace import open_trace

    c = coverage(open_trace(out))
    figures = {"footprint_mib": c.footprint_bytes / MIB, "objects_mib": c.covered_bytes / MIB,
               "objects_share": c.share, "sites_mib": (c.sites_bytes or 0) / MIB,
               "objects_and_sites_share": c.with_sites_share,
               "arenas_mib": (c.watched_sites_bytes or 0) / MIB}
    # the pages the pageout sampler arms: tracked objects and the watched sites' arenas (the
    # second coverage line of `record`)
    arenas = min(c.watched_sites_bytes or 0, c.outside_bytes or 0)
    figures["sampler_share"] = (c.covered_bytes + arenas) / c.footprint_bytes
    return figures


PY_ATTEMPTS = 3


def python_run(args: argparse.Namespace, out: Path) -> dict:
    """One recording that watched both sites: a recording whose learned sites are not the item
    arrays and the strings is counted in `learning_misses` and made again."""
    misses = []
    for _ in range(PY_ATTEMPTS):
        try:
            figures = python_once(args, out)
        except SiteMiss as miss:
            misses.append(str(miss))
            print(f"  python: {miss}; recorded again", flush=True)
            continue
        figures["learning_misses"] = misses
        return figures
    raise SystemExit(f"site_dicts.py: {PY_ATTEMPTS} recordings without both sites watched")


class SiteMiss(Exception):
    pass


def python_once(args: argparse.Namespace, out: Path) -> dict:
    command = [args.python, DICTS_PY, args.py_rows, args.py_rounds]
    record(out, command, "-q", "--sites", "2")
    sites, rows = {}, watched_sites(out)
    for row in rows:
        # the item arrays are 800 B blocks, the strings 1024 characters and a header
        name = "items" if row["mean_size"] == 800 else \
            "strings" if 1024 < row["mean_size"] < 1100 else None
        if name and (name not in sites or row["est_peak_bytes"] > sites[name]["est_peak_mib"]
                     * MIB):
            sites[name] = site_figures(row)
    if set(sites) != {"items", "strings"}:
        raise SiteMiss("watched sites " + "; ".join(
            f"{r['label'][:60]} ({r['mean_size']:.0f} B)" for r in rows)
            + ": not the items and the strings")
    figures = {"sites": sites, "coverage": coverage_figures(out)}
    plain_out = out.with_name(out.name + "-nosites")
    record(plain_out, command, "-q")
    figures["footprint_without_sites_mib"] = coverage_figures(plain_out)["footprint_mib"]
    shutil.rmtree(plain_out, ignore_errors=True)
    return figures


# --- results ---------------------------------------------------------------------------------

def med(values) -> float:
    values = [v for v in values if v is not None and not (isinstance(v, float) and np.isnan(v))]
    return statistics.median(values) if values else float("nan")


def site_medians(runs: list[dict], names) -> dict:
    return {str(n): {key: med([r[str(n)][key] for r in runs if str(n) in r])
                     for key in ("est_touches", "touches_per_mib", "touch_rate", "armed_share",
                                 "arena_share", "region_samples", "est_peak_mib")}
            for n in names}


def results_hotcold(runs: list[dict], loads: list[float], command: str, args) -> dict:
    m = site_medians(runs, ("hot", "cold"))
    hot, cold = m["hot"], m["cold"]
    above = sum(r["hot"]["est_touches"] > r["cold"]["est_touches"] for r in runs)
    return bench_results.make(
        "site_accuracy", "prediction",
        title=f"watched sites: a hot and a cold site of {int(args.rows) // 1000}k × 400 B rows "
              "(watch_program.c), estimated touches",
        kind=KIND.split(" vs")[0], command=command,
        figure=f"estimated touches hot {hot['est_touches']:,.0f} vs cold "
               f"{cold['est_touches']:,.0f}; raw samples {hot['region_samples']:.0f} vs "
               f"{cold['region_samples']:.0f}",
        finding=f"hot above cold in {above} of {len(runs)} recordings, by "
                f"×{hot['est_touches'] / max(cold['est_touches'], 1):,.0f} at the median",
        medians=m, raw={"runs": runs, "loads": loads,
                        "program": f"watch_program {args.rows} {args.passes}"},
        load_=f"load {bench_results.span(loads)}")


def results_maps(runs: list[dict], exact: dict, loads: list[float], command: str, args) -> dict:
    rhos = [r["spearman"] for r in runs]
    m = site_medians([r["sites"] for r in runs], range(len(LOOKUPS)))
    right = sum(r["order_by_estimate"][:1] == [0] and r["order_by_estimate"][-1:] == [5]
                for r in runs)
    return bench_results.make(
        "site_accuracy", "prediction",
        title="watched sites: six std::map sites of graded lookups, touches per byte vs exact "
              "loads+stores (objtier c++ trace)",
        kind=KIND, command=command,
        figure="Spearman " + ", ".join(f"{x:.2f}" for x in rhos) + f" (median {med(rhos):.2f})",
        finding=f"coldest and hottest ranked right in {right} of {len(runs)} recordings",
        goal="Spearman ≥ 0.9",
        medians={"spearman": med(rhos), "sites": m},
        raw={"runs": runs, "exact": {str(k): v for k, v in exact.items()}, "loads": loads,
             "program": f"site_maps {args.map_rounds} (g++ -O2 -g); exact: objtier c++ -O2, "
                        f"{args.exact_rounds} rounds",
             "lookups_thousands_per_round": list(LOOKUPS)},
        load_=f"load {bench_results.span(loads)}")


def results_python(runs: list[dict], loads: list[float], command: str, args) -> dict:
    m = site_medians([r["sites"] for r in runs], ("items", "strings"))
    cov = {k: med([r["coverage"][k] for r in runs]) for k in runs[0]["coverage"]}
    cov["footprint_without_sites_mib"] = med([r["footprint_without_sites_mib"] for r in runs])
    misses = sum(len(r["learning_misses"]) for r in runs)
    missed = f"; {misses} more recording(s) learned other sites" if misses else ""
    return bench_results.make(
        "site_accuracy", "prediction",
        title="watched sites: python3.11, dict rows' 800 B item arrays vs 1 KiB strings, "
              "touches per MiB and coverage",
        kind=KIND.split(" vs")[0], command=command,
        figure=f"touches/MiB items {m['items']['touches_per_mib']:,.0f} vs strings "
               f"{m['strings']['touches_per_mib']:,.0f}; objects {cov['objects_share']:.1%}, "
               f"with sites {cov['objects_and_sites_share']:.1%} of "
               f"{cov['footprint_mib']:.1f} MiB",
        finding=f"sampler's pages cover {cov['sampler_share']:.0%} of the footprint, not "
                f"{cov['objects_share']:.0%}; footprint {cov['footprint_without_sites_mib']:.1f}"
                f" MiB without arenas{missed}",
        medians={"sites": m, "coverage": cov, "learning_misses": misses},
        raw={"runs": runs, "loads": loads,
             "program": f"{args.python} bench/site_dicts.py {args.py_rows} {args.py_rounds}"},
        load_=f"load {bench_results.span(loads)}")


def without_keep(argv: list[str]) -> list[str]:
    """argv less --keep DIR (where the recordings go does not change them)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--keep":
            skip = True
        elif not arg.startswith("--keep="):
            out.append(arg)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=",".join(PARTS), help="hotcold,maps,python")
    parser.add_argument("--rows", default="60000", help="watch_program rows per site")
    parser.add_argument("--passes", default="3000", help="watch_program passes over hot rows")
    parser.add_argument("--map-rounds", default="60")
    parser.add_argument("--exact-rounds", default="20")
    parser.add_argument("--python", default="/usr/bin/python3.11")
    parser.add_argument("--py-rows", default="40000")
    parser.add_argument("--py-rounds", default="1000")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="keep the builds and recordings in DIR")
    bench_results.add_arguments(parser)
    args = parser.parse_args()
    parts = [p for p in args.only.split(",") if p]
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise SystemExit(f"site_accuracy: --only {args.only}: expected some of "
                         f"{','.join(PARTS)}")
    if args.repeats < 1:
        raise SystemExit("site_accuracy: --repeats must be at least 1")
    for value in (args.rows, args.passes, args.map_rounds, args.exact_rounds, args.py_rows,
                  args.py_rounds):
        if not value.isdigit() or int(value) < 1:
            raise SystemExit(f"site_accuracy: {value}: expected a whole number above 0")
    if os.geteuid() != 0:
        print("site_accuracy: needs root (the pageout sampler's temporary swap device)",
              file=sys.stderr)
        return 2
    if "python" in parts and not Path(args.python).exists():
        print(f"site_accuracy: --python {args.python}: no such file", file=sys.stderr)
        return 2
    command = bench_results.script_command(without_keep(sys.argv[1:]), "bench/site_accuracy.py")
    with tempfile.TemporaryDirectory(prefix="objtier-sites-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        try:
            return measure(args, parts, work, command)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130


def measure(args, parts: list[str], work: Path, command: str) -> int:
    exes = build(work, parts)
    exact = None
    if "maps" in parts:   # first, alone: the exact counts do not depend on the load
        exact = exact_maps(exes["maps-exact"], int(args.exact_rounds), work / "maps-exact.otr")
        print("maps, exact (objtier c++, --sampler trace --min-size 1, "
              f"{args.exact_rounds} rounds): loads+stores per byte "
              + ", ".join(f"map {k} {m['accesses_per_byte']:.2f}" for k, m in exact.items()),
              flush=True)
    runs: dict[str, list] = {p: [] for p in parts}
    loads: dict[str, list] = {p: [] for p in parts}
    for i in range(args.repeats):
        for part in parts:
            loads[part].append(loadavg())
            out = work / f"{part}{i}.otr"
            if part == "hotcold":
                r = hotcold_run(exes["hotcold"], args, out)
                print(f"[{i + 1}] hotcold (load {loads[part][-1]:.1f}): est touches hot "
                      f"{r['hot']['est_touches']:,.0f} vs cold {r['cold']['est_touches']:,.0f}; "
                      f"samples {r['hot']['region_samples']} vs {r['cold']['region_samples']}",
                      flush=True)
            elif part == "maps":
                r = maps_run(exes["maps"], args, out, exact)
                print(f"[{i + 1}] maps (load {loads[part][-1]:.1f}): Spearman "
                      f"{r['spearman']:.2f}; touches per byte " + ", ".join(
                          f"map {k} {s['touches_per_byte']:.4f}" for k, s in
                          sorted(r["sites"].items())), flush=True)
            else:
                r = python_run(args, out)
                c = r["coverage"]
                print(f"[{i + 1}] python (load {loads[part][-1]:.1f}): touches per MiB items "
                      f"{r['sites']['items']['touches_per_mib']:,.0f} vs strings "
                      f"{r['sites']['strings']['touches_per_mib']:,.0f}; objects "
                      f"{c['objects_mib']:.1f} MiB ({c['objects_share']:.1%}), sites "
                      f"{c['sites_mib']:.1f} MiB, of {c['footprint_mib']:.1f} MiB "
                      f"({r['footprint_without_sites_mib']:.1f} without --sites); sampler's "
                      f"pages {c['sampler_share']:.1%}", flush=True)
            runs[part].append(r)
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)
    for part in parts:
        end = loads[part] + [loadavg()]
        if part == "hotcold":
            build_record = lambda: results_hotcold(runs[part], end, command, args)  # noqa: E731
        elif part == "maps":
            build_record = lambda: results_maps(runs[part], exact, end, command, args)  # noqa: E731
        else:
            build_record = lambda: results_python(runs[part], end, command, args)  # noqa: E731
        bench_results.save(args, build_record, tag=part)
    return 0


if __name__ == "__main__":
    sys.exit(main())
