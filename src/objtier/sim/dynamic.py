"""The `dynamic` policy's schedule for the simulator: learned from this trace
(objtier.plan.dynamic) or read from a plan file's `dynamic` section, and the PHASE events
(one per step, obj = step index) that run it in the core (native/sim/policy_dynamic.c)."""

from __future__ import annotations

import numpy as np

from objtier.bounds import ADVICE_RATE_MAX
from objtier.errors import UsageError
from objtier.plan import dynamic as D
from objtier.sim.engine import EV_PHASE, EVENT, NO_OBJ
from objtier.sim.placement import context_keys, occurrences

LEARN_PARAMS = ("window_ms", "min_accesses", "pageout", "mode", "chunk_pages", "lookahead",
                "willneed_pages", "horizon", "max_calls", "min_gain", "online_ms", "sample_rate",
                "phase_memory")
MODE_CODES = {0: "auto", 1: "hot", 2: "nextuse", 3: "static", 4: "online"}  # dynamic.mode=N
DEFAULT_SAMPLE_RATE = 2000   # online: pages the fault sampler arms per second (OBJTIER_RATE)
DEFAULT_RESERVE = 0.1        # share of fast memory never locked (sim.run, plan --reserve)
AUTO_WINDOWS = (0, 64, 256)   # auto: next-use windows per run tried (0 = phase switches only)
# auto keeps a moving schedule only if it simulates this share fewer swap-ins than the static
# one: gains under it were not seen on the real swap tier (docs/benchmarks.md: next-use with
# 1.2 % fewer simulated swap-ins ran 1.02x the static plan, the static schedule with 0.15 %
# more ran 0.96x), and a sampled profile that simulates no swap-in at all cannot choose
DEFAULT_MIN_GAIN = 0.05


def schedule_for(trace, source, lock_bytes: int, page_shift: int, plan_doc: dict | None,
                 params: dict[str, float], default_weight: int = 1,
                 evaluate=None, static_plan: dict | None = None) -> D.Schedule:
    """The schedule, with its step events put into source.phase_ev. Learned from the trace
    (no plan_doc): dynamic.mode picks hot, nextuse or static (objtier.plan.dynamic); auto (the
    default) simulates each candidate on this trace with `evaluate` (default: the dynamic
    policy on the swap tier, fast = lock_bytes / 0.9, under the advice-call budget of
    dynamic.advice_rate as the runtime applies it) and keeps the one with the fewest
    swap-ins (then major faults), the static plan among them, so the schedule is never worse
    than the static plan in simulation; a candidate that is not dynamic.min_gain (5 %) below
    the static one loses to it (within the simulator's error on the real tier), and so does
    every one where the static one simulates fewer than 1 / min_gain^2 swap-ins. Where
    different candidates win different phase executions, they are also stitched per phase
    (objtier.plan.dynamic.stitch) and the stitched schedule replayed, kept if that replay
    has the fewest swap-ins. dynamic.max_calls > 0 leaves out the candidates that
    need more advice calls than that (the static one never does in practice).
    `evaluate(schedule)` returns swap-ins or (swap-ins, major faults). With `static_plan` (a
    plan document: entries, phases), auto also tries that plan as a schedule ("plan": at
    each phase switch the phase's fast objects locked, the rest unlocked) and measures the
    min_gain against it instead of the spill plan: the schedule falls back to the plan the
    static arm of a comparison runs."""
    from objtier.sim.phases import timeline

    tl = timeline(trace, source.end_ns)
    order = np.argsort(tl.switch_ns, kind="stable")
    switch_ns = tl.switch_ns[order]
    switch_name = [tl.switch_name[i] for i in order]
    if plan_doc is not None and plan_doc.get("dynamic"):
        sched = schedule_from_plan(trace, source, plan_doc, switch_ns, page_shift, switch_name)
        _put_steps(source, sched)
        return sched
    window_ms = float(params.get("window_ms", D.DEFAULT_WINDOW_MS))
    min_acc = float(params.get("min_accesses", D.DEFAULT_MIN_ACCESSES))
    pageout = float(params.get("pageout", 1)) != 0
    mode = MODE_CODES.get(int(params.get("mode", 0)), "")
    chunk = int(params.get("chunk_pages", D.DEFAULT_CHUNK_PAGES))
    ahead = int(params.get("lookahead", D.DEFAULT_LOOKAHEAD))
    willneed_pages = int(params.get("willneed_pages", 0))
    horizon = int(params.get("horizon", D.DEFAULT_HORIZON))
    if window_ms < 0 or min_acc < 1:
        raise UsageError("dynamic.window_ms must be >= 0 and dynamic.min_accesses >= 1")
    min_gain = float(params.get("min_gain", DEFAULT_MIN_GAIN))
    if not 0 <= min_gain < 1:
        raise UsageError("dynamic.min_gain must be in [0, 1)")
    if not mode or params.get("mode", 0) != int(params.get("mode", 0)):
        raise UsageError("dynamic.mode: 0 auto, 1 hot, 2 nextuse, 3 static, 4 online")
    if not 1 <= chunk <= 1 << 20 or not 0 <= ahead <= 1 << 20 or willneed_pages < 0:
        raise UsageError("dynamic.chunk_pages must be in [1, 2^20], dynamic.lookahead in "
                         "[0, 2^20], dynamic.willneed_pages >= 0")
    ev = source.sample_ev
    obj = np.where(ev["obj"] == NO_OBJ, -1, ev["obj"].astype(np.int64))
    lock_pages = lock_bytes >> page_shift
    duration_ms = max(int(source.end_ns) - int(source.start_ns), 1) / 1e6

    def bounds(w: float):
        return D.boundaries(source.start_ns, source.end_ns, switch_ns, switch_name, w)

    def hot(w: float) -> D.Schedule:
        return D.learn(ev["time_ns"], obj, ev["addr"], ev["size"].astype(np.float64),
                       source.addr, source.size, bounds(w), lock_pages, page_shift, w,
                       min_acc, pageout=pageout)

    def nextuse(w: float, willneed: int = willneed_pages) -> D.Schedule:
        return D.learn_nextuse(ev["time_ns"], obj, ev["addr"], ev["size"].astype(np.float64),
                               source.addr, source.size, bounds(w), lock_pages, page_shift,
                               w, chunk, ahead, pageout=pageout, willneed_pages=willneed,
                               horizon=horizon)

    def static() -> D.Schedule:
        from objtier.sim import placement as P

        _, acc = P.object_accesses(trace, source, default_weight)
        fast = P.planned_fast_bytes(trace, source, acc, lock_bytes, 1 << page_shift, "spill")
        return D.static_schedule(source.addr, source.size, source.alloc_ns, fast, bounds(0),
                                 lock_pages, page_shift)

    def planned() -> D.Schedule:
        return plan_candidate(trace, source, static_plan, bounds(0), lock_pages, page_shift)

    if mode == "online":
        sched = online_schedule(source, switch_ns, switch_name, lock_pages, page_shift, params)
    elif mode == "hot":
        sched = hot(window_ms)
    elif mode == "nextuse":
        sched = nextuse(window_ms)
    elif mode == "static":
        sched = static()
    else:
        if evaluate is None:
            evaluate = PhaseEvaluator(source, int(lock_bytes / (1.0 - DEFAULT_RESERVE)),
                                  page_shift, params)
        windows = [window_ms] if window_ms > 0 else [
            0.0 if n == 0 else duration_ms / n for n in AUTO_WINDOWS]
        candidates = [(f"hot w={window_ms:g}", lambda: hot(window_ms)), ("static", static)]
        if static_plan is not None:
            candidates.append(("plan", planned))
        reference = "plan" if static_plan is not None else "static"
        candidates += [(f"nextuse w={w:.4g}", lambda w=w: nextuse(w)) for w in windows]
        max_calls = int(params.get("max_calls", 0))
        best, scores, tried = None, {}, []

        def score_of(name: str, cand: D.Schedule) -> tuple[int, ...]:
            """(swap-ins[, major faults]) of cand simulated; recorded in scores[name]."""
            _put_steps(source, cand)
            score = tuple(int(v) for v in np.atleast_1d(evaluate(cand)))
            scores[name] = score[0]
            return score

        for name, make in candidates:
            cand = make()
            if max_calls and cand.calls() > max_calls and name != reference:
                continue    # the runtime could not run it within the call budget
            score = score_of(name, cand)
            tried.append((name, cand))
            if best is None or score < best[0]:
                best = (score, cand, name)
        # the best next-use windows again with prefetch (WILLNEED) of what each window uses
        # first outside the locked set: as many swap-ins, fewer of them waited for
        if best[2].startswith("nextuse") and not willneed_pages:
            w = float(best[2].split("=")[1])
            name = f"nextuse+willneed w={w:.4g}"
            cand = nextuse(w, max(int(lock_pages * DEFAULT_RESERVE / (1 - DEFAULT_RESERVE))
                                  // 2, 1))
            if not max_calls or cand.calls() <= max_calls:
                score = score_of(name, cand)
                tried.append((name, cand))
                if score < best[0]:
                    best = (score, cand, name)
        # per phase: each phase execution run by the candidate with the fewest swap-ins in
        # it, stitched, and the stitched schedule replayed: kept only if the replay wins
        if len(tried) > 1 and all(getattr(evaluate, "per_phase", {}).get(id(c)) is not None
                                  for _, c in tried):
            stitched = _per_phase(tried, evaluate.per_phase, best[2], source, page_shift)
            if stitched is not None and (not max_calls or stitched.calls() <= max_calls):
                score = score_of("per-phase", stitched)
                if score < best[0]:
                    best = (score, stitched, "per-phase")
        # the static reference stays unless the best simulates min_gain fewer swap-ins, from
        # a reference count of 1 / min_gain^2 (400 at 5 %) or more: under it, its own
        # sampling error, 1 / sqrt(count), is larger than the gain (a sampled profile's few
        # simulated swap-ins chose a schedule that was OOM-killed on BC)
        kept = next((c for n, c in tried if n == reference), None)
        ref = scores.get(reference, 0)
        if kept is not None and best[2] != reference and (
                not best[0][0] < ref * (1 - min_gain)
                or (min_gain > 0 and ref < 1 / min_gain ** 2)):
            best = ((ref,), kept, reference)
        sched = best[1]
        sched.evaluated = scores
        sched.mode = best[2]
    _put_steps(source, sched)
    return sched


def online_schedule(source, switch_ns, switch_name, lock_pages: int, page_shift: int,
                    params: dict[str, float]) -> D.Schedule:
    """The runtime's online placement replayed on this trace (objtier.plan.dynamic.
    learn_online): a tick every dynamic.online_ms (100) ms of run time, the fault sampler
    arming dynamic.sample_rate (2000, OBJTIER_RATE) pages per second of run time, both on the
    trace's clock through dynamic.time_scale (run seconds per trace second, 1); with
    dynamic.phase_memory (1, OBJTIER_ONLINE_PHASES) it also ticks at phase switches and keeps
    its scores per phase."""
    from objtier.plan.dynamic_file import DEFAULT_ONLINE_MS, ONLINE_PERIOD_MAX_MS

    period_ms = float(params.get("online_ms", DEFAULT_ONLINE_MS))
    rate = float(params.get("sample_rate", DEFAULT_SAMPLE_RATE))
    scale = float(params.get("time_scale", 1.0))
    memory = params.get("phase_memory", 1)
    if not 1 <= period_ms <= ONLINE_PERIOD_MAX_MS or not 1 <= rate <= 1e7 or not 0 < scale <= 1e6:
        raise UsageError(f"dynamic.online_ms must be in [1, {ONLINE_PERIOD_MAX_MS}], "
                         f"dynamic.sample_rate in [1, 1e7] and dynamic.time_scale in (0, 1e6]")
    if memory not in (0, 1):
        raise UsageError("dynamic.phase_memory must be 0 or 1")
    period_ns = max(int(period_ms * 1e6 / scale), 1)
    ticks = D.online_ticks(source.start_ns, source.end_ns, switch_ns, switch_name, period_ns,
                           int(D.ONLINE_SWITCH_GAP_NS / scale) if memory else 0)
    ev = source.sample_ev
    obj = np.where(ev["obj"] == NO_OBJ, -1, ev["obj"].astype(np.int64))
    return D.learn_online(ev["time_ns"], obj, ev["addr"], source.addr, source.size,
                          source.alloc_ns, source.free_ns, ticks, lock_pages, page_shift,
                          rate * period_ms / 1e3, phase_memory=bool(memory))


def plan_candidate(trace, source, plan_doc: dict, bounds, lock_pages: int,
                   page_shift: int) -> D.Schedule:
    """A plan document's per-phase placement as a schedule (objtier.plan.dynamic.
    plan_schedule): in each phase execution, the fast bytes its phase's entries give (a phase
    without a placement of its own takes its target's, "*" by default; objects matched by
    context key, occurrence and size as the runtime matches them), as pages from the one
    holding the object's first byte."""
    from objtier.sim.placement import plan_file_fast_bytes

    listed = plan_doc.get("phases") or [{"name": "*", "target": "*"}]
    target = {str(p.get("name")): str(p.get("target", p.get("name"))) for p in listed}
    sh = np.uint64(page_shift)
    first = source.addr >> sh
    cache: dict[str, np.ndarray] = {}
    fast_pages = []
    for _, _, name, _ in bounds:
        phase = target.get(name, "*")
        if phase not in cache:
            fb = plan_file_fast_bytes(trace, source, plan_doc, phase).astype(np.uint64)
            last = (source.addr + np.maximum(fb, np.uint64(1)) - np.uint64(1)) >> sh
            cache[phase] = np.where(fb > 0, (last - first).astype(np.int64) + 1, 0)
        fast_pages.append(cache[phase])
    base = D.page_base(source.addr, source.size, page_shift)
    return D.plan_schedule(fast_pages, bounds, np.diff(base), base, lock_pages, page_shift)


def _per_phase(tried: list[tuple[str, D.Schedule]], per_phase: dict[int, np.ndarray],
               best: str, source, page_shift: int) -> D.Schedule | None:
    """The candidates stitched per phase execution (objtier.plan.dynamic.stitch): each runs
    the candidate with the fewest simulated swap-ins in it, ties to the best whole-run
    candidate `best`; None when one candidate wins every phase. Its `phases` are the
    candidates' names, one per phase execution."""
    names = [n for n, _ in tried]
    table = np.stack([per_phase[id(c)] for _, c in tried])     # candidate x phase execution
    prefer = names.index(best)
    choice = [prefer if col[prefer] == col.min() else int(np.argmin(col)) for col in table.T]
    if len(set(choice)) < 2:
        return None
    base = D.page_base(source.addr, source.size, page_shift)
    stitched = D.stitch([c for _, c in tried], choice, base)
    stitched.phases = [names[c] for c in choice]
    return stitched


class PhaseEvaluator:
    """Swap-ins and major faults of a schedule simulated on `source` (the dynamic policy,
    swap tier, `fast` bytes of fast memory, `params` to the core: its advice-call budget);
    per_phase[id(schedule)] keeps the swap-ins of each of its phase executions (segments()):
    the events are fed up to the time of each switch and the core's counters read there."""

    def __init__(self, source, fast: int, page_shift: int, params: dict[str, float],
                 bin_ns: int = 10**9, chunk: int | None = None):
        self.source, self.fast, self.page_shift, self.bin_ns = source, fast, page_shift, bin_ns
        self.params = {k: v for k, v in params.items() if k not in LEARN_PARAMS}
        self.chunk = chunk
        self.per_phase: dict[int, np.ndarray] = {}

    def __call__(self, sched: D.Schedule) -> tuple[int, int]:
        from objtier.sim.engine import Simulator
        from objtier.sim.events import CHUNK_SAMPLES

        src = self.source
        cuts = np.asarray([sched.steps[lo].time_ns for _, lo, _ in D.segments(sched)][1:],
                          np.int64)
        per = np.zeros(len(cuts) + 1, np.int64)
        seg = done = 0
        with Simulator("dynamic", self.fast, src.start_ns, self.bin_ns, self.page_shift,
                       max(src.objects, 1), self.params, True) as s:
            s.set_schedule(*sched.csr())
            for events in src.chunks(self.chunk or CHUNK_SAMPLES):
                while seg < len(cuts):
                    cut = int(np.searchsorted(events["time_ns"], cuts[seg], side="left"))
                    if cut == len(events):
                        break
                    s.feed(events[:cut])
                    events = events[cut:]
                    now = s.counters()["pswpin"]
                    per[seg], done, seg = now - done, now, seg + 1
                s.feed(events)
            s.finish(src.end_ns + 1)
            c = s.counters()
        per[seg] += int(c["pswpin"]) - done
        self.per_phase[id(sched)] = per
        return int(c.get("pswpin", 0)), int(c.get("pgmajfault", 0))


def _put_steps(source, sched: D.Schedule) -> None:
    steps = np.zeros(len(sched.steps), dtype=EVENT)
    steps["time_ns"] = [s.time_ns for s in sched.steps]
    steps["obj"] = np.arange(len(sched.steps), dtype=np.uint32)
    steps["type"] = EV_PHASE
    source.phase_ev = steps[np.argsort(steps["time_ns"], kind="stable")]


def section_from_trace(trace, lock_bytes: int, page_bytes: int, window_ms: float,
                       min_accesses: float, fast_bytes: int | None = None,
                       mode: int = 0, max_calls: int = 0, advice_rate: int = 0,
                       clock_scale: float = 1.0, static_plan: dict | None = None,
                       min_gain: float | None = None) -> dict:
    """A plan's `dynamic` section learned from a recording (objtier plan --dynamic); mode
    auto simulates the candidates with `fast_bytes` of fast memory (default lock_bytes plus
    a DEFAULT_RESERVE share) under the advice-call budget the plan will run under
    (`advice_rate` calls per second, as `run --advice-rate`; 0: the runtime's default) on
    the run's clock (`clock_scale` seconds of run per recorded second, as the runtime scales
    the steps' offsets), both recorded in the section."""
    from objtier.record.dynamic_run import DEFAULT_ADVICE_RATE
    from objtier.analysis.objects import object_labels
    from objtier.plan.dynamic_file import build_section
    from objtier.sim.events import from_trace

    if page_bytes & (page_bytes - 1):
        raise UsageError(f"--dynamic needs a power-of-two page size, not {page_bytes}")
    shift = page_bytes.bit_length() - 1
    source = from_trace(trace)
    params = {"window_ms": window_ms, "min_accesses": min_accesses, "mode": mode,
              "max_calls": max_calls,
              "min_gain": DEFAULT_MIN_GAIN if min_gain is None else float(min_gain)}
    fast = fast_bytes if fast_bytes is not None else int(lock_bytes / (1.0 - DEFAULT_RESERVE))
    rate = int(advice_rate) or DEFAULT_ADVICE_RATE
    if not 1 <= rate <= ADVICE_RATE_MAX:
        raise UsageError(f"the advice rate must be in [1, {ADVICE_RATE_MAX}] calls/s, not {rate}")
    if not 0 < clock_scale <= 1e6:
        raise UsageError(f"the clock scale must be in (0, 1e6], not {clock_scale:g}")
    sched = schedule_for(trace, source, lock_bytes, shift, None, params,
                         evaluate=PhaseEvaluator(source, fast, shift, {"advice_rate": rate,
                                                               "time_scale": clock_scale}),
                         static_plan=static_plan)
    keys = context_keys(trace, source)
    section = build_section(sched, keys, occurrences(keys, source.pid), source.size,
                            object_labels(trace))
    section["advice_rate"] = rate
    section["clock_scale"] = float(clock_scale)
    section["min_gain"] = params["min_gain"]
    return section


def schedule_from_plan(trace, source, plan_doc: dict, switch_ns: np.ndarray,
                       page_shift: int, switch_name: list[str]) -> D.Schedule:
    """A plan's schedule on this trace's objects and clock, for the simulator: an object is
    the allocation with the plan object's context key, occurrence and size; a step runs at
    this trace's `switch`-th switch of the phase in force plus its offset (steps whose switch
    the trace never reaches do not run)."""
    section = plan_doc["dynamic"]
    if (1 << page_shift) != section["page_bytes"]:
        raise UsageError(f"the plan's schedule counts pages of {section['page_bytes']} bytes; "
                         f"simulate with --param page= of that size")
    keys = context_keys(trace, source).astype(str)
    occ = occurrences(keys, source.pid)
    index = {(str(k), int(c), int(z)): i for i, (k, c, z) in
             enumerate(zip(keys, occ, source.size))}
    obj_of = [index.get((o["context_key"], o["occurrence"], o["size"]), -1)
              for o in section["objects"]]
    marks = D.switch_marks(source.start_ns, switch_ns, switch_name)
    at = {ordinal: t for t, ordinal, _ in marks}
    scale = float(section.get("clock_scale", 1.0))
    steps = []
    for s in section["steps"]:
        if s["switch"] not in at:
            continue
        offset = int(round(float(s["offset_ms"]) * 1e6 * scale))
        actions = [(D.ACTION_CODES[a[0]], obj_of[a[1]], a[2], a[3]) for a in s["actions"]
                   if obj_of[a[1]] >= 0]
        steps.append(D.Step(at[s["switch"]] + offset, s["switch"], s.get("phase", ""),
                            offset, actions))
    steps.sort(key=lambda s: s.time_ns)
    return D.Schedule(steps, section["lock_bytes"] >> page_shift, page_shift,
                      float(section.get("window_ms", 0)))
