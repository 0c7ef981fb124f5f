"""What the kernel's reclaim does with a given lock set: swap-ins predicted from touch-time
curves (objtier.analysis.reuse_curves) by Che's approximation of an LRU cache.

The memory a cgroup may hold, less the locked pages and what the program holds outside its
tracked objects, is an LRU of C pages for the unlocked pages. Each unlocked page of object i is
resident with probability F_i(T) and misses at rate f_i(T) = F_i'(T), where the characteristic
time T solves

    sum_i u_i w_i F_i(T) = C            (u_i unlocked pages, w_i the share of the run i lives)

and the run's swap-ins are D * sum_i u_i w_i f_i(T) over its length D. When every unlocked
page fits (the left side stays below C for all T) nothing is swapped in. A cyclic sweep of L
pages with period P (F = t / P) gives T = P C / L < P when L > C: every page misses each sweep,
and locking k pages of it removes k misses a sweep, as Belady's MIN would; pages referenced
at random alike (F = 1 - exp(-t / m)) lose as many as a lock takes room, so a lock of them
gains nothing. Objects without a curve take their room (u_i of them) and never miss; the
callers give never-resident objects u_i = 0 (Curves.present).

Scope and limits, stated wherever a prediction is printed:
  - The same model stands for the classic active/inactive LRU of memory cgroup v1 and for
    MGLRU: both approximate recency; neither's second-chance details are modelled.
  - Pages of one object are alike: a lock of part of an object removes an average share of its
    misses (a ranked lock of its hottest pages gains more than predicted).
  - Lifetimes enter as a share of the run (or of a phase: the caller's Curves);
    first touches are not swap-ins, but a single pass counts as misses here.
Units: pages, ns, swap-ins (counts, estimated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REFINES = 3       # T: a log-spaced scan, then two linear ones in the bracket found
SCAN_POINTS = 64  # times evaluated at once per scan
T_MIN_NS, T_MAX_NS = 1e2, 1e18   # the range T is sought in [ns]


@dataclass(frozen=True)
class Curves:
    """The model's view of the objects (one row per object): see reuse_curves.ReuseCurves."""

    horizon_ns: np.ndarray   # float64 (n,), 0 = no curve (always resident)
    share: np.ndarray        # float64 (n, G): F on G points over [0, horizon]
    tail_slope: np.ndarray   # float64 (n,) [1/ns]
    live_share: np.ndarray   # float64 (n,) (0..1]
    duration_ns: float
    present: np.ndarray | None = None  # float64 (n,): share of each object's pages ever
                                       # resident (None: all); pipeline.model_curves


@dataclass(frozen=True)
class Prediction:
    swapins: float             # the run's swap-ins (estimated)
    per_object: np.ndarray     # float64 (n,): of them, per object
    characteristic_ns: float   # T; inf when every unlocked page fits
    capacity_pages: float      # C
    demand_pages: float        # unlocked pages that are ever re-used (occupancy at T = inf)

    @property
    def fits(self) -> bool:
        return not np.isfinite(self.characteristic_ns)


def at(curves: Curves, t: float) -> tuple[np.ndarray, np.ndarray]:
    """(F_i(t), f_i(t)) for every object at time t >= 0 [ns]."""
    n = len(curves.horizon_ns)
    grid_n = curves.share.shape[1] if curves.share.ndim == 2 else 1
    known = curves.horizon_ns > 0
    big_f = np.ones(n)
    small_f = np.zeros(n)
    if not known.any():
        return big_f, small_f
    h = curves.horizon_ns[known]
    share = curves.share[known]
    slope = curves.tail_slope[known]
    inside = t <= h
    step = h / (grid_n - 1)
    pos = np.where(inside, t / step, grid_n - 1.0)
    k = np.clip(np.floor(pos).astype(np.int64), 0, grid_n - 2)
    rows = np.arange(len(h))
    lo, hi = share[rows, k], share[rows, k + 1]
    frac = np.clip(pos - k, 0.0, 1.0)
    cell = np.where(inside, (hi - lo) / step, 0.0)
    value_in = lo + frac * (hi - lo)
    value_out = np.minimum(1.0, share[:, -1] + slope * np.maximum(0.0, t - h))
    value = np.where(inside, value_in, value_out)
    density = np.where(inside, np.maximum(cell, 0.0), np.where(value_out < 1.0, slope, 0.0))
    big_f[known] = value
    small_f[known] = density
    return big_f, small_f


def shares_at(curves: Curves, ts: np.ndarray) -> np.ndarray:
    """F_i(t) for every object (rows) at every time of ts (columns) [ns]; 1 for objects
    without a curve (they hold their room)."""
    ts = np.asarray(ts, dtype=np.float64)[None, :]
    out = np.ones((len(curves.horizon_ns), ts.shape[1]))
    known = curves.horizon_ns > 0
    if not known.any():
        return out
    grid_n = curves.share.shape[1]
    h = curves.horizon_ns[known][:, None]
    share = curves.share[known]
    step = h / (grid_n - 1)
    inside = ts <= h
    pos = np.where(inside, ts / step, grid_n - 1.0)
    k = np.clip(np.floor(pos).astype(np.int64), 0, grid_n - 2)
    lo = np.take_along_axis(share, k, 1)
    hi = np.take_along_axis(share, k + 1, 1)
    value_in = lo + np.clip(pos - k, 0.0, 1.0) * (hi - lo)
    value_out = np.minimum(1.0, share[:, -1:] + curves.tail_slope[known][:, None]
                           * np.maximum(0.0, ts - h))
    out[known] = np.where(inside, value_in, value_out)
    return out


def characteristic_time(curves: Curves, unlocked: np.ndarray, capacity: float) -> float:
    """The T at which the unlocked pages' occupancy sum_i u_i F_i(T) reaches capacity [ns]
    (occupancy is non-decreasing in T): a log-spaced scan over [T_MIN_NS, T_MAX_NS], then
    linear scans of the bracket found, then linear interpolation within the last one."""
    lo, hi = T_MIN_NS, T_MAX_NS
    ts = np.geomspace(lo, hi, SCAN_POINTS)
    for _ in range(REFINES):
        occ = unlocked @ shares_at(curves, ts)
        above = np.flatnonzero(occ >= capacity)
        if not len(above):
            return float(ts[-1])
        i = int(above[0])
        if i == 0:
            return float(ts[0])
        lo, hi, occ_lo, occ_hi = ts[i - 1], ts[i], occ[i - 1], occ[i]
        ts = np.linspace(lo, hi, SCAN_POINTS)
    if occ_hi <= occ_lo:
        return float(hi)
    return float(lo + (hi - lo) * (capacity - occ_lo) / (occ_hi - occ_lo))


def demand(curves: Curves, unlocked_pages: np.ndarray) -> float:
    """Unlocked pages ever re-used: sum u_i w_i F_i(inf) (F reaches 1 where the tail rises)."""
    known = curves.horizon_ns > 0
    final = np.ones(len(known))
    final[known] = np.where(curves.tail_slope[known] > 0, 1.0, curves.share[known, -1])
    return float((unlocked_pages * curves.live_share * final).sum())


def predict(curves: Curves, unlocked_pages: np.ndarray, capacity_pages: float) -> Prediction:
    """The run's swap-ins with unlocked_pages (float64 (n,)) unlocked and capacity_pages of
    memory for them (module docstring)."""
    u = np.asarray(unlocked_pages, dtype=np.float64) * curves.live_share
    need = demand(curves, np.asarray(unlocked_pages, dtype=np.float64))
    cap = max(0.0, float(capacity_pages))
    if need <= cap:
        return Prediction(0.0, np.zeros(len(u)), float("inf"), cap, need)
    # only the objects with unlocked live pages matter: solve on them alone
    rows = np.flatnonzero(u > 0)
    sub = Curves(curves.horizon_ns[rows], curves.share[rows], curves.tail_slope[rows],
                 curves.live_share[rows], curves.duration_ns)
    u_sub = u[rows]
    t = characteristic_time(sub, u_sub, cap)
    per = np.zeros(len(u))
    per[rows] = u_sub * at(sub, t)[1] * curves.duration_ns
    return Prediction(float(per.sum()), per, t, cap, need)
