"""The swap tier on the real machine: a memory cgroup with zram swap behind it, and nothing left
behind afterwards — also when SIGINT arrives mid-run."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from objtier.experiments.measure import run_measured
from objtier.tiers.swap import THP_SYSFS, SwapTier

pytestmark = pytest.mark.root

TOUCH = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    size_t n = (size_t)atol(argv[1]) << 20;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    char *buf = malloc(n);
    memset(buf, 1, n);
    unsigned long sum = 0;
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < n; i += 4096) sum += buf[i]++;
    printf("FOM touch=%lu pages time=0.1\n", sum);
    if (argc > 3) sleep(60);
    return 0;
}
"""


def machine_state():
    swaps = [line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:]]
    cgroups = sorted(p.name for p in Path("/sys/fs/cgroup/memory").glob("objtier-*"))
    zram = sorted(p.name for p in Path("/sys/block").glob("zram*"))
    folios = sorted((p.name, (p / "enabled").read_text()) for p in THP_SYSFS.glob("hugepages-*")
                    if (p / "enabled").exists())
    return swaps, cgroups, zram, folios


def left_behind(before, after) -> list:
    """What `after` has that `before` had not: swap devices, objtier cgroups, zram devices, large
    folio settings. (Another objtier run on the machine may remove its own meanwhile.)"""
    return [item for b, a in zip(before, after) for item in a if item not in b]


HAS_16K_FOLIOS = (THP_SYSFS / "hugepages-16kB" / "enabled").exists()


def test_limited_program_swaps_and_everything_is_undone(compile_c):
    exe = compile_c(TOUCH, "touch")
    before = machine_state()
    with SwapTier(64 << 20) as tier:
        assert tier.cgroup.path.exists()
        assert tier.cgroup.limit_bytes == 64 << 20
        swaps = Path("/proc/swaps").read_text()
        assert str(tier.swap_device.device) in swaps
        tier.cgroup.reset_peak()
        result = run_measured("limited", [str(exe), "160", "3"], preexec=tier.preexec)
        assert result.ok, result.stderr
        # 160 MiB touched three times under a 64 MiB limit must go through swap: the program's
        # own major faults are the swap-ins (vmstat's pswpout is system-wide, so only a floor).
        assert result.major_faults > (96 << 20) // 4096
        assert result.pswpout > (96 << 20) // 4096 // 2
        # the cgroup's peak charge (RSS from wait4 would include the forked parent image)
        assert tier.cgroup.peak_bytes() <= 64 << 20
        assert result.fom_value is not None
        ours = tier.cgroup.path, tier.swap_device.device
    # what this tier made is gone; other experiments on the machine may add their own meanwhile
    assert not ours[0].exists()
    swaps, _, zram, folios = machine_state()
    assert str(ours[1]) not in swaps and ours[1].name not in zram
    assert folios == before[3]


def test_sigint_mid_run_restores_the_machine(compile_c, tmp_path):
    exe = compile_c(TOUCH, "touch")
    script = tmp_path / "experiment.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        from objtier.tiers.swap import THP_SYSFS, SwapTier
        from objtier.experiments.measure import run_measured
        with SwapTier(32 << 20, name="objtier-sigint-test",
                      large_folio_bytes={(16 << 10) if HAS_16K_FOLIOS else None}) as tier:
            print("ready", flush=True)
            run_measured("x", ["{exe}", "48", "1", "sleep"], preexec=tier.preexec)
    """))
    before = machine_state()
    # SIGINT back to its default in the child, as at a terminal (a suite started in the
    # background inherits it ignored, and Python then raises no KeyboardInterrupt)
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stdout.readline().strip() == "ready"
    cgroup = Path("/sys/fs/cgroup/memory/objtier-sigint-test")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (cgroup.exists() and
                                               (cgroup / "cgroup.procs").read_text().strip()):
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    process.wait(timeout=60)
    assert process.returncode != 0
    assert not cgroup.exists()
    assert left_behind(before, machine_state()) == []


def test_large_folio_size_the_kernel_lacks_is_a_clear_error():
    from objtier.errors import EnvironmentProblem

    before = machine_state()
    with pytest.raises(EnvironmentProblem, match="no 4096 KiB large folios"):
        with SwapTier(32 << 20, large_folio_bytes=4 << 20):
            pass
    assert left_behind(before, machine_state()) == []


def test_not_root_is_a_clear_error(monkeypatch):
    from objtier.errors import EnvironmentProblem
    from objtier.tiers import swap

    monkeypatch.setattr(swap.os, "geteuid", lambda: 1000)
    with pytest.raises(EnvironmentProblem, match="needs root"):
        with SwapTier(1 << 20):
            pass
    assert not list(Path("/sys/fs/cgroup/memory").glob(f"objtier-{os.getpid()}"))


def test_the_large_folio_note_follows_zswaps_counters():
    """The note `run` and `compare` print is there exactly when /proc/vmstat shows zswap used
    since boot, and carries the count (read here independently of tiers.swap)."""
    from objtier.tiers.swap import large_folio_swapin_note, zswap_pages_since_boot

    counts = dict(line.split() for line in Path("/proc/vmstat").read_text().splitlines())
    used = int(counts.get("zswpout", 0)) + int(counts.get("zswpin", 0))
    assert zswap_pages_since_boot() >= used  # the counters only grow
    note = large_folio_swapin_note()
    if used == 0:
        assert note is None
    else:
        assert note is not None and "base pages until the next boot" in note
        assert int(note.split("(")[1].split()[0]) >= used
