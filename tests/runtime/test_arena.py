"""Segregated arenas (docs/runtime.md, "Arenas"): small blocks of chosen sites served from
arena chunks of their own must leave the program's behaviour unchanged — same output and exit
status as without objtier — with every allocation call, threads, fork, C++ and another
allocator underneath; a plan's `site` records choose exactly those sites' blocks, and the
tier acts on their chunks. The runtime's own counts (OBJTIER_ARENA_STATS) say what it served."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from objtier.analysis.sites import site_table
from objtier.errors import UsageError
from objtier.plan import parse_text, to_text
from objtier.plan.sites import check_sites, frame0_keys

from .conftest import runtime_env

HERE = Path(__file__).parent
PARTS = ("mixed", "aligned", "usable", "calloc", "threads", "fork", "sites", "3000")
OBJTIER = Path(sys.executable).parent / "objtier"
JEMALLOC = Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")


@pytest.fixture
def program(compile_c) -> Path:
    return compile_c((HERE / "arena_program.c").read_text(), name="arena_program",
                     flags=("-O1", "-g", "-fno-builtin"))


def plain(cmd, env=None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    return subprocess.run([str(c) for c in cmd], env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=300)


def under_arenas(cmd, stats: Path, preload_after: str = "", **settings):
    env = runtime_env(None, arena_stats=stats, **settings)
    if preload_after:
        env["LD_PRELOAD"] += " " + preload_after
    return subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True,
                          timeout=300)


def counts(stats: Path) -> list[dict[str, str]]:
    """The runtime's arena count lines, one per process that served."""
    assert stats.exists(), "the runtime wrote no arena counts"
    return [dict(f.split("=", 1) for f in line.split()) for line in stats.read_text().splitlines()]


def assert_same(a: subprocess.CompletedProcess, b: subprocess.CompletedProcess) -> None:
    assert b.returncode == a.returncode, b.stderr
    assert b.stdout == a.stdout


def test_every_site_in_arenas_output_unchanged(program, tmp_path):
    base = plain([program, *PARTS])
    assert base.returncode == 0 and "bad=0" in base.stdout and "children_ok=8" in base.stdout
    run = under_arenas([program, *PARTS], tmp_path / "stats", arena="all")
    assert_same(base, run)
    (line,) = counts(tmp_path / "stats")   # the forked children _exit: no counts of theirs
    assert line["mode"] == "all"
    assert int(line["blocks"]) > 100000 and int(line["reused"]) > 0
    assert int(line["frees"]) >= int(line["blocks"]) - 16   # stdio's buffers may stay


def test_arenas_over_jemalloc(program, tmp_path):
    if not JEMALLOC.exists():
        pytest.skip("libjemalloc2 (Debian) is not installed")
    base = plain([program, *PARTS], {"LD_PRELOAD": str(JEMALLOC)})
    run = under_arenas([program, *PARTS], tmp_path / "stats", preload_after=str(JEMALLOC),
                       arena="all")
    assert_same(base, run)
    assert int(counts(tmp_path / "stats")[0]["blocks"]) > 100000


CXX_MAP = r"""
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>
int main() {
    std::map<std::string, std::vector<int>> m;
    std::unordered_map<long, std::string> u;
    for (int i = 0; i < 100000; i++) {
        std::string k = "key-" + std::to_string(i * 7919 % 100003) + std::string(i % 40, 'x');
        m[k].push_back(i);
        u[i] = k;
        if (i % 3 == 0) u.erase(i / 2);
    }
    struct alignas(256) A { char c[300]; };
    std::vector<std::unique_ptr<A>> v;
    for (int i = 0; i < 1000; i++) { v.emplace_back(new A); v.back()->c[0] = (char)i; }
    long s = 0;
    for (auto &e : m) s += e.first.size() + e.second.size() * 3;
    for (auto &e : u) s += e.second.size();
    for (auto &a : v) s += a->c[0] + (((unsigned long)a.get() & 255) == 0);
    std::printf("%zu %zu %ld\n", m.size(), u.size(), s);
}
"""


def test_cxx_map_program_output_unchanged(tmp_path):
    if not shutil.which("g++"):
        pytest.skip("no g++")
    src = tmp_path / "map.cc"
    src.write_text(CXX_MAP)
    exe = tmp_path / "map"
    subprocess.run(["g++", "-O2", "-o", str(exe), str(src)], check=True)
    base = plain([exe])
    run = under_arenas([exe], tmp_path / "stats", arena="all")
    assert_same(base, run)
    assert int(counts(tmp_path / "stats")[0]["blocks"]) > 100000   # operator new's blocks


PY_WORK = r"""
import collections, hashlib, json, re
d = {f"k{i * 7919 % 100003}": [i, str(i) * (i % 50), {"x": i}] for i in range(100000)}
s = json.dumps(d)[:100000]
c = collections.Counter(re.findall(r"\d+", s))
big = [bytes(600 + i % 3000) for i in range(20000)]
print(len(d), hashlib.sha256(json.dumps(sorted(c.items())).encode()).hexdigest(),
      sum(map(len, big)))
"""


def test_python_workload_output_unchanged(tmp_path):
    python = shutil.which("python3")
    base = plain([python, "-c", PY_WORK])
    run = under_arenas([python, "-c", PY_WORK], tmp_path / "stats", arena="all")
    assert_same(base, run)
    assert max(int(c["blocks"]) for c in counts(tmp_path / "stats")) > 1000


def _site_plan(tmp_path, program, n: int, wanted: dict[str, str]) -> Path:
    """Records `program sites n` with every small block sampled and writes a text plan whose
    `site` records name the sites of the functions in wanted (function -> tier)."""
    out = tmp_path / "sites.otr"
    rec = subprocess.run([str(program), "sites", str(n)], env=runtime_env(
        out, sampler="none", site_period=1), capture_output=True, text=True, timeout=120)
    assert rec.returncode == 0, rec.stderr
    from objtier.trace import open_trace

    trace = open_trace(out)
    first = frame0_keys(trace)
    lines = ["objtier-plan 1", "budget 8388608 4096", "phase * - *"]
    for row in site_table(trace).to_pylist():
        function = row["label"].split(" ")[0]
        if function in wanted:
            assert row["sampled_blocks"] == n
            lines.append(f"site {row['context_key']} {first[(row['pid'], row['context'])]} "
                         f"{wanted.pop(function)}")
    assert not wanted, f"no site of {wanted} in the recording"
    path = tmp_path / "plan.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_plan_site_is_served_and_locked(program, tmp_path):
    n = 3000
    plan = _site_plan(tmp_path, program, n, {"site_row": "fast"})
    base = plain([program, "sites", str(n), "mixed"])
    run = under_arenas([program, "sites", str(n), "mixed"], tmp_path / "stats", plan=plan,
                       sampler="none")
    assert_same(base, run)
    (line,) = counts(tmp_path / "stats")
    # exactly the rows: site_scratch, main's calloc and mixed()'s blocks stay with malloc
    assert (line["mode"], line["sites"], line["blocks"], line["frees"]) == ("plan", "1", str(n),
                                                                           str(n))
    if os.geteuid() == 0:   # as root nothing caps mlock
        assert int(line["locked_bytes"]) >= 1 << 20 and line["lock_failed"] == "0"


@pytest.mark.skipif(os.geteuid() != 0, reason="as root nothing else caps mlock")
def test_plan_site_lock_bytes_locks_only_its_first_chunks(program, tmp_path):
    """`site KEY FRAME0 fast 1048576`: of the site's three chunks only the first is locked,
    and the two left to the kernel are not counted as failed locks."""
    n = 12000   # 12000 rows of 208 + 16 bytes: three 1 MiB chunks
    plan = _site_plan(tmp_path, program, n, {"site_row": "fast"})
    text = plan.read_text().replace(" fast\n", f" fast {1 << 20}\n")
    assert f" fast {1 << 20}" in text
    plan.write_text(text)
    base = plain([program, "sites", str(n)])
    run = under_arenas([program, "sites", str(n)], tmp_path / "stats", plan=plan,
                       sampler="none")
    assert_same(base, run)
    (line,) = counts(tmp_path / "stats")
    assert int(line["chunks"]) >= 3, line
    assert (int(line["locked_bytes"]), line["lock_failed"]) == (1 << 20, "0"), line


def test_plan_slow_site_full_chunks_advised_cold(program, tmp_path):
    n = 12000   # 12000 blocks of 208 + 16 bytes fill two 1 MiB chunks
    plan = _site_plan(tmp_path, program, n, {"site_row": "slow", "site_scratch": "slow"})
    base = plain([program, "sites", str(n)])
    run = under_arenas([program, "sites", str(n)], tmp_path / "stats", plan=plan,
                       sampler="none")
    assert_same(base, run)
    (line,) = counts(tmp_path / "stats")
    assert line["sites_used"] == "2" and line["blocks"] == str(2 * n)
    assert int(line["reused"]) == n - 1   # each scratch block is freed before the next
    assert int(line["cold_bytes"]) >= 2 << 20 and line["locked_bytes"] == "0"


def test_numa_tier_binds_site_chunks(program, tmp_path):
    plan = _site_plan(tmp_path, program, 3000, {"site_row": "fast"})
    run = under_arenas([program, "sites", "3000"], tmp_path / "stats", plan=plan,
                       sampler="none", tier="numa", fast_nodes="0", slow_nodes="0")
    assert run.returncode == 0, run.stderr
    (line,) = counts(tmp_path / "stats")
    assert int(line["bound_bytes"]) >= 1 << 20 and line["bind_failed"] == "0"


def test_recording_with_arenas_keeps_sites(program, tmp_path, run_traced):
    """Recording while arenas serve: the sampled sites' records still pair up."""
    run = run_traced(program, "sites", 2000, sampler="none", site_period=1, arena="all")
    assert run.returncode == 0, run.stderr
    rows = {r["label"].split(" ")[0]: r for r in site_table(run.trace()).to_pylist()}
    assert rows["site_row"]["sampled_blocks"] == 2000
    assert rows["site_row"]["est_live_end_bytes"] == 0   # every SITE_ALLOC met its SITE_FREE


def test_plan_command_chooses_cold_sites_and_run_serves_them(program, tmp_path):
    n = 4000
    out = tmp_path / "rec.otr"
    rec = subprocess.run([str(program), "sites", str(n)], env=runtime_env(
        out, sampler="none", site_period=1), capture_output=True, text=True)
    assert rec.returncode == 0, rec.stderr
    plan_json = tmp_path / "plan.json"
    made = subprocess.run([str(OBJTIER), "plan", str(out), "--fast", "1M", "--cold-sites", "1",
                           "-o", str(plan_json)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    sites = json.loads(plan_json.read_text())["sites"]
    assert [s["tier"] for s in sites] == ["slow"] and sites[0]["label"].startswith("site_row")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env["OBJTIER_ARENA_STATS"] = str(tmp_path / "stats")
    ran = subprocess.run([str(OBJTIER), "run", "--plan", str(plan_json), "--", str(program),
                          "sites", str(n)], env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == plain([program, "sites", str(n)]).stdout
    assert counts(tmp_path / "stats")[0]["blocks"] == str(n)


def test_site_records_text_form_round_trip():
    sites = [{"context_key": "85a36dc5f2dd851d", "frame0_key": "6e28a1a4308f09d3",
              "tier": "slow"}]
    plan = {"format": "objtier-plan", "version": 1, "generator": "test",
            "algorithm": {"name": "halving"}, "budget": {"bytes": 4096, "page_bytes": 4096},
            "binary": {"build_id": None, "size": None, "path": None},
            "phases": [{"name": "*", "parent": None, "target": "*"}], "entries": [],
            "sites": sites}
    text = to_text(plan)
    assert "site 85a36dc5f2dd851d 6e28a1a4308f09d3 slow\n" in text
    assert parse_text(text)["sites"] == sites
    with pytest.raises(UsageError):
        parse_text(text.replace("slow", "warm"))
    capped = [dict(sites[0], tier="fast", lock_bytes=3 << 20)]
    text = to_text(dict(plan, sites=capped))
    assert f"site 85a36dc5f2dd851d 6e28a1a4308f09d3 fast {3 << 20}\n" in text
    assert parse_text(text)["sites"] == capped
    with pytest.raises(UsageError):     # a cap on a slow site means nothing: refused
        parse_text(text.replace(" fast ", " slow "))
    with pytest.raises(UsageError):
        check_sites("plan", [dict(capped[0], lock_bytes=-1)])
    with pytest.raises(UsageError):
        check_sites("plan", [dict(sites[0], frame0_key="XYZ")])


def test_malformed_site_record_is_one_warning_and_no_arena(program, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("objtier-plan 1\nphase * - *\nsite 85a36dc5f2dd851d nothex fast\n")
    base = plain([program, "sites", "100"])
    run = under_arenas([program, "sites", "100"], tmp_path / "stats", plan=bad, sampler="none")
    assert_same(base, run)
    assert "cannot parse 'site 85a36dc5f2dd851d nothex fast'" in run.stderr
    assert not (tmp_path / "stats").exists()
