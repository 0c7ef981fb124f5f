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
