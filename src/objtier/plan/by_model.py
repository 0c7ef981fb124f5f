"""Choosing a lock set by predicting what the kernel will do with it (objtier.model.lru).

The candidates are placements of the same objects: locking nothing, the rules' own choice
(`auto`, or whatever algorithm was asked), the caller's extra ones (the pipeline adds spill's
prefix fill at 25-100 % of the cap), and the model's own greedy set, grown where the predicted
swap-ins fall the most per page locked (which locks the part of a cyclically swept object that
LRU would lose anyway, and nothing of an object LRU keeps as well by itself). The lowest prediction wins; a candidate that locks
more wins only by more than TIE of the best prediction, so "lock nothing" wins every tie.

The run is seen as one view (objtier.model.Curves) or as a list of views, one per slice of the
run, each with the objects live in it and their curves there; a prediction over views is the
sum of theirs. A locked page takes its room while its object is live (the runtime locks an
object at its allocation and the lock ends with it), so a view's room for the unlocked pages is
the capacity less the locked pages weighted by their live share in the view.

Memory: local_bytes is the cgroup's limit; other_bytes what the program holds outside its
tracked objects (small allocations, stacks, code, page cache charged to the cgroup), which
stays with the kernel and takes its room; the lock cap is local - max(other + SLACK_BYTES,
MIN_MARGIN_BYTES).
Units: bytes, pages, swap-ins (estimated).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from objtier.model.lru import Curves, Prediction, predict
from objtier.plan.placement import Placement, finish, pages
from objtier.plan.table import ObjectTable

SLACK_BYTES = 4 << 20   # room for runtime threads, page tables, reclaim's own slack
# the unlocked margin is never below this: compare's fitted margin had the same floor, and a
# 9 MiB limit with a 4.8 MiB lock (other + SLACK_BYTES only) OOM-killed BFS (scale 17) in 1
# of 3 runs on 2026-12-01
MIN_MARGIN_BYTES = 8 << 20
# what the runtime itself holds in a program it runs a plan in (its tables, buffers, threads'
# stacks): room a plan that locks anything takes from the unlocked pages, and locking nothing
# (the program alone) does not. Measured (peak RSS under `run` with the program's plan over
# the plain run, 2 runs each, 2026-12-02): scipy CG (Python, 222 objects) +2.7-3.0 MiB of
# 181.8 MiB; a C program with one 138 MiB array +1.1-1.4 MiB. Taken between the two.
RUNTIME_BYTES = 2 << 20
STEPS = 32              # the greedy set grows by multiples of cap / STEPS (>= one page)
TIE = 0.03              # a candidate locking more must predict this share fewer swap-ins


@dataclass(frozen=True)
class Choice:
    name: str                     # the winning candidate
    placement: Placement | None   # its placement (None: one plan per phase, the pipeline's)
    limit_bytes: int              # its lock budget
    predictions: dict[str, float]  # candidate -> predicted swap-ins
    nothing: Prediction           # locking nothing (the kernel arm)
    chosen: Prediction
    capacity_bytes: int           # local - other: what the objects share
    other_bytes: int
    calibration: dict | None = None  # pipeline: the fit to a measured kernel run, if any
    sites: list | None = None     # pipeline: the plan's `sites` the model places (site_rows)
    leveled: bool = False         # predictions already at a measured kernel run's level,
                                  # row by row (site_rows): `scaled` leaves them


def locked_pages(placement: Placement) -> np.ndarray:
    """Pages each object has locked under a placement (float64)."""
    return pages(placement.fast_bytes, placement.page_bytes).astype(np.float64)


Views = Curves | list[Curves]   # one view of the run, or one per slice of it (summed)


def views_of(curves: Views) -> list[Curves]:
    return curves if isinstance(curves, list) else [curves]


def object_pages(objects: ObjectTable, page_bytes: int, curves: Views | None = None
                 ) -> np.ndarray:
    """Whole pages per object; with curves, only the share ever resident (Curves.present)."""
    pages_ = (objects.size // page_bytes).astype(np.float64)
    present = views_of(curves)[0].present if curves is not None else None
    if present is not None:
        pages_ = np.floor(pages_ * present)
    return pages_


def predicted(curves: Views, objects: ObjectTable, page_bytes: int, capacity_pages: float,
              locked: np.ndarray) -> Prediction:
    """The prediction for `locked` pages per object and capacity_pages for all objects: per
    view, the unlocked pages in the room the live locked pages (and, when any page is locked,
    the runtime: RUNTIME_BYTES) leave; over views, the sum."""
    total = object_pages(objects, page_bytes, curves)
    locked = np.minimum(locked, total)
    runtime = RUNTIME_BYTES / page_bytes if locked.any() else 0.0
    parts = [predict(view, total - locked,
                     capacity_pages - runtime - float((locked * view.live_share).sum()))
             for view in views_of(curves)]
    if len(parts) == 1:
        return parts[0]
    return Prediction(sum(p.swapins for p in parts), sum(p.per_object for p in parts),
                      min(p.characteristic_ns for p in parts), parts[0].capacity_pages,
                      max(p.demand_pages for p in parts))


def greedy(curves: Views, objects: ObjectTable, page_bytes: int, capacity_pages: float,
           cap_pages: float, start: np.ndarray | None = None,
           only: np.ndarray | None = None) -> np.ndarray:
    """Locked pages per object, grown step by step: each step tries, for every object, locks
    of 1, 2, 4, ... chunks more (up to the object and the cap) and takes the one that lowers
    the prediction most per page locked; it stops when no lock lowers it. Looking further
    than one chunk matters: under LRU a lock of a swept object gains only once the part left
    unlocked fits the room, or a hot object misses only once T has fallen. start: locks
    already made (they count against the cap); only: the rows that may grow (default all)."""
    total = object_pages(objects, page_bytes, curves)
    can = objects.plannable & (total > 0) & curves_known(curves)
    if only is not None:
        can &= only
    locked = np.zeros(len(total)) if start is None else np.minimum(start, total).astype(float)
    chunk = max(1.0, float(np.floor(cap_pages / STEPS)))
    now = predicted(curves, objects, page_bytes, capacity_pages, locked)
    best = now.swapins
    while locked.sum() + 1 <= cap_pages and best > 0:
        room = cap_pages - locked.sum()
        pick, pick_add, pick_rate = -1, 0.0, 0.0
        # a lock removes only its object's own misses (and takes room from the others):
        # objects predicted to miss nothing are no candidates
        for r in np.flatnonzero(can & (locked < total) & (now.per_object > 0)).tolist():
            most = min(total[r] - locked[r], room)
            adds = sorted({min(most, chunk * (1 << k)) for k in range(12)} - {0.0})
            for add in adds:
                if add < 1:
                    continue
                trial = locked.copy()
                trial[r] += add
                value = predicted(curves, objects, page_bytes, capacity_pages, trial).swapins
                rate = (best - value) / add
                if value < best * (1.0 - 1e-3) and rate > pick_rate:
                    pick, pick_add, pick_rate = r, add, rate
        if pick < 0:
            break
        locked[pick] += pick_add
        now = predicted(curves, objects, page_bytes, capacity_pages, locked)
        best = now.swapins
    return locked


def curves_known(curves: Views) -> np.ndarray:
    return np.logical_or.reduce([view.horizon_ns > 0 for view in views_of(curves)])


def as_placement(objects: ObjectTable, locked: np.ndarray, page_bytes: int, limit: int,
                 reason: str) -> Placement:
    """A prefix split per object of `locked` pages (spill's encoding), reasons filled in."""
    # whole only when the locked pages cover every byte (ceil(size / page) of them): fast
    # bytes are charged in whole pages, and the cap counts the locked pages
    fast = np.minimum(locked.astype(np.int64) * page_bytes, objects.size)
    order = np.where(fast > 0, np.arange(len(fast)), -1)
    fill = np.cumsum(pages(fast, page_bytes) * page_bytes)
    why = np.array([reason if f > 0 else "model: left to the kernel" for f in fast],
                   dtype=object)
    return finish("model", {}, objects, limit, page_bytes, fast,
                  np.zeros(len(fast)), order, fill, why)


def lock_cap(local_bytes: int, other_bytes: int, given: int | None = None) -> int:
    """The most a plan may lock [bytes]: `given` (local less a margin the user chose), else
    local - max(other + SLACK_BYTES, MIN_MARGIN_BYTES)."""
    derived = max(0, local_bytes - max(other_bytes + SLACK_BYTES, MIN_MARGIN_BYTES))
    return derived if given is None else max(0, int(given))


def choose(objects: ObjectTable, curves: Views, page_bytes: int, local_bytes: int,
           other_bytes: int, rules: tuple[str, int, Placement],
           extra: list[tuple[str, int, Placement]] = (), cap: int | None = None,
           keep_rules: bool = False) -> Choice:
    """The candidate with the lowest predicted swap-ins (module docstring). rules: the
    (name, lock limit, placement) the rules chose; extra: further candidates; cap: the most
    to lock (default lock_cap's derived one). keep_rules (an algorithm the user named): the
    rules' placement is kept whatever it locks, and only predicted beside locking nothing."""
    capacity = max(0, local_bytes - other_bytes)
    cap_bytes = lock_cap(local_bytes, other_bytes) if cap is None else cap
    cap_pages = float(cap_bytes // page_bytes)
    capacity_pages = float(capacity // page_bytes)
    nothing_locks = np.zeros(len(objects))
    nothing = predicted(curves, objects, page_bytes, capacity_pages, nothing_locks)
    if keep_rules:
        locked = locked_pages(rules[2])
        chosen = predicted(curves, objects, page_bytes, capacity_pages, locked)
        placement = _with_model_reasons(rules[2], rules[0], chosen, nothing)
        return Choice(rules[0], placement, int(rules[1]),
                      {"nothing": nothing.swapins, rules[0]: chosen.swapins}, nothing, chosen,
                      capacity, other_bytes)
    own = greedy(curves, objects, page_bytes, capacity_pages, cap_pages)
    # locking nothing keeps the rules' budget (a plan's budget is at least one byte)
    candidates = [("nothing", rules[1], as_placement(objects, nothing_locks, page_bytes,
                                                     rules[1], "")),
                  rules, *extra,
                  ("model", cap_bytes, as_placement(
                      objects, own, page_bytes, cap_bytes,
                      "model: the pages locked here lower the predicted swap-ins most"))]
    scored = []
    for name, limit, placement in candidates:
        locked = locked_pages(placement)
        if locked.sum() > cap_pages and name != "nothing":
            continue      # would leave the kernel less than what the program holds outside
        scored.append((name, limit, placement,
                       predicted(curves, objects, page_bytes, capacity_pages, locked),
                       float(locked.sum())))
    best = min(p.swapins for _, _, _, p, _ in scored)
    # fewest locked pages among those within TIE of the best
    near = [s for s in scored if s[3].swapins <= best + TIE * max(best, 1.0)]
    name, limit, placement, prediction, _ = min(near, key=lambda s: (s[4], s[3].swapins))
    placement = _with_model_reasons(placement, name, prediction, nothing)
    return Choice(name, placement, int(limit), {s[0]: s[3].swapins for s in scored},
                  nothing, prediction, capacity, other_bytes)


def _with_model_reasons(placement: Placement, name: str, prediction: Prediction,
                        nothing: Prediction) -> Placement:
    """The placement with each object's predicted swap-ins appended to its reason."""
    return replace(placement, reason=np.array(
        [f"{r}; model ({name}): {mine:,.0f} of its swap-ins predicted, {kernel:,.0f} with "
         f"nothing locked (estimated)" for r, mine, kernel in
         zip(placement.reason, prediction.per_object, nothing.per_object)], dtype=object))


ALPHA_MAX = 1e4       # most re-touches per run calibration may give the pages never seen again
CALIBRATION_STEPS = 40


def with_tail(curves: Views, alpha: float) -> Views:
    """The curves with the pages no window saw touched again (1 - F(H)) re-touched alpha
    times over the run (each view: over its own time) at least: tail slope max(slope,
    alpha (1 - F(H)) / D)."""
    def one(view: Curves) -> Curves:
        floor = alpha * np.clip(1.0 - view.share[:, -1], 0.0, 1.0) / max(1.0, view.duration_ns)
        return replace(view, tail_slope=np.maximum(view.tail_slope, floor))
    return [one(v) for v in curves] if isinstance(curves, list) else one(curves)


SCALE_BAND = (0.8, 1.25)   # a fitted kernel prediction this close to the run is not scaled


def scale_factor(kernel_predicted: float, measured_swapins: float) -> float:
    """measured / predicted where the kernel arm's prediction lies outside SCALE_BAND of the
    measured kernel run, else 1 (and 1 for no prediction): the factor `scaled` applies."""
    kernel = float(kernel_predicted)
    if kernel <= 0 or SCALE_BAND[0] <= measured_swapins / kernel <= SCALE_BAND[1]:
        return 1.0
    return measured_swapins / kernel


def scaled(choice: "Choice", measured_swapins: float) -> tuple["Choice", float]:
    """(choice, scale): where the kernel arm's prediction, after calibrate, is still outside
    SCALE_BAND of the measured kernel run, every prediction of the choice times
    measured / predicted (else scale 1). The same factor on every candidate keeps the choice
    (the 3 % margin is relative); it carries the level the run showed over to the plan's arm.
    A choice already `leveled` (site_rows: the level put on the rows it belongs to) is
    returned as it is, with the factor it would have had.
    Over the 2026-12-02 suite the model was low by 20-53 % on both arms alike (the objtier /
    kernel ratio of swap-ins within 3-19 % on CG and hnswlib)."""
    from dataclasses import replace

    if choice.leveled:
        return choice, 1.0
    k = scale_factor(choice.nothing.swapins, measured_swapins)
    if k == 1.0:
        return choice, 1.0

    def times(p: Prediction) -> Prediction:
        return replace(p, swapins=p.swapins * k, per_object=p.per_object * k)

    return replace(choice, nothing=times(choice.nothing), chosen=times(choice.chosen),
                   predictions={n: v * k for n, v in choice.predictions.items()}), k


def calibrate(curves: Views, objects: ObjectTable, page_bytes: int, capacity_pages: float,
              measured_swapins: float) -> tuple[float, Views]:
    """(alpha, curves) with the kernel arm's predicted swap-ins (nothing locked) matched to a
    measured run's, by the one quantity the windows cannot see: how often the pages they did
    not see touched again within their dwell are touched later (with_tail). A model that
    already predicts at least the measurement, or that no alpha up to ALPHA_MAX brings up to
    it, is left as it is (alpha 0)."""
    nothing = np.zeros(len(objects))

    def kernel(alpha: float) -> float:
        return predicted(with_tail(curves, alpha), objects, page_bytes, capacity_pages,
                         nothing).swapins

    if kernel(0.0) >= measured_swapins:
        return 0.0, curves
    lo, hi = 0.0, ALPHA_MAX
    if kernel(hi) < measured_swapins:
        # even the most re-touches cannot reach the run: the gap is not the windows' unseen
        # re-use, and a tail at its bound only bends the candidates (scipy CG at 50 %, suite
        # of 2026-12-03: 604 k predicted, 1.07 M measured; at the bound every lock set
        # predicted 1.9x the swap-ins of none and nothing was locked, where the unfitted
        # model's 59 MiB ran 1.46x the kernel in the suite before). Left unfitted (alpha
        # 0); `scaled` carries the run's level over to every candidate alike.
        return 0.0, curves
    for _ in range(CALIBRATION_STEPS):       # geometric steps: alpha spans decades
        mid = np.sqrt(max(lo, 1e-3) * hi)
        if kernel(mid) < measured_swapins:
            lo = mid
        else:
            hi = mid
    return hi, with_tail(curves, hi)
