"""Prefetch replayed from a recorded fault sequence, on the real swap tier: does bringing in,
from the other CPU, the pages a recording says the program faults on next take swap-ins off
its path?

    .venv/bin/python bench/replay_prefetch.py [--local 50%] [--repeat 5] [--records 2]
        [--ahead 0,256,256+128] [--cpu 1] [--mechanism willneed|read] [--headroom KIB
        [--replay-reclaims]] [--unpinned] [-o bench-out/replay-prefetch] -- CMD [ARGS...]

Builds bench/replay_prefetch.c with cc (and the runtime's perf ring reader). One unlimited
run measures the footprint (as `objtier compare` does); then under one swap tier (memory
cgroup limited to --local of it, a new zram device behind it, the stat-flush reader in every
run as in compare's fair baseline) the program runs --records times with its faults
recorded (`record`: the kernel alone; the last recording is the one replayed, the others
show how far two runs' faults agree), then
--repeat times each, interleaved: `kernel` (the program alone) and `replay-A` for each A in
--ahead (the same, with the recording followed from CPU --cpu and the recorded major faults
among the next A entries brought in; `L+A`: among entries L to L + A after the position; 0:
followed only). Every run keeps the program to CPU 0 with address-space randomisation off,
and only the program is in the cgroup. Prints per arm the medians of wall time, the cgroup's
major faults and swap-ins, the program's CPU time and waits (voluntary context switches) and
the replayer's counts; writes results.json and the recordings to -o. With --headroom K a
`reclaim` arm runs too: the program alone, and a helper on --cpu that, whenever the cgroup's
charge comes within K/2 KiB of its limit, writes the limit less K KiB and then the limit again
(memory cgroup v1 reclaims in the writer until the charge fits: the kernel's own victims,
reclaimed on the helper's CPU). Real measurements on this machine; needs root and two CPUs.
An experiment: the runtime has no such mode.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

COUNTS = re.compile(r"replay_prefetch: ((?:faults|reclaims) .*)")
USAGE = re.compile(r"replay_prefetch: child (.*)")


def pairs(text: str) -> dict[str, float]:
    """`name value name value ...` as a dict of numbers."""
    words = text.replace(" of ", " total ").split()
    return {k: float(v) for k, v in zip(words[::2], words[1::2])}
BLOCK, SPAN, SHIFT, STEP, EVERY = 256, 640, 4000, 64, 10000


def agreement(a, b) -> list[float]:
    """How far two recordings' faults agree as sets: for a block of BLOCK faults of b every
    EVERY faults, the largest share of its pages that a window of SPAN entries of a holds,
    over windows starting up to SHIFT entries either side (by STEP). The order inside a few
    hundred faults differs from run to run; which pages fault around a point does not."""
    pa = [x & ~4095 for x in a.tolist()]
    pb = [x & ~4095 for x in b.tolist()]
    shares = []
    for start in range(0, len(pb) - BLOCK, EVERY):
        block = set(pb[start:start + BLOCK])
        best = 0.0
        for shift in range(-SHIFT, SHIFT + 1, STEP):
            lo = max(0, start + shift - (SPAN - BLOCK) // 2)
            if lo >= len(pa):
                break
            best = max(best, len(block & set(pa[lo:lo + SPAN])) / len(block))
        shares.append(round(best, 2))
    return shares


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", default="50%")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ahead", default="0,256,256+128",
                        help="recorded faults prefetched ahead, each A or L+A (the first L "
                             "after the position left to the program)")
    parser.add_argument("--mechanism", choices=("willneed", "read"), default="willneed",
                        help="how a page is brought in: MADV_WILLNEED (into the swap cache) "
                             "or a one-byte process_vm_readv (faulted in and mapped)")
    parser.add_argument("--cpu", type=int, default=1, help="the replayer's CPU (the "
                        "program's is 0)")
    parser.add_argument("--headroom", type=int, default=0,
                        help="KiB: also a `reclaim` arm, the program alone with a helper on "
                             "--cpu that makes the kernel reclaim this much below the limit "
                             "whenever the charge comes within half of it (0: no such arm)")
    parser.add_argument("--replay-reclaims", action="store_true",
                        help="the replay arms reclaim ahead by --headroom too")
    parser.add_argument("--unpinned", action="store_true",
                        help="keep neither the program nor the helper to a CPU (a program "
                             "with several threads; replay arms then make little sense)")
    parser.add_argument("--records", type=int, default=1,
                        help="recordings (the first is replayed; the others, kept in -o, "
                             "show how far two runs' faults agree)")
    parser.add_argument("--period", type=float, default=10.0, help="stat-flush reader [ms]")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("-o", "--output", default=str(REPO / "bench-out" / "replay-prefetch"))
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the program after --")
    if args.unpinned:
        args.cpu = -1
    if args.headroom < 0 or (args.replay_reclaims and not args.headroom):
        parser.error("--headroom must be at least 0, and above 0 with --replay-reclaims")
    if args.repeat < 0 or args.cpu not in (-1, 0, 1):
        parser.error("--repeat must be at least 0, --cpu 0 or 1")
    aheads = [a for a in args.ahead.split(",") if a]
    well_formed = all(re.fullmatch(r"\d+(\+\d+)?", a) for a in aheads)
    if (not aheads and not args.headroom) or not well_formed:
        parser.error("--ahead: a comma-separated list of A or L+A (entries); empty only "
                     "with --headroom")
    if (os.cpu_count() or 1) < 2:
        sys.exit("replay_prefetch: needs two CPUs")

    from objtier.experiments.compare_swap import _memcg_stats, measure_footprint
    from objtier.experiments.measure import run_measured
    from objtier import enforcement as enforce
    from objtier.tiers.statflush import StatFlushReader
    from objtier.tiers.swap import SwapTier

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    say = lambda text: print(f"replay_prefetch: {text}", file=sys.stderr, flush=True)  # noqa
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "replay_prefetch"
        core = REPO / "native" / "runtime" / "core"
        subprocess.run(["cc", "-O2", "-I", str(core), "-o", str(exe),
                        str(REPO / "bench" / "replay_prefetch.c"), str(core / "perf_ring.c"),
                        "-lpthread"], check=True)
        unlimited, footprint, _ = measure_footprint(command, say)
        local = enforce.parse_local(args.local, footprint)
        say(f"footprint {footprint >> 20} MiB, local {local / 2**20:.1f} MiB, unlimited "
            f"{unlimited.wall_s:.3f} s")
        seq = out / "faults.seq"
        rows = []

        def run(arm: str, launcher: list[str], tier, extra: dict | None = None) -> dict:
            env = {k: v for k, v in os.environ.items() if k != "REPLAY_HEADROOM_KB"}
            env.update(REPLAY_CGROUP=str(tier.cgroup.path), **(extra or {}))
            before = _memcg_stats(tier)
            with StatFlushReader(tier.cgroup.path, args.period):
                m = run_measured(arm, launcher + ["--", *command], env=env,
                                 timeout_s=args.timeout)
            after = _memcg_stats(tier)
            delta = {k: (after.get(k) or 0) - (before.get(k) or 0)
                     for k in ("pgmajfault", "workingset_refault_anon", "oom_kill")}
            found = COUNTS.search(m.stderr)
            row = {"arm": arm, "exit": m.returncode, "wall_s": round(m.wall_s, 3), **delta,
                   "counts": found.group(1) if found else ""}
            usage = USAGE.search(m.stderr)
            row["child"] = usage.group(1) if usage else ""
            say(json.dumps(row))
            return row

        prog = "-1" if args.unpinned else "0"
        with SwapTier(local, swap="zram") as tier:
            for i in range(1, args.records):
                rows.append(run("record", [str(exe), "record", prog,
                                           str(out / f"faults-{i + 1}.seq")], tier))
            rows.append(run("record", [str(exe), "record", prog, str(seq)], tier))
            say(f"sequence: {seq.stat().st_size // 8} faults")
            for _ in range(args.repeat):
                rows.append(run("kernel", [str(exe), "plain", prog], tier))
                if args.headroom:
                    rows.append(run("reclaim", [str(exe), "reclaim", prog, str(args.cpu)], tier,
                                    {"REPLAY_HEADROOM_KB": str(args.headroom)}))
                for a in aheads:
                    rows.append(run(f"replay-{a}", [str(exe), "replay", prog, str(seq), str(a),
                                                    str(args.cpu), args.mechanism], tier,
                                    {"REPLAY_HEADROOM_KB": str(args.headroom)}
                                    if args.replay_reclaims else None))
    import numpy as np

    first = np.fromfile(seq, dtype=np.uint64)
    agree = {}
    for i in range(1, args.records):
        other = np.fromfile(out / f"faults-{i + 1}.seq", dtype=np.uint64)
        agree[f"faults-{i + 1}"] = agreement(first, other)
        print(f"recording {i + 1}: share of a block's pages among the replayed recording's "
              f"faults near it, a block every {EVERY} faults: {agree[f'faults-{i + 1}']}")
    summary = {}
    for arm in ["kernel", "reclaim"] + [f"replay-{a}" for a in aheads]:
        mine = [r for r in rows if r["arm"] == arm]
        alive = [r for r in mine if r["exit"] == 0]
        if not mine:
            continue
        summary[arm]: dict = {
            "alive": f"{len(alive)}/{len(mine)}",
            "wall_s": statistics.median(r["wall_s"] for r in alive) if alive else None,
            "major_faults": statistics.median(r["pgmajfault"] for r in alive) if alive else None,
            "swap_ins": statistics.median(r["workingset_refault_anon"] for r in alive)
            if alive else None}
        for key in ("user_s", "sys_s", "voluntary"):
            got = [v for r in alive if r["child"]
                   if (v := pairs(r["child"]).get(key)) is not None]
            summary[arm]["child_" + key] = statistics.median(got) if got else None
        for key in ("faults", "matched", "advised", "calls", "advice_ms", "reclaims",
                    "reclaim_ms"):
            got = [v for r in alive if r["counts"]
                   if (v := pairs(r["counts"]).get(key)) is not None]
            if got:
                summary[arm][key] = statistics.median(got)
        print(arm, json.dumps(summary[arm]))
    (out / "results.json").write_text(json.dumps(
        {"command": command, "local": local, "unlimited_s": unlimited.wall_s, "rows": rows,
         "summary": summary, "agreement": agree}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
