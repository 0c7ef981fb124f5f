"""graphgen's CSR file: layout as documented, round trip into the kernels, independent checks."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

HEADER = struct.Struct("<8sIIQQ")  # magic, version, flags, n, m (docs/workloads.md)


def read_csr(path: Path):
    data = path.read_bytes()
    magic, version, flags, n, m = HEADER.unpack_from(data, 0)
    assert magic == b"OTGRAPH\0" and version == 1 and flags == 3
    assert len(data) == HEADER.size + 8 * (n + 1) + 4 * m
    offsets = np.frombuffer(data, dtype="<u8", count=n + 1, offset=HEADER.size)
    neighbors = np.frombuffer(data, dtype="<u4", count=m, offset=HEADER.size + 8 * (n + 1))
    return n, m, offsets, neighbors


def to_matrix(n, offsets, neighbors):
    return csr_matrix((np.ones(len(neighbors), dtype=np.int8), neighbors.astype(np.int64),
                       offsets.astype(np.int64)), shape=(n, n))


@pytest.fixture(scope="module")
def kron_file(tmp_path_factory, wl):
    path = tmp_path_factory.mktemp("graph") / "kron12.csr"
    run = wl("graphgen", "-g", "12", "-k", "8", "-s", "7", "-o", path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("FOM graphgen=") == 1
    return path


def test_layout_and_invariants(kron_file):
    n, m, offsets, neighbors = read_csr(kron_file)
    assert n == 4096 and offsets[0] == 0 and offsets[-1] == m
    assert np.all(np.diff(offsets.astype(np.int64)) >= 0)
    assert m % 2 == 0 and 0 < m <= 2 * 8 * n  # symmetric, self loops and duplicates removed
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets.astype(np.int64)))
    dst = neighbors.astype(np.int64)
    assert np.all(dst < n) and not np.any(src == dst)
    key = src * n + dst
    assert np.all(np.diff(key) > 0)  # rows sorted, no duplicates
    assert np.array_equal(np.sort(dst * n + src), key)  # symmetric


def test_kronecker_is_skewed_and_uniform_is_not(tmp_path, wl):
    run = wl("graphgen", "-u", "12", "-k", "8", "-o", tmp_path / "u.csr")
    assert run.returncode == 0, run.stderr
    _, _, uoff, _ = read_csr(tmp_path / "u.csr")
    run = wl("graphgen", "-g", "12", "-k", "8", "-o", tmp_path / "k.csr")
    _, _, koff, _ = read_csr(tmp_path / "k.csr")
    udeg, kdeg = np.diff(uoff.astype(np.int64)), np.diff(koff.astype(np.int64))
    assert kdeg.max() > 10 * udeg.max()     # Graph500 A=0.57 gives hubs
    assert (kdeg == 0).sum() > (udeg == 0).sum()


def test_same_seed_same_file_for_any_thread_count(tmp_path, wl):
    for threads in ("1", "2"):
        run = wl("graphgen", "-g", "11", "-k", "4", "-s", "3", "-t", threads,
                 "-o", tmp_path / f"t{threads}.csr")
        assert run.returncode == 0, run.stderr
    assert (tmp_path / "t1.csr").read_bytes() == (tmp_path / "t2.csr").read_bytes()
    run = wl("graphgen", "-g", "11", "-k", "4", "-s", "4", "-o", tmp_path / "s4.csr")
    assert (tmp_path / "s4.csr").read_bytes() != (tmp_path / "t1.csr").read_bytes()


def test_bfs_round_trip_matches_scipy(kron_file, wl):
    run = wl("bfs", "-f", kron_file, "-n", "3", "-s", "5", "-v")
    assert run.returncode == 0, run.stderr
    assert "graph: loaded" in run.stdout and "verification: passed" in run.stdout
    n, _, offsets, neighbors = read_csr(kron_file)
    matrix = to_matrix(n, offsets, neighbors)
    for source, reached in re.findall(r"source (\d+) reached (\d+) vertices", run.stdout):
        order = breadth_first_order(matrix, int(source), directed=False,
                                    return_predecessors=False)
        assert len(order) == int(reached)


def test_cc_round_trip_matches_scipy(kron_file, wl):
    run = wl("cc", "-f", kron_file, "-n", "2")
    assert run.returncode == 0, run.stderr
    n, _, offsets, neighbors = read_csr(kron_file)
    count, _ = connected_components(to_matrix(n, offsets, neighbors), directed=False)
    assert re.search(rf"\b{count} components", run.stdout), run.stdout


def test_bc_round_trip(kron_file, wl):
    run = wl("bc", "-f", kron_file, "-i", "4")
    assert run.returncode == 0, run.stderr
    assert "score sums" in run.stdout and run.stdout.count("FOM bc=") == 1


def test_file_and_generated_graph_agree(kron_file, wl):
    loaded = wl("cc", "-f", kron_file, "-n", "1")
    generated = wl("cc", "-g", "12", "-k", "8", "-s", "7", "-n", "1")
    comps = [re.search(r"(\d+) components", r.stdout).group(1) for r in (loaded, generated)]
    assert comps[0] == comps[1]


@pytest.mark.parametrize("damage", ["truncate", "magic", "version", "offsets", "missing"])
def test_damaged_files_are_rejected(kron_file, tmp_path, wl, damage):
    data = bytearray(kron_file.read_bytes())
    bad = tmp_path / "bad.csr"
    if damage == "truncate":
        data = data[:-10]
    elif damage == "magic":
        data[0:8] = b"NOTGRAPH"
    elif damage == "version":
        data[8:12] = struct.pack("<I", 9)
    elif damage == "offsets":
        data[HEADER.size + 8:HEADER.size + 16] = struct.pack("<Q", 2**40)
    if damage != "missing":
        bad.write_bytes(bytes(data))
    run = wl("bfs", "-f", bad)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bfs: ") and str(bad) in lines[0]
    assert "FOM" not in run.stdout


def test_symmetry_is_checked_on_request(tmp_path, wl):
    """A one-way edge 0 -> 1: the cheap checks pass; -c finds the missing 1 -> 0."""
    path = tmp_path / "oneway.csr"
    offsets = np.array([0, 1, 1, 1], dtype="<u8")
    neighbors = np.array([1], dtype="<u4")
    path.write_bytes(HEADER.pack(b"OTGRAPH\0", 1, 3, 3, 1) + offsets.tobytes() +
                     neighbors.tobytes() + b"\0" * 4)
    path.write_bytes(path.read_bytes()[:HEADER.size + 8 * 4 + 4])
    checked = wl("cc", "-f", path, "-n", "1", "-c")
    assert checked.returncode != 0
    assert "not symmetric" in checked.stderr and len(checked.stderr.strip().splitlines()) == 1
    unchecked = wl("cc", "-f", path, "-n", "1")
    assert "not symmetric" not in unchecked.stderr
    assert "graph: loaded" in unchecked.stdout
