"""The share of short forward steps among an object's samples (analysis.sweeps), on sample
arrays whose answer is known, and on a recorded C program that sweeps one array and gathers
from another."""

from __future__ import annotations

import numpy as np
import pytest

from objtier.analysis.sequential import MIN_STEPS, forward_step_share


def samples(*streams):
    """Concatenate (object, tid, pages, group) streams; time = position in each stream."""
    obj, tid, time, page, group = [], [], [], [], []
    for o, t, pages, g in streams:
        obj += [o] * len(pages)
        tid += [t] * len(pages)
        time += list(range(len(pages)))
        page += list(pages)
        group += [g] * len(pages)
    return [np.asarray(x, dtype=np.int64) for x in (obj, tid, time, page, group)]


def test_a_sweep_scores_one_a_gather_low_and_few_samples_unknown():
    rng = np.random.default_rng(1)
    obj, tid, time, page, group = samples(
        (0, 7, range(100, 300), 0),                      # object 0: one thread, page by page
        (1, 7, rng.permutation(2000)[:200], 0),          # object 1: random pages
        (2, 7, range(0, 10 * MIN_STEPS, 3), 0),          # object 2: steps of 3 pages
        (3, 7, range(0, 5 * 6, 6), 0))                   # object 3: too few samples
    share = forward_step_share(obj, tid, time, page, group, 5)
    assert share[0] == 1.0
    assert share[1] < 0.05
    assert share[2] == 1.0                               # 3 pages is within a 16 KiB folio step
    assert np.isnan(share[3]) and np.isnan(share[4])     # 4 steps; no samples at all


def test_two_threads_sweeping_halves_in_interleaved_time_still_score_high():
    first = np.arange(0, 200)
    second = np.arange(1000, 1200)
    obj = np.zeros(400, dtype=np.int64)
    tid = np.tile([1, 2], 200)                           # samples alternate between threads
    page = np.empty(400, dtype=np.int64)
    page[0::2], page[1::2] = first, second
    time = np.arange(400)
    share = forward_step_share(obj, tid, time, page, np.zeros(400, dtype=np.int64), 1)
    assert share[0] == 1.0                               # in time order alone: never a step


def test_only_the_dominant_group_counts():
    rng = np.random.default_rng(2)
    # a sequential load (group 0, 100 samples), then gathers (group 1, 300 samples)
    obj, tid, time, page, group = samples((0, 1, range(100), 0),
                                          (0, 1, rng.permutation(5000)[:300], 1))
    time[100:] += 1000
    share = forward_step_share(obj, tid, time, page, group, 1)
    assert share[0] < 0.1


@pytest.mark.parametrize("n", [0, 1])
def test_no_steps_at_all(n):
    z = np.zeros(n, dtype=np.int64)
    assert np.isnan(forward_step_share(z, z, z, z, z, 2)).all()
