#!/usr/bin/env python3
"""The DAPHICX seed's experiment (speedup and swap-out reduction under a memory shortage of
5-30 % of the working set) on free programs of the kinds of its SPEC CPU2006 programs.

    sudo .venv/bin/python bench/seeds/daphicx.py [--shortage 5,15,30] [--repeat 3] [NAME...]

SPEC CPU2006 is not free; each substitute below is a Debian package of the same kind, named as
a substitute (docs/seeds.md "DAPHICX"):

  speech   482.sphinx3  speech recognition   pocketsphinx_continuous (CMU Sphinx, Debian's
                                             pocketsphinx + pocketsphinx-en-us) on speech that
                                             espeak-ng synthesizes from a fixed text
  netflow  429.mcf      min-cost network flow glpsol --mincost (GLPK's simplex) on a generated
                                             DIMACS min-cost-flow instance
  chess    458.sjeng    game-tree search     stockfish bench (64 MiB hash, 1 thread, depth 8)
  xz       401.bzip2    compression          xz -6 of a generated text

The inputs are generated here (fixed seeds) into build/seeds-data/daphicx/. For each program
and shortage S, `objtier compare --tier swap --local (100-S)% --repeat N`: the kernel's reclaim
vs objtier's object plan (which, like DAPHICX, mlocks the important objects), real, on the swap
tier (zram). Writes bench/seeds/results/daphicx.json and daphicx.csv; comparisons go to
build/seeds-runs/daphicx/ (git-ignored). Needs root.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OBJTIER = ROOT / ".venv" / "bin" / "objtier"
MODEL = Path("/usr/share/pocketsphinx/model/en-us")

# the paper's program, its kind, the Debian packages the substitute needs
PROGRAMS = {
    "speech": ("482.sphinx3", "speech recognition", ["pocketsphinx", "pocketsphinx-en-us",
                                                      "espeak-ng"]),
    "netflow": ("429.mcf", "min-cost network flow (simplex)", ["glpk-utils"]),
    "chess": ("458.sjeng", "game-tree search", ["stockfish"]),
    "xz": ("401.bzip2", "compression", ["xz-utils"]),
}

WORDS = ("memory object page swap kernel reclaim program graph search tree node edge flow "
         "network cost time fast slow tier place plan lock hot cold sample record run").split()


def fail(msg: str) -> None:
    print(f"daphicx.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load() -> float:
    return os.getloadavg()[0]


def text(n_words: int, seed: int, vocabulary: int = 0) -> str:
    """n_words of text: from WORDS, or (vocabulary > 0) from that many made-up words drawn
    with Zipf-like frequencies, which compresses about as natural text does."""
    rng = random.Random(seed)
    words = WORDS
    weights = None
    if vocabulary:
        words = ["".join(rng.choice("etaoinshrdlucmfwypvbgkjqxz"[:rng.randint(8, 26)])
                         for _ in range(rng.randint(2, 10))) for _ in range(vocabulary)]
        weights = [1.0 / (i + 1) for i in range(vocabulary)]
    lines, line = [], []
    for w in rng.choices(words, weights=weights, k=n_words):
        line.append(w)
        if len(line) == 12:
            lines.append(" ".join(line) + ".")
            line = []
    return "\n".join(lines) + "\n"


def dimacs_mincost(path: Path, nodes: int, arcs_per_node: int, seed: int) -> None:
    """A feasible min-cost-flow instance: a ring (so that every supply can reach every
    demand) plus random arcs with random costs and capacities; supplies sum to zero."""
    rng = random.Random(seed)
    arcs = [(i, i % nodes + 1, 1000, 50) for i in range(1, nodes + 1)]
    for _ in range(nodes * arcs_per_node):
        a, b = rng.randint(1, nodes), rng.randint(1, nodes)
        if a != b:
            arcs.append((a, b, rng.randint(1, 200), rng.randint(1, 100)))
    supply = [0] * (nodes + 1)
    for _ in range(nodes // 10):
        s, t = rng.randint(1, nodes), rng.randint(1, nodes)
        f = rng.randint(1, 20)
        supply[s] += f
        supply[t] -= f
    with open(path, "w") as f:
        f.write(f"p min {nodes} {len(arcs)}\n")
        for i in range(1, nodes + 1):
            if supply[i]:
                f.write(f"n {i} {supply[i]}\n")
        for a, b, cap, cost in arcs:
            f.write(f"a {a} {b} 0 {cap} {cost}\n")


def prepare(name: str, data: Path) -> list[str]:
    """Inputs for program `name` (made once) and its command line."""
    data.mkdir(parents=True, exist_ok=True)
    if name == "speech":
        wav = data / "speech.wav"
        if not wav.exists():
            (data / "speech.txt").write_text(text(12, 1))
            subprocess.run(["espeak-ng", "-s", "170", "-w", str(wav), "-f",
                            str(data / "speech.txt")], check=True, capture_output=True)
        return ["pocketsphinx_continuous", "-infile", str(wav), "-samprate", "22050",
                "-nfft", "1024", "-hmm", str(MODEL / "en-us"), "-lm",
                str(MODEL / "en-us.lm.bin"), "-dict", str(MODEL / "cmudict-en-us.dict"),
                "-logfn", "/dev/null"]
    if name == "netflow":
        net = data / "mincost.min"
        if not net.exists():
            dimacs_mincost(net, 6000, 5, 2)
        return ["glpsol", "--mincost", str(net), "--simplex", "-o", "/dev/null"]
    if name == "chess":
        exe = shutil.which("stockfish") or "/usr/games/stockfish"
        return [exe, "bench", "64", "1", "8", "default", "depth"]
    if name == "xz":
        src = data / "text.txt"
        if not src.exists():
            src.write_text(text(1_200_000, 3, vocabulary=50_000))
        return ["sh", "-c", f"exec xz -6 -T1 -c {src} > /dev/null"]
    raise KeyError(name)


def compare(name: str, cmd: list[str], runs: Path, local: int, repeat: int) -> dict:
    out = runs / f"{name}-{local}"
    log = runs / f"{name}-{local}.compare.log"
    before = load()
    t0 = time.monotonic()
    with open(log, "w") as f:
        proc = subprocess.run([str(OBJTIER), "compare", "--tier", "swap", "--local",
                               f"{local}%", "--repeat", str(repeat), "-o", str(out), "-f",
                               "-q", "--", *cmd], stdout=f, stderr=subprocess.STDOUT)
    wall = time.monotonic() - t0
    command = " ".join(["objtier", "compare", "--tier", "swap", "--local", f"{local}%",
                        "--repeat", str(repeat), "--", *cmd])
    if proc.returncode != 0 or not (out / "summary.json").exists():
        tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
        return {"error": f"compare exit {proc.returncode}: {' '.join(tail)}",
                "command": command, "load": before}
    s = json.loads((out / "summary.json").read_text())
    med = s["medians"]
    keys = ("runs", "finished", "oom_killed", "wall_s", "pswpout", "pswpin",
            "memcg_refault_anon", "major_faults", "locked_bytes")
    return {"local": local, "shortage": 100 - local, "repeat": repeat,
            "footprint_bytes": s["unlimited"].get("footprint_bytes"),
            "unlimited_wall_s": s["unlimited"].get("wall_s"),
            "baseline": {k: med.get("baseline", {}).get(k) for k in keys},
            "objtier": {k: med.get("objtier", {}).get(k) for k in keys},
            "ratios": s.get("ratios"), "withheld": s.get("ratios_withheld"),
            "plan": {k: (s.get("plan") or {}).get(k) for k in ("objects", "fast_objects",
                                                                 "split_objects",
                                                                 "fast_bytes")},
            "coverage": s.get("coverage"),
            "spare_reclaim": {k: (s.get("spare_reclaim") or {}).get(k) for k in ("used", "why")},
            "command": command, "compare_wall_s": wall,
            "load_before": before, "load_after": load()}


def num(x, spec: str = ".2f") -> str:
    return "–" if x is None else format(x, spec)


def table(res: dict) -> str:
    """docs/seeds.md's DAPHICX table (markdown) from daphicx.json."""
    out = ["| substitute (for) | shortage | footprint | kernel [s] | objtier [s] | speedup | "
           "swap-out cut (system-wide) | swap-in cut (cgroup) | locked | spare-CPU reclaim | "
           "finished k/o | load |", "|" + "---|" * 12]
    for key, r in sorted(res.get("runs", {}).items(),
                         key=lambda kv: (kv[0].rsplit("-", 1)[0], int(kv[0].rsplit("-", 1)[1]))):
        n = key.rsplit("-", 1)[0]
        who = f"{n} ({PROGRAMS[n][0]})"
        if "error" in r:
            out.append(f"| {who} | {key.rsplit('-', 1)[1]} % | | | | {r['error']} | | | | | | "
                       f"{r['load']:.1f} |")
            continue
        ra = r.get("ratios") or {}
        b, o = r["baseline"], r["objtier"]
        cut = (b["memcg_refault_anon"] / o["memcg_refault_anon"]
               if b.get("memcg_refault_anon") and o.get("memcg_refault_anon") else None)
        out.append(f"| {who} | {r['shortage']} % | {(r['footprint_bytes'] or 0) / 2**20:.0f} MiB"
                   f" | {num(b['wall_s'])} | {num(o['wall_s'])} | {num(ra.get('speedup'))}× | "
                   f"{num(ra.get('swapout_reduction'))}× | {num(cut)}× | "
                   f"{(r['plan']['fast_bytes'] or 0) / 2**20:.0f} MiB | "
                   f"{'yes' if (r.get('spare_reclaim') or {}).get('used') else 'no'} | "
                   f"{b['finished']}/{b['runs']}, {o['finished']}/{o['runs']} | "
                   f"{r['load_before']:.0f}–{r['load_after']:.0f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help=f"programs (default all: {', '.join(PROGRAMS)})")
    ap.add_argument("--shortage", default="5,15,30", help="memory shortage, %% of footprint")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=ROOT / "build" / "seeds-data" / "daphicx")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "seeds" / "results")
    ap.add_argument("--runs", type=Path, default=ROOT / "build" / "seeds-runs" / "daphicx")
    ap.add_argument("--prepare-only", action="store_true", help="make the inputs and stop")
    ap.add_argument("--table", action="store_true",
                    help="print the markdown table of the results and stop")
    args = ap.parse_args()
    if args.table:
        path = args.out / "daphicx.json"
        if not path.exists():
            fail(f"no results at {path}")
        print(table(json.loads(path.read_text())))
        return
    names = args.names or list(PROGRAMS)
    for n in names:
        if n not in PROGRAMS:
            fail(f"unknown program {n} (have {', '.join(PROGRAMS)})")
    try:
        shortages = [int(x) for x in args.shortage.split(",") if x]
    except ValueError:
        fail(f"--shortage wants percentages like 5,15,30, not {args.shortage}")
    if any(not 0 <= s < 100 for s in shortages):
        fail("--shortage values must be 0-99")
    cmds = {}
    for n in names:
        try:
            cmds[n] = prepare(n, args.data)
        except (OSError, subprocess.CalledProcessError) as e:
            fail(f"{n}: cannot prepare its input ({e}); apt-get install "
                 f"{' '.join(PROGRAMS[n][2])}")
        if not shutil.which(cmds[n][0]):
            fail(f"{n}: {cmds[n][0]} not found; apt-get install {' '.join(PROGRAMS[n][2])}")
    if args.prepare_only:
        for n, c in cmds.items():
            print(f"{n}: {' '.join(c)}")
        return
    if os.geteuid() != 0:
        fail("needs root (compare's memory cgroup and zram swap)")
    args.runs.mkdir(mode=0o700, parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "daphicx.json"
    res = json.loads(path.read_text()) if path.exists() else {}
    res.setdefault("runs", {})
    res["machine"] = {"host": platform.node(), "kernel": platform.release(),
                      "cpus": os.cpu_count()}
    res["programs"] = {n: {"substitutes": PROGRAMS[n][0], "kind": PROGRAMS[n][1],
                           "packages": PROGRAMS[n][2], "command": " ".join(cmds[n])}
                       for n in names}
    for short in shortages:
        for n in names:
            print(f"daphicx.py: compare {n} at {short}% shortage (load {load():.1f})",
                  file=sys.stderr)
            r = compare(n, cmds[n], args.runs, 100 - short, args.repeat)
            r["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            res["runs"][f"{n}-{short}"] = r
            path.write_text(json.dumps(res, indent=1))
    with open(args.out / "daphicx.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["program", "substitutes", "shortage_pct", "footprint_mib", "kernel_s",
                    "objtier_s", "speedup", "swapout_cut_systemwide", "swapin_cut_cgroup",
                    "kernel_ok",
                    "objtier_ok", "load_before", "load_after", "date"])
        for key, r in res["runs"].items():
            n = key.rsplit("-", 1)[0]
            if "error" in r:
                w.writerow([n, PROGRAMS[n][0], key.rsplit("-", 1)[1], "", "", "", "", "", "",
                            "", "", r["load"], "", r.get("date")])
                continue
            ra = r["ratios"] or {}
            b, o = r["baseline"], r["objtier"]
            cut = (b["memcg_refault_anon"] / o["memcg_refault_anon"]
                   if b.get("memcg_refault_anon") and o.get("memcg_refault_anon") else None)
            w.writerow([n, PROGRAMS[n][0], r["shortage"], (r["footprint_bytes"] or 0) / 2**20,
                        r["baseline"]["wall_s"], r["objtier"]["wall_s"], ra.get("speedup"),
                        ra.get("swapout_reduction"), cut,
                        f"{r['baseline']['finished']}/{r['baseline']['runs']}",
                        f"{r['objtier']['finished']}/{r['objtier']['runs']}",
                        r["load_before"], r["load_after"], r["date"]])
    print(f"daphicx.py: {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
