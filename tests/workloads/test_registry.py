"""The two registries: the workload suite and its sizes (objtier.workloads), shared by bench/ and
the tests, and the benchmarks behind docs/benchmarks.md (objtier.benchmarks)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from objtier import bench_results, benchmarks, workloads
from objtier.errors import UsageError
from objtier.workloads import SIZES, SUITE, WORKLOADS, parse_fom

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"


def test_every_size_names_known_programs_with_only_known_placeholders():
    for size in SIZES:
        table = workloads.arguments(size)
        assert table, size
        for name, argv in table.items():
            assert workloads.program_of(name) in WORKLOADS, (size, name)
            kind = workloads.graph_kind(name)
            text = " ".join(argv)
            leftover = text.replace("{graph}", "").replace("{t}", "")
            assert "{" not in leftover and "}" not in leftover, (size, name, argv)
            if kind:      # a KERNEL_KIND name loads its graph from a file
                assert "{graph}" in argv, (size, name)


def test_host_suite_follows_its_parameters(tmp_path):
    plain = workloads.suite("host", graphs=tmp_path, scale=18, bin_dir=Path("/b"))
    assert list(plain) == SUITE
    assert plain["bfs_kron"] == ["/b/bfs", "-f", str(tmp_path / "kron18.csr"), "-n", "256"]
    assert plain["cc_urand"] == ["/b/cc", "-f", str(tmp_path / "urand18.csr"), "-n", "128"]
    small = workloads.suite("host", ["bc_kron", "gups", "stream", "ptrchase"], graphs=tmp_path,
                            scale=17, bin_dir=Path("/b"), trials=0.5, factor=0.25,
                            gups_updates=1000)
    assert small["bc_kron"][-2:] == ["-i", "6"]
    assert small["gups"][1:] == ["-l", "22", "-u", "1000"]     # 24 + log2(0.25)
    assert small["stream"][1:] == ["-s", "1000000", "-n", "10"]
    assert small["ptrchase"][1:] == ["-s", "25M", "-n", "1000000"]
    assert workloads.suite("host", ["gups"], bin_dir=Path("/b"),
                           gups_log2=18)["gups"][1:] == ["-l", "18"]


def test_unknown_size_or_workload_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown workload size 'huge'"):
        workloads.suite("huge")
    with pytest.raises(UsageError, match="unknown workload 'bfs_grid' at size host"):
        workloads.suite("host", ["bfs_grid"])


def test_the_test_size_runs_every_workload_to_a_figure_of_merit(tmp_path):
    """Real runs: graphs written by graphgen, then every workload of the "test" size."""
    workloads.make_graphs(10, tmp_path, threads=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kron10.csr", "urand10.csr"]
    commands = workloads.suite("test", graphs=tmp_path, scale=10, threads=1)
    assert {workloads.program_of(n) for n in commands} == set(WORKLOADS) - {"graphgen"}
    for name, command in commands.items():
        run = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, (name, run.stderr)
        fom = parse_fom(run.stdout)
        assert fom.value > 0, (name, run.stdout)


def bench_scripts() -> set[str]:
    return {p.stem for p in BENCH.glob("*.py")}


def test_every_bench_script_is_registered_and_every_entry_exists():
    registered = {b.name for b in benchmarks.BENCHMARKS}
    assert len(registered) == len(benchmarks.BENCHMARKS), "a benchmark registered twice"
    unregistered = bench_scripts() - registered - set(benchmarks.HELPERS)
    assert not unregistered, (f"bench/ scripts missing from objtier.benchmarks: {unregistered} "
                              "(add each to BENCHMARKS, or to HELPERS if another imports it)")
    assert not registered - bench_scripts(), "registered benchmarks without a script"
    docs = (REPO / benchmarks.DOCS).read_text()
    results = bench_results.read_all(REPO / "bench" / "results")   # validated: known names
    for b in benchmarks.BENCHMARKS:
        assert b.question.endswith("?") and b.results and b.kind, b
        if b.pending:
            assert f"`{b.script}`" in docs.split("## Not measured", 1)[-1], (
                f"{b.script} is pending but not under 'Not measured' in {benchmarks.DOCS}")
            continue
        mine = {name: r for name, r in results.items() if r["benchmark"] == b.name}
        assert mine, f"{b.script} has no results file in bench/results/, so no row of the page"
        for name, r in mine.items():
            assert r["command"].startswith(b.script) or f" {b.script}" in r["command"], (
                name, r["command"])
            row = next((line for line in docs.splitlines() if f"results/{name})" in line), "")
            assert b.script in row, f"{b.script} backs no row of {benchmarks.DOCS} ({name})"


def test_bench_scripts_import_objtier_from_the_environment():
    """No script edits sys.path: objtier comes from the installed package (the venv)."""
    for path in sorted(BENCH.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(
                    node.value, ast.Name) and node.value.id == "sys":
                pytest.fail(f"{path.name}:{node.lineno} uses sys.path (objtier comes from the "
                            "venv; a script's own directory is on sys.path already)")


def test_bench_command_lists_the_benchmarks_and_sizes():
    run = subprocess.run([sys.executable, "-m", "objtier", "bench", "--benchmarks"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    for b in benchmarks.BENCHMARKS:
        assert f".venv/bin/python {b.script}" in run.stdout, b.name
    run = subprocess.run([sys.executable, "-m", "objtier", "bench", "--sizes"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert [line.split(":")[0] for line in run.stdout.splitlines()
            if not line.startswith(" ")] == list(SIZES)
    assert "    bfs_kron       -f {graph} -n 256" in run.stdout
