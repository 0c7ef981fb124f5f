"""The pageout sampler's cost budget (native/runtime/sample/overhead.h): a real program under the
real runtime, its trace read back. The sampler measures its cost (its thread's CPU time and the
sampled faults, each at the swap-in cost it measured) into recorder.* counters, and lowers its
page rate below OBJTIER_RATE when that cost would pass OBJTIER_OVERHEAD_BP of the program's CPU
time; with no budget it keeps OBJTIER_RATE. The program's output is the same either way.

Needs root (a temporary zram swap device when the machine has none) and perf_event_open."""

from __future__ import annotations

import pytest

from objtier.record.cost import recorder_cost

from .conftest import SWEEP_C

pytestmark = pytest.mark.root


def counter_values(trace, name: str) -> list[int]:
    table = trace.counters
    names = table.column("name").to_pylist()
    return [v for n, v in zip(names, table.column("value").to_pylist()) if n == name]


@pytest.fixture
def sweep(compile_c):
    return compile_c(SWEEP_C, "sweep")


def test_a_small_budget_lowers_the_rate_and_the_cost_is_counted(sweep, run_traced, swap):
    plain = run_traced(sweep, 64, 200, name="plain", sampler="none")
    run = run_traced(sweep, 64, 200, sampler="pageout", rate=2000, overhead_bp=10)
    assert run.returncode == 0 and run.stdout == plain.stdout
    trace = run.trace()
    assert trace.samples.num_rows > 0
    rates = counter_values(trace, "recorder.rate")
    assert len(rates) >= 2 and rates[-1] < 2000 and min(rates) < 2000
    assert counter_values(trace, "recorder.rate_max")[-1] == 2000
    assert counter_values(trace, "recorder.overhead_bp")[-1] == 10
    cost = recorder_cost(trace)
    assert cost.processes == 1 and cost.program_cpu_ns > 0 and cost.fault_cost_ns > 0
    # cost = scanner CPU + faults x the measured per-fault cost, in the last step's values
    assert cost.cost_ns == cost.sampler_cpu_ns + cost.sampled_faults * cost.fault_cost_ns
    assert cost.sampled_faults >= trace.samples.num_rows


def test_no_budget_keeps_the_rate_and_still_measures(sweep, run_traced, swap):
    run = run_traced(sweep, 32, 100, sampler="pageout", rate=2000, overhead_bp=0)
    assert run.returncode == 0
    trace = run.trace()
    assert set(counter_values(trace, "recorder.rate")) == {2000}
    cost = recorder_cost(trace)
    assert cost.sampler_cpu_ns > 0 and cost.program_cpu_ns > 0
