"""One policy replayed over an event source in the native simulator (pure: no printing, no
files). Below the driver that runs policies side by side (sim.run)."""

from __future__ import annotations

import numpy as np

from objtier.sim.engine import Simulator
from objtier.sim.events import CHUNK_SAMPLES, EventSource

STATIC = {"object", "spill", "oracle"}  # run on the core's "static" policy


def native_policy(policy: str) -> str:
    """The core policy that runs `policy`."""
    return "static" if policy in STATIC else policy


def run_policy(source: EventSource, policy: str, fast_bytes: int, page_shift: int, bin_ns: int,
               params: dict[str, float] | None = None, placement: tuple | None = None,
               chunk: int = CHUNK_SAMPLES, swap: bool = False,
               object_swap_ins: np.ndarray | None = None) -> tuple[dict[str, int], np.ndarray]:
    """One policy over the event source: (counters, bins). swap: the slow tier is swap.
    placement: set_placement's arrays, or for phases a PhasePlan (its events must be in
    source.phase_ev). object_swap_ins, if given (source.objects entries), receives the
    swap-ins per object."""
    from objtier.sim.phase_events import PhasePlan

    with Simulator(native_policy(policy), fast_bytes, source.start_ns, bin_ns, page_shift,
                   max(source.objects, 1), params, swap) as s:
        if isinstance(placement, PhasePlan):
            s.set_phase_placement(placement.offsets, placement.objs, placement.fast_bytes)
        elif placement is not None:
            s.set_placement(*placement)
        for events in source.chunks(chunk):
            s.feed(events)
        s.finish(source.end_ns + 1)
        if object_swap_ins is not None:
            object_swap_ins[:] = s.object_swap_ins(source.objects)
        return s.counters(), s.bins()
