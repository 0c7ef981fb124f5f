"""The benchmark registry: every script in bench/ that backs a row of docs/benchmarks.md, with the
question it answers, the command that made the row and where its results go.

`objtier bench --benchmarks` and `make bench` list it; tests/workloads/test_registry.py checks
that every bench/*.py is registered here (or is a helper in HELPERS) and that every registered
script exists and has a results file in bench/results/ (objtier.bench_results), hence a row of
docs/benchmarks.md, which is rendered from those files, or says why its row is pending. Each
script builds its workload commands from objtier.workloads (the suite and its sizes).
"""

from __future__ import annotations

from dataclasses import dataclass

DOCS = "docs/benchmarks.md"


@dataclass(frozen=True)
class Benchmark:
    name: str       # bench/NAME.py
    question: str   # what the row answers
    command: str    # the command the current row was made with (arguments after the script)
    results: str    # where the script writes its results (then summarized into DOCS)
    kind: str       # real / simulated / emulated, as the row labels it
    needs: str = ""  # root, the QEMU guest, two CPUs, third-party programs
    pending: str = ""  # why it has no current row yet, when DOCS lists it as not measured

    @property
    def script(self) -> str:
        return f"bench/{self.name}.py"


_STDOUT = "stdout (a Markdown table)"

BENCHMARKS: list[Benchmark] = [
    Benchmark("compare_swap", "does the plan beat kernel reclaim on the swap tier, per workload "
              "and local size?", "--workloads bfs_kron,bc_kron,cc_urand,kmeans,stream --local "
              "50% --repeat 3 --scale 18 --trials 0.5", "bench-out/compare/", "real", "root"),
    Benchmark("compare_suite", "does it on third-party programs nobody here wrote?",
              "--repeat 3", "bench-out/compare-suite/", "real",
              "root, bench/third_party/setup.sh"),
    Benchmark("compare_swap_guest", "does it in the guest, against MGLRU, DAMON_RECLAIM, PSI "
              "reclaim and DAMOS pageout?", "--local 50% --repeat 3", "bench-out/compare-guest/",
              "emulated", "root, the QEMU guest"),
    Benchmark("model_error", "how far are the kernel model's predicted swap-ins from the "
              "measured ones?", "DIR... (compare outputs)", _STDOUT, "estimated vs real"),
    Benchmark("record_fixed_cost", "what does recording cost: fixed start-up and per-program "
              "overhead?", "", _STDOUT, "real"),
    Benchmark("record_overhead", "how much slower is a workload's timed region, or a "
              "third-party program, under record?", "--third-party --repeat 5", _STDOUT, "real",
              "bench/third_party/setup.sh (--third-party)"),
    Benchmark("exact_accuracy", "how well does each sampler rank objects against the exact "
              "profile, and what does exact tracing cost?",
              "--repeats 1 --samplers pageout,fault,perf --markdown", _STDOUT,
              "real, estimated"),
    Benchmark("perf_source_accuracy", "how well do perf-sourced recordings rank objects "
              "against the exact trace, and what does --with-perf cost?", "--repeats 3",
              _STDOUT, "real, estimated"),
    Benchmark("damon_source_accuracy", "how well do DAMON-sourced recordings (record --sampler "
              "damon, in the guest) rank objects against the exact trace, and what do they "
              "cost?", "--repeats 3", _STDOUT,
              "real, estimated (Spearman vs exact); emulated (times)", "root, the QEMU guest"),
    Benchmark("arena_cost", "what do segregated arenas cost on the malloc path and in memory, "
              "and does a locked hot small-block site help under run --local?",
              "cost --repeats 3; rss --repeats 3; swap --repeats 3", _STDOUT, "real",
              "root (swap)"),
    Benchmark("site_accuracy", "how well does record --sites rank small-block sites by "
              "access without a PMU, against an exact trace, and what do its arenas cover?",
              "--repeats 4", _STDOUT, "real, estimated vs exact", "root"),
    Benchmark("fault_transparency", "do real programs give the same output under the fault "
              "sampler, and at what cost?", "", _STDOUT, "real"),
    Benchmark("real_programs", "do real programs behave as plain under every sampler?",
              "--repeat 1", _STDOUT, "real"),
    Benchmark("workloads_defaults", "what does each workload score at its default size?",
              "--repeats 5", _STDOUT, "real"),
    Benchmark("report_mapping", "how fast are samples mapped to objects?",
              "--samples 50000000 --objects 10000 --repeats 5", _STDOUT, "real"),
    Benchmark("plan_speed", "how long does planning 10 k objects take per algorithm?",
              "--repeat 7", _STDOUT, "real"),
    Benchmark("sim_throughput", "how many trace events per second does the simulator replay?",
              "--repeats 5", _STDOUT, "real"),
    Benchmark("sim_headline", "in simulation, how does the best plan compare with the best "
              "kernel policy?", "--reuse", "/tmp/objtier-headline/", "simulated, estimated"),
    Benchmark("sim_vs_measured", "how close is `objtier simulate` to the real swap tier?", "",
              "/tmp/objtier-sim-vs-measured/", "simulated vs real", "root"),
    Benchmark("sim_kernel_validation", "does the simulator's numab2 policy move pages as the "
              "kernel does?", "", _STDOUT, "emulated vs simulated", "the QEMU guest"),
    Benchmark("numa_compare", "does `compare --tier numa` place the hot array as planned?", "",
              "bench-out/numa-compare/", "emulated", "the QEMU guest"),
    Benchmark("statflush_repro", "does kernel reclaim survive with and without the stat-flush "
              "reader?", "--local 18345984 --repeat 5 -- BFS", "bench-out/statflush/", "real",
              "root"),
    Benchmark("trace_in_cgroup", "does the trace on disk cost the objtier arm under a memory "
              "limit?", "--rounds 9", "bench-out/trace-in-cgroup/", "real", "root"),
    Benchmark("pageout_cost", "what does a pager pay per single-page eviction?", "--repeat 5",
              "bench-out/pageout-cost/", "real", "root, two CPUs"),
    Benchmark("replay_prefetch", "does prefetch replayed from a recorded fault sequence, or "
              "reclaim on the spare CPU, shorten the run?",
              "--records 2 --repeat 5 -- bfs -f urand17.csr -n 4 -t 1",
              "bench-out/replay-prefetch/", "real", "root, two CPUs"),
    Benchmark("camat_xmem", "how much does Xmem(X %) slow each workload down in the C-AMAT "
              "model?", "", _STDOUT, "simulated"),
    Benchmark("camat_throughput", "how many accesses per second does the C-AMAT model time?",
              "--accesses 8000000 --repeat 5 --sample 1000000", _STDOUT, "real"),
    Benchmark("camat_kmeans", "does the model predict K-means' false-sharing gain?",
              "--threads 2 --repeat 11", _STDOUT, "simulated / real"),
    Benchmark("sweep_suite", "which workloads are most sensitive to a knob, and what does a "
              "sweep run cost?", "--knob bandit --levels 0,25,50,75,100 --repeat 3 --timeout 30 "
              "--program-threads 1", "/tmp/sweep-bench/local/", "emulated (co-runner)", "root"),
    Benchmark("sweep_perobject", "how well does the per-object table predict combined "
              "placements?", "--repeat 5 --graph-scale 19 --workloads bfs,kmeans,stream "
              "--pairs 4 --program-threads 1", "/tmp/sweep-perobject/", "estimated vs real",
              "root"),
    Benchmark("sweep_sensitivity_plan", "does a plan ranked by measured sensitivity beat one "
              "from samples?", "", "/tmp/sweep-perobject/", "real", "root",
              pending="its 2026-11-25 row predates the runtime's CPU-home change and the model's "
              "planner (docs/history/benchmarks-until-2026-12-02-handwritten.md)"),
]

#: scripts in bench/ that are not benchmarks: modules a benchmark imports, tools over the results
HELPERS = {"report_synthetic": "the synthetic recording of report_mapping",
           "site_dicts": "the Python workload of site_accuracy (run under the system's python3)",
           "render_benchmarks": "renders docs/benchmarks.md from bench/results/ (make bench-doc)"}

BY_NAME = {b.name: b for b in BENCHMARKS}
