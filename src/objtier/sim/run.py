"""Run policies over one trace and collect per-policy results (pure: no printing, no files)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from objtier.errors import UsageError
from objtier.sim import placement as P
from objtier.sim.cost import CostModel, stall_ns
from objtier.sim.engine import policy_params
from objtier.sim.events import CHUNK_SAMPLES, EventSource
from objtier.sim.replay import STATIC, native_policy, run_policy

POLICIES = ("first-touch", "numab2", "tpp", "memtis", "hemem", "object", "spill", "phases",
            "oracle", "belady")
DRIVER_PARAMS = {"page", "bin_ms", "period", "chunk", "swap", "swap_reserve", "scale", "expand",
                 "seed"}
# Swap mode: share of the fast tier that plans made here leave unpinned, so that the pages
# they do not pin can be faulted in (mlocking all of memory.max makes the cgroup thrash;
# kernel-tiering.md §3: keep mlocked bytes < memory.max - the evictable working set).
DEFAULT_SWAP_RESERVE = 0.1


@dataclass
class PolicyResult:
    policy: str
    counters: dict[str, int]
    bins: np.ndarray
    stall: dict[str, float]
    speedup: float = float("nan")
    object_swap_ins: np.ndarray | None = None  # swap mode: per object (trace.allocations rows)
    # swap-ins / swap-outs and stall after the sample scale (sim.scaling): what the program
    # would see; equal to the counters for exact traces and where swap-ins are not scaled
    est_swap_ins: float = 0.0
    est_swap_outs: float = 0.0
    est_stall_ns: float = 0.0

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
            "swap_ins": round(self.est_swap_ins), "swap_outs": round(self.est_swap_outs),
            "sampled_swap_ins": c["pswpin"], "sampled_swap_outs": c["pswpout"],
            "stall_s": self.est_stall_ns / 1e9, "speedup": self.speedup,
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
    swap: bool = False  # the slow tier was simulated as swap (swap-in on access)
    notes: list[str] = field(default_factory=list)  # caveats about the results, one line each
    # swap mode: allocation site and size of every object (trace.allocations rows)
    object_labels: np.ndarray | None = None
    object_sizes: np.ndarray | None = None
    scale: object = None   # sim.scaling.SampleScale: how samples became estimated accesses
    warnings: list[str] = field(default_factory=list)  # the samples cannot support the answer

    @property
    def basis(self) -> str:
        """"exact" or "estimate": what every absolute figure of this simulation is."""
        return self.scale.label if self.scale is not None else "estimate"

    def rows(self) -> list[dict]:
        return [r.row(self.page_bytes) for r in self.results]


def split_params(params: dict[str, str], policies: list[str]) -> tuple[dict, dict[str, dict]]:
    """Split KEY=VALUE settings into driver settings and per-policy ones. A key may be
    qualified (numab2.hot_threshold_ms) or bare (applies to every policy that knows it)."""
    driver: dict[str, str] = {}
    per: dict[str, dict[str, float]] = {p: {} for p in policies}
    known = {p: policy_params(native_policy(p)) for p in policies}
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
        pages = P.plan_file_page_bits(trace, source, plan_doc, page_shift)
        if pages is not None:
            return None, *pages
        return P.plan_file_fast_bytes(trace, source, plan_doc), None, None
    algorithm = "rank" if policy == "object" else "spill"
    return P.planned_fast_bytes(trace, source, cache["acc"], fast_bytes, page, algorithm), \
        None, None


def phase_placement(trace, source: EventSource, fast_bytes: int, page_shift: int,
                    plan_doc: dict | None, default_weight: int, cache: dict):
    """The phases policy's PhasePlan, and the PHASE events it needs put into source."""
    from objtier.sim import phase_events as PH

    if "acc" not in cache:
        cache["obj"], cache["acc"] = P.object_accesses(trace, source, default_weight)
    if plan_doc is not None:
        plan, tl = PH.plan_from_file(trace, source, plan_doc,
                                     lambda doc, ph: P.plan_file_fast_bytes(trace, source, doc,
                                                                            ph))
    else:
        w = trace.samples.column("weight").to_numpy(zero_copy_only=False).astype(np.float64)
        w[w == 0] = max(default_weight, 1)
        plan, tl = PH.plan_from_trace(trace, source, cache["obj"], w,
                                      P.planner_table(trace, source, cache["acc"]), fast_bytes,
                                      1 << page_shift)
    source.phase_ev = plan.events(tl)
    return plan


# Python driver memory per sample, measured on a 36 M-sample exact trace (docs/simulator.md):
# 155 bytes with first-touch alone, 163 with belady, 187 with first-touch,spill,oracle,belady.
DRIVER_BYTES_PER_SAMPLE = 160
STATIC_BYTES_PER_SAMPLE = 30  # more when a static placement is planned from the trace


def driver_memory_bytes(samples: int, policies: list[str]) -> int:
    """About how much memory the driver needs for a trace of `samples` samples."""
    per = DRIVER_BYTES_PER_SAMPLE + (STATIC_BYTES_PER_SAMPLE
                                     if set(policies) & (STATIC | {"phases"}) else 0)
    return samples * per


def check_driver_memory(samples: int, policies: list[str], held: int = 0) -> None:
    """A clear error instead of the kernel's OOM killer when the trace cannot fit. held: bytes
    of it already in memory (the samples table, which MemAvailable no longer counts)."""
    from objtier.errors import EnvironmentProblem
    from objtier.procfs import meminfo_bytes

    need, available = driver_memory_bytes(samples, policies), meminfo_bytes("MemAvailable")
    if available is not None and need - held > available:
        raise EnvironmentProblem(
            f"the trace has {samples:,} samples: simulating them needs about "
            f"{need / 2**30:.1f} GiB, {available / 2**30:.1f} GiB is available; record fewer "
            f"iterations or with a lower --trace-limit")


def belady_notes(trace, source: EventSource) -> list[str]:
    """Why belady's counts may not be the optimum of the real program on this trace."""
    from objtier.trace.format import SOURCE_TRACE

    notes = []
    src = trace.samples.column("source").to_numpy(zero_copy_only=False)
    if len(src) and not np.all(src == SOURCE_TRACE):
        notes.append("belady: the trace is sampled, not exact (record with --sampler trace): "
                     "its counts are the optimum of the sampled accesses only")
    if reuses_addresses(source):
        notes.append("belady: an allocation reuses the addresses of a freed object and counts "
                     "as the same pages, so belady's count may exceed the optimum")
    return notes


def reuses_addresses(source: EventSource) -> bool:
    """Whether two objects of one process overlap in bytes (the later one reuses memory the
    earlier one freed: live objects never overlap)."""
    for pid in np.unique(source.pid):
        mine = source.pid == pid
        order = np.argsort(source.addr[mine], kind="stable")
        lo = source.addr[mine][order].astype(np.uint64)
        hi = lo + source.size[mine][order].astype(np.uint64)
        if len(lo) > 1 and np.any(lo[1:] < np.maximum.accumulate(hi)[:-1]):
            return True
    return False


def footprint_bytes(source: EventSource) -> int:
    from objtier.plan import peak_live_bytes

    return peak_live_bytes(source.size, source.alloc_ns, source.free_ns)


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
    swap = model.swap
    if "swap" in driver:
        if driver["swap"] not in ("0", "1"):
            raise UsageError("--param swap: use 0 (NUMA tier) or 1 (swap tier)")
        swap = driver["swap"] == "1"
    try:
        reserve = float(driver.get("swap_reserve", DEFAULT_SWAP_RESERVE))
    except ValueError:
        raise UsageError("--param swap_reserve needs a number") from None
    if not 0.0 <= reserve < 1.0:
        raise UsageError("--param swap_reserve must be in [0, 1)")
    if not swap:
        reserve = 0.0
    user_scale = None
    if "scale" in driver:
        try:
            user_scale = float(driver["scale"])
        except ValueError:
            raise UsageError("--param scale needs a number") from None
        if not user_scale > 0 or user_scale != user_scale or user_scale == float("inf"):
            raise UsageError("--param scale must be a positive number")
    check_driver_memory(trace.samples.num_rows, policies, trace.samples.nbytes)
    if "belady" in policies and not swap:
        raise UsageError("policy belady needs the swap tier: a swap preset (zram, nvme, rdma) "
                         "or --param swap=1")
    from objtier.sim.scaling import (mapped_problem, replay_problem, sample_scale,
                                     support_warnings)

    problem = replay_problem(trace)   # never a table of zeros
    if problem is not None:
        raise UsageError(problem)

    expand = driver.get("expand", "1")
    if expand not in ("0", "1"):
        raise UsageError("--param expand: use 1 (replay the fault sampler's estimated touches, "
                         "the default) or 0 (replay the samples, weights scaled)")
    try:
        seed = int(driver.get("seed", 0))
    except ValueError:
        raise UsageError("--param seed needs an integer") from None
    source = from_trace(trace, default_weight)
    problem = mapped_problem(source.sample_obj, source.objects)
    if problem is not None:
        raise UsageError(problem)
    scale = sample_scale(trace, source.sample_obj, source.objects, user_scale)
    k_sample = scale.per_sample(source.sample_obj) if len(source.sample_obj) else np.zeros(0)
    if scale.kind == "fault" and expand == "1":
        # replay the estimated touches, not the thinned samples (sim.scaling); plans are still
        # made from the recorded samples (source.sample_obj keeps mapping those)
        from dataclasses import replace

        from objtier.sim.scaling import expand_fault_samples

        events, weight = expand_fault_samples(trace, source, bin_ns, seed)
        if weight != 1.0:
            events["size"] = np.uint64(max(round(weight), 1))
        source.sample_ev = events
        scale = replace(scale, swap_scaled=False, description=(
            f"the fault sampler's {len(source.sample_obj):,} samples replayed as "
            f"{int(events['size'].astype(np.float64).sum()):,} estimated page touches "
            f"(per object and {bin_ns / 1e6:g} ms bin: its est_touches spread as its samples "
            f"are, on uniform pages, in page order for swept objects; --param expand=0 "
            f"replays the samples); counts, "
            f"swap-ins and stall are estimates; a swap-in is one page per fault (no "
            f"readahead)"))
    elif not np.all(k_sample == 1.0):
        # every sample stands for k times its weight: estimated accesses (sim.scaling)
        weights = source.sample_ev["size"].astype(np.float64) * k_sample
        source.sample_ev["size"] = np.maximum(np.rint(weights), 1).astype(np.uint64)
    footprint = footprint_bytes(source)
    fast_bytes = int(fast) if isinstance(fast, int) else parse_budget(str(fast), footprint).bytes
    sim = Simulation(fast_bytes, footprint, 1 << page_shift, bin_ns, source.start_ns, model,
                     swap=swap, scale=scale)
    sim.warnings.extend(support_warnings(scale, source.sample_obj, source.size, fast_bytes,
                                         1 << page_shift, footprint))
    if swap:
        from objtier.analysis.objects import object_labels

        sim.object_labels, sim.object_sizes = object_labels(trace), source.size
    if "belady" in policies:
        from objtier.sim.events import set_next_access

        set_next_access(source, page_shift)
        sim.notes.extend(belady_notes(trace, source))
    cache: dict = {}
    for policy in policies:
        placement = None
        plan_bytes = int(fast_bytes * (1.0 - reserve)) >> page_shift << page_shift
        if policy in STATIC:
            placement = static_placement(policy, trace, source, plan_bytes, page_shift, plan_doc,
                                         default_weight, cache)
        elif policy == "phases":
            placement = phase_placement(trace, source, plan_bytes, page_shift, plan_doc,
                                        default_weight, cache)
        per_object = np.zeros(source.objects, dtype=np.uint64) if swap else None
        counters, bins = run_policy(source, policy, fast_bytes, page_shift, bin_ns, per[policy],
                                    placement, chunk, swap, per_object)
        if swap and counters.get("swap_fault_pinned"):
            sim.notes.append(
                f"{policy}: {counters['swap_fault_pinned']:,} accesses to swapped pages found "
                "every fast page pinned and were charged slow with no swap-in (the plan pins "
                "more than the fast tier can hold; a real cgroup would reclaim harder or "
                "OOM-kill): its swap-ins are understated; plan for less than --fast")
        result = PolicyResult(policy, counters, bins,
                              stall_ns(bins, model, bin_ns, 1 << page_shift),
                              object_swap_ins=per_object)
        _estimate(result, scale, model, 1 << page_shift)
        sim.results.append(result)
        if progress:
            progress(policy)
    base = next((r for r in sim.results if r.policy == "first-touch"), None)
    for r in sim.results:
        if base is not None and r.est_stall_ns > 0:
            r.speedup = base.est_stall_ns / r.est_stall_ns
    return sim


def swap_out_ns(model: CostModel, page_bytes: int) -> float:
    """Cost of one swap-out (a page copy at the slowest bandwidth + the fixed move cost), as
    cost.stall_ns charges it."""
    copy_bw = min(model.slow.read_gbps, model.slow.write_gbps, model.fast.write_gbps) * 1e9
    return page_bytes / copy_bw * 1e9 + model.migrate_page_ns


def _estimate(result: PolicyResult, scale, model: CostModel, page_bytes: int) -> None:
    """Fill the result's estimated swap traffic and stall from the sample scale: each
    simulated swap-in of an object stands for k_object of them (fault sampler; sim.scaling),
    swap-outs follow swap-ins in the same ratio; the stall adds the extra swap-ins at the slow
    tier's load latency and the extra swap-outs at swap_out_ns."""
    c = result.counters
    sim_in, sim_out = float(c.get("pswpin", 0)), float(c.get("pswpout", 0))
    est_in, est_out = sim_in, sim_out
    if scale is not None and scale.swap_scaled and result.object_swap_ins is not None:
        per = result.object_swap_ins.astype(np.float64)
        est_in = float((per * scale.per_object[:len(per)]).sum())
        est_in += max(sim_in - float(per.sum()), 0.0) * scale.overall   # outside any object
        est_out = sim_out * (est_in / sim_in) if sim_in > 0 else sim_out * scale.overall
    result.est_swap_ins, result.est_swap_outs = est_in, est_out
    result.est_stall_ns = (result.stall["total_ns"] + (est_in - sim_in) * model.slow.load_ns
                           + (est_out - sim_out) * swap_out_ns(model, page_bytes))
