"""Large folios for swept objects. The measure first: a recorded C program that sweeps one array
and gathers from another, read back with the real reader, scores the sweep high and the gathers
low. Then the real swap tier: the plan's `folio`
record makes the runtime advise the object's slow run MADV_HUGEPAGE at allocation, and with
16 KiB folios enabled for madvised memory (SwapTier(large_folio_bytes=...)) the kernel swaps
that memory out and back in 16 KiB at a time — counted by the kernel itself in
transparent_hugepage/hugepages-16kB/stats/swpin. The same plan with OBJTIER_LARGE_FOLIOS=0
swaps base pages. The machine's setting is back as it was after the tier closes. Once zswap
has been used since boot the kernel swaps every folio back in as base pages until the next
boot: the test then checks that instead (tiers.swap.large_folio_swapin_note)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from objtier.tiers.swap import THP_SYSFS, SwapTier, large_folio_swapin_note

from .conftest import SWEEP_C, keys_by_size, plan_text, runtime_env

MIB = 1 << 20

# argv: rounds. Two 16 MiB arrays: `swept` written, then read front to back each round;
# `gathered` read at pseudo-random pages (a fixed xorshift sequence) as often, never written
# (its pages are the zero page: no sequential first pass that the sampler would see).
SWEEP_AND_GATHER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) unsigned char *alloc_swept(size_t n) { return malloc(n); }
__attribute__((noinline)) unsigned char *alloc_gathered(size_t n) { return malloc(n); }
int main(int argc, char **argv) {
    size_t n = 16u << 20, pages = n >> 12;
    int rounds = atoi(argv[1]);
    unsigned char *swept = alloc_swept(n), *gathered = alloc_gathered(n);
    memset(swept, 1, n);
    unsigned long sum = 0, x = 88172645463325252ul;
    for (int r = 0; r < rounds; r++)
        for (size_t p = 0; p < pages; p++) {
            sum += swept[p << 12];
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            sum += gathered[(x % pages) << 12];
        }
    printf("sum %lu\n", sum);
    return 0;
}
"""


def test_the_fault_sampler_tells_a_sweep_from_gathers(compile_c, run_traced):
    from objtier.analysis.objects import object_table

    exe = compile_c(SWEEP_AND_GATHER, name="sweep_gather", flags=("-O1", "-g", "-fno-builtin"))
    # 3000 rounds: three times the windows of 1000, so that a busy machine still samples both
    rec = run_traced(exe, 3000, sampler="fault", rate=20000)
    assert rec.returncode == 0, rec.stderr
    table = object_table(rec.trace())
    share = {label.split(" ")[0]: value for label, value in
             zip(table.column("label").to_pylist(), table.column("sequential").to_pylist())}
    swept = next(v for k, v in share.items() if "alloc_swept" in k)
    gathered = next(v for k, v in share.items() if "alloc_gathered" in k)
    assert swept is not None and swept >= 0.9, share
    assert gathered is not None and gathered < 0.3, share
SIZE_DIR = THP_SYSFS / "hugepages-16kB"


def folio_swapins() -> int:
    return int((SIZE_DIR / "stats" / "swpin").read_text())


def enabled_mode() -> str:
    text = (SIZE_DIR / "enabled").read_text()
    return text[text.index("[") + 1:text.index("]")]


@pytest.mark.root
@pytest.mark.skipif(not (SIZE_DIR / "stats" / "swpin").exists(),
                    reason="kernel without 16 KiB anonymous large folios (< 6.8)")
def test_a_swept_slow_object_swaps_in_as_large_folios(compile_c, run_traced, tmp_path):
    exe = compile_c(SWEEP_C, name="sweep", flags=("-O1", "-g", "-fno-builtin"))
    rec = run_traced(exe, 48, 0, sampler="none")
    assert rec.returncode == 0, rec.stderr
    key = keys_by_size(rec.trace())[48 * MIB]
    plan = tmp_path / "plan.txt"
    plan.write_text(plan_text([f"folio {key} * 1 {1 << 40}", f"{key} * 1 {1 << 40} slow 0 *"]))
    mode_before = enabled_mode()

    def run(name: str, **settings) -> tuple[subprocess.CompletedProcess, int, Path]:
        before = folio_swapins()
        out = tmp_path / name
        env = runtime_env(out, plan=plan, sampler="none", **settings)
        proc = subprocess.run([str(exe), "48", "4"], env=env, capture_output=True, text=True,
                              timeout=300, preexec_fn=tier.preexec)
        return proc, folio_swapins() - before, out

    with SwapTier(24 * MIB, large_folio_bytes=16 << 10) as tier:
        assert enabled_mode() in ("madvise", "always", "inherit")
        base, base_folios, _ = run("base", large_folios=0)
        large, large_folios, out = run("large")
    assert enabled_mode() == mode_before
    assert base.returncode == 0 and large.returncode == 0, (base.stderr, large.stderr)
    assert large.stdout == base.stdout  # the same sum: folio size never changes the data
    from objtier.trace import open_trace

    advice = [p for p in open_trace(out).placements.to_pylist() if p["action"] == 6]
    assert len(advice) == 1 and advice[0]["result"] == 0, advice
    assert advice[0]["length"] >= 48 * MIB - 8192  # the whole object is slow: one run
    if large_folio_swapin_note() is not None:
        # zswap used since boot: the kernel swaps every folio back in as base pages until
        # the next boot, which is what `run` and `compare` then say (tiers.swap)
        assert large_folios == 0 and base_folios == 0, (base_folios, large_folios)
        return
    # 3 sweeps after the first over 48 MiB with 24 MiB of room: tens of MiB swapped in, in
    # 16 KiB folios with the advice; none of ours without (other programs on the machine
    # rarely madvise memory)
    assert large_folios > 3 * (16 * MIB // (16 << 10)), large_folios
    assert base_folios < large_folios / 10, (base_folios, large_folios)
