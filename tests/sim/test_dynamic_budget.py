"""The dynamic policy's advice-call budget, checked against the runtime's rule
(native/runtime/place/dynamic.c) on a hand-built schedule whose outcome is computed by hand:
a token bucket of advice_rate calls refilled at advice_rate per second, an action runs only
while the bucket holds its calls (lock 2), what is left of a step when the next one falls due
is dropped."""

import numpy as np
import pytest

from objtier.errors import UsageError
from objtier.plan import dynamic as D
from objtier.sim.engine import EV_ACCESS, EV_ALLOC, EV_PHASE, EVENT, Simulator

from .conftest import MS

START, ADDR, PAGES = 1_000_000_000, 0x7f0000000000, 16
US = 1000


def _events(late_access_ns: int) -> np.ndarray:
    rows = [(START, ADDR, PAGES * 4096, 0, EV_ALLOC)]
    rows += [(START + (1 + k) * US, ADDR + k * 4096, 1, 0, EV_ACCESS) for k in range(PAGES)]
    rows += [(START + 100 * US, 0, 0, 0, EV_PHASE), (START + 1 * MS, 0, 0, 1, EV_PHASE),
             (START + late_access_ns, ADDR, 1, 0, EV_ACCESS)]
    ev = np.zeros(len(rows), dtype=EVENT)
    for i, (t, addr, size, obj, kind) in enumerate(rows):
        ev[i]["time_ns"], ev[i]["addr"], ev[i]["size"] = t, addr, size
        ev[i]["obj"], ev[i]["type"] = obj, kind
    return ev


def _replay(params: dict[str, float], late_access_ns: int = 1300 * MS) -> dict[str, int]:
    # two steps of four one-page LOCKs each (8 calls a step)
    rows = [(D.LOCK, 0, k, 1) for k in range(8)]
    with Simulator("dynamic", 64 * 4096, START, 10**9, 12, 1, params, swap=True) as s:
        s.set_schedule(np.array([0, 4, 8], np.uint64), np.zeros(8, np.uint32),
                       np.array([r[2] for r in rows], np.uint64), np.ones(8, np.uint64),
                       np.full(8, D.LOCK, np.uint8))
        s.feed(_events(late_access_ns))
        s.finish(START + 2000 * MS)
        return s.counters()


def test_without_a_budget_every_action_runs():
    c = _replay({"advice_rate": 0})
    assert c["pglock_step"] == 8 and c["advice_calls_step"] == 16
    assert c["actions_dropped_step"] == 0


def test_the_budget_drops_what_the_runtime_drops():
    # 5 calls/s: the bucket starts with 5. Step 0 (100 us): two locks (4 calls), 1 token left,
    # two pending. Step 1 (1 ms): 1.005 tokens < 2, so the two pending are dropped; step 1's
    # four wait. At 1.3 s the bucket is full again (5): two of them run (4 calls), two wait
    # to the end of the trace.
    c = _replay({"advice_rate": 5})
    assert c["actions_dropped_step"] == 2
    assert c["advice_calls_step"] == 8
    assert c["pglock_step"] == 4
    # without the late access, step 1's locks never find the calls
    early = _replay({"advice_rate": 5}, late_access_ns=2 * MS)
    assert early["actions_dropped_step"] == 2 and early["pglock_step"] == 2


def test_the_time_scale_stretches_the_refill():
    # 1 ms of trace is 1 s of run: at step 1 the bucket is full again (5 >= 1 + 5, capped),
    # so step 0's two pending run (4 calls, 1 left) and nothing is dropped; step 1's four wait
    # for the late access, when two fit.
    c = _replay({"advice_rate": 5, "time_scale": 1000})
    assert c["actions_dropped_step"] == 0
    assert c["advice_calls_step"] == 12 and c["pglock_step"] == 6


def test_a_budget_out_of_range_is_refused():
    with pytest.raises(UsageError):
        _replay({"advice_rate": -1})
