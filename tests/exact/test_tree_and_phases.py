"""The seed's Listing 1 gives its Figure 2 context tree; phase merging on synthetic trees;
phase tables the planner accepts; `objtier cc` errors."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from objtier.exact.context_phases import access_matrix, merge, phase_tables
from objtier.exact.tree import ContextTree, context_tree
from objtier.plan import phase_table as planner_phase_table
from objtier.trace.symbolize import symbolize

clang = pytest.mark.skipif(not (shutil.which("clang-16") or shutil.which("clang")),
                           reason="clang-16 is not installed")

LISTING_1 = r"""
int bar () {
    return 42;
}

void foo () {
    for (int i = 0; i < 3; i++)
        bar ();
}

int main (void) {
    foo ();
    return bar ();
}
"""


@clang
def test_listing_1_yields_figure_2(objtier_cc, run_exact):
    exe = objtier_cc(LISTING_1, name="listing1", flags=("-O0",))
    proc = subprocess.run([str(exe)])
    assert proc.returncode == 42  # unchanged behaviour without recording
    _, trace = run_exact(exe, expect=42)
    tree = context_tree(trace)
    names = ["*"] + [symbolize([(f[0]["module"], f[0]["offset"])])[0].split(" (")[0]
                     for f in tree.frames[1:]]
    edges = sorted((names[int(tree.parent[v])], names[v], int(tree.calls[v]))
                   for v in range(1, tree.nodes))
    # Figure 2: main -> foo -> bar and main -> bar are different contexts
    assert edges == [("*", "main", 1), ("foo", "bar", 3), ("main", "bar", 1),
                     ("main", "foo", 1)]
    bars = [v for v in range(1, tree.nodes) if names[v] == "bar"]
    assert len({int(tree.parent[v]) for v in bars}) == 2
    # the call sites name the calling lines: foo's loop (line 8) and main's return (line 13)
    sites = sorted(symbolize([(tree.frames[v][1]["module"], tree.frames[v][1]["offset"])])[0]
                   for v in bars)
    assert "listing1.c:8" in sites[0] or "listing1.c:8" in sites[1]
    assert any("listing1.c:13" in s for s in sites)


def synthetic_tree(parent, calls, incl, acc):
    """acc: list of (node, object, misses)."""
    parent = np.array(parent, dtype=np.int64)
    depth = np.zeros(len(parent), dtype=np.int64)
    for v in range(1, len(parent)):
        depth[v] = depth[parent[v]] + 1
    node, obj, cnt = (np.array(c, dtype=np.int64) for c in zip(*acc))
    return ContextTree(parent=parent, function_key=np.array([""] * len(parent), dtype=object),
                       frames=[[]] * len(parent), calls=np.array(calls, dtype=np.int64),
                       inclusive_ns=np.array(incl, dtype=np.int64), depth=depth,
                       pid=np.zeros(len(parent), np.uint32), acc_node=node, acc_object=obj,
                       loads=cnt, stores=np.zeros_like(cnt), misses=cnt)


def test_merging_by_time_and_similarity():
    ms = 1_000_000
    # 0 root; 1 main; 2 build (long, objects 0,1); 3 helper under build (short); 4 kernel
    # (long, object 2); 5 inner under kernel (long, same mix as kernel); 6 scan under kernel
    # (long, different object 3); 7 tiny under scan
    tree = synthetic_tree(
        parent=[-1, 0, 1, 2, 1, 4, 4, 6],
        calls=[0, 1, 1, 1000, 1, 10, 1, 5],
        incl=[0, 500 * ms, 100 * ms, 20 * ms, 300 * ms, 200 * ms, 50 * ms, 1 * ms],
        acc=[(1, 0, 5), (2, 0, 100), (2, 1, 100), (3, 1, 50), (4, 2, 1000), (5, 2, 3000),
             (6, 3, 400), (7, 0, 10)])
    result = merge(tree, access_matrix(tree, "misses", 4), min_ns=10 * ms, similarity=0.9)
    assert result.reason.tolist() == ["root", "kept", "kept", "short", "kept", "similar",
                                      "kept", "short"]
    assert result.target.tolist() == [0, 1, 2, 2, 4, 4, 6, 6]
    assert result.survivors().tolist() == [0, 1, 2, 4, 6]
    own = result.own.toarray()
    assert own[2].tolist() == [100, 150, 0, 0] and own[4].tolist() == [0, 0, 4000, 0]
    assert own[6].tolist() == [10, 0, 0, 400]
    # a stricter similarity keeps inner; a longer minimum folds everything into main
    assert 5 in merge(tree, access_matrix(tree, "misses", 4), 10 * ms, 1.01).survivors()
    everything = merge(tree, access_matrix(tree, "misses", 4), 10**12, 0.9)
    assert everything.survivors().tolist() == [0]
    assert everything.own.toarray()[0].sum() == 5 + 200 + 50 + 1000 + 3000 + 400 + 10


def test_no_access_node_merges_even_when_long():
    tree = synthetic_tree(parent=[-1, 0, 1], calls=[0, 1, 1], incl=[0, 10**9, 10**9],
                          acc=[(1, 0, 10)])
    result = merge(tree, access_matrix(tree, "misses", 1), 0, 0.9)
    assert result.reason.tolist() == ["root", "kept", "no accesses"]


@clang
def test_phase_tables_feed_the_planner(objtier_cc, run_exact):
    from tests.exact.test_exact_counts import KNOWN
    exe = objtier_cc(KNOWN, name="known")
    _, trace = run_exact(exe, llc_bytes="1M", llc_ways=16)
    phases, accesses = phase_tables(trace, min_ns=0, similarity=1.01, labels=True)
    assert set(phases.column("phase").to_pylist()) >= {"fill#3", "copy#4"} or \
        any(p.startswith("copy#") for p in phases.column("phase").to_pylist())
    table = planner_phase_table(phases, accesses)  # the planner's validation accepts them
    assert len(table.name) == phases.num_rows
    total = float(np.sum(accesses.column("accesses").to_numpy()))
    assert total == float(trace.access_counts.column("llc_misses").to_numpy().sum())


def test_cc_of_a_bad_file_fails_with_the_compiler_message(tmp_path):
    if not (shutil.which("clang-16") or shutil.which("clang")):
        pytest.skip("clang-16 is not installed")
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return undeclared; }\n")
    run = subprocess.run([sys.executable, "-m", "objtier", "cc", "-c", str(bad), "-o",
                          str(tmp_path / "bad.o")], capture_output=True, text=True)
    assert run.returncode != 0
    assert "undeclared" in run.stderr and "error" in run.stderr
    run = subprocess.run([sys.executable, "-m", "objtier", "c++", "--version"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "clang" in run.stdout
