"""The plan pipeline (recordings -> object table -> placement -> plan) against golden plans.

Each case runs one of the three callers of the pipeline — `objtier plan`, `objtier compare
--tier swap`'s profile planning (fitted or fixed mlock margin) and `objtier compare --tier
numa`'s — on the checked-in fixture traces (tests/fixtures/traces) or on a synthetic recording
with two phase markers written here, and compares the plan document and its text form with
tests/fixtures/plans/<case>.json. Only the fields that name the time, the tool's version and
the input's temporary path are left out. Regenerate the golden files (after a deliberate
change of the plans) with

    python tests/fixtures/plans/make_golden.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from objtier.cli import main
from objtier.plan import load_plan
from objtier.trace import TraceWriter

HERE = Path(__file__).resolve().parent
TRACES = HERE / "fixtures" / "traces"
GOLDEN = HERE / "fixtures" / "plans"
EXE = "/usr/bin/graph"            # the fixtures' program; not on this machine: no build-id
VOLATILE = ("created", "generator", "source")

# ---- a recording with phase markers: "build" sweeps X, "query" sweeps Y, Z is warm in both

PID, PAGE, S = 200, 4096, 1_000_000_000
START = 2_000_000_000_000
X, Y, Z = 0x7F0000000000, 0x7F0000200000, 0x7F0000400000


def write_phased(directory: Path) -> Path:
    directory.mkdir()
    with TraceWriter(directory / f"proc-{PID}.otr", kind="process", pid=PID, ppid=1,
                     start_mono_ns=START, start_real_ns=1_700_000_000 * S,
                     page_bytes=PAGE) as w:
        w.process(PID, 1, START, EXE, ["graph"], {"SAMPLER": "perf"})
        w.module(1, EXE, "", base=0x555555554000, start=0x555555554000, end=0x555555560000)
        for ctx, pc in ((1, 0x1100), (2, 0x1200), (3, 0x1300)):
            w.context(ctx, [(1, pc), (1, 0x1400)])
        w.name(1, "build")
        w.name(2, "query")
        w.alloc(START + S // 20, 1, X, 16 * PAGE, context=1, kind=9)
        w.alloc(START + S // 20 + 1, 2, Y, 16 * PAGE, context=2, kind=9)
        w.alloc(START + S // 20 + 2, 3, Z, 8 * PAGE, context=3, kind=9)
        w.phase(START + S // 10, 1, 1, tid=PID)
        w.phase(START + S, 2, 1, tid=PID)
        w.phase(START + 2 * S, 0, 2, tid=PID)
        samples = []
        for i in range(32):   # build: 0.1 .. 1.0 s
            t = START + S // 10 + i * (S // 40)
            samples.append((t, X + (i % 16) * PAGE))
            if i % 8 == 0:
                samples.append((t + 1, Y + (i % 16) * PAGE))
            if i % 4 == 0:
                samples.append((t + 2, Z + (i % 8) * PAGE))
        for i in range(32):   # query: 1.0 .. 2.0 s
            t = START + S + i * (S // 40)
            samples.append((t, Y + (i % 16) * PAGE))
            if i % 8 == 0:
                samples.append((t + 1, X + (i % 16) * PAGE))
            if i % 4 == 0:
                samples.append((t + 2, Z + (i % 8) * PAGE))
        for t, addr in sorted(samples):
            w.sample(t, addr, tid=PID, source=2, level=5, latency=200, node=0)
        w.close(end_time_ns=START + 2 * S + S // 10)
    return directory


# ---- the cases -----------------------------------------------------------------------------


def _recording(name: str, scratch: Path) -> Path:
    """A fixture recording by name; "phased" is written here, "fault-dir" is fault.otr as a
    recording directory (several inputs of `objtier plan` must be directories)."""
    path = scratch / name
    if name == "phased" and not path.exists():
        write_phased(path)
    elif name == "fault-dir" and not path.exists():
        path.mkdir()
        shutil.copy(TRACES / "fault.otr", path / "proc-100.otr")
    return path if name in ("phased", "fault-dir") else TRACES / name


PLAN_CASES: dict[str, tuple[list[str], list[str]]] = {
    # case: (recordings, `objtier plan` options)
    **{f"plan-{algo}-basic": (["basic.otr"], ["--fast", "50%", "--algo", algo])
       for algo in ("halving", "rank", "spill", "reuse", "exact", "pages", "auto")},
    **{f"plan-{algo}-fault": (["fault.otr"], ["--fast", "40K", "--algo", algo])
       for algo in ("halving", "rank", "spill", "pages")},
    "plan-rank-nobackfill": (["basic.otr"], ["--fast", "60%", "--algo", "rank",
                                             "--no-backfill"]),
    "plan-spill-nolifetimes": (["basic.otr"], ["--fast", "50%", "--algo", "spill",
                                               "--no-lifetimes"]),
    "plan-pages-two": (["basic.otr", "fault-dir"], ["--fast", "50%", "--algo", "pages"]),
    "plan-auto-nobackfill-two": (["basic.otr", "fault-dir"],
                                 ["--fast", "50%", "--algo", "auto", "--no-backfill"]),
    "plan-halving-alpha": (["basic.otr"], ["--fast", "48K", "--algo", "halving",
                                           "--alpha", "2", "--beta", "0.5"]),
    "plan-rank-pagebytes": (["basic.otr"], ["--fast", "50%", "--algo", "rank",
                                            "--page-bytes", "8192", "--footprint", "256K"]),
    "plan-rank-phases": (["phased"], ["--fast", "50%", "--algo", "rank", "--phases"]),
    "plan-spill-phases-nobackfill": (["phased"], ["--fast", "50%", "--algo", "spill",
                                                  "--phases", "--no-backfill"]),
    "plan-pages-phases": (["phased"], ["--fast", "50%", "--algo", "pages", "--phases"]),
}

# compare --tier swap: (recordings, algo, margin or None = fitted, phases, backfill, local)
SWAP_CASES: dict[str, tuple[list[str], str, str | None, bool | None, bool, int]] = {
    "swap-auto-fitted": (["basic.otr"], "auto", None, None, False, (8 << 20) + (64 << 10)),
    "swap-auto-two-fixed": (["basic.otr", "fault.otr"], "auto", "32K", None, False, 96 << 10),
    "swap-spill-fixed": (["basic.otr"], "spill", "16K", None, False, 80 << 10),
    "swap-rank-backfill": (["basic.otr"], "rank", "16K", None, True, 80 << 10),
    "swap-spill-phases-fitted": (["phased"], "spill", None, None, False,
                                 (8 << 20) + (80 << 10)),
    "swap-pages-phases-fixed": (["phased"], "pages", "16K", True, False, 96 << 10),
    "swap-rank-nophases": (["phased"], "rank", "16K", False, False, 96 << 10),
}

# compare --tier numa: (recording, algo, budget bytes, fast nodes' free bytes)
NUMA_CASES: dict[str, tuple[str, str, int, int]] = {
    "numa-spill": ("basic.otr", "spill", 48 << 10, 96 << 10),
    "numa-rank": ("fault.otr", "rank", 40 << 10, 80 << 10),
    "numa-pages": ("basic.otr", "pages", 48 << 10, 96 << 10),
}

CASES = [*PLAN_CASES, *SWAP_CASES, *NUMA_CASES]


def _plan_command(case: str, scratch: Path) -> Path:
    inputs, options = PLAN_CASES[case]
    out = scratch / f"{case}.json"
    assert main(["plan", *(str(_recording(r, scratch)) for r in inputs), *options,
                 "-o", str(out), "--text", str(out.with_suffix(".txt"))]) == 0
    return out


def _swap(case: str, scratch: Path) -> Path:
    from objtier.experiments.compare_swap import CompareSettings, plan_profile

    inputs, algo, margin, phases, backfill, local = SWAP_CASES[case]
    output = scratch / case
    output.mkdir()
    settings = CompareSettings(algo=algo, margin=margin, phases=phases, backfill=backfill,
                               output=output)
    footprint = 160 << 10
    plan, limit, fitted = plan_profile([_recording(r, scratch) for r in inputs], [EXE],
                                       settings, footprint, local)
    assert limit + fitted == local
    assert max(s["peak_fast_bytes"] or 0 for s in plan["summary"]) <= limit
    return output / "plan.json"


def _numa(case: str, scratch: Path) -> Path:
    from objtier.experiments.compare_numa import NumaCompareSettings, _plan

    recording, algo, budget, capacity = NUMA_CASES[case]
    output = scratch / case
    output.mkdir()
    settings = NumaCompareSettings(local="50%", algo=algo, output=output)
    _plan(_recording(recording, scratch), settings, budget, capacity, [EXE], output)
    return output / "plan.json"


def produce(case: str, scratch: Path) -> dict[str, Any]:
    """The case's plan document (volatile fields left out) and its text form."""
    run = _plan_command if case in PLAN_CASES else _swap if case in SWAP_CASES else _numa
    path = run(case, scratch)
    plan = {k: v for k, v in load_plan(path).items() if k not in VOLATILE}
    return {"plan": json.loads(json.dumps(plan)),
            "text": path.with_suffix(".txt").read_text()}


def golden_path(case: str) -> Path:
    return GOLDEN / f"{case}.json"


@pytest.mark.parametrize("case", CASES)
def test_pipeline_gives_the_golden_plan(case, tmp_path, capsys):
    expected = json.loads(golden_path(case).read_text())
    got = produce(case, tmp_path)
    capsys.readouterr()
    assert got["plan"] == expected["plan"]
    assert got["text"] == expected["text"]


def test_every_golden_file_has_a_case():
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(CASES)
