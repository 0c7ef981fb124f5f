"""Plans for launched and multi-process programs: `record --follow-forks` of a launcher script
that starts a parent which forks two different binaries, `plan` writes one section per program
(by build id), `run --follow-forks` applies in each process the section of its own binary — read
back from each process's own trace (its PROCESS record's OBJTIER_PLAN_SECTION note, its PLACEMENT
records) and from /proc/self/smaps in the programs. MPI-style ranks (PMI_RANK) of one binary
share a section by default, or get one each with `plan --per-rank`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from objtier.errors import EnvironmentProblem
from objtier.plan import load_plan, parse_text
from objtier.trace import open_trace

from .conftest import LOCKED_KB_C

MIB = 1 << 20
MLOCK = 1

# Two arrays from two call sites (a: HOT_MIB, b: COLD_MIB); loops over a (over b when PMI_RANK
# is odd) for argv[1] seconds; prints the Locked: kB of each after the loop.
WORKER = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define MIB (1024 * 1024)
#ifndef HOT_MIB
#define HOT_MIB 8
#endif
#ifndef COLD_MIB
#define COLD_MIB 16
#endif
LOCKED_KB
__attribute__((noinline)) char *alloc_a(size_t n) { char *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) char *alloc_b(size_t n) { char *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
    /* the array touched in the loop: a, unless the rank (PMI_RANK) is odd */
    const char *r = getenv("PMI_RANK");
    int hot_b = r && atoi(r) % 2;
    double secs = argc > 1 ? atof(argv[1]) : 0.5;
    size_t na = (size_t)HOT_MIB * MIB, nb = (size_t)COLD_MIB * MIB;
    char *a = alloc_a(na), *b = alloc_b(nb);
    memset(a, 1, na);
    memset(b, 2, nb);
    char *hot = hot_b ? b : a;
    size_t nh = hot_b ? nb : na;
    volatile unsigned long sum = 0;
    double t0 = now();
    do
        for (size_t i = 0; i < nh; i += 64)
            sum += (unsigned char)hot[i];
    while (now() - t0 < secs);
    printf("%s a_locked_kb %ld b_locked_kb %ld\n", NAME, locked_kb(a, na), locked_kb(b, nb));
    free(a);
    free(b);
    return 0;
}
""".replace("LOCKED_KB\n", LOCKED_KB_C)

# Forks and execs each argv[i] with "0.5"; waits for all; exits non-zero if one failed.
PARENT = r"""#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
/* argv: worker paths...; forks and execs each (argument: seconds), waits for all */
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            execl(argv[i], argv[i], "0.5", (char *)0);
            _exit(127);
        }
    }
    int status, bad = 0;
    while (wait(&status) > 0)
        bad |= !WIFEXITED(status) || WEXITSTATUS(status);
    printf("parent done %d\n", bad);
    return bad;
}
"""


@pytest.fixture
def programs(compile_c, tmp_path):
    try:
        from objtier import native
        native.runtime_library()
    except EnvironmentProblem as error:
        pytest.skip(f"needs the built runtime: {error}")
    alpha = compile_c(WORKER, name="alpha",
                      flags=("-O1", "-g", '-DNAME="alpha"', "-DHOT_MIB=8", "-DCOLD_MIB=16"))
    beta = compile_c(WORKER, name="beta",
                     flags=("-O1", "-g", '-DNAME="beta"', "-DHOT_MIB=12", "-DCOLD_MIB=6"))
    parent = compile_c(PARENT, name="parent")
    launch = tmp_path / "launch.sh"
    launch.write_text(f"#!/bin/sh\necho launching\n{parent} {alpha} {beta}\necho finished\n")
    launch.chmod(0o755)
    ranks = tmp_path / "ranks.sh"
    ranks.write_text(f"#!/bin/sh\nPMI_RANK=0 {alpha} 0.5 &\nPMI_RANK=1 {alpha} 0.5 &\nwait\n")
    ranks.chmod(0o755)
    return {"alpha": alpha, "beta": beta, "launch": launch, "ranks": ranks}


def objtier(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "objtier", *map(str, args)],
                          capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def locked(stdout: str) -> dict[str, tuple[int, int]]:
    """name -> (a_locked_kb, b_locked_kb) from the workers' lines (one per name)."""
    out = {}
    for line in stdout.splitlines():
        f = line.split()
        if len(f) == 5 and f[1] == "a_locked_kb":
            out.setdefault(f[0], []).append((int(f[2]), int(f[4])))
    return out


def record_and_plan(tmp_path, script, name, *plan_args):
    rec = tmp_path / f"{name}.otr"
    objtier("record", "-q", "--follow-forks", "--sampler", "fault", "--rate", "20000",
            "--counters-interval", "0", "-o", rec, "--", script)
    plan = tmp_path / f"{name}.json"
    text = tmp_path / f"{name}.txt"
    made = objtier("plan", rec, "--fast", "24M", "--algo", "rank", "-o", plan, "--text", text,
                   *plan_args)
    return load_plan(plan), text.read_text(), made


def sections_by_exe(run_dir: Path) -> dict[str, list[str]]:
    """exe base name -> the OBJTIER_PLAN_SECTION notes of its processes in a run's trace."""
    out: dict[str, list[str]] = {}
    for p in open_trace(run_dir).processes:
        out.setdefault(Path(p.exe).name, []).append(p.config.get("OBJTIER_PLAN_SECTION"))
    return out


def test_each_program_of_a_launcher_applies_its_own_section(programs, tmp_path):
    plan, text, _ = record_and_plan(tmp_path, programs["launch"], "launch")
    names = [Path(p["path"]).name for p in plan["programs"]]
    assert sorted(names) == ["alpha", "beta"], plan["programs"]
    assert all(p["build_id"] for p in plan["programs"])
    assert plan["programs"][0]["build_id"] != plan["programs"][1]["build_id"]
    parsed = parse_text(text)    # the text form keeps the sections
    assert [p["build_id"] for p in parsed["programs"]] == \
        [p["build_id"] for p in plan["programs"]]
    assert sorted((e["program"], e["tier"]) for e in parsed["entries"]) == \
        sorted((e["program"], e["tier"]) for e in plan["entries"])
    alpha = names.index("alpha")
    beta = names.index("beta")
    # 24 MiB: alpha's 8 MiB hot array and beta's 12 MiB one
    fast = {(e["program"], e["size_min"]) for e in plan["entries"] if e["tier"] == "fast"}
    assert fast == {(alpha, 8 * MIB), (beta, 12 * MIB)}, plan["entries"]

    out = tmp_path / "run.otr"
    ran = objtier("run", "--plan", tmp_path / "launch.json", "--follow-forks", "-o", out, "--",
                  programs["launch"])
    assert ran.stdout.splitlines()[0] == "launching"
    assert ran.stdout.splitlines()[-1] == "finished"       # the script's output is unchanged
    assert "another binary" not in ran.stderr and "warning" not in ran.stderr, ran.stderr
    seen = locked(ran.stdout)
    assert seen["alpha"][0][0] >= 8 * 1024 - 8 and seen["alpha"][0][1] == 0, ran.stdout
    assert seen["beta"][0][0] >= 12 * 1024 - 8 and seen["beta"][0][1] == 0, ran.stdout
    # the runtime's own notes: each worker applied its program's section, the shell and the
    # parent (no objects planned) none
    notes = sections_by_exe(out)
    assert notes["alpha"] == [str(alpha)] and notes["beta"] == [str(beta)], notes
    assert notes["parent"] == ["none"], notes
    trace = open_trace(out)
    exe_of = {p.pid: Path(p.exe).name for p in trace.processes}
    locks = [r for r in trace.placements.to_pylist() if r["action"] == MLOCK]
    assert sorted(exe_of[r["pid"]] for r in locks) == ["alpha", "beta"], locks
    assert all(r["result"] == 0 for r in locks)
    assert "process" in ran.stderr and f"section {alpha}" in ran.stderr

    # without --follow-forks: nothing applied, and the command says why
    plain = objtier("run", "--plan", tmp_path / "launch.json", "--", programs["launch"])
    assert "use --follow-forks" in plain.stderr
    assert all(kb == (0, 0) for rows in locked(plain.stdout).values() for kb in rows)


def test_ranks_share_a_section_or_get_one_each_with_per_rank(programs, tmp_path):
    shared, _, made = record_and_plan(tmp_path, programs["ranks"], "shared")
    assert len(shared["programs"]) == 1 and shared["programs"][0]["rank"] is None
    assert "--per-rank" in made.stderr            # the shared section's warning
    per_rank, text, _ = record_and_plan(tmp_path, programs["ranks"], "ranked", "--per-rank")
    assert sorted(p["rank"] for p in per_rank["programs"]) == [0, 1]
    assert "program " in text and " 0 " in text

    def run(plan):
        out = tmp_path / f"{plan}-run.otr"
        ran = objtier("run", "--plan", tmp_path / f"{plan}.json", "--follow-forks", "-o", out,
                      "--", programs["ranks"])
        trace = open_trace(out)
        rank_of = {p.pid: p.config.get("OBJTIER_RANK") for p in trace.processes}
        locks = sorted((rank_of[r["pid"]], r["length"] >= 8 * MIB - 8192)
                       for r in trace.placements.to_pylist() if r["action"] == MLOCK)
        return ran, sorted(kb for rows in locked(ran.stdout).values() for kb in rows), locks

    ran, kb, locks = run("shared")
    # one section for both ranks: each locks both arrays (rank 0's hot a and rank 1's hot b)
    assert all(a >= 8 * 1024 - 8 and b >= 16 * 1024 - 8 for a, b in kb), ran.stdout
    assert [r for r, _ in locks] == ["0", "0", "1", "1"], locks
    ran, kb, locks = run("ranked")
    # one section per rank: rank 0 locks only a (its hot array), rank 1 only b
    assert len(kb) == 2
    assert kb[0][0] == 0 and kb[0][1] >= 16 * 1024 - 8, ran.stdout
    assert kb[1][0] >= 8 * 1024 - 8 and kb[1][1] == 0, ran.stdout
    assert [r for r, _ in locks] == ["0", "1"], locks


def test_a_plan_section_for_another_build_id_is_not_applied(programs, tmp_path):
    """The runtime reads its own build id: a section whose build id differs is skipped even
    when its path names this binary."""
    plan, _, _ = record_and_plan(tmp_path, programs["launch"], "launch")
    for p in plan["programs"]:
        p["build_id"] = "ab" * 20
    path = tmp_path / "other.json"
    path.write_text(json.dumps(plan))
    out = tmp_path / "other.otr"
    ran = objtier("run", "--plan", path, "--follow-forks", "-o", out, "--", programs["launch"])
    assert "rebuilt" in ran.stderr
    assert all(kb == (0, 0) for rows in locked(ran.stdout).values() for kb in rows), ran.stdout
    assert set(sum(sections_by_exe(out).values(), [])) == {"none"}
