"""`objtier record` up to the program's start and after its end: programs the runtime cannot be
loaded into (statically linked, set-user-ID to another user) are refused before they run, with
one line and exit status 2; a recording ends with the recorder's measured cost; and the command
line imports only the record command (its start-up is part of every recording's fixed cost)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from objtier.record.cost import RecorderCost, cost_line
from objtier.record.elfcheck import read_elf, unrecordable
from objtier.record.sampler_choice import perf_permitted
from objtier.record.sanitizers import sanitizer_of

# Creates the file named by argv[1] (so a test can tell whether it ran), prints, exits 3.
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    if (argc > 1) { FILE *f = fopen(argv[1], "w"); if (f) fclose(f); }
    size_t n = 16 << 20;
    unsigned char *a = malloc(n);
    memset(a, 1, n);
    unsigned long s = 0;
    for (int p = 0; p < 20; p++)
        for (size_t i = 0; i < n; i += 64) s += a[i]++;
    printf("sum %lu\n", s);
    return 3;
}
"""


def record(*args):
    return subprocess.run([sys.executable, "-m", "objtier", "record", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def static_program(compile_c):
    try:
        return compile_c(PROGRAM, "static", flags=("-O1", "-static"), pie=False)
    except AssertionError as error:
        pytest.skip(f"no static C library here: {error}")


def test_a_static_binary_is_refused_before_it_runs(static_program, tmp_path):
    marker = tmp_path / "ran"
    run = record("-o", tmp_path / "run.otr", "--", static_program, marker)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "statically linked" in lines[0] and "-static" in lines[0]
    assert not marker.exists() and not (tmp_path / "run.otr").exists()
    # the same binary runs fine by itself
    assert subprocess.run([static_program, marker]).returncode == 3 and marker.exists()


def test_static_pie_and_a_script_on_a_static_interpreter_are_refused(compile_c, tmp_path,
                                                                      static_program):
    source = tmp_path / "spie.c"
    source.write_text(PROGRAM)
    static_pie = tmp_path / "spie"
    built = subprocess.run(["gcc", "-O1", "-static-pie", "-o", str(static_pie), str(source)],
                           capture_output=True)
    if built.returncode == 0:  # compile_c would add -pie after the flags
        assert read_elf(str(static_pie)).interpreter is None
        assert "statically linked" in unrecordable(str(static_pie))
    script = tmp_path / "script"
    script.write_text(f"#!{static_program}\n")
    script.chmod(0o755)
    problem = unrecordable(str(script))
    assert problem and str(static_program) in problem and "statically linked" in problem


def test_dynamic_programs_and_scripts_pass(compile_c, tmp_path):
    dynamic = compile_c(PROGRAM, "dynamic")
    info = read_elf(str(dynamic))
    assert info.interpreter and info.interpreter.startswith("/") and "libc.so.6" in info.needed
    assert unrecordable(str(dynamic)) is None
    script = tmp_path / "script.sh"
    script.write_text("#!/usr/bin/env sh\necho hi\n")
    script.chmod(0o755)
    assert unrecordable(str(script)) is None
    assert read_elf(str(script)) is None  # not ELF


def test_sanitizer_builds_are_still_named(compile_c):
    try:
        asan = compile_c(PROGRAM, "asan", flags=("-O1", "-fsanitize=address"))
    except AssertionError as error:
        pytest.skip(f"no AddressSanitizer runtime: {error}")
    assert sanitizer_of(str(asan)) == "AddressSanitizer"
    assert sanitizer_of(str(compile_c(PROGRAM, "plain"))) is None


@pytest.mark.root
def test_a_setuid_binary_of_another_user_is_refused(compile_c, tmp_path):
    exe = compile_c(PROGRAM, "suid")
    tmp_path.chmod(0o755)
    os.chown(exe, 65534, 65534)  # nobody
    exe.chmod(0o4755)
    run = record("-o", tmp_path / "run.otr", "--", exe, tmp_path / "ran")
    assert run.returncode == 2
    assert "set-user-ID" in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ran").exists()


def test_the_last_line_is_the_recorders_cost(compile_c, tmp_path):
    exe = compile_c(PROGRAM, "cost")
    plain = subprocess.run([exe], capture_output=True, text=True)
    sampler = "pageout" if os.geteuid() == 0 and perf_permitted()[0] else "none"
    run = record("--sampler", sampler, "-o", tmp_path / "run.otr", "--", exe)
    assert run.returncode == plain.returncode == 3 and run.stdout == plain.stdout
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("objtier record: recorder cost: ")
    # this program runs for tens of ms: a share of that would say nothing
    assert ("of the program's CPU" in last) != ("too little for a share" in last)
    if sampler == "pageout":
        assert "sampled faults" in last and "sampler thread" in last


def test_the_cost_is_a_share_only_of_a_program_that_used_the_cpu():
    busy = RecorderCost(processes=1, cost_ns=30_000_000, sampler_cpu_ns=20_000_000,
                        sampled_faults=4000, fault_cost_ns=2500, program_cpu_ns=2_000_000_000,
                        rate_max=2000, rate_last=1800, rate_lowest=1500, overhead_bp=300)
    line = cost_line(busy, 0.02, 2.0)
    assert line.startswith("recorder cost: 2.5 % of the program's CPU time")
    assert "from 2000 pages/s to 1500 at the lowest (1800 at the end)" in line
    idle = RecorderCost(processes=1, cost_ns=23_000_000, sampler_cpu_ns=23_000_000,
                        program_cpu_ns=1_000_000, rate_max=2000, rate_last=2000,
                        rate_lowest=2000, overhead_bp=300)
    line = cost_line(idle, 0.07, 0.0)
    assert line.startswith("recorder cost: 0.09 s CPU") and "%" not in line
    assert "used 0.001 s, too little for a share" in line


def test_the_small_blocks_records_are_part_of_the_cost():
    paced = RecorderCost(processes=1, cost_ns=30_000_000, sampler_cpu_ns=20_000_000,
                         sampled_faults=4000, fault_cost_ns=2500, program_cpu_ns=2_000_000_000,
                         rate_max=2000, rate_last=2000, rate_lowest=2000, overhead_bp=300,
                         site_processes=1, site_cost_ns=20_000_000, site_records=50_000,
                         site_period_first=64, site_period_last=256)
    line = cost_line(paced, 0.02, 2.0)
    # (30 + 20 ms + 20 ms) of 2 s
    assert line.startswith("recorder cost: 3.5 % of the program's CPU time")
    assert "50000 small-block records 0.020 s" in line
    assert line.endswith("small blocks sampled 1 in 256 at the end (from 1 in 64) to keep "
                         "their records within half of --overhead")
    # no sampler counters (--sampler none): the share of the kernel's CPU time for the program
    alone = RecorderCost(site_processes=1, site_cost_ns=40_000_000, site_records=9000,
                         site_period_first=64, site_period_last=64)
    line = cost_line(alone, 0.02, 2.0)
    assert line.startswith("recorder cost: 3.0 % of the program's CPU time (9000 small-block")
    assert "sampled 1 in" not in line


def test_overhead_option_bounds(tmp_path):
    run = record("--overhead", "150", "-o", tmp_path / "r.otr", "--", "true")
    assert run.returncode == 2 and "--overhead" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_record_imports_only_its_own_command():
    code = ("import sys; from objtier.cli import build_parser; build_parser('record'); "
            "print(sorted(m for m in sys.modules if m.startswith('objtier.commands.')), "
            "'numpy' in sys.modules, 'pyarrow' in sys.modules, 'elftools' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "['objtier.commands.record'] False False False"
    assert shutil.which("true")
