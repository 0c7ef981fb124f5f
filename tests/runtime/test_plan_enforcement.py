"""Plan enforcement by the runtime (OBJTIER_PLAN): matching by context key and occurrence, mlock
of the fast part with its caps, slow-range advice, PLACEMENT records, bad or unmatched plans,
the NUMA tier's mbind and residency on the one-node host."""

from __future__ import annotations

import os
import subprocess

import pytest

from objtier import native
from objtier.analysis.objects import object_table as trace_objects
from objtier.plan import Budget, build_plan, object_table, parse_text, rank, to_text

from .conftest import LOCKED_KB_C, keys_by_size, plan_text, runtime_env

MIB = 1 << 20
MLOCK, MUNLOCK, COLD, PAGEOUT, MBIND = 1, 2, 3, 4, 5   # enum ot_placement_action

# A hot and a cold array from two call sites. argv: hot MiB, cold MiB, seconds of hot loop,
# "phases" (enter phases "first" and "second"; "phases-dropped": also drop the cold array's
# pages from 4 MiB on after "first", and touch all of it after "second"). Reports the Locked:
# kB of /proc/self/smaps over each array's range after allocation and after each phase marker;
# exits with 3.
HOTCOLD = r"""
#define _GNU_SOURCE
#include <objtier/phase.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#define MIB (1024 * 1024)
__attribute__((noinline)) char *alloc_hot(size_t n) { char *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) char *alloc_cold(size_t n) { char *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
LOCKED_KB
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
    size_t hot_n = strtoul(argv[1], 0, 0) * MIB, cold_n = strtoul(argv[2], 0, 0) * MIB;
    double secs = atof(argv[3]);
    int dropped = argc > 4 && strcmp(argv[4], "phases-dropped") == 0;
    int phases = dropped || (argc > 4 && strcmp(argv[4], "phases") == 0);
    char *hot = alloc_hot(hot_n), *cold = alloc_cold(cold_n);
    memset(cold, 1, cold_n);
    memset(hot, 2, hot_n);
    volatile unsigned long sum = 0;
    double t0 = now();
    do
        for (size_t i = 0; i < hot_n; i += 64)
            sum += (unsigned char)hot[i];
    while (now() - t0 < secs);
    printf("hot %p\ncold %p\n", (void *)hot, (void *)cold);
    printf("hot_locked_kb %ld\ncold_locked_kb %ld\n", locked_kb(hot, hot_n), locked_kb(cold, cold_n));
    if (phases) {
        objtier_phase("first");
        printf("first_hot %ld\nfirst_cold %ld\n", locked_kb(hot, hot_n), locked_kb(cold, cold_n));
        if (dropped) { /* pages of the cold array the first phase leaves unlocked: not present */
            char *from = (char *)(((uintptr_t)cold + 4 * MIB + 4095) & ~(uintptr_t)4095);
            madvise(from, (size_t)((cold + cold_n - from) & ~(ptrdiff_t)4095), MADV_DONTNEED);
        }
        objtier_phase("second");
        printf("second_hot %ld\nsecond_cold %ld\n", locked_kb(hot, hot_n), locked_kb(cold, cold_n));
        if (dropped) {
            memset(cold, 3, cold_n);
            printf("touched_cold %ld\n", locked_kb(cold, cold_n));
        }
        objtier_phase_end();
        printf("end_hot %ld\nend_cold %ld\n", locked_kb(hot, hot_n), locked_kb(cold, cold_n));
    }
    free(hot);
    free(cold);
    return 3;
}
""".replace("LOCKED_KB\n", LOCKED_KB_C)


def values(stdout: str) -> dict[str, int]:
    out = {}
    for line in stdout.splitlines():
        name, _, value = line.partition(" ")
        if value and not value.startswith("0x"):
            out[name] = int(value)
    return out


@pytest.fixture
def hotcold(compile_c):
    flags = ("-O1", "-g", "-fno-builtin", f"-I{native.include_dir()}")
    return compile_c(HOTCOLD, name="hotcold", flags=flags)


def record_keys(hotcold, run_traced, hot=8, cold=16) -> tuple[str, str]:
    rec = run_traced(hotcold, hot, cold, 0, sampler="none")
    assert rec.returncode == 3, rec.stderr
    keys = keys_by_size(rec.trace())
    return keys[hot * MIB], keys[cold * MIB]


def run_plan(exe, tmp_path, text: str, *args, trace=True, **settings):
    plan = tmp_path / "plan.txt"
    plan.write_text(text)
    out = tmp_path / "enforced"
    env = runtime_env(out if trace else None, plan=plan, sampler="none", **settings)
    proc = subprocess.run([str(exe), *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=120)
    return proc, out


def placements(out) -> list[dict]:
    from objtier.trace import open_trace
    return open_trace(out).placements.to_pylist()


def test_planner_plan_locks_the_hot_array(hotcold, run_traced, tmp_path):
    """Record with the fault sampler, plan with objtier.plan.rank for the hot array's size, run
    with the text form: the hot array is mlocked, the cold one is not and gets MADV_COLD."""
    rec = run_traced(hotcold, 8, 16, 1.0, sampler="fault", rate=20000)
    assert rec.returncode == 3, rec.stderr
    table = trace_objects(rec.trace(), labels=False)
    objects = object_table(table)
    placement = rank(objects, 8 * MIB)
    plan = build_plan(objects, placement, Budget(8 * MIB, "8M", None, 0), None)
    tiers = {e["size_min"]: e["tier"] for e in plan["entries"]}
    assert tiers == {8 * MIB: "fast", 16 * MIB: "slow"}, plan["entries"]
    text = to_text(plan)
    assert parse_text(text)["entries"]
    proc, out = run_plan(hotcold, tmp_path, text, 8, 16, 0.3, advise_ms=50)
    assert proc.returncode == 3, proc.stderr
    seen = values(proc.stdout)
    assert seen["hot_locked_kb"] >= 8 * 1024 - 8, proc.stdout   # all inner pages
    assert seen["cold_locked_kb"] == 0
    recs = placements(out)
    hot_seq, cold_seq = 1, 2
    locks = [r for r in recs if r["action"] == MLOCK]
    assert [(r["alloc_seq"], r["result"]) for r in locks] == [(hot_seq, 0)]
    assert locks[0]["length"] >= 8 * MIB - 2 * 4096
    unlocks = [r for r in recs if r["action"] == MUNLOCK]
    assert [(r["alloc_seq"], r["result"], r["length"]) for r in unlocks] == \
        [(hot_seq, 0, locks[0]["length"])]                     # munlocked at free
    cold = [r for r in recs if r["action"] == COLD]
    assert cold and all(r["alloc_seq"] == cold_seq and r["result"] == 0 for r in cold)


def test_occurrence_and_size_range_select_objects(hotcold, run_traced, tmp_path):
    hot, cold = record_keys(hotcold, run_traced)
    entries = [f"{hot} 1 {8 * MIB} {8 * MIB} fast {8 * MIB} *",       # no 2nd hot object
               f"{cold} 0 {MIB} {2 * MIB} fast {2 * MIB} *",          # size out of range
               f"{cold} * {16 * MIB} {16 * MIB} split {4 * MIB} *"]   # this one applies
    proc, out = run_plan(hotcold, tmp_path, plan_text(entries), 8, 16, 0)
    assert proc.returncode == 3, proc.stderr
    seen = values(proc.stdout)
    assert seen["hot_locked_kb"] == 0
    assert 4 * 1024 - 8 <= seen["cold_locked_kb"] <= 4 * 1024
    locks = [r for r in placements(out) if r["action"] == MLOCK]
    assert len(locks) == 1 and locks[0]["alloc_seq"] == 2 and locks[0]["result"] == 0
    # the split is at the page boundary at or below 4 MiB from the object's start
    assert locks[0]["offset"] + locks[0]["length"] <= 4 * MIB
    assert locks[0]["offset"] + locks[0]["length"] > 4 * MIB - 4096


def test_mlock_limit_caps_and_warns_once(hotcold, run_traced, tmp_path):
    hot, cold = record_keys(hotcold, run_traced)
    entries = [f"{hot} * {8 * MIB} {8 * MIB} fast {8 * MIB} *",
               f"{cold} * {16 * MIB} {16 * MIB} fast {16 * MIB} *"]
    proc, out = run_plan(hotcold, tmp_path, plan_text(entries), 8, 16, 0, mlock_limit="4M")
    assert proc.returncode == 3, proc.stderr
    seen = values(proc.stdout)
    assert seen["hot_locked_kb"] + seen["cold_locked_kb"] <= 4 * 1024
    assert seen["hot_locked_kb"] == 4 * 1024
    warnings = [w for w in proc.stderr.splitlines() if "more than the limit" in w]
    assert len(warnings) == 1 and "4 MiB" in warnings[0], proc.stderr
    locked = sum(r["length"] for r in placements(out) if r["action"] == MLOCK and r["result"] == 0)
    assert locked <= 4 * MIB


def test_plan_that_matches_nothing_warns_at_exit(hotcold, tmp_path):
    entries = [f"0123456789abcdef * 1 {1 << 40} fast {1 << 40} *"]
    proc, _ = run_plan(hotcold, tmp_path, plan_text(entries), 8, 16, 0, trace=False, log=0)
    assert proc.returncode == 3
    assert values(proc.stdout)["hot_locked_kb"] == 0
    assert [line for line in proc.stderr.splitlines() if line.startswith("objtier:")] == \
        ["objtier: plan matched no allocation (another binary, other inputs, another "
         "OBJTIER_STACK_DEPTH or OBJTIER_MIN_SIZE?)"]


@pytest.mark.parametrize("text, why", [
    ("objtier-plan 2\n", "first line"),
    ("objtier-plan 1\n0123456789ABCDEF * 1 2 fast 2 *\n", "line 2"),
    ("objtier-plan 1\n0123456789abcdef * 5 2 fast 2 *\n", "line 2"),         # min > max
    ("objtier-plan 1\n0123456789abcdef x 1 2 fast 2 *\n", "line 2"),
    ("objtier-plan 1\nbudget 12\n", "line 2"),
    ("objtier-plan 1\nphase a * nowhere\n", "not a phase"),
    ("objtier-plan 1\n0123456789abcdef * 1 9 pages 8 * 0:4,2:4\n", "line 2"),  # overlap
    ("objtier-plan 1\n0123456789abcdef * 1 9 pages 8 * 0:4\n", "line 2"),      # sum != 8
    ("objtier-plan 1\n0123456789abcdef * 1 9 pages 4 * 0:4,\n", "line 2"),
    ("objtier-plan 1\n0123456789abcdef * 1 9 pages 4 *\n", "line 2"),          # no ranges
    ("objtier-plan 1\n0123456789abcdef * 1 9 split 4 * 0:4\n", "line 2"),
    ("objtier-plan 1\nfolio 0123456789abcdef * 9 1\n", "line 2"),               # min > max
    ("objtier-plan 1\nfolio 0123456789abcdef *\n", "line 2"),
    ("", "first line"),
])
def test_malformed_plan_is_one_warning_and_the_program_runs(hotcold, tmp_path, text, why):
    proc, _ = run_plan(hotcold, tmp_path, text, 8, 16, 0, trace=False, log=0)
    assert proc.returncode == 3
    assert values(proc.stdout)["hot_locked_kb"] == 0
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("objtier: plan ") and why in lines[0], lines
    assert lines[0].endswith("running without a plan")


def test_unreadable_plan_and_bad_tier(hotcold, tmp_path):
    env = runtime_env(None, plan=tmp_path / "missing.txt", sampler="none")
    proc = subprocess.run([str(hotcold), "1", "1", "0"], env=env, capture_output=True, text=True)
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1
    assert "cannot read plan" in proc.stderr
    plan = tmp_path / "p.txt"
    plan.write_text(plan_text([]))
    env = runtime_env(None, plan=plan, sampler="none", tier="numa")   # no node lists
    proc = subprocess.run([str(hotcold), "1", "1", "0"], env=env, capture_output=True, text=True)
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1
    assert "OBJTIER_FAST_NODES" in proc.stderr


def test_pages_entry_locks_its_ranges_and_unlocks_them(hotcold, run_traced, tmp_path):
    """A "pages" entry mlocks each range (from the object's first whole page), nothing else of
    the object; ranges beyond the object are skipped; all are munlocked at free."""
    hot, cold = record_keys(hotcold, run_traced)
    ranges = [(0, MIB), (4 * MIB, 2 * MIB), (15 * MIB, 4 * MIB), (64 * MIB, MIB)]
    text = ",".join(f"{o}:{n}" for o, n in ranges)
    entries = [f"{cold} * {16 * MIB} {16 * MIB} pages {8 * MIB} * {text}"]
    proc, out = run_plan(hotcold, tmp_path, plan_text(entries), 8, 16, 0.3, advise_ms=50)
    assert proc.returncode == 3, proc.stderr
    kb = values(proc.stdout)
    assert kb["hot_locked_kb"] == 0
    # 1 + 2 MiB, and the range at 15 MiB clipped to the object's whole pages (< 1 MiB left)
    assert 4 * 1024 - 8 <= kb["cold_locked_kb"] < 4 * 1024, proc.stdout
    recs = placements(out)
    locks = [r for r in recs if r["action"] == MLOCK]
    assert [r["result"] for r in locks] == [0, 0, 0] and {r["alloc_seq"] for r in locks} == {2}
    first = locks[0]["offset"]                       # the object's first whole page
    assert 0 < first <= 4096
    assert [(r["offset"] - first, r["length"]) for r in locks[:2]] == [(0, MIB), (4 * MIB, 2 * MIB)]
    assert locks[2]["offset"] - first == 15 * MIB and locks[2]["length"] < MIB
    unlocks = [r for r in recs if r["action"] == MUNLOCK]
    assert sorted((r["offset"], r["length"]) for r in unlocks) == \
        sorted((r["offset"], r["length"]) for r in locks)
    # cold advice covers the gaps between the ranges only (madvise fails on locked VMAs)
    cold = [r for r in recs if r["action"] == COLD]
    assert cold and all(r["result"] == 0 and r["alloc_seq"] == 2 for r in cold)
    assert not any(c["offset"] < l["offset"] + l["length"] and l["offset"] < c["offset"] + c["length"]
                   for c in cold for l in locks)
    first_pass = {(c["offset"] - first, c["length"]) for c in cold}
    assert (MIB, 3 * MIB) in first_pass and (6 * MIB, 9 * MIB) in first_pass


def test_pages_entry_respects_the_mlock_limit(hotcold, run_traced, tmp_path):
    hot, cold = record_keys(hotcold, run_traced)
    entries = [f"{cold} * {16 * MIB} {16 * MIB} pages {6 * MIB} * 0:{2 * MIB},{8 * MIB}:{4 * MIB}"]
    proc, out = run_plan(hotcold, tmp_path, plan_text(entries), 8, 16, 0, mlock_limit="5M")
    assert proc.returncode == 3, proc.stderr
    assert values(proc.stdout)["cold_locked_kb"] == 2 * 1024   # the second range does not fit
    assert sum("more than the limit" in w for w in proc.stderr.splitlines()) == 1


def test_phases_lock_and_unlock_per_phase(hotcold, run_traced, tmp_path):
    hot, cold = record_keys(hotcold, run_traced)
    entries = [f"{hot} * {8 * MIB} {8 * MIB} fast {8 * MIB} *",
               f"{cold} * {16 * MIB} {16 * MIB} slow 0 *",
               f"{hot} * {8 * MIB} {8 * MIB} slow 0 fir%73t",            # %XX-escaped name
               f"{cold} * {16 * MIB} {16 * MIB} split {4 * MIB} fir%73t",
               f"{cold} 0 {16 * MIB} {16 * MIB} fast {16 * MIB} second",
               f"{hot} 0 {8 * MIB} {8 * MIB} split {4 * MIB} second"]
    proc, out = run_plan(hotcold, tmp_path, plan_text(entries, ("fir%73t", "second")),
                         8, 16, 0, "phases")
    assert proc.returncode == 3, proc.stderr
    kb = values(proc.stdout)
    near = lambda value, mib: mib * 1024 - 8 <= value <= mib * 1024   # inner pages only
    assert near(kb["hot_locked_kb"], 8) and kb["cold_locked_kb"] == 0
    assert kb["first_hot"] == 0 and near(kb["first_cold"], 4)
    assert near(kb["second_hot"], 4) and near(kb["second_cold"], 16)
    assert near(kb["end_hot"], 8) and kb["end_cold"] == 0
    recs = placements(out)
    assert all(r["result"] == 0 for r in recs)
    # every lock is undone: by a phase change or before free
    for seq in (1, 2):
        lock = sum(r["length"] for r in recs if r["alloc_seq"] == seq and r["action"] == MLOCK)
        unlock = sum(r["length"] for r in recs if r["alloc_seq"] == seq and r["action"] == MUNLOCK)
        assert lock == unlock > 0


def test_a_phase_change_locks_the_new_fast_set_as_it_is_touched(hotcold, run_traced, tmp_path):
    """The pages a phase's plan makes fast are locked at the change when present, and when the
    program next touches them otherwise (MLOCK_ONFAULT): the change does not fault in the
    whole new set. The cold array's part unlocked in "first" is dropped before "second"."""
    hot, cold = record_keys(hotcold, run_traced)
    entries = [f"{hot} * {8 * MIB} {8 * MIB} fast {8 * MIB} *",
               f"{cold} * {16 * MIB} {16 * MIB} slow 0 *",
               f"{hot} * {8 * MIB} {8 * MIB} slow 0 first",
               f"{cold} * {16 * MIB} {16 * MIB} split {4 * MIB} first",
               f"{cold} 0 {16 * MIB} {16 * MIB} fast {16 * MIB} second",
               f"{hot} 0 {8 * MIB} {8 * MIB} slow 0 second"]
    proc, out = run_plan(hotcold, tmp_path, plan_text(entries, ("first", "second")),
                         8, 16, 0, "phases-dropped")
    assert proc.returncode == 3, proc.stderr
    kb = values(proc.stdout)
    assert 4 * 1024 - 8 <= kb["first_cold"] <= 4 * 1024
    # at the change only the 4 MiB still present are locked, not the dropped 12 MiB ...
    assert 4 * 1024 - 8 <= kb["second_cold"] <= 4 * 1024 + 8, proc.stdout
    # ... which are locked as the program touches them
    assert 16 * 1024 - 8 <= kb["touched_cold"] <= 16 * 1024, proc.stdout
    recs = placements(out)
    assert all(r["result"] == 0 for r in recs)
    assert any(r["alloc_seq"] == 2 and r["action"] == MLOCK and r["length"] >= 16 * MIB - 8192
               for r in recs)


def test_numa_tier_binds_and_residency_on_one_node(hotcold, run_traced, tmp_path):
    """On the one-node host: MBIND to node 0 succeeds, RESIDENCY records say node 0."""
    hot, cold = record_keys(hotcold, run_traced)
    entries = [f"{hot} * {8 * MIB} {8 * MIB} fast {8 * MIB} *",
               f"{cold} * {16 * MIB} {16 * MIB} split {4 * MIB} *"]
    proc, out = run_plan(hotcold, tmp_path, plan_text(entries), 8, 16, 0.3, tier="numa",
                         fast_nodes="0", slow_nodes="0", residency_ms=50)
    assert proc.returncode == 3, proc.stderr
    from objtier.trace import open_trace
    trace = open_trace(out)
    binds = [r for r in trace.placements.to_pylist() if r["action"] == MBIND]
    assert [(r["alloc_seq"], r["result"], r["nodemask"]) for r in binds] == \
        [(1, 0, 1), (2, 0, 1), (2, 0, 1)]                      # hot; cold's fast + slow part
    assert binds[1]["offset"] + binds[1]["length"] == binds[2]["offset"]
    res = trace.residency.to_pylist()
    assert res, "no RESIDENCY records"
    present = [r for r in res if r["node"] != 0xFFFFFFFF]
    assert present and all(r["node"] == 0 for r in present)
    hot_pages = [r["pages"] for r in present if r["alloc_seq"] == 1]
    assert max(hot_pages) >= 8 * MIB // os.sysconf("SC_PAGESIZE")


def test_residency_without_a_plan_at_exit(compile_c, run_traced):
    """OBJTIER_TIER=numa with a trace and no plan: residency only; RESIDENCY_MS=0 = at exit."""
    src = r"""
    #include <stdlib.h>
    #include <string.h>
    int main(void) { char *p = malloc(4 << 20); memset(p, 1, 2 << 20); return p[7] - 1; }
    """
    exe = compile_c(src, name="resid", flags=("-O1", "-fno-builtin"))
    run = run_traced(exe, sampler="none", tier="numa", residency_ms=0)
    assert run.returncode == 0, run.stderr
    res = run.trace().residency.to_pylist()
    nodes = {r["node"]: r["pages"] for r in res}
    page = os.sysconf("SC_PAGESIZE")
    assert set(nodes) == {0, 0xFFFFFFFF}                       # touched half, untouched half
    assert abs(nodes[0] - (2 << 20) // page) <= 2
    assert nodes[0] + nodes[0xFFFFFFFF] == (4 << 20) // page + 1   # pages the object spans
