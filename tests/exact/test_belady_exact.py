"""Belady's MIN on a real exact trace: a program built with `objtier cc`, recorded with the
trace sampler, replayed by the simulator; its swap-ins equal a direct MIN over the trace's own
page reference string and are fewer than the LRU's."""

import shutil

import numpy as np
import pytest

from objtier.sim import load_preset, simulate
from tests.sim.conftest import reference_min

needs_clang = pytest.mark.skipif(not (shutil.which("clang-16") or shutil.which("clang")),
                                 reason="clang-16 is not installed")

SWEEPS = r"""
#include <stdlib.h>
#include <stdint.h>
int main(void) {
    /* 96 pages swept 6 times, with a 4-page table read between pages */
    size_t n = 96 * 4096 / sizeof(uint64_t), t = 4 * 4096 / sizeof(uint64_t);
    uint64_t *a = malloc(n * sizeof *a), *tab = malloc(t * sizeof *tab);
    volatile uint64_t sum = 0;
    for (size_t i = 0; i < t; i++) tab[i] = i;
    for (size_t i = 0; i < n; i++) a[i] = i;
    for (int s = 0; s < 6; s++)
        for (size_t i = 0; i < n; i += 512) sum += a[i] + tab[(i / 512) % t];
    free(a); free(tab);
    return 0;
}
"""


@needs_clang
def test_belady_on_an_exact_trace(objtier_cc, run_exact):
    exe = objtier_cc(SWEEPS, "sweeps")
    _, trace = run_exact(exe, trace_limit=10_000_000, min_size=4096)
    samples = trace.samples
    assert samples.num_rows > 6 * 96
    fast = 48 * 4096  # half of the swept array
    # spill pins 90 % of fast memory (the default reserve leaves the rest to fault into)
    sim = simulate(trace, ["first-touch", "spill", "belady"], fast, load_preset("zram"))
    assert sim.notes == []  # exact, no address reuse
    c = {r.policy: r.counters for r in sim.results}
    addr = samples.column("addr").to_numpy()
    time = samples.column("time_ns").to_numpy()
    pages = (addr[np.argsort(time, kind="stable")] >> 12).tolist()
    swap_ins, _ = reference_min(pages, fast // 4096)
    assert c["belady"]["pswpin"] == swap_ins
    # five later sweeps of 96 pages: the LRU misses them all, MIN keeps a fixed part
    assert c["first-touch"]["pswpin"] >= 5 * (96 - 48)
    assert c["belady"]["pswpin"] < c["first-touch"]["pswpin"]
    assert c["spill"]["pgmigrate_fail"] == 0
    assert c["belady"]["pswpin"] <= c["spill"]["pswpin"] < c["first-touch"]["pswpin"]
