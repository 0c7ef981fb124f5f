"""tiers.spool: what a program under a memory limit writes for objtier waits on tmpfs and lands
in its directory afterwards — whole, private, with nothing left on tmpfs; on a real memory
cgroup the trace then leaves no dirty file page charged to the program's cgroup."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from objtier.errors import ObjtierError
from objtier.tiers.spool import SPOOL_BASE, Spool, tmpfs_base

from .test_swap_tier import TOUCH


def _leftovers() -> set[str]:
    return {p.name for p in SPOOL_BASE.glob("objtier-spool-*")}


def test_tmpfs_base_needs_a_tmpfs_mount(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\ntmpfs /dev/shm tmpfs rw,nosuid 0 0\n")
    assert tmpfs_base(str(mounts)) == SPOOL_BASE
    mounts.write_text("proc /proc proc rw 0 0\n/dev/vda /dev/shm ext4 rw 0 0\n")
    assert tmpfs_base(str(mounts)) is None
    assert tmpfs_base(str(tmp_path / "absent")) is None


def test_spool_lands_every_file_private_and_leaves_nothing(tmp_path):
    final = tmp_path / "run.otr"
    final.mkdir(mode=0o700)
    before = _leftovers()
    with Spool(final, base=tmp_path) as spool:
        assert spool.spooled and spool.path.parent == tmp_path
        assert stat.S_IMODE(spool.path.stat().st_mode) == 0o700
        (spool.path / "proc-1.otr").write_bytes(b"x" * 3_000_000)
        (spool.path / "proc-2.otr").write_bytes(b"y")
        (spool.path / "proc-2.otr").chmod(0o644)       # landed 0600 whatever it was
    assert not spool.path.exists()
    assert sorted(p.name for p in final.iterdir()) == ["proc-1.otr", "proc-2.otr"]
    assert (final / "proc-1.otr").read_bytes() == b"x" * 3_000_000
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in final.iterdir())
    spool.land()                                          # a second landing does nothing
    assert _leftovers() == before


def test_spool_lands_on_error_too(tmp_path):
    final = tmp_path / "t.otr"
    final.mkdir()
    with pytest.raises(KeyboardInterrupt):
        with Spool(final, base=tmp_path) as spool:
            (spool.path / "proc-7.otr").write_bytes(b"partial")
            raise KeyboardInterrupt
    assert (final / "proc-7.otr").read_bytes() == b"partial"


def test_a_landing_that_fails_keeps_the_files_and_says_where(tmp_path):
    final = tmp_path / "gone.otr"
    final.mkdir()
    spool = Spool(final, base=tmp_path)
    (spool.path / "proc-9.otr").write_bytes(b"data")
    final.rmdir()
    with pytest.raises(ObjtierError) as err:
        spool.land()
    message = str(err.value)
    assert "\n" not in message and str(spool.path) in message and "kept" in message
    assert (spool.path / "proc-9.otr").read_bytes() == b"data"


def test_without_tmpfs_the_program_writes_in_place(tmp_path, monkeypatch):
    monkeypatch.setattr("objtier.tiers.spool.tmpfs_base", lambda: None)
    spool = Spool(tmp_path)
    assert spool.path == tmp_path and not spool.spooled
    spool.land()
    assert tmp_path.exists()


def _max_dirty(cgroup: Path, stop: threading.Event, out: list[int]) -> None:
    """The cgroup's largest `dirty` (memory.stat, bytes of dirty file pages) while running."""
    peak = 0
    while not stop.is_set():
        for line in (cgroup / "memory.stat").read_text().splitlines():
            key, value = line.split()
            if key == "dirty":
                peak = max(peak, int(value))
        time.sleep(0.002)
    out.append(peak)


@pytest.mark.root
def test_a_spooled_trace_leaves_no_dirty_page_in_the_cgroup(compile_c, tmp_path):
    """The same run writing its trace to disk has a dirty page charged to its cgroup (the
    control: the check can see one); through the spool it has none, and the trace lands."""
    from objtier.experiments.measure import run_measured
    from objtier.record.launch import runtime_env
    from objtier.tiers.swap import SwapTier
    from objtier.trace import open_trace

    if tmpfs_base() is None:
        pytest.skip("no tmpfs at /dev/shm on this machine")
    touch = compile_c(TOUCH, "touch")
    before = _leftovers()
    peaks = {}
    with SwapTier(24 << 20) as tier:
        for how in ("spool", "disk"):
            final = tmp_path / f"{how}.otr"
            final.mkdir(mode=0o700)
            spool = Spool(final) if how == "spool" else None    # disk: in place, the control
            env = runtime_env({"OBJTIER_OUTPUT": str(spool.path if spool else final),
                               "OBJTIER_SAMPLER": "none"})
            os.sync()                                          # nothing dirty from before
            (tier.cgroup.path / "memory.force_empty").write_text("0")
            stop, out = threading.Event(), []
            watcher = threading.Thread(target=_max_dirty, args=(tier.cgroup.path, stop, out))
            watcher.start()
            try:
                m = run_measured(how, [str(touch), "32", "3"], env=env, preexec=tier.preexec,
                                 timeout_s=120)
                time.sleep(0.05)
            finally:
                stop.set()
                watcher.join()
                if spool:
                    spool.land()
            assert m.returncode == 0, m.stderr
            peaks[how] = out[0]
            files = list(final.iterdir())
            assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
            assert open_trace(final).allocations.num_rows >= 1, "the trace must read back"
    assert peaks["disk"] > 0, "control: a trace on disk dirties a page in the cgroup"
    assert peaks["spool"] == 0
    assert _leftovers() == before
