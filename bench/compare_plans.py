#!/usr/bin/env python3
"""The plans `objtier compare` would make from one comparison's recordings, one per setting.

    bench/compare_plans.py COMPARE_DIR --setting NAME=ALGO[:PROFILES][+phases] [...] -o DIR

COMPARE_DIR is an `objtier compare` output directory (summary.json, profile.otr,
profile-2.otr, ...). For each setting the plan is made as compare makes it (same local bytes,
footprint and command, fitted margin; experiments.compare_swap.plan_profile) from the first PROFILES
recordings (default 1), written to DIR/NAME/plan.json. Prints one `--plan NAME=PLAN@MARGIN`
argument per setting and the command, ready for bench/plan_turns.py with
`--local <local bytes>` (also printed), so that the settings run in turn under one limit.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from objtier.experiments.compare_swap import CompareSettings, plan_profile


def parse_setting(text: str) -> tuple[str, str, int, bool]:
    """NAME=ALGO[:PROFILES][+phases] -> (name, algo, profiles, phases)."""
    name, sep, spec = text.partition("=")
    if not sep or not name:
        raise SystemExit(f"bad --setting {text!r}: expected NAME=ALGO[:PROFILES][+phases]")
    phases = spec.endswith("+phases")
    spec = spec.removesuffix("+phases")
    algo, _, profiles = spec.partition(":")
    return name, algo, int(profiles or 1), phases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("compare_dir", type=Path)
    parser.add_argument("--setting", action="append", required=True)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    summary = json.loads((args.compare_dir / "summary.json").read_text())
    recordings = [args.compare_dir / "profile.otr"] + sorted(
        args.compare_dir.glob("profile-*.otr"), key=lambda p: int(p.stem.split("-")[1]))
    local = summary["local"]["bytes"]
    footprint = summary["unlimited"]["footprint_bytes"]
    command = summary["command"]
    plans = []
    for text in args.setting:
        name, algo, profiles, phases = parse_setting(text)
        if profiles > len(recordings):
            raise SystemExit(f"{text}: {args.compare_dir} holds {len(recordings)} recordings")
        out = args.output / name
        out.mkdir(parents=True, exist_ok=True)
        settings = CompareSettings(algo=algo, profiles=profiles, phases=phases, output=out)
        _, limit, margin = plan_profile(recordings[:profiles], command, settings, footprint,
                                        local)
        plans.append(f"--plan {name}={out / 'plan.json'}@{margin}")
        print(f"# {name}: mlock limit {limit >> 20} MiB, margin {margin >> 20} MiB",
              file=sys.stderr)
    print(f"--local {local} " + " ".join(plans) + " -- " + shlex.join(command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
