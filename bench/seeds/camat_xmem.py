#!/usr/bin/env python3
"""Xmem(X %) of the C-AMAT seed (Lu, Sun et al., RAN on Argonne's Cooley) on the seed's own
programs, and its K-means false-sharing study on Rodinia's K-means, with objtier's commands.

    .venv/bin/python bench/seeds/camat_xmem.py real   [--repeat 3] [--timeout 60] [--only ...]
    .venv/bin/python bench/seeds/camat_xmem.py sim    [--only ...]
    .venv/bin/python bench/seeds/camat_xmem.py kmeans [--repeat 5] [--points 60000]

real:   `objtier sweep --knob local=100,75,50,25` (memory cgroup at X % of the footprint, zram
        behind it; root) on miniFE, Graph500 (omp-csr) and hpcc, whose one run gives DGEMM
        (StarDGEMM_Gflops) and GUPS (StarRandomAccess_GUPs) through HPCC_SUMMARY_LOG. Slowdown
        Xmem(X) SLD = the level's median over the 100 % level's median (time, or FoM for
        the hpcc tests). Real.
sim:    the same programs built with `objtier cc` (Graph500 from its sources; miniFE, C++,
        does not link under `objtier c++` here (docs/seeds.md); DGEMM and GUPS: hpcc's kernels need its MPI harness, so the project's
        bench/gemm.c and workloads/gups stand in, named as such), recorded once by
        `objtier camat -- CMD` (windows over the whole run), then `objtier camat RUN
        --local X%`. Slowdown = L1 C-AMAT(X) / L1 C-AMAT(Lmem): memory-active cycles, no
        compute. Simulated. Every level's terms (H, C_H, MR, pMR, pAMP, C_M, kappa, C-AMAT).
kmeans: Rodinia's kmeans_openmp as built by bench/seeds/build.sh and a scratch copy with
        partial_new_centers_len padded to one 64-byte line per thread (the seed's Fig. 9
        fix): real 2-thread runs under `objtier sweep --knob local=100,75,25` (the seed's
        Lmem / Xmem(75) / Xmem(25)), and `objtier camat --regions` of both (false-sharing
        misses, L1 C-AMAT per function), simulated.
Results: bench/seeds/results/camat_{real,sim,kmeans}.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OBJTIER = REPO / ".venv" / "bin" / "objtier"
SEEDS = REPO / "build" / "seeds"
RESULTS = REPO / "bench" / "seeds" / "results"
ENV = ["env", "OMP_NUM_THREADS=2", "OMP_WAIT_POLICY=passive"]
LEVELS = [100.0, 75.0, 50.0, 25.0]
HPCC_KEYS = {"dgemm": "StarDGEMM_Gflops", "gups": "StarRandomAccess_GUPs",
             "stream": "StarSTREAM_Triad"}
# The seed's Fig. 4 as its text states it: Xmem(25 %) slowdown ranges over thread counts
# (1..16 threads, RAN on Cooley); 50 % and 75 % are only drawn, not given as numbers.
PAPER_X25 = {"minife": (3.3, 4.9), "dgemm": (2.6, 9.1), "graph500": (10.7, 17.5),
             "gups": (29.5, 86.8)}
PAPER_SIZE = {"minife": "32 GB", "dgemm": "23 GB", "graph500": "17 GB", "gups": "16 GB"}
STANDIN = {"gups-standin": "gups", "dgemm-standin": "dgemm"}


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's usage block is not one line
        fail(message)


def fail(message: str) -> None:
    print(f"camat_xmem.py: {message}", file=sys.stderr)
    raise SystemExit(2)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def write(name: str, doc: dict, md: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (RESULTS / f"{name}.md").write_text(md)
    print(md)


def need(path: Path, what: str) -> Path:
    if not path.exists():
        fail(f"{what}: no {path}; run bench/seeds/build.sh first")
    return path


def sweep(cmd: list[str], out: Path, levels: str, repeat: int, timeout: float,
          fom: list[str]) -> dict:
    """One `objtier sweep --knob local=LEVELS` run; its sweep.json."""
    args = [str(OBJTIER), "sweep", "--knob", f"local={levels}", "--repeat", str(repeat),
            "--timeout", f"{timeout:g}", *fom, "-o", str(out), "-f", "--", *cmd]
    print(" ".join(args), flush=True)
    subprocess.run(args)
    if not (out / "sweep.json").exists():
        fail(f"objtier sweep wrote no {out / 'sweep.json'}")
    return json.loads((out / "sweep.json").read_text())


def runs_by_level(out: Path) -> dict[float, list[dict]]:
    import csv

    rows: dict[float, list[dict]] = {}
    with open(out / "sweep.csv") as f:
        for r in csv.DictReader(f):
            extra = json.loads(r["extra"] or "{}")
            rows.setdefault(float(r["level"]), []).append({**r, **extra})
    return rows


def slowdowns(per_level: dict[float, list[float | None]], higher_is_better: bool) -> dict:
    """Median per level (a failed run counts as the worst value) and Xmem SLD against 100 %."""
    worst = 0.0 if higher_is_better else float("inf")
    med = {lv: statistics.median([worst if v is None else v for v in vals])
           for lv, vals in per_level.items() if vals}
    ref = med.get(100.0)
    out = {}
    for lv, m in med.items():
        if ref is None or m in (0.0, float("inf")):
            sld = None
        else:
            sld = ref / m if higher_is_better else m / ref
        out[lv] = {"median": m, "runs": len(per_level[lv]),
                   "failed": sum(v is None for v in per_level[lv]), "slowdown": sld}
    return out


def real(args: argparse.Namespace) -> None:
    base = Path(args.output or "/tmp/seeds-camat-real")
    levels = ",".join(f"{x:g}" for x in LEVELS)
    log = base.parent / f"{base.name}.hpcc-summary.log"
    cmds = {
        "minife": [*ENV, str(need(SEEDS / "minife" / "minife-run", "minife")), "-nx", "45",
                   "-ny", "45", "-nz", "45"],
        "graph500": [*ENV, str(need(SEEDS / "graph500" / "omp-csr", "graph500")), "-s", "15",
                     "-e", "16"],
        "hpcc": [*ENV, f"HPCC_SUMMARY_LOG={log}", str(need(SEEDS / "hpcc" / "hpcc-run",
                                                            "hpcc")), "1000", "1"],
    }
    gemm = base / "gemm"
    if not gemm.exists():
        base.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gcc", "-O2", "-o", str(gemm), str(REPO / "bench" / "gemm.c")],
                       check=True)
    # Stand-ins where hpcc's own tests stay resident (docs/seeds.md): the project's GUPS
    # (HPCC RandomAccess) and naive GEMM, each alone in the cgroup.
    cmds["gups-standin"] = [*ENV, str(REPO / "src" / "objtier" / "_native" / "bin" / "gups"),
                            "-l", "22", "-u", "1000000", "-t", "2"]
    cmds["dgemm-standin"] = [str(gemm), "-n", "1024"]
    only = args.only.split(",") if args.only else list(cmds)
    if args.report_only:  # every program swept earlier into this scratch directory
        only = [n for n in cmds if (base / n / "sweep.json").exists()]
    doc = {"kind": "real", "knob": f"local={levels}", "repeat": args.repeat, "date": stamp(),
           "load_before": load(), "programs": {}}
    for name in only:
        if name not in cmds:
            fail(f"--only: unknown program {name!r} (real: {', '.join(cmds)})")
        out = base / name
        if args.report_only:
            sw = json.loads((out / "sweep.json").read_text())
        else:
            if name == "hpcc" and log.exists():
                log.unlink()
            sw = sweep(cmds[name], out, levels, args.repeat, args.timeout, ["--time"])
            (out / "loads.json").write_text(json.dumps({"load_after": load(),
                                                        "date": stamp()}) + "\n")
        when = json.loads((out / "loads.json").read_text()) if (out / "loads.json").exists() \
            else {"load_after": None, "date": None}
        rows = runs_by_level(out)
        fp = (sw.get("config") or {}).get("footprint_bytes")
        walls = {lv: [float(r["fom"]) if r["status"] == "ok" else None for r in rs]
                 for lv, rs in rows.items()}
        statuses = {lv: [r["status"] for r in rs] for lv, rs in rows.items()}
        bound = {lv: statistics.median([float(r["wall_s"]) for r in rs]) for lv, rs in rows.items()}
        swaps = {lv: statistics.median([int(r.get("swap_ins") or 0) for r in rs])
                 for lv, rs in rows.items()}
        entry = {"command": cmds[name], "footprint": fp, "wall": slowdowns(walls, False),
                 "swap_ins_median": swaps, "statuses": statuses, **when}
        ref = entry["wall"].get(100.0, {}).get("median")
        for lv, w in entry["wall"].items():  # most runs failed: wall time / Lmem, a bound
            if w["slowdown"] is None and ref and w["failed"] * 2 >= w["runs"]:
                w["slowdown_at_least"] = bound[lv] / ref
        if name == "hpcc":
            limits = {int(r["limit_bytes"]): lv for lv, rs in rows.items() for r in rs
                      if r.get("limit_bytes")}
            values: dict[str, dict[float, list[float | None]]] = {k: {} for k in HPCC_KEYS}
            seen: dict[float, int] = {}
            for line in log.read_text().splitlines() if log.exists() else []:
                kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
                lv = limits.get(int(kv["limit"])) if kv.get("limit", "-").isdigit() else None
                if lv is None:
                    continue  # the footprint run, without a limit
                seen[lv] = seen.get(lv, 0) + 1
                for k, key in HPCC_KEYS.items():
                    values[k].setdefault(lv, []).append(float(kv[key]) if key in kv else None)
            for lv, rs in rows.items():  # runs killed before hpcc wrote its summary
                for k in HPCC_KEYS:
                    values[k].setdefault(lv, []).extend([None] * (len(rs) - seen.get(lv, 0)))
            entry["tests"] = {k: slowdowns(v, True) for k, v in values.items()}
        doc["programs"][name] = entry
    doc["load_after"] = load()
    write("camat_real", doc, real_md(doc))


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _sld(w: dict) -> str:
    if w.get("slowdown") is not None:
        return _x(w["slowdown"])
    if w.get("slowdown_at_least") is not None:
        return f"≥ {w['slowdown_at_least']:.1f}x (bound)"
    return "-"


def _failed(e: dict, lv: float, s: dict) -> str:
    st = [x for x in e.get("statuses", {}).get(str(lv), e.get("statuses", {}).get(lv, []))
          if x != "ok"]
    if not st:
        return str(s.get(lv, {}).get("failed", "-"))
    return f"{len(st)} ({', '.join(sorted(set(st)))})"


def real_md(doc: dict) -> str:
    lines = [f"Xmem(X %) slowdowns, real: memory cgroup at X % of the footprint, zram swap "
             f"behind it ({doc['knob']}, {doc['repeat']} runs per level, 2 threads; "
             f"{doc['date']}, load {doc['load_before']} before / {doc['load_after']} after). "
             "Xmem SLD = median at X % / median at 100 % (time) or the inverse (FoM).", "",
             "| program | footprint | Xmem(75) | Xmem(50) | Xmem(25) | failed runs (75/50/25) "
             "| swap-ins at 25 % (median) | paper Xmem(25) | paper footprint |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for name, e in doc["programs"].items():
        fp = f"{e['footprint'] / 2**20:.0f} MiB" if e.get("footprint") else "-"
        e["wall"] = {float(k): v for k, v in e["wall"].items()}
        e["swap_ins_median"] = {float(k): v for k, v in e["swap_ins_median"].items()}
        for t in e.get("tests", {}).values():
            for k in list(t):
                t[float(k)] = t.pop(k)
        series = [(name, e["wall"])] if name != "hpcc" else \
            [(f"{k} (hpcc {HPCC_KEYS[k]})", e["tests"][k]) for k in HPCC_KEYS]
        for label, s in series:
            key = STANDIN.get(label.split()[0], label.split()[0])
            paper = PAPER_X25.get(key)
            rows.append(
                f"| {label} | {fp} | " + " | ".join(_sld(s.get(lv, {}))
                                                      for lv in (75.0, 50.0, 25.0)) +
                " | " + "/".join(_failed(e, lv, s) for lv in (75.0, 50.0, 25.0))
                + f" | {e['swap_ins_median'].get(25.0, '-')} | "
                + (f"{paper[0]}-{paper[1]}x" if paper else "-") + f" | {PAPER_SIZE.get(key, '-')} |")
    return "\n".join(lines + rows) + "\n"


# --- sim -------------------------------------------------------------------------------------

def cc(args: list[str], cwd: Path | None = None, cxx: bool = False) -> None:
    cmd = [str(OBJTIER), "c++" if cxx else "cc", *args]
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(cmd[:4])} ... failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")


def build_traced(work: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (command, what it is): the traced builds."""
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, tuple[list[str], str]] = {}
    # miniFE is C++: `objtier c++` (clang -finstrument-functions) cannot link it against
    # Debian 12's libstdc++ (an undefined always-inline std::string member), so no miniFE
    # recording; docs/seeds.md has the reproduction.
    g5 = need(SEEDS / "graph500" / "work", "graph500")
    exe = work / "omp-csr.traced"
    if not exe.exists():
        srcs = ["graph500.c", "options.c", "rmat.c", "kronecker.c", "verify.c", "prng.c",
                "xalloc.c", "timer.c", "omp-csr/omp-csr.c",
                *[f"generator/{s}" for s in ("splittable_mrg.c", "graph_generator.c",
                                             "make_graph.c", "utils.c")]]
        cc(["-O2", "-fopenmp", "-std=c99", "-I./generator", "-o", str(exe), *srcs, "-lm",
            "-lrt"], cwd=g5)
    out["graph500"] = ([str(exe), "-s", "14", "-e", "16"], "Graph500 omp-csr (seed's)")
    exe = work / "gemm.traced"
    if not exe.exists():
        cc(["-O2", "-fopenmp", "-o", str(exe), str(REPO / "bench" / "gemm.c"), "-lm"])
    out["dgemm"] = ([str(exe), "-n", "512"], "bench/gemm.c (stand-in for hpcc DGEMM)")
    exe = work / "gups.traced"
    if not exe.exists():
        cc(["-O2", "-fopenmp", "-o", str(exe), str(REPO / "workloads" / "gups" / "gups.c"),
            str(REPO / "workloads" / "common" / "wl.c"), "-lm"])
    out["gups"] = ([str(exe), "-l", "20", "-t", "2"], "workloads/gups (stand-in for hpcc GUPS)")
    return out


class CamatFailed(Exception):
    """`objtier camat` exited non-zero; the exception's text is its last stderr line."""


def main_guarded(mode) -> None:
    """A failed `objtier camat` that no mode handles is one line, not a traceback."""
    try:
        mode()
    except CamatFailed as error:
        fail(f"objtier camat: {error}")


def camat(target: list[str], out: Path, extra: list[str] = ()) -> dict:
    if out.exists():  # camat refuses an existing run.otr and has no --force
        shutil.rmtree(out)
    cmd = [str(OBJTIER), "camat", *extra, "-o", str(out), *target]
    print(" ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="2", OMP_WAIT_POLICY="passive"))
    if r.returncode != 0 or not (out / "camat.json").exists():
        raise CamatFailed((r.stderr.strip().splitlines() or ["?"])[-1])
    return json.loads((out / "camat.json").read_text())


def terms(doc: dict) -> list[dict]:
    keys = ("H", "C_H", "MR", "pMR", "pAMP", "C_M", "kappa", "camat")
    return [{"level": lv["level"], **{k: lv.get(k) for k in keys}} for lv in doc["levels"]]


def sim(args: argparse.Namespace) -> None:
    base = Path(args.output or "/tmp/seeds-camat-sim")
    progs = build_traced(base / "build")
    only = args.only.split(",") if args.only else list(progs)
    doc = {"kind": "simulated", "date": stamp(), "load_before": load(), "programs": {}}
    for name in only:
        if name not in progs:
            fail(f"--only: unknown program {name!r} (sim: {', '.join(progs)})")
        cmd, what = progs[name]
        try:
            lmem = camat(["--", *cmd], base / name / "lmem")
        except CamatFailed as error:  # the other programs go on
            print(f"camat_xmem.py: {name}: {error}", file=sys.stderr)
            doc["programs"][name] = {"program": what, "command": cmd, "error": str(error)}
            continue
        run = base / name / "lmem" / "run.otr"
        entry = {"program": what, "command": cmd, "coverage": lmem.get("coverage"),
                 "levels": {"Lmem": terms(lmem)}, "slowdown": {}}
        l1 = lmem["levels"][0]["camat"]
        for pct in (75, 50, 25):
            x = camat([str(run), "--local", f"{pct}%"], base / name / f"x{pct}")
            entry["levels"][f"Xmem({pct})"] = terms(x)
            entry["slowdown"][f"Xmem({pct})"] = x["levels"][0]["camat"] / l1 if l1 else None
        doc["programs"][name] = entry
    doc["load_after"] = load()
    write("camat_sim", doc, sim_md(doc))


def _f(v: float | None, nd: int = 2) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def sim_md(doc: dict) -> str:
    lines = [f"Xmem(X %) simulated: `objtier camat --local X%` (skylake preset, far level 9000 "
             f"cycles, one far fetch per core) on one recording per program; slowdown = L1 "
             f"C-AMAT(X) / L1 C-AMAT(Lmem) ({doc['date']}, load {doc['load_before']}).", "",
             "| program | Xmem(75) | Xmem(50) | Xmem(25) | paper Xmem(25), real |",
             "|---|---|---|---|---|"]
    for name, e in doc["programs"].items():
        p = PAPER_X25.get(name)
        if "error" in e:
            lines.append(f"| {e['program']} | not modelled: {e['error']} | | | "
                         f"{f'{p[0]}-{p[1]}x' if p else '-'} |")
            continue
        lines.append(f"| {e['program']} | " + " | ".join(_x(e["slowdown"].get(f"Xmem({x})"))
                                                      for x in (75, 50, 25)) +
                     f" | {f'{p[0]}-{p[1]}x' if p else '-'} |")
    lines += ["", "Terms per level (H / C_H / MR / pMR / pAMP / C_M / kappa / C-AMAT, cycles):",
              ""]
    for name, e in doc["programs"].items():
        if "error" in e:
            continue
        lines.append(f"- {name}:")
        for cfg, lvls in e["levels"].items():
            lines.append(f"  - {cfg}: " + "; ".join(
                f"{t['level']} " + "/".join(_f(t[k]) for k in ("H", "C_H", "MR", "pMR", "pAMP",
                                                               "C_M", "kappa", "camat"))
                for t in lvls))
    return "\n".join(lines) + "\n"


# --- kmeans ----------------------------------------------------------------------------------

PAD = [("calloc(nthreads*nclusters, sizeof(int))", "calloc(nthreads*(nclusters+16), sizeof(int))"),
       ("partial_new_centers_len[i-1]+nclusters;", "partial_new_centers_len[i-1]+nclusters+16;")]


def kmeans_builds(work: Path) -> dict[str, dict[str, Path]]:
    """{"original"|"padded": {"gcc": exe, "traced": exe}} from part of the seed build's tree."""
    src = need(SEEDS / "rodinia-kmeans" / "work" / "kmeans_openmp", "rodinia-kmeans")
    out: dict[str, dict[str, Path]] = {}
    for variant in ("original", "padded"):
        d = work / variant
        if d.exists():
            shutil.rmtree(d)
        shutil.copytree(src, d, ignore=shutil.ignore_patterns("*.o", "kmeans"))
        if variant == "padded":
            f = d / "kmeans_clustering.c"
            text = f.read_text()
            for old, new in PAD:
                if old not in text:
                    fail(f"kmeans_clustering.c has no {old!r}: not the Rodinia 3.1 source")
                text = text.replace(old, new)
            f.write_text(text)
        srcs = ["cluster.c", "getopt.c", "kmeans.c", "kmeans_clustering.c"]
        r = subprocess.run(["gcc", "-O2", "-fopenmp", "-o", "kmeans", *srcs, "-lm"], cwd=d,
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"gcc {variant} kmeans: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
        cc(["-O2", "-fopenmp", "-Wno-implicit-function-declaration", "-o", "kmeans.traced",
            *srcs, "-lm"], cwd=d)  # Rodinia calls read/close without <unistd.h>
        out[variant] = {"gcc": d / "kmeans", "traced": d / "kmeans.traced"}
    return out


def kmeans_input(path: Path, points: int, features: int = 34) -> None:
    """Rodinia's binary input (-b): int npoints, int nfeatures, then float features; points
    around 5 centres, fixed seed (the seed used a 23 GB KDD-like file)."""
    import numpy as np

    rng = np.random.default_rng(1)
    centres = rng.uniform(0, 10, (5, features)).astype(np.float32)
    data = centres[rng.integers(0, 5, points)] + rng.normal(0, 1.5, (points, features))
    with open(path, "wb") as f:
        np.array([points, features], dtype=np.int32).tofile(f)
        data.astype(np.float32).tofile(f)


def kmeans(args: argparse.Namespace) -> None:
    base = Path(args.output or "/tmp/seeds-camat-kmeans")
    builds = kmeans_builds(base / "build")
    big, small = base / f"in-{args.points}.bin", base / "in-small.bin"
    kmeans_input(big, args.points)
    kmeans_input(small, max(args.points // 20, 2000))
    doc = {"date": stamp(), "load_before": load(), "points": args.points, "threads": 2,
           "real": {}, "sim": {}}
    fom = ["--fom", r"Time for process: ([0-9.]+)", "--lower-is-better"]
    # Rodinia's getopt string is "i:k:t:b:n:?": -b takes an argument. -t: stop when fewer
    # than that many memberships change (the default 0.001 ran 500 iterations, 40 s, here).
    for variant, exe in builds.items():
        out = base / f"real-{variant}"
        if not (args.report_only and (out / "sweep.json").exists()):
            sweep([str(exe["gcc"]), "-b", "1", "-i", str(big), "-k", "5", "-n", "2",
                   "-t", "200"], out, "100,75,25", args.repeat, args.timeout, fom)
        rows = runs_by_level(out)
        times = {lv: [float(r["fom"]) if r["status"] == "ok" else None for r in rs]
                 for lv, rs in rows.items()}
        doc["real"][variant] = slowdowns(times, False)
    for variant, exe in builds.items():
        cmd = ["--regions", "--min-size", "64", "--", str(exe["traced"]), "-b", "1", "-i",
               str(small), "-k", "5", "-n", "2", "-t", "10"]
        try:
            lm = camat(cmd, base / f"sim-{variant}")
        except CamatFailed as error:  # keep the real figures
            print(f"camat_xmem.py: {variant}: {error}", file=sys.stderr)
            doc["sim"][variant] = {"error": str(error)}
            continue
        x25 = camat([str(base / f"sim-{variant}" / "run.otr"), "--local", "25%", "--regions"],
                    base / f"sim-{variant}-x25")
        doc["sim"][variant] = {
            "Lmem": {"l1_camat": lm["levels"][0]["camat"], "terms": terms(lm),
                     "false_sharing_misses": lm["counts"][0]["false_sharing_misses"],
                     "coherence_misses": lm["counts"][0]["coherence_misses"],
                     "regions": [{k: r.get(k) for k in ("region", "accesses", "l1_camat",
                                                        "false_sharing_misses",
                                                        "coherence_misses", "l1_active_share")}
                                 for r in lm.get("regions", [])[:6]]},
            "Xmem(25)": {"l1_camat": x25["levels"][0]["camat"], "terms": terms(x25)}}
    doc["load_after"] = load()
    write("camat_kmeans", doc, kmeans_md(doc))


def kmeans_md(doc: dict) -> str:
    lines = [f"Rodinia K-means, 2 threads, {doc['points']} points x 34 features (real), "
             f"{doc['date']}, load {doc['load_before']} before / {doc['load_after']} after.", "",
             "| variant | Lmem time (s, median) | Xmem(75) SLD | Xmem(25) SLD | runs per level |",
             "|---|---|---|---|---|"]
    for v, s in doc["real"].items():
        lines.append(f"| {v} | {_f(s.get(100.0, {}).get('median'), 3)} | "
                     f"{_x(s.get(75.0, {}).get('slowdown'))} | {_x(s.get(25.0, {}).get('slowdown'))}"
                     f" | {s.get(100.0, {}).get('runs', '-')} |")
    o, p = doc["real"].get("original", {}), doc["real"].get("padded", {})
    if o.get(100.0) and p.get(100.0):
        lines.append(f"\nPadding, Lmem: original / padded median time = "
                     f"{o[100.0]['median'] / p[100.0]['median']:.2f}x (real).")
    lines += ["", "Simulated (`objtier camat --regions`, small input):", "",
              "| variant | L1 false-sharing misses | L1 coherence misses | L1 C-AMAT Lmem | "
              "L1 C-AMAT Xmem(25) |", "|---|---|---|---|---|"]
    for v, s in doc["sim"].items():
        if "error" in s:
            lines.append(f"| {v} | not modelled: {s['error']} | | | |")
            continue
        lines.append(f"| {v} | {s['Lmem']['false_sharing_misses']} | "
                     f"{s['Lmem']['coherence_misses']} | {_f(s['Lmem']['l1_camat'])} | "
                     f"{_f(s['Xmem(25)']['l1_camat'])} |")
    for v, s in doc["sim"].items():
        if "error" in s:
            continue
        lines.append(f"\n{v}, regions (accesses, L1 C-AMAT, false-sharing misses): " + "; ".join(
            f"{r['region']} {r['accesses']}, {_f(r['l1_camat'])}, {r['false_sharing_misses']}"
            for r in s["Lmem"]["regions"]))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["real", "sim", "kmeans"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--only", help="comma-separated programs of the mode")
    p.add_argument("--points", type=int, default=60000, help="kmeans: points in the input")
    p.add_argument("-o", "--output", help="scratch directory (default /tmp/seeds-camat-MODE)")
    p.add_argument("--report-only", action="store_true",
                   help="real, kmeans: reuse the sweeps already in the scratch directory")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if args.repeat < 1:
        fail(f"--repeat {args.repeat}: must be at least 1")
    if args.timeout <= 0:
        fail(f"--timeout {args.timeout:g}: must be positive")
    if args.points < 1000:
        fail(f"--points {args.points}: at least 1000")
    if args.only is not None and not re.fullmatch(r"[a-z0-9-]+(,[a-z0-9-]+)*", args.only):
        fail(f"--only {args.only!r}: a comma-separated list of program names")
    if not OBJTIER.exists():
        fail(f"no {OBJTIER}; run make build first")
    mode = {"real": real, "sim": sim, "kmeans": kmeans}[args.mode]
    main_guarded(lambda: mode(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
