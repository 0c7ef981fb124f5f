"""Readahead through the swap cache (swapahead.c) on the real swap tier: a program sweeping a
planned-slow array read-only under a memory cgroup limit, with zram behind it. Pages the
runtime advised ahead of the sweep come in through the swap cache and keep their swap slot, so
reclaim drops them without compressing them again: far fewer swap-outs for the same sweeps,
and the program's result is unchanged."""

from __future__ import annotations

import subprocess

import pytest

from objtier.tiers.swap import SwapTier, read_vmstat_swap

from .conftest import SWEEP_C, keys_by_size, plan_text, runtime_env

pytestmark = pytest.mark.root

MIB = 1 << 20


def test_readahead_brings_a_slow_sweep_in_through_the_swap_cache(compile_c, run_traced,
                                                                  tmp_path):
    exe = compile_c(SWEEP_C, name="sweep", flags=("-O1", "-g", "-fno-builtin"))
    rec = run_traced(exe, 48, 0, sampler="none")
    assert rec.returncode == 0, rec.stderr
    key = keys_by_size(rec.trace())[48 * MIB]
    plan = tmp_path / "plan.txt"
    plan.write_text(plan_text([f"{key} * 1 {1 << 40} slow 0 *"]))

    def run(readahead_kb: int) -> tuple[subprocess.CompletedProcess, int]:
        before = read_vmstat_swap()
        env = runtime_env(None, plan=plan, sampler="none", readahead_kb=readahead_kb)
        proc = subprocess.run([str(exe), "48", "6"], env=env, capture_output=True, text=True,
                              timeout=300, preexec_fn=tier.preexec)
        return proc, read_vmstat_swap()["pswpout"] - before["pswpout"]

    with SwapTier(24 * MIB) as tier:
        plain, plain_out = run(0)
        ahead, ahead_out = run(1024)
    assert plain.returncode == 0 and ahead.returncode == 0, (plain.stderr, ahead.stderr)
    assert ahead.stdout == plain.stdout  # the same sum: advice never changes the data
    assert "readahead:" not in plain.stderr
    windows = [line for line in ahead.stderr.splitlines() if "readahead:" in line]
    assert windows and " 0 windows" not in windows[0], ahead.stderr
    # Without readahead every sweep compresses the array's evicted pages again (about 24 MiB of
    # it per sweep, 5 sweeps after the first); with it, most pages leave without a write.
    assert plain_out > 5 * (20 * MIB // 4096), plain_out
    assert ahead_out < plain_out / 2, (ahead_out, plain_out)
