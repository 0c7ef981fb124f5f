"""Dynamic placement for the swap tier: a schedule learned ahead from an exact trace.

The run is cut into windows at events the runtime sees too: every switch of the phase in force
(`objtier_phase()` markers) and, with `window_ms` > 0, every `window_ms` of trace time inside a
phase execution. Step k runs at the start of window k and moves the locked (mlocked) set to the
pages window k uses most:

    lock set L_k   the pages of window k with at least `min_accesses` accesses in it, most
                   accessed first, up to `lock_pages` (the fast tier less the reserve left to
                   the kernel's reclaim);
    UNLOCK         L_{k-1} - L_k still used in window k or k + 1 (munlock: stays resident, on
                   the kernel's LRU);
    PAGEOUT        L_{k-1} - L_k used in neither (munlock + MADV_PAGEOUT: room made ahead;
                   with pageout=False these are unlocked only, and reclaim decides);
    LOCK           L_k - L_{k-1} (MADV_WILLNEED + mlock: brought in before the window needs it);
    SWEEP          objects window k reads in page order (at least `sweep_share` of its steps
                   from one page to another between consecutive samples of that object go to
                   the next page) with
                   pages outside L_k: a fault there prefetches (MADV_WILLNEED) the pages after it.

That is the `hot` rule (learn). learn_nextuse locks by next use instead (Belady's rule at
window granularity) and static_schedule replays a static plan as a schedule; the simulator's
driver (objtier.sim.dynamic) tries them all and keeps the one with the fewest swap-ins.
learn_online knows nothing ahead: it replays the runtime's online placement, which decides at
each tick from the accesses a sampler saw before it.

Pages are counted from the page holding the object's first byte (page k of object o covers
[first page of o + k]); ranges are runs of consecutive pages. Pure: numpy in, dataclasses out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

UNLOCK, PAGEOUT, LOCK, WILLNEED, SWEEP = 1, 2, 3, 4, 5  # sim.h enum sim_dyn_action
ACTION_NAMES = {UNLOCK: "unlock", PAGEOUT: "pageout", LOCK: "lock", WILLNEED: "willneed",
                SWEEP: "sweep"}
ACTION_CODES = {v: k for k, v in ACTION_NAMES.items()}

DEFAULT_WINDOW_MS = 0.0      # windows = phase executions only
DEFAULT_MIN_ACCESSES = 2     # a page touched once in a window is not worth a lock
DEFAULT_SWEEP_SHARE = 0.8
DEFAULT_CHUNK_PAGES = 16     # next-use order ranks 64 KiB chunks of an object as one
DEFAULT_LOOKAHEAD = 2        # next-use order looks this many windows ahead
DEFAULT_HORIZON = 1          # next-use order pages out what no window this far ahead uses
BURST_BINS = 8               # time bins per window that count a chunk's bursts
MODES = ("auto", "hot", "nextuse", "static", "online")

# the runtime's online placement (native/runtime/place/online.c), replayed by learn_online
ONLINE_RANGE_PAGES = 512     # 2 MiB of 4 KiB pages: the shortest range of a larger object
ONLINE_PER_OBJECT = 256      # ranges per object at most
ONLINE_ALPHA = 0.7           # weight of a tick's observation
ONLINE_AGE = 0.7             # a tick without observation
ONLINE_MIN_SCORE = 0.02
ONLINE_HOLD = 1.2            # a locked range's advantage
ONLINE_PHASES_KEPT = 64      # phases whose scores the phase memory keeps (PHASES_KEPT)


@dataclass
class Step:
    """One step: when it runs and what it does."""

    time_ns: int             # trace time of its trigger
    switch: int              # phase switches before it (0 = from the start of the process)
    phase: str               # the phase in force ("*" outside any)
    offset_ns: int           # trace time since that switch (or since the start)
    actions: list[tuple[int, int, int, int]] = field(default_factory=list)
    # (action, object index, first page, pages)


@dataclass
class Schedule:
    steps: list[Step]
    lock_pages: int
    page_shift: int
    window_ms: float
    mode: str = "hot"        # how it was made: MODES, plan (a given plan) or per-phase
    evaluated: dict[str, int] = field(default_factory=dict)  # candidate -> simulated swap-ins
    phases: list[str] = field(default_factory=list)  # per-phase: candidate per segments() row

    def csr(self) -> tuple[np.ndarray, ...]:
        """(offsets, objs, first, pages, action) for sim_set_schedule."""
        offsets = [0]
        rows = []
        for s in self.steps:
            rows.extend(s.actions)
            offsets.append(len(rows))
        a = np.asarray(rows, dtype=np.int64).reshape(-1, 4)
        return (np.asarray(offsets, np.uint64), a[:, 1].astype(np.uint32),
                a[:, 2].astype(np.uint64), a[:, 3].astype(np.uint64), a[:, 0].astype(np.uint8))

    def calls(self) -> int:
        """Advice system calls the runtime makes to run every step (dynamic.c action_calls:
        unlock, pageout and lock 2 per range, willneed 1, sweep none)."""
        per = {UNLOCK: 2, PAGEOUT: 2, LOCK: 2, WILLNEED: 1, SWEEP: 0}
        return sum(per[a[0]] for s in self.steps for a in s.actions)

    def counts(self) -> dict[str, int]:
        """Ranges and pages per action over the whole schedule."""
        out: dict[str, int] = {}
        for s in self.steps:
            for action, _, _, n in s.actions:
                name = ACTION_NAMES[action]
                out[name + "_ranges"] = out.get(name + "_ranges", 0) + 1
                if action != SWEEP:
                    out[name + "_pages"] = out.get(name + "_pages", 0) + n
        return out


def runs(pages: np.ndarray) -> list[tuple[int, int]]:
    """Sorted unique page numbers as (first, count) runs of consecutive pages."""
    if not len(pages):
        return []
    cut = np.flatnonzero(np.diff(pages) != 1) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [len(pages)]])
    return [(int(pages[a]), int(ends[i] - a)) for i, a in enumerate(starts)]


def switch_marks(start_ns: int, switch_ns: np.ndarray, switch_name: list[str]
                 ) -> list[tuple[int, int, str]]:
    """(time_ns, ordinal, phase in force) of the program start (ordinal 0) and of every switch
    of the phase in force. Several switches at one time are one (the last holds), a switch to
    the phase already in force is none: what the runtime counts (one per objtier_phase call
    that changes the phase in force)."""
    last: dict[int, str] = {}
    for t, name in zip(np.asarray(switch_ns, np.int64).tolist(), switch_name):
        last[int(t)] = str(name)
    marks = [(int(start_ns), 0, "*")]
    for t in sorted(last):
        if last[t] != marks[-1][2] and t >= marks[-1][0]:
            marks.append((t, len(marks), last[t]))
    return marks


def boundaries(start_ns: int, end_ns: int, switch_ns: np.ndarray, switch_name: list[str],
               window_ms: float) -> list[tuple[int, int, str, int]]:
    """Window starts as (time_ns, switch ordinal, phase in force, offset since the switch)."""
    marks = switch_marks(start_ns, switch_ns, switch_name)
    out = []
    for j, (t, ordinal, name) in enumerate(marks):
        stop = marks[j + 1][0] if j + 1 < len(marks) else int(end_ns) + 1
        out.append((t, ordinal, name, 0))
        if window_ms > 0:
            step = int(window_ms * 1e6)
            for off in range(step, max(stop - t, 0), step):
                out.append((t + off, ordinal, name, off))
    # several marks at one time: the last holds
    dedup: dict[int, tuple[int, int, str, int]] = {}
    for b in out:
        dedup[b[0]] = b
    return [dedup[t] for t in sorted(dedup)]


def _layout(obj_addr: np.ndarray, obj_size: np.ndarray, page_shift: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per object: first page number, pages, and its first page's global page id (gid)."""
    first_vpn = np.asarray(obj_addr, np.uint64) >> np.uint64(page_shift)
    npages = ((np.asarray(obj_addr, np.uint64) + np.asarray(obj_size, np.uint64)
               + np.uint64((1 << page_shift) - 1)) >> np.uint64(page_shift)) - first_vpn
    base = np.concatenate([[0], np.cumsum(npages.astype(np.int64))])
    return first_vpn, npages.astype(np.int64), base


def _in_objects(sample_ns, sample_obj, sample_addr, weights, first_vpn, npages, page_shift):
    """(obj, page, time, weight) of the samples inside an object's pages."""
    hit = np.asarray(sample_obj) >= 0
    obj = np.asarray(sample_obj)[hit].astype(np.int64)
    page = ((np.asarray(sample_addr)[hit].astype(np.uint64) >> np.uint64(page_shift))
            - first_vpn[obj]).astype(np.int64)
    inside = (page >= 0) & (page < npages[obj])
    t = np.asarray(sample_ns)[hit][inside].astype(np.int64)
    return obj[inside], page[inside], t, np.asarray(weights, np.float64)[hit][inside]


def _sweeps(obj, page, t, win, nobj: int, sweep_share: float) -> dict[int, set[int]]:
    """Per window: the objects read in page order (see the module's SWEEP)."""
    order = np.lexsort((t, obj, win))
    so, sw, sp = obj[order], win[order], page[order]
    # only steps that change page count: a random walk inside one page is no sweep
    same = (so[1:] == so[:-1]) & (sw[1:] == sw[:-1]) & (sp[1:] != sp[:-1])
    fwd = same & ((sp[1:] - sp[:-1]) == 1)
    sweep_of: dict[int, set[int]] = {}
    if same.any():
        pair = sw[1:][same] * (nobj + 1) + so[1:][same]
        pu, pinv = np.unique(pair, return_inverse=True)
        share = np.bincount(pinv, weights=fwd[same].astype(np.float64)) / np.bincount(pinv)
        for p, s in zip(pu, share):
            if s >= sweep_share:
                sweep_of.setdefault(int(p // (nobj + 1)), set()).add(int(p % (nobj + 1)))
    return sweep_of


def _transition(prev_lock: np.ndarray, lock: np.ndarray, soon: np.ndarray, base: np.ndarray,
                pageout: bool) -> list[tuple[int, int, int, int]]:
    """UNLOCK / PAGEOUT / LOCK actions from one locked set (sorted gids) to the next; a page
    that leaves is paged out unless it is in `soon` (or pageout is off)."""
    dropped = np.setdiff1d(prev_lock, lock, assume_unique=True)
    still = np.isin(dropped, soon) if pageout else np.ones(len(dropped), dtype=bool)
    actions: list[tuple[int, int, int, int]] = []
    for code, gids in ((UNLOCK, dropped[still]), (PAGEOUT, dropped[~still]),
                       (LOCK, np.setdiff1d(lock, prev_lock, assume_unique=True))):
        actions += _ranges(code, gids, base)
    return actions


def _ranges(code: int, gids: np.ndarray, base: np.ndarray) -> list[tuple[int, int, int, int]]:
    """One action over sorted global page ids, as runs of pages per object."""
    if not len(gids):
        return []
    owners = np.searchsorted(base, gids, side="right") - 1
    out: list[tuple[int, int, int, int]] = []
    for o in np.unique(owners):
        out.extend((code, int(o), f, n) for f, n in runs(gids[owners == o] - base[o]))
    return out


@dataclass
class _Windowed:
    """The samples inside objects, grouped per (window, page). Page ids are global: object o's
    page p is base[o] + p; u_* arrays run over the distinct (window, page) pairs, sorted by
    window then page, and window k's pairs are [w_lo[k], w_hi[k])."""
    base: np.ndarray
    npages: np.ndarray       # per object
    obj: np.ndarray          # per sample in an object: its object, page, time (ns), weight,
    page: np.ndarray         # window and global page id
    t: np.ndarray
    w: np.ndarray
    win: np.ndarray
    gid: np.ndarray
    starts: np.ndarray       # window start times (ns)
    inv: np.ndarray          # sample -> its (window, page) pair
    first_at: np.ndarray     # pair -> index of its first sample
    acc: np.ndarray          # pair -> summed weight
    u_win: np.ndarray
    u_gid: np.ndarray
    w_lo: np.ndarray
    w_hi: np.ndarray
    used: list[np.ndarray]   # window -> the global pages it uses, sorted


def _windowed(sample_ns, sample_obj, sample_addr, weights, obj_addr, obj_size,
              bounds: list[tuple[int, int, str, int]], page_shift: int) -> _Windowed:
    first_vpn, npages, base = _layout(obj_addr, obj_size, page_shift)
    total = int(base[-1]) + 1
    obj, page, t, w = _in_objects(sample_ns, sample_obj, sample_addr, weights, first_vpn,
                                  npages, page_shift)
    nwin = len(bounds)
    starts = np.asarray([b[0] for b in bounds], np.int64)
    win = np.maximum(np.searchsorted(starts, t, side="right") - 1, 0)
    gid = base[obj] + page
    uniq, first_at, inv = np.unique(win * total + gid, return_index=True, return_inverse=True)
    u_win = uniq // total
    u_gid = uniq % total
    w_lo = np.searchsorted(u_win, np.arange(nwin), side="left")
    w_hi = np.searchsorted(u_win, np.arange(nwin), side="right")
    return _Windowed(base, npages, obj, page, t, w, win, gid, starts, inv, first_at,
                     np.bincount(inv, weights=w), u_win, u_gid, w_lo, w_hi,
                     [u_gid[w_lo[k]:w_hi[k]] for k in range(nwin)])


def learn(sample_ns: np.ndarray, sample_obj: np.ndarray, sample_addr: np.ndarray,
          weights: np.ndarray, obj_addr: np.ndarray, obj_size: np.ndarray,
          bounds: list[tuple[int, int, str, int]], lock_pages: int, page_shift: int,
          window_ms: float = DEFAULT_WINDOW_MS, min_accesses: float = DEFAULT_MIN_ACCESSES,
          sweep_share: float = DEFAULT_SWEEP_SHARE, pageout: bool = True) -> Schedule:
    """The schedule of one trace (samples in time order; sample_obj -1 = in no object)."""
    nobj, nwin = len(obj_addr), len(bounds)
    ws = _windowed(sample_ns, sample_obj, sample_addr, weights, obj_addr, obj_size, bounds,
                   page_shift)
    base, acc, u_gid, w_lo, w_hi, used = ws.base, ws.acc, ws.u_gid, ws.w_lo, ws.w_hi, ws.used
    sweep_of = _sweeps(ws.obj, ws.page, ws.t, ws.win, nobj, sweep_share)

    steps: list[Step] = []
    prev_lock = np.zeros(0, np.int64)
    empty = np.zeros(0, np.int64)
    for k in range(nwin):
        sel = slice(w_lo[k], w_hi[k])
        g, a = u_gid[sel], acc[sel]
        keep = a >= min_accesses
        g, a = g[keep], a[keep]
        if len(g) > lock_pages:
            top = np.lexsort((g, -a))[:max(lock_pages, 0)]
            g = g[top]
        lock = np.sort(g)
        soon = np.union1d(used[k], used[k + 1] if k + 1 < nwin else empty)
        actions = _transition(prev_lock, lock, soon, base, pageout)
        actions += _sweep_actions(sweep_of.get(k, set()), used[k], lock, base)
        t0, ordinal, name, off = bounds[k]
        steps.append(Step(t0, ordinal, name, off, actions))
        prev_lock = lock
    return Schedule(steps, int(lock_pages), page_shift, float(window_ms), mode="hot")


def _sweep_actions(swept: set[int], used: np.ndarray, lock: np.ndarray, base: np.ndarray
                   ) -> list[tuple[int, int, int, int]]:
    """SWEEP for the objects swept in a window with pages it uses outside the locked set."""
    unlocked = np.setdiff1d(used, lock, assume_unique=True)
    if not len(unlocked) or not swept:
        return []
    owners = set(np.unique(np.searchsorted(base, unlocked, side="right") - 1).tolist())
    return [(SWEEP, int(o), 0, 0) for o in sorted(swept & owners)]


def learn_nextuse(sample_ns: np.ndarray, sample_obj: np.ndarray, sample_addr: np.ndarray,
                  weights: np.ndarray, obj_addr: np.ndarray, obj_size: np.ndarray,
                  bounds: list[tuple[int, int, str, int]], lock_pages: int, page_shift: int,
                  window_ms: float = DEFAULT_WINDOW_MS, chunk_pages: int = DEFAULT_CHUNK_PAGES,
                  lookahead: int = DEFAULT_LOOKAHEAD, sweep_share: float = DEFAULT_SWEEP_SHARE,
                  pageout: bool = True, willneed_pages: int = 0,
                  horizon: int = DEFAULT_HORIZON) -> Schedule:
    """Next-use order (Belady's rule at window and chunk granularity): at the start of window
    k, lock the pages whose next use is soonest, within lock_pages. A page's next use is the
    first window >= k that uses it, looking at most `lookahead` windows ahead; within one
    window, chunks (chunk_pages pages of one object) used in more of the window's
    BURST_BINS time bins go first (a chunk touched in one burst faults once whether locked
    or not, one touched all through the window faults again after every eviction), then more
    accesses. Only the pages a window uses are locked for it: a chunk is ranked as one, but
    its untouched pages are not brought in. With willneed_pages > 0, each step also
    prefetches (WILLNEED, not locked) the first willneed_pages pages its window uses outside
    the locked set, in the order of their first use: a sweep over a split object starts
    resident instead of faulting page by page."""
    nobj, nwin = len(obj_addr), len(bounds)
    ws = _windowed(sample_ns, sample_obj, sample_addr, weights, obj_addr, obj_size, bounds,
                   page_shift)
    base, npages, obj, page, t, win, starts = (ws.base, ws.npages, ws.obj, ws.page, ws.t,
                                               ws.win, ws.starts)
    acc, inv, u_win, u_gid, w_lo, w_hi, used = (ws.acc, ws.inv, ws.u_win, ws.u_gid, ws.w_lo,
                                                ws.w_hi, ws.used)
    ends = np.append(starts[1:], max(int(t.max()) + 1 if len(t) else 0, int(starts[-1]) + 1))
    length = np.maximum(ends - starts, 1)
    sub = np.clip((t - starts[win]) * BURST_BINS // length[win], 0, BURST_BINS - 1)
    chunk = page // max(chunk_pages, 1)
    cbase = np.concatenate([[0], np.cumsum((npages + max(chunk_pages, 1) - 1)
                                           // max(chunk_pages, 1))])
    cid = cbase[obj] + chunk
    ctotal = int(cbase[-1]) + 1

    # bursts per (window, chunk): time bins of the window in which the chunk is touched
    wc = win * ctotal + cid
    bursts_of = np.unique(np.unique((wc * BURST_BINS) + sub) // BURST_BINS, return_counts=True)
    # per (window, page): its first use and its chunk's bursts
    u_first = t[ws.first_at]              # samples are in time order: its first use
    u_wc = np.zeros(len(u_gid), np.int64)
    u_wc[inv] = wc
    u_burst = bursts_of[1][np.searchsorted(bursts_of[0], u_wc)]
    sweep_of = _sweeps(obj, page, t, win, nobj, sweep_share)

    steps: list[Step] = []
    prev_lock = np.zeros(0, np.int64)
    for k in range(nwin):
        sel = slice(w_lo[k], w_hi[min(k + max(lookahead, 0), nwin - 1)])
        g, nxt, b, a = u_gid[sel], u_win[sel], u_burst[sel], acc[sel]
        order = np.lexsort((g, -a, -b, nxt))
        g = g[order]
        _, first = np.unique(g, return_index=True)   # each page at its soonest use
        lock = np.sort(g[np.sort(first)][:max(lock_pages, 0)])
        # paged out only when unused for the next `horizon` windows: what comes back sooner
        # is left to reclaim (a page paged out and locked again costs a swap-in)
        soon = np.unique(u_gid[w_lo[k]:w_hi[min(k + max(horizon, 0), nwin - 1)]])
        actions = _transition(prev_lock, lock, soon, base, pageout)
        if willneed_pages > 0:
            here = slice(w_lo[k], w_hi[k])
            outside = ~np.isin(u_gid[here], lock, assume_unique=True)
            g = u_gid[here][outside][np.argsort(u_first[here][outside], kind="stable")]
            actions += _ranges(WILLNEED, np.sort(g[:willneed_pages]), base)
        actions += _sweep_actions(sweep_of.get(k, set()), used[k], lock, base)
        t0, ordinal, name, off = bounds[k]
        steps.append(Step(t0, ordinal, name, off, actions))
        prev_lock = lock
    mode = "nextuse+willneed" if willneed_pages > 0 else "nextuse"
    return Schedule(steps, int(lock_pages), page_shift, float(window_ms), mode=mode)


def static_schedule(obj_addr: np.ndarray, obj_size: np.ndarray, alloc_ns: np.ndarray,
                    fast_bytes: np.ndarray, bounds: list[tuple[int, int, str, int]],
                    lock_pages: int, page_shift: int) -> Schedule:
    """A static plan (fast_bytes per object: its first bytes stay locked) as a schedule: each
    object's fast pages are locked by the step of the window its allocation falls in, and
    never unlocked. That step usually runs before the allocation: the lock then waits for the
    object (the runtime applies it once the object is live, the simulator pins the pages as
    the allocation creates them), so the pages are locked from the allocation on, as the
    static plan locks them."""
    _, npages, _ = _layout(obj_addr, obj_size, page_shift)
    page = 1 << page_shift
    want = np.minimum((np.asarray(fast_bytes, np.int64) + page - 1) // page, npages)
    starts = np.asarray([b[0] for b in bounds], np.int64)
    steps = [Step(t0, ordinal, name, off, []) for t0, ordinal, name, off in bounds]
    left = max(lock_pages, 0)
    for o in sorted(np.flatnonzero(want > 0).tolist(), key=lambda o: int(alloc_ns[o])):
        n = min(int(want[o]), left)
        if n <= 0:
            break
        k = max(int(np.searchsorted(starts, int(alloc_ns[o]), side="right")) - 1, 0)
        steps[k].actions.append((LOCK, int(o), 0, n))
        left -= n
    return Schedule(steps, int(lock_pages), page_shift, 0.0, mode="static")


def page_base(obj_addr: np.ndarray, obj_size: np.ndarray, page_shift: int) -> np.ndarray:
    """Object o's page p is global page base[o] + p (base[-1]: pages of all objects)."""
    return _layout(obj_addr, obj_size, page_shift)[2]


def segments(sched: Schedule) -> list[tuple[int, int, int]]:
    """(switch ordinal, first step, end step) of every phase execution the schedule has steps
    in, in step order: the steps from one switch of the phase in force to the next."""
    out: list[tuple[int, int, int]] = []
    for i, s in enumerate(sched.steps):
        if out and out[-1][0] == s.switch:
            out[-1] = (s.switch, out[-1][1], i + 1)
        else:
            out.append((s.switch, i, i + 1))
    return out


def _gids(actions, codes: tuple[int, ...], base: np.ndarray) -> np.ndarray:
    parts = [base[o] + np.arange(f, f + n, dtype=np.int64) for a, o, f, n in actions
             if a in codes]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def locked_after(sched: Schedule, base: np.ndarray) -> list[np.ndarray]:
    """The locked set (sorted global page ids) each step leaves, replaying its actions from
    an empty set: UNLOCK and PAGEOUT take pages out, LOCK puts them in (whether the object is
    live yet or not: a lock waits for its object)."""
    cur = np.zeros(0, np.int64)
    out = []
    for s in sched.steps:
        cur = np.setdiff1d(cur, _gids(s.actions, (UNLOCK, PAGEOUT), base), assume_unique=True)
        cur = np.union1d(cur, _gids(s.actions, (LOCK,), base))
        out.append(cur)
    return out


def stitch(cands: list[Schedule], choice: list[int], base: np.ndarray) -> Schedule:
    """One schedule from several learned on the same phase switches (their segments() have the
    same switch ordinals): phase execution j runs the steps of cands[choice[j]]. Where the
    candidate changes, its first step in the phase moves the locked set from where the
    previous phase's candidate left it to where this candidate's step puts it (pages it pages
    out are paged out, other dropped pages unlocked, missing ones locked), then does that
    step's other actions (WILLNEED, SWEEP); its later steps run as they are, their locked set
    being the candidate's own from there on."""
    segs = [segments(c) for c in cands]
    if len({tuple(s[0] for s in sg) for sg in segs}) != 1:
        raise ValueError("schedules to stitch must have steps at the same phase switches")
    if len(choice) != len(segs[0]):
        raise ValueError(f"{len(choice)} choices for {len(segs[0])} phase executions")
    after = [locked_after(c, base) for c in cands]
    steps: list[Step] = []
    cur = np.zeros(0, np.int64)
    for j, c in enumerate(choice):
        _, lo, hi = segs[c][j]
        first = cands[c].steps[lo]
        target = after[c][lo]
        dropped = np.setdiff1d(cur, target, assume_unique=True)
        out = np.isin(dropped, _gids(first.actions, (PAGEOUT,), base))
        actions = []
        for code, gids in ((UNLOCK, dropped[~out]), (PAGEOUT, dropped[out]),
                           (LOCK, np.setdiff1d(target, cur, assume_unique=True))):
            actions += _ranges(code, gids, base)
        actions += [a for a in first.actions if a[0] not in (UNLOCK, PAGEOUT, LOCK)]
        steps.append(Step(first.time_ns, first.switch, first.phase, first.offset_ns, actions))
        steps.extend(Step(s.time_ns, s.switch, s.phase, s.offset_ns, list(s.actions))
                     for s in cands[c].steps[lo + 1:hi])
        cur = after[c][hi - 1]
    ref = cands[choice[0]]
    return Schedule(steps, ref.lock_pages, ref.page_shift,
                    max(cands[c].window_ms for c in set(choice)), mode="per-phase")


def plan_schedule(fast_pages: list[np.ndarray], bounds: list[tuple[int, int, str, int]],
                  npages: np.ndarray, base: np.ndarray, lock_pages: int,
                  page_shift: int) -> Schedule:
    """A fixed (per-phase) plan as a schedule: fast_pages[k][o] is how many of object o's
    first pages the plan keeps fast in window k (a window per phase execution: bounds at the
    phase switches only). Step k locks those pages and unlocks the ones the previous step
    locked that the plan no longer keeps (munlock only: reclaim decides), objects in index
    order up to lock_pages in all. A lock on an object not allocated yet waits for it."""
    steps: list[Step] = []
    prev = np.zeros(0, np.int64)
    for k, (t0, ordinal, name, off) in enumerate(bounds):
        want = np.minimum(np.asarray(fast_pages[k], np.int64), npages)
        parts, left = [], max(int(lock_pages), 0)
        for o in np.flatnonzero(want > 0).tolist():
            n = min(int(want[o]), left)
            if n <= 0:
                break
            parts.append(base[o] + np.arange(n, dtype=np.int64))
            left -= n
        lock = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        steps.append(Step(t0, ordinal, name, off,
                          _transition(prev, lock, lock, base, pageout=False)))
        prev = lock
    return Schedule(steps, int(lock_pages), page_shift, 0.0, mode="plan")


ONLINE_SWITCH_GAP_NS = 10_000_000   # switch ticks at least min(this, period) apart (online.c)


def online_ticks(start_ns: int, end_ns: int, switch_ns: np.ndarray, switch_name: list[str],
                 period_ns: int, switch_gap_ns: int = 0) -> list[tuple[int, int, str, int]]:
    """The online placement's ticks as (time_ns, switch ordinal, phase in force, offset since
    that switch): how a schedule step names the time the runtime's thread acts at. A tick
    every period_ns from the start; with switch_gap_ns > 0 (the runtime's phase memory:
    ONLINE_SWITCH_GAP_NS of run time on the trace's clock), a switch also ticks at once, or
    min(switch_gap_ns, period_ns) after the last tick when that is later (switches before a
    tick are served by it), and the period restarts there."""
    marks = switch_marks(start_ns, switch_ns, switch_name)
    times = [m[0] for m in marks]
    period = max(int(period_ns), 1)
    gap = max(min(int(switch_gap_ns), period), 1)
    end = int(end_ns)
    tick_times: list[int] = []
    last, nxt = int(start_ns), int(start_ns) + period
    for s in (times[1:] if switch_gap_ns > 0 else []):
        while nxt <= s and nxt <= end:
            tick_times.append(nxt)
            last, nxt = nxt, nxt + period
        if s <= last:
            continue                   # seen by the tick at `last`
        due = max(s, last + gap)
        if due < nxt and due <= end:
            tick_times.append(due)
            last, nxt = due, due + period
    while nxt <= end:
        tick_times.append(nxt)
        nxt += period
    out = []
    for t in tick_times:
        j = int(np.searchsorted(times, t, side="right")) - 1
        out.append((t, marks[j][1], marks[j][2], t - marks[j][0]))
    return out


def learn_online(sample_ns: np.ndarray, sample_obj: np.ndarray, sample_addr: np.ndarray,
                 obj_addr: np.ndarray, obj_size: np.ndarray, alloc_ns: np.ndarray,
                 free_ns: np.ndarray, ticks: list[tuple[int, int, str, int]],
                 lock_pages: int, page_shift: int, armed_per_tick: float,
                 seed: int = 1, phase_memory: bool = False) -> Schedule:
    """The runtime's online placement (place/online.c) as a schedule: at tick k it knows only
    the accesses before it. Objects are cut into ranges of max(ONLINE_RANGE_PAGES, pages /
    ONLINE_PER_OBJECT) pages. Between two ticks the sampler arms about armed_per_tick pages
    spread evenly over the live objects' pages (each page armed with probability f =
    armed_per_tick / live pages, drawn by a hash of the page and the tick), and sees an armed
    page touched when the interval accesses it. A range's score moves to the share of its
    armed pages touched (ONLINE_ALPHA), or ages (ONLINE_AGE) when none was armed; the ranges
    of highest score (>= ONLINE_MIN_SCORE, locked ones count ONLINE_HOLD times theirs) are
    locked up to lock_pages; what leaves the set is unlocked (MADV_COLD, not paged out).
    With phase_memory (OBJTIER_ONLINE_PHASES=1; ticks from online_ticks with switch_gap_ns), a
    tick whose phase in force differs from the last tick's scores the accesses before the
    switch (with the share of the tick's armed pages their time makes), keeps the scores under
    the phase left (the ONLINE_PHASES_KEPT most recently left) and, when the phase entered was
    kept, gives every range the score it had when that phase was last left (0 where it had
    none); the accesses after the switch are then folded in without ageing what they miss.
    The runtime's locks at a switch tick take pages as they are touched (MLOCK_ONFAULT); here
    they are LOCK actions (brought in at the tick): the same swap-ins for the pages the phase
    touches, counted as prefetches rather than major faults."""
    first_vpn, npages, base = _layout(obj_addr, obj_size, page_shift)
    nobj = len(obj_addr)
    total = int(base[-1]) + 1
    rlen = np.maximum(ONLINE_RANGE_PAGES, -(-npages // ONLINE_PER_OBJECT)).astype(np.int64)
    nr = -(-npages // np.maximum(rlen, 1))
    rbase = np.concatenate([[0], np.cumsum(nr)])
    robj = np.repeat(np.arange(nobj), nr)
    rfirst = np.arange(int(rbase[-1])) - rbase[robj]            # range index in its object
    rlo = base[robj] + rfirst * rlen[robj]                      # first global page
    rhi = np.minimum(rlo + rlen[robj], base[robj] + npages[robj])
    rpages = (rhi - rlo).astype(np.float64)
    ones = np.ones(len(sample_ns))
    obj, page, t, _ = _in_objects(sample_ns, sample_obj, sample_addr, ones, first_vpn,
                                  npages, page_shift)
    tick_t = np.asarray([k[0] for k in ticks], np.int64)
    # buckets of accesses: (previous tick, tick k], cut at the switch when tick k is the first
    # in a new phase (the part before the switch is scored for the phase left)
    prev_name = ["*"] + [k[2] for k in ticks[:-1]]
    cut_at = [int(at - off) if phase_memory and k > 0 and name != before and
              at - off > tick_t[k - 1] and off > 0 else None
              for k, ((at, _, name, off), before) in enumerate(zip(ticks, prev_name))]
    cuts = np.asarray(sorted(set(tick_t.tolist()) | {c for c in cut_at if c is not None}),
                      np.int64)
    bucket = np.searchsorted(cuts, t, side="left")              # accesses in (cut b-1, cut b]
    gid = base[obj] + page
    key = np.unique(bucket * total + gid)                       # distinct (bucket, page)
    k_of, g_of = key // total, key % total
    # a deterministic draw per (page, bucket): splitmix64 of both
    z = (g_of.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ \
        (k_of.astype(np.uint64) + np.uint64(seed)) * np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(31)
    draw = (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    r_of = np.searchsorted(rlo, g_of, side="right") - 1
    alloc = np.asarray(alloc_ns, np.int64)
    free = np.asarray(free_ns, np.int64)
    score = np.zeros(len(rlo))
    locked = np.zeros(len(rlo), dtype=bool)
    prev_lock = np.zeros(0, np.int64)
    lo_b = np.searchsorted(k_of, np.arange(len(cuts)), side="left")
    hi_b = np.searchsorted(k_of, np.arange(len(cuts)), side="right")
    bucket_of_tick = np.searchsorted(cuts, tick_t)
    steps: list[Step] = []
    kept: dict[str, np.ndarray] = {}   # phase -> scores when last left; insertion = recency
    in_force = "*"                     # the phase before the first switch (switch_marks)

    def observe(score, b, f, live, age):
        """Scores after the windows of bucket b (each page armed with probability f); ranges
        not seen age by ONLINE_AGE when `age`, else keep their score."""
        sel = slice(lo_b[b], hi_b[b])
        hit = draw[sel] < f
        touched = np.bincount(r_of[sel][hit], minlength=len(rlo)).astype(np.float64)
        armed = f * rpages * live
        seen = armed >= 1.0
        share = np.where(seen, np.minimum(touched / np.maximum(armed, 1e-9), 1.0), 0.0)
        return np.where(seen, ONLINE_ALPHA * share + (1 - ONLINE_ALPHA) * score,
                        score * (ONLINE_AGE if age else 1.0))

    for k, (t0, ordinal, name, off) in enumerate(ticks):
        prev_t = tick_t[k - 1] if k else -1
        live_obj = (alloc <= t0) & ((free < 0) | (free > prev_t))
        live = live_obj[robj]
        live_pages = float(rpages[live].sum())
        f = min(1.0, armed_per_tick / live_pages) if live_pages else 0.0
        b = int(bucket_of_tick[k])
        if cut_at[k] is None:
            score = observe(score, b, f, live, True)
        else:   # the tick's armed pages shared by the two parts in proportion to their time
            before = float(cut_at[k] - prev_t) / float(t0 - prev_t)
            score = observe(score, b - 1, f * before, live, True)
        score[~live] = 0.0
        if phase_memory and name != in_force:
            kept.pop(in_force, None)
            kept[in_force] = score.copy()
            if len(kept) > ONLINE_PHASES_KEPT:
                kept.pop(next(iter(kept)))
            if name in kept:
                score = np.where(live, kept[name], 0.0)
            in_force = name
        if cut_at[k] is not None:
            score = observe(score, b, f * (1 - before), live, False)
            score[~live] = 0.0
        keyv = score * np.where(locked, ONLINE_HOLD, 1.0)
        cand = np.flatnonzero(live & (score >= ONLINE_MIN_SCORE))
        cand = cand[np.argsort(-keyv[cand], kind="stable")]
        want = np.zeros(len(rlo), dtype=bool)
        room = int(lock_pages)
        for r in cand:
            n = int(rpages[r])
            if n <= room:
                want[r] = True
                room -= n
        lock = np.concatenate([np.arange(rlo[r], rhi[r]) for r in np.flatnonzero(want)]
                              ) if want.any() else np.zeros(0, np.int64)
        actions = _transition(prev_lock, lock, lock, base, False)
        steps.append(Step(int(t0), int(ordinal), name, int(off), actions))
        prev_lock, locked = lock, want
    period_ms = (ticks[1][0] - ticks[0][0]) / 1e6 if len(ticks) > 1 else 0.0
    return Schedule(steps, int(lock_pages), page_shift, float(period_ms), mode="online")
