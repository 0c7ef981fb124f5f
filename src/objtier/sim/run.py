"""Run policies over one trace and collect per-policy results (pure: no printing, no files)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from objtier.errors import UsageError
from objtier.sim import placement as P
from objtier.sim.cost import CostModel, stall_ns
from objtier.sim.engine import Simulator, policy_params
from objtier.sim.events import CHUNK_SAMPLES, EventSource

POLICIES = ("first-touch", "numab2", "tpp", "memtis", "hemem", "object", "spill", "oracle")
STATIC = {"object", "spill", "oracle"}  # run on the core's "static" policy
DRIVER_PARAMS = {"page", "bin_ms", "period", "chunk"}


@dataclass
class PolicyResult:
    policy: str
    counters: dict[str, int]
    bins: np.ndarray
    stall: dict[str, float]
    speedup: float = float("nan")

    def row(self, page_bytes: int) -> dict:
        c = self.counters
        fast = c["fast_loads"] + c["fast_stores"]
        slow = c["slow_loads"] + c["slow_stores"]
        moved = c["pgpromote_success"] + c["pgdemote_kswapd"]
        return {
            "policy": self.policy, "fast_accesses": fast, "slow_accesses": slow,
            "other_accesses": c["other_accesses"],
            "fast_share": fast / (fast + slow) if fast + slow else float("nan"),
            "promotions": c["pgpromote_success"], "demotions": c["pgdemote_kswapd"],
            "migrated_bytes": moved * page_bytes, "hint_faults": c["numa_hint_faults"],
            "stall_s": self.stall["total_ns"] / 1e9, "speedup": self.speedup,
        }


@dataclass
class Simulation:
    fast_bytes: int
    footprint_bytes: int
    page_bytes: int
    bin_ns: int
    start_ns: int
    model: CostModel
    results: list[PolicyResult] = field(default_factory=list)

    def rows(self) -> list[dict]:
        return [r.row(self.page_bytes) for r in self.results]


def split_params(params: dict[str, str], policies: list[str]) -> tuple[dict, dict[str, dict]]:
    """Split KEY=VALUE settings into driver settings and per-policy ones. A key may be
    qualified (numab2.hot_threshold_ms) or bare (applies to every policy that knows it)."""
    driver: dict[str, str] = {}
    per: dict[str, dict[str, float]] = {p: {} for p in policies}
    known = {p: policy_params("static" if p in STATIC else p) for p in policies}
    for key, value in params.items():
        if key in DRIVER_PARAMS:
            driver[key] = value
            continue
        target, _, name = key.rpartition(".")
        try:
            number = float(value)
        except ValueError:
            raise UsageError(f"--param {key}: {value!r} is not a number") from None
        hits = [p for p in policies if (not target or target == p) and name in known[p]]
        if target and target not in policies:
            raise UsageError(f"--param {key}: policy {target!r} is not being simulated")
        if not hits:
            raise UsageError(f"--param {key}: no selected policy has a parameter {name!r}")
        for p in hits:
            per[p][name] = number
    return driver, per


def parse_page(text: str) -> int:
    table = {"4k": 12, "4096": 12, "4kib": 12, "2m": 21, "2mib": 21, "2097152": 21}
    shift = table.get(str(text).strip().lower())
    if shift is None:
        raise UsageError(f"--param page={text}: use 4K or 2M")
    return shift


def static_placement(policy: str, trace, source: EventSource, fast_bytes: int, page_shift: int,
                     plan_doc: dict | None, default_weight: int, cache: dict) -> tuple:
    if "acc" not in cache:
        cache["obj"], cache["acc"] = P.object_accesses(trace, source, default_weight)
    page = 1 << page_shift
    if policy == "oracle":
        w = trace.samples.column("weight").to_numpy(zero_copy_only=False).astype(np.float64)
        w[w == 0] = max(default_weight, 1)
        addr = trace.samples.column("addr").to_numpy(zero_copy_only=False)
        bits, base = P.oracle_pages(source, cache["obj"], addr, w, fast_bytes >> page_shift,
                                    page_shift)
        return None, bits, base
    if plan_doc is not None and policy == "object":
        return P.plan_file_fast_bytes(trace, source, plan_doc), None, None
    algorithm = "rank" if policy == "object" else "spill"
    return P.planned_fast_bytes(trace, source, cache["acc"], fast_bytes, page, algorithm), \
        None, None


def footprint_bytes(source: EventSource) -> int:
    from objtier.plan import peak_live_bytes

    return peak_live_bytes(source.size, source.alloc_ns, source.free_ns)


def run_policy(source: EventSource, policy: str, fast_bytes: int, page_shift: int, bin_ns: int,
               params: dict[str, float] | None = None, placement: tuple | None = None,
               chunk: int = CHUNK_SAMPLES) -> tuple[dict[str, int], np.ndarray]:
    """One policy over the event source: (counters, bins)."""
    native = "static" if policy in STATIC else policy
    with Simulator(native, fast_bytes, source.start_ns, bin_ns, page_shift,
                   max(source.objects, 1), params) as s:
        if placement is not None:
            s.set_placement(*placement)
        for events in source.chunks(chunk):
            s.feed(events)
        s.finish(source.end_ns + 1)
        return s.counters(), s.bins()


def simulate(trace, policies: list[str], fast: str | int, model: CostModel,
             params: dict[str, str] | None = None, plan_doc: dict | None = None,
             progress=None) -> Simulation:
    """Simulate `policies` on `trace` with a fast tier of `fast` (bytes, or a size/percent
    string relative to the peak live footprint)."""
    from objtier.plan import parse_budget
    from objtier.sim.events import from_trace

    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise UsageError(f"unknown policy {unknown[0]!r} (known: {', '.join(POLICIES)})")
    driver, per = split_params(params or {}, policies)
    page_shift = parse_page(driver.get("page", "4K"))
    try:
        bin_ns = int(float(driver.get("bin_ms", 100)) * 1e6)
        default_weight = int(float(driver.get("period", 1)))
        chunk = int(float(driver.get("chunk", CHUNK_SAMPLES)))
    except ValueError:
        raise UsageError("--param bin_ms, period and chunk need numbers") from None
    if bin_ns <= 0 or chunk <= 0 or default_weight <= 0:
        raise UsageError("--param bin_ms, period and chunk must be positive")
    source = from_trace(trace, default_weight)
    footprint = footprint_bytes(source)
    fast_bytes = int(fast) if isinstance(fast, int) else parse_budget(str(fast), footprint).bytes
    sim = Simulation(fast_bytes, footprint, 1 << page_shift, bin_ns, source.start_ns, model)
    cache: dict = {}
    for policy in policies:
        placement = None
        if policy in STATIC:
            placement = static_placement(policy, trace, source, fast_bytes, page_shift, plan_doc,
                                         default_weight, cache)
        counters, bins = run_policy(source, policy, fast_bytes, page_shift, bin_ns, per[policy],
                                    placement, chunk)
        sim.results.append(PolicyResult(policy, counters, bins,
                                        stall_ns(bins, model, bin_ns, 1 << page_shift)))
        if progress:
            progress(policy)
    base = next((r for r in sim.results if r.policy == "first-touch"), None)
    for r in sim.results:
        if base is not None and r.stall["total_ns"] > 0:
            r.speedup = base.stall["total_ns"] / r.stall["total_ns"]
    return sim
