"""`--knob sim=1,2,4,8 --recording RUN.otr`: a predicted sensitivity curve from the simulator.

Level m: the slow tier is m times the fast tier's latency and 1/m its bandwidth (m = 1: as fast
as the fast tier, the unthrottled baseline); the fast tier is the cost preset's. The recording
is simulated once with first-touch placement and a fast tier of --sim-fast (the accesses per
tier do not depend on the costs); each level then prices the same counts with its cost model
(objtier.sim.cost.stall_ns). The predicted FoM is relative, 1.0 at m = 1:

    FoM(m) = T / (T + stall(m) - stall(1))     T = the recording's duration [ns]

Stall time is summed over the program's threads and not divided by memory-level parallelism
(docs/simulator.md), so the prediction overstates the slowdown of a parallel or
latency-tolerant program: a pessimistic curve. Every level is labelled "simulated".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from objtier.errors import UsageError
from objtier.sweep.knobs import SIM_POLICY

def scaled_model(model, m: float):
    """The cost model whose slow tier is m x the fast tier's latency, 1/m its bandwidth."""
    from objtier.sim.cost import Tier

    fast = model.fast
    return replace(model, slow=Tier(fast.load_ns * m, fast.store_ns * m, fast.read_gbps / m,
                                    fast.write_gbps / m), swap=False)


def predict(trace, levels: list[float], preset: str, fast: str) -> tuple[list[float],
                                                                        list[str], dict]:
    """(relative FoM per level, applied text per level, simulation facts)."""
    from objtier.sim import load_preset, simulate
    from objtier.sim.cost import stall_ns

    model = load_preset(preset)
    sim = simulate(trace, [SIM_POLICY], fast, scaled_model(model, 1.0),
                   {"swap": "0"})
    result = sim.results[0]
    duration_ns = max(1, result.bins.shape[0]) * sim.bin_ns
    base = stall_ns(result.bins, scaled_model(model, 1.0), sim.bin_ns, sim.page_bytes)["total_ns"]
    foms, applied = [], []
    for m in levels:
        scaled = scaled_model(model, m)
        stall = stall_ns(result.bins, scaled, sim.bin_ns, sim.page_bytes)["total_ns"]
        foms.append(duration_ns / (duration_ns + max(0.0, stall - base)))
        applied.append(f"slow {scaled.slow.load_ns:.0f} ns, {scaled.slow.read_gbps:.3g} GB/s")
    row = result.row(sim.page_bytes)
    facts = {"fast_bytes": sim.fast_bytes, "footprint_bytes": sim.footprint_bytes,
             "fast_share": row["fast_share"], "duration_ns": duration_ns}
    return foms, applied, facts


def run_simulated(knob, settings, say: Callable[[str], None]):
    """The sweep of a simulated knob (knobs.SimKnob): one prediction per level (no runs, no
    repeats)."""
    from objtier.sweep.output import (LevelInfo, RunRecord, SweepOutcome, build_document,
                                      machine_info, prepare_output, tool_version, write_files)
    from objtier.trace import open_trace

    if settings.threads:
        raise UsageError("--threads does not apply to --knob sim (a recording has its threads)")
    prepare_output(settings.output, settings.force, False)
    trace = open_trace(knob.options.recording)
    say(f"simulating {knob.options.recording} ({SIM_POLICY}, fast {knob.options.sim_fast}, "
        f"preset {knob.options.sim_preset})")
    foms, applied, facts = predict(trace, knob.levels, knob.options.sim_preset,
                                   knob.options.sim_fast)
    records = [RunRecord(order=i, threads=None, level=level, label=knob.label(level), repeat=1,
                         kind=knob.kind, applied=text, status="ok", returncode=None, fom=fom,
                         unit="relative", wall_s=None, reason=None)
               for i, (level, fom, text) in enumerate(zip(knob.levels, foms, applied), 1)]
    levels = [LevelInfo(r.level, r.label, knob.kind, r.applied) for r in records]
    head = {"knob": knob.name, "kind": knob.kind, "command": None,
            "fom": {"source": "predicted relative FoM (simulated)", "unit": "relative",
                    "higher_is_better": True},
            "config": {"levels": knob.levels, **knob.describe(), **facts},
            "tool_version": tool_version(), "machine": machine_info()}
    doc, metrics = build_document(records, levels, [None], head, True)
    write_files(settings.output, doc, records)
    from objtier.sweep.figure import plot_sweep

    plot_sweep(doc, settings.output / "sweep.png")
    from objtier.sweep.page import write_sweep_page

    write_sweep_page(settings.output, doc)
    return SweepOutcome(records, doc, metrics)
