"""The transparent samplers (pageout, wp) leave programs unchanged: programs that notice a changed
protection, a failed system call or a signal run plain and under `objtier record --sampler S`,
with the same exit status and output, and the trace read back holds their objects and samples.

Needs root: without swap on the machine, record adds a temporary zram swap device for pageout
(and removes it); its perf events must see faults taken inside system calls."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from objtier.record.sampler_choice import choose_sampler
from objtier.trace import open_trace

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "transparency_program.c"
MODES = ("read", "stdio", "sigblock", "guard", "reserve")
SOURCES = {"pageout": 6, "wp": 7}
REASONS = {"pageout": "major fault", "wp": "write-protect"}
# Modes that keep writing their sampled buffers (the wp sampler sees writes only).
WRITING_MODES = ("read", "stdio", "sigblock")


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict[str, Path]:
    """The plain build and a -D_FORTIFY_SOURCE=3 -O2 build (its read/fread are the _chk ones)."""
    out = tmp_path_factory.mktemp("transparency")
    builds = {"plain": ["-O1"], "fortify": ["-O2", "-D_FORTIFY_SOURCE=3"]}
    exes = {}
    for name, flags in builds.items():
        exe = out / f"transparency-{name}"
        subprocess.run(["gcc", *flags, "-std=c11", "-pthread", "-o", str(exe), str(SOURCE)],
                       check=True)
        exes[name] = exe
    return exes


def run_plain(exe: Path, mode: str, work: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), mode, str(work)], capture_output=True, text=True,
                          timeout=120)


def run_recorded(exe: Path, mode: str, work: Path, out: Path,
                 sampler: str = "pageout") -> subprocess.CompletedProcess:
    # --overhead 0: these short programs must be sampled in every buffer, whatever it costs
    return subprocess.run([sys.executable, "-m", "objtier", "record", "--sampler", sampler,
                           "--overhead", "0", "-o", str(out), "--", str(exe), mode, str(work)],
                          capture_output=True, text=True, timeout=180)


def program_output(stdout: str) -> str:
    """The program's own lines (record prints its summary on stderr only)."""
    return stdout.strip()


CASES = [(build, mode) for build in ("plain", "fortify") for mode in MODES
         if build == "plain" or mode in ("read", "stdio")]  # FORTIFY changes only read/fread


@pytest.mark.root
@pytest.mark.parametrize("sampler", ["pageout", "wp"])
@pytest.mark.parametrize("build,mode", CASES)
def test_program_unchanged_under_transparent_sampler(programs, tmp_path, build, mode, sampler):
    exe = programs[build]
    plain = run_plain(exe, mode, tmp_path)
    assert plain.returncode == 0, plain.stderr
    out = tmp_path / "run.otr"
    recorded = run_recorded(exe, mode, tmp_path, out, sampler)
    assert recorded.returncode == plain.returncode, recorded.stderr
    assert program_output(recorded.stdout) == program_output(plain.stdout), recorded.stderr
    assert f"sampler {sampler}" in recorded.stderr
    trace = open_trace(out)
    assert trace.allocations.num_rows >= 1
    config = trace.processes[0].config
    assert config["OBJTIER_SAMPLER"] == sampler
    assert REASONS[sampler] in config["OBJTIER_SAMPLER_REASON"]
    sources = trace.samples.column("source").to_numpy()
    assert np.all(sources == SOURCES[sampler])
    windows = trace.windows
    assert windows.num_rows > 0, recorded.stderr
    touched = windows.column("touched").to_numpy()
    assert np.all(touched <= windows.column("pages").to_numpy())
    if sampler == "pageout" or mode in WRITING_MODES:
        assert len(sources) > 0 and touched.sum() > 0, recorded.stderr


@pytest.mark.root
def test_read_into_sampled_buffer_is_seen_as_a_touch(programs, tmp_path):
    """Pages a system call writes into are touches too: the read mode's destination buffer
    is written only by read()/pread(), and it still gets samples."""
    exe = programs["plain"]
    out = tmp_path / "run.otr"
    recorded = run_recorded(exe, "read", tmp_path, out)
    assert recorded.returncode == 0, recorded.stderr
    trace = open_trace(out)
    allocs = trace.allocations
    sizes = allocs.column("size").to_numpy()
    addrs = allocs.column("addr").to_numpy()
    big = np.flatnonzero(sizes == 16 << 20)
    assert len(big) == 2  # src, then dst (allocation order)
    dst = big[np.argmax(allocs.column("seq").to_numpy()[big])]
    lo, hi = int(addrs[dst]), int(addrs[dst]) + int(sizes[dst])
    sample_addr = trace.samples.column("addr").to_numpy()
    assert np.count_nonzero((sample_addr >= lo) & (sample_addr < hi)) > 0


@pytest.mark.root
def test_auto_picks_a_transparent_sampler_and_says_why(programs, tmp_path):
    sampler, reason = choose_sampler("auto", transparent_default=True)
    assert sampler in ("perf", "pageout"), reason
    out = tmp_path / "run.otr"
    recorded = subprocess.run([sys.executable, "-m", "objtier", "record", "-o", str(out), "--",
                               str(programs["plain"]), "guard", str(tmp_path)],
                              capture_output=True, text=True, timeout=180)
    assert recorded.returncode == 0, recorded.stderr
    assert f"sampler {sampler}:" in recorded.stderr
    trace = open_trace(out)
    assert trace.processes[0].config["OBJTIER_SAMPLER"] == sampler
    assert trace.processes[0].config["OBJTIER_SAMPLER_REASON"]


def test_pageout_without_swap_or_root_is_refused(tmp_path, monkeypatch):
    """No swap and no way to add one: a one-line refusal, not an empty trace."""
    from objtier.errors import EnvironmentProblem
    from objtier.record import sampler_choice

    swaps = tmp_path / "swaps"
    swaps.write_text("Filename\tType\tSize\tUsed\tPriority\n")
    monkeypatch.setattr(sampler_choice, "temporary_zram_possible", lambda: False)
    with pytest.raises(EnvironmentProblem, match="needs an active swap device"):
        sampler_choice.choose_sampler("pageout", swaps=swaps)
    sampler, reason = sampler_choice.choose_sampler("auto", transparent_default=True,
                                                   swaps=swaps,
                                                   root=tmp_path / "no-pmu")
    assert sampler == "perf" and "--sampler fault" in reason
    full = tmp_path / "swaps-full"
    full.write_text("Filename\tType\tSize\tUsed\tPriority\n/dev/zram9 partition 100 100 5\n")
    assert not sampler_choice.swap_active(full)
    free = tmp_path / "swaps-free"
    free.write_text("Filename\tType\tSize\tUsed\tPriority\n/dev/zram9 partition 100 10 5\n")
    assert sampler_choice.swap_active(free)
    assert sampler_choice.choose_sampler("auto", transparent_default=True, swaps=free,
                                         root=tmp_path / "no-pmu")[0] == "pageout"


def active_swap_devices() -> set[str]:
    return {line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:]}


@pytest.mark.root
def test_temporary_zram_swap_is_removed_after_the_recording_and_on_error(monkeypatch, tmp_path):
    """record's temporary swap device: on while the program runs, gone after — also when the
    recording ends by an exception (Ctrl-C arrives as KeyboardInterrupt). A state directory of
    its own: recordings elsewhere on the machine would share the device (sampler_swap.py)."""
    from objtier.record import sampler_swap as record_command

    monkeypatch.setattr(record_command, "RUN_DIR", tmp_path / "run")
    monkeypatch.setattr(record_command, "needs_temporary_swap", lambda sampler: True)
    before = active_swap_devices()
    said = []
    with record_command.sampler_swap("pageout", said.append):
        during = active_swap_devices()
    assert len(during - before) == 1 and any("temporary swap device" in s for s in said)
    added = (during - before).pop()
    assert added not in active_swap_devices()
    assert not Path("/sys/block", Path(added).name).exists()
    before = active_swap_devices()   # anew: a device index freed meanwhile may come back
    with pytest.raises(KeyboardInterrupt):
        with record_command.sampler_swap("pageout", said.append):
            added = (active_swap_devices() - before).pop()
            raise KeyboardInterrupt
    assert added not in active_swap_devices()
