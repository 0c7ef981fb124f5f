"""What a recording cost the program: the sampler's own measure (the recorder.* counters the
runtime writes, native/runtime/sample/overhead.h) plus the counters thread of `objtier record`,
as one line for the end of `record`.

recorder.* counters are cumulative per process file: the last value of each counts, summed
over the processes of the recording.
"""

from __future__ import annotations

from dataclasses import dataclass

RECORDER_COUNTERS = ("recorder.cost_ns", "recorder.sampler_cpu_ns", "recorder.sampled_faults",
                     "recorder.fault_cost_ns", "recorder.program_cpu_ns", "recorder.rate",
                     "recorder.rate_max", "recorder.overhead_bp")
# the sampled small blocks' records (native/runtime/sample/site_pace.h), written at stop
SITE_COUNTERS = ("recorder.site_cost_ns", "recorder.site_captures", "recorder.site_period_first",
                 "recorder.site_period")


@dataclass
class RecorderCost:
    """The sampler's measured cost over a recording (all processes)."""

    processes: int = 0          # process files with the sampler's recorder counters
    cost_ns: int = 0            # estimated cost: sampler thread CPU + faults x fault cost
    sampler_cpu_ns: int = 0     # the scanner threads' CPU time
    sampled_faults: int = 0
    fault_cost_ns: int = 0      # the largest per-fault cost measured (ns)
    program_cpu_ns: int = 0     # the programs' CPU time without the sampler's cost
    rate_max: int = 0           # OBJTIER_RATE, pages per second
    rate_last: int = 0          # the rate in force at the end (smallest over processes)
    rate_lowest: int = 0        # the lowest rate in force at any step
    overhead_bp: int = 0        # the budget, basis points (0 = none)
    site_processes: int = 0     # process files with the small blocks' counters
    site_cost_ns: int = 0       # time spent writing SITE_ALLOC records, captures included
    site_records: int = 0       # SITE_ALLOC records
    site_period_first: int = 0  # OBJTIER_SITE_PERIOD (largest over processes)
    site_period_last: int = 0   # the period in force at stop (largest over processes)


def recorder_cost(trace) -> RecorderCost:
    """The recorder.* counters of every process file of a trace (objtier.trace.Trace)."""
    from objtier.trace import format as F
    from objtier.trace.reader import decode_named

    def files():
        for raw in trace.files:
            defs = {d["id"]: d["name"] for d in (decode_named(b, F.COUNTER_DEF_HEAD)
                                                 for b in raw.variable.get(F.TAG_COUNTER_DEF, []))
                    if d["name"] in RECORDER_COUNTERS + SITE_COUNTERS}
            records = raw.records(F.TAG_COUNTERS)
            if defs and len(records):
                yield defs, zip(records["id"].tolist(), records["value"].tolist())

    return cost_of(files())


def recorder_cost_light(trace) -> RecorderCost:
    """recorder_cost for an objtier.trace.light.LightTrace."""
    from objtier.trace.light import COUNTER, TAG_COUNTERS, counter_defs

    def files():
        for raw in trace.files:
            defs = {i: n for i, n in counter_defs(raw).items()
                    if n in RECORDER_COUNTERS + SITE_COUNTERS}
            if defs and raw.counts.get(TAG_COUNTERS):
                yield defs, ((r[1], r[3]) for r in raw.decoded(TAG_COUNTERS, COUNTER))

    return cost_of(files())


def cost_of(files) -> RecorderCost:
    """The total over files: (recorder counter id -> name, (id, value) pairs in file order)."""
    total = RecorderCost()
    for defs, pairs in files:
        last: dict[str, int] = {}
        lowest = None
        for counter_id, value in pairs:
            name = defs.get(counter_id)
            if name is None:
                continue
            last[name] = value  # records are in time order within a file
            if name == "recorder.rate":
                lowest = value if lowest is None else min(lowest, value)
        if "recorder.site_captures" in last:
            total.site_processes += 1
            total.site_cost_ns += last.get("recorder.site_cost_ns", 0)
            total.site_records += last["recorder.site_captures"]
            total.site_period_first = max(total.site_period_first,
                                          last.get("recorder.site_period_first", 0))
            total.site_period_last = max(total.site_period_last,
                                         last.get("recorder.site_period", 0))
        if "recorder.cost_ns" not in last:
            continue
        total.processes += 1
        total.cost_ns += last.get("recorder.cost_ns", 0)
        total.sampler_cpu_ns += last.get("recorder.sampler_cpu_ns", 0)
        total.sampled_faults += last.get("recorder.sampled_faults", 0)
        total.fault_cost_ns = max(total.fault_cost_ns, last.get("recorder.fault_cost_ns", 0))
        total.program_cpu_ns += last.get("recorder.program_cpu_ns", 0)
        total.rate_max = max(total.rate_max, last.get("recorder.rate_max", 0))
        rate = last.get("recorder.rate", 0)
        total.rate_last = rate if total.processes == 1 else min(total.rate_last, rate)
        if lowest is not None:
            total.rate_lowest = lowest if total.processes == 1 else min(total.rate_lowest,
                                                                        lowest)
        total.overhead_bp = max(total.overhead_bp, last.get("recorder.overhead_bp", 0))
    return total


MEANINGFUL_PROGRAM_CPU_S = 0.1  # below this program CPU [s] the cost is given in seconds


def cost_line(cost: RecorderCost, counters_cpu_s: float, program_cpu_s: float) -> str:
    """The last line of `record`: the recorder's cost in % of the program's CPU time.
    program_cpu_s (the children's CPU time from the kernel, the runtime's threads included)
    serves when the sampler wrote no recorder counters."""
    counters = f"counters thread {counters_cpu_s:.2f} s CPU"
    sites_s = cost.site_cost_ns / 1e9
    sites = (f"{cost.site_records} small-block records {sites_s:.3f} s; "
             if cost.site_processes else "")
    if not cost.processes:
        if program_cpu_s <= 0:
            return f"recorder cost: {sites}{counters}; the program used no measurable CPU time"
        text = (f"recorder cost: {100 * (counters_cpu_s + sites_s) / program_cpu_s:.1f} % of "
                f"the program's CPU time ({sites}{counters}); this sampler does not measure "
                f"its own cost")
        return text + _site_pacing(cost)
    program_s = cost.program_cpu_ns / 1e9
    spent_s = cost.cost_ns / 1e9 + sites_s + counters_cpu_s
    parts = (f"sampler thread {cost.sampler_cpu_ns / 1e9:.3f} s CPU + {cost.sampled_faults} "
             f"sampled faults x {cost.fault_cost_ns / 1e3:.1f} us; {sites}{counters}")
    if program_s < max(spent_s, MEANINGFUL_PROGRAM_CPU_S):
        # a share of next to nothing says nothing: an idle program, or a launcher whose
        # children were not followed
        text = (f"recorder cost: {spent_s:.2f} s CPU (estimated: {parts}); the recorded "
                f"process itself used {program_s:.3f} s, too little for a share")
    else:
        text = (f"recorder cost: {100 * spent_s / program_s:.1f} % of the program's CPU time "
                f"(estimated: {parts})")
    if cost.overhead_bp and cost.rate_lowest and cost.rate_lowest < cost.rate_max:
        text += (f"; sampling rate lowered from {cost.rate_max} pages/s to {cost.rate_lowest} "
                 f"at the lowest ({cost.rate_last} at the end) to keep within --overhead "
                 f"{cost.overhead_bp / 100:g} %")
    text += _site_pacing(cost)
    return text


def _site_pacing(cost: RecorderCost) -> str:
    """The note on the small blocks' sampling period when pacing raised it."""
    if not cost.site_processes or cost.site_period_last <= cost.site_period_first:
        return ""
    return (f"; small blocks sampled 1 in {cost.site_period_last} at the end (from 1 in "
            f"{cost.site_period_first}) to keep their records within half of --overhead")
