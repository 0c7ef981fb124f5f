"""The pageout sampler's temporary zram swap device is shared by recordings that overlap: the
first creates it, the others join it, and the last one to end removes it — so a recording
that ends never takes the swap away from one still sampling with it. Real zram devices and
real flocks; a private state directory, so that recordings elsewhere on the machine are not
counted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from objtier.record import sampler_swap as S

pytestmark = pytest.mark.root


def active() -> set[str]:
    return {line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:]}


@pytest.fixture
def private_state(tmp_path, monkeypatch):
    """Recordings in this test only: their own state directory; a swap device elsewhere on the
    machine does not count as one that serves them."""
    run_dir = tmp_path / "run"
    monkeypatch.setattr(S, "RUN_DIR", run_dir)
    monkeypatch.setattr(S, "needs_temporary_swap", lambda sampler: True)
    monkeypatch.setattr(S, "_other_swap", lambda device: False)
    return run_dir


def test_a_second_recording_joins_and_the_last_removes(private_state):
    said: list[str] = []
    before = active()
    with S.sampler_swap("pageout", said.append):
        (device,) = active() - before
        assert (private_state / "sampler-swap").read_text().strip() == device[len("/dev/zram"):]
        with S.sampler_swap("pageout", said.append):
            assert active() - before == {device}        # joined, no second device
        assert device in active()                       # the first still samples with it
        assert "shared with another recording" in said[-1]
    assert device not in active() and not Path("/sys/block", Path(device).name).exists()
    assert not (private_state / "sampler-swap").exists()


CHILD = """
import sys
from pathlib import Path
from objtier.record import sampler_swap as S
S.RUN_DIR = Path(sys.argv[1])
S.needs_temporary_swap = lambda sampler: True
S._other_swap = lambda device: False
with S.sampler_swap("pageout", lambda text: print(text, flush=True)):
    sys.stdin.readline()
"""


def test_the_creator_ending_first_leaves_the_device_to_the_other(private_state):
    before = active()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(private_state)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert "temporary swap device" in child.stdout.readline()   # the child created it
        (device,) = active() - before
        said: list[str] = []
        with S.sampler_swap("pageout", said.append):
            assert "shared" in said[0]
            child.stdin.write("\n")
            child.stdin.flush()
            assert child.wait(timeout=60) == 0
            assert device in active()                   # the creator ended; still on for us
        assert device not in active()
    finally:
        if child.poll() is None:
            child.kill()


def test_an_interrupted_recording_still_removes_it(private_state):
    before = active()
    with pytest.raises(KeyboardInterrupt):
        with S.sampler_swap("pageout", lambda text: None):
            (device,) = active() - before
            raise KeyboardInterrupt
    assert device not in active()


def test_a_stale_state_file_is_replaced(private_state):
    private_state.mkdir()
    (private_state / "sampler-swap").write_text("987\n")       # no such device
    before = active()
    with S.sampler_swap("pageout", lambda text: None):
        (device,) = active() - before
        assert (private_state / "sampler-swap").read_text().strip() == device[len("/dev/zram"):]
    assert device not in active()


def zram_devices() -> set[str]:
    return {p.name for p in Path("/sys/block").glob("zram*")}


def test_release_removes_it_while_the_recording_goes_on(private_state):
    """release() (the program has ended) starts the removal in a thread; the block's end waits
    for it, so the device is gone once the recording is."""
    before, devices = active(), zram_devices()
    with S.sampler_swap("pageout", lambda text: None) as use:
        (device,) = active() - before
        use.release()
        use.release()                                   # a second call changes nothing
    assert device not in active() and zram_devices() <= devices
    assert not (private_state / "sampler-swap").exists()


def test_a_released_recording_leaves_the_device_to_one_still_using_it(private_state):
    before = active()
    with S.sampler_swap("pageout", lambda text: None):
        (device,) = active() - before
        with S.sampler_swap("pageout", lambda text: None) as use:
            use.release()
        assert device in active()                       # the first still samples with it
    assert device not in active()


def test_an_error_after_release_still_waits_for_the_removal(private_state):
    before, devices = active(), zram_devices()
    with pytest.raises(RuntimeError):
        with S.sampler_swap("pageout", lambda text: None) as use:
            use.release()
            raise RuntimeError("the summary failed")
    assert active() <= before and zram_devices() <= devices


def test_a_failed_set_up_leaves_no_device(private_state):
    """The state file cannot be written (a directory is in its way) once the zram device is
    up: the device is removed again before the error reaches the recording."""
    devices, before = zram_devices(), active()
    (private_state / "sampler-swap").mkdir(parents=True)
    with pytest.raises(OSError):
        with S.sampler_swap("pageout", lambda text: None):
            pass
    assert zram_devices() <= devices and active() <= before


def test_ctrl_c_during_set_up_leaves_no_device(private_state):
    """A recording waiting in set-up (here for the lock another recording holds) and stopped
    by SIGINT: it exits with KeyboardInterrupt and no device is left behind."""
    import fcntl
    import os
    import signal

    private_state.mkdir(mode=0o700)
    lock = os.open(private_state / "sampler-swap.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    devices = zram_devices()
    child = subprocess.Popen([sys.executable, "-c", "print('ready', flush=True)\n" + CHILD,
                              str(private_state)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        for _ in range(500):   # until it waits for the lock (its wchan names the flock)
            wchan = Path(f"/proc/{child.pid}/wchan").read_text()
            if "lock" in wchan or "flock" in wchan:
                break
            subprocess.run(["sleep", "0.01"])
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        assert child.returncode != 0 and "KeyboardInterrupt" in err
    finally:
        os.close(lock)
        if child.poll() is None:
            child.kill()
    assert zram_devices() <= devices
    assert not (private_state / "sampler-swap").exists()
