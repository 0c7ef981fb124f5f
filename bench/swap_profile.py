#!/usr/bin/env python3
"""Where a swapping program's CPU time goes: one run of a program under the swap tier (memory
cgroup limit, zram behind it; the kernel alone, no runtime), profiled system-wide with perf's
cpu-clock software event (no hardware PMU needed), reported as the inclusive share of the
kernel paths that a swap-in takes.

    .venv/bin/python bench/swap_profile.py --local BYTES [-o DIR] -- CMD [ARGS...]

Prints one row per path: the share of all samples (both CPUs, the whole run) whose call chain
passes through it. Paths (kernel 6.x function names; a row is empty where a kernel names them
otherwise): the page fault, do_swap_page (a swap-in), the memory cgroup's direct reclaim that
the swap-in's charge runs (try_to_free_mem_cgroup_pages), within it the swap-out
(swap_writeout: compression into zram) and the TLB shootdowns of unmapping
(try_to_unmap_flush*, smp_call_function_many_cond), and zram's decompression. Needs root and
perf; writes DIR/perf.data.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from objtier.tiers.swap import SwapTier  # noqa: E402

#: (row label, kernel functions whose inclusive shares are summed)
PATHS = [
    ("page faults", ["exc_page_fault"]),
    ("  swap-ins (do_swap_page)", ["do_swap_page"]),
    ("    memcg direct reclaim", ["try_to_free_mem_cgroup_pages"]),
    ("      swap-out into zram (swap_writeout)", ["swap_writeout"]),
    ("      TLB shootdown (try_to_unmap_flush*)", ["try_to_unmap_flush",
                                                  "try_to_unmap_flush_dirty"]),
    ("    zram decompression (LZ4/lzo)", ["LZ4_decompress_safe", "lzo1x_decompress_safe"]),
]
ROW = re.compile(r"^\s*([0-9.]+)%\s+([0-9.]+)%\s+\[(.)\]\s+(\S+)")


def inclusive_shares(data: Path) -> tuple[dict[str, float], float]:
    """Per symbol its inclusive share [%] of all samples, and the user-mode share [%]."""
    out = subprocess.run(["perf", "report", "-i", str(data), "--children", "--sort", "sym",
                          "--stdio", "-g", "none"], capture_output=True, text=True, check=True)
    shares, user = {}, 0.0
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m:
            shares[m.group(4)] = float(m.group(1))
            if m.group(3) == ".":
                user += float(m.group(2))  # self shares of user-mode symbols add up
    return shares, user


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", type=int, required=True, help="cgroup limit [bytes]")
    parser.add_argument("-o", "--output", type=Path, default=Path("bench-out/swap-profile"))
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (-- CMD ...)")
    args.output.mkdir(parents=True, exist_ok=True)
    data = args.output / "perf.data"
    with SwapTier(args.local, swap="zram") as tier:
        perf = subprocess.Popen(["perf", "record", "-a", "-g", "-e", "cpu-clock", "-F", "999",
                                 "-o", str(data)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # perf is recording once it has opened its events
        try:
            started = time.monotonic()
            run = subprocess.run(command, preexec_fn=tier.preexec, stdout=subprocess.DEVNULL)
            wall = time.monotonic() - started
        finally:
            perf.send_signal(signal.SIGINT)
            perf.wait()
    shares, user = inclusive_shares(data)
    print(f"exit status {run.returncode}, {wall:.2f} s under a {args.local} byte limit; "
          f"share of all cpu-clock samples [%]:")
    print(f"{'user mode (all programs)':45s} {user:6.1f}")
    for label, functions in PATHS:
        found = [shares[f] for f in functions if f in shares]
        print(f"{label:45s} {sum(found):6.1f}" if found else f"{label:45s}      –")
    return 0 if run.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
