"""A temporary zram swap device for the pageout sampler on a machine without swap.

Recordings that overlap in time share one device: the first creates it, the others join it,
and the last one to end removes it (swapoff, reset, hot_remove), on exit, error, Ctrl-C and
SIGTERM alike. So one recording never takes the swap away from another that still samples
with it. The bookkeeping lives in /run/objtier (root only, mode 0700):
  sampler-swap        the shared device's zram index, as decimal text
  sampler-swap.lock   flock LOCK_EX while a recording joins, creates or leaves (short)
  sampler-swap.users  flock LOCK_SH by every recording using the device, for as long as it
                      uses it; the one that can turn its lock into LOCK_EX is the last
The kernel drops a process's flocks when it dies, so a recording killed by SIGKILL stops
counting as a user; if it was the last one, the device stays until the next recording that
joins it ends.

Removing a device takes the kernel about 0.07 s (swapoff, then hot_remove), most of it waiting.
A recording whose program has ended calls release(): the removal then runs in a thread while
the recording reads its trace back, and leaving the `with` block waits for it (on an error or
Ctrl-C as well; the thread is not a daemon, so the interpreter waits for it too).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from pathlib import Path

from objtier.record.sampler_choice import PROC_SWAPS, needs_temporary_swap

RUN_DIR = Path("/run/objtier")
STATE = "sampler-swap"


def _active_swaps(swaps: Path = PROC_SWAPS) -> list[str]:
    """Names of the active swap devices and files with free space."""
    try:
        lines = swaps.read_text().splitlines()[1:]
    except OSError:
        return []
    return [f[0] for f in (line.split() for line in lines)
            if len(f) >= 4 and f[2].isdigit() and f[3].isdigit() and int(f[2]) > int(f[3])]


def shared_device(run_dir: Path | None = None) -> str | None:
    """The shared sampler device (/dev/zramN) when it exists and is swapped on, else None."""
    run_dir = run_dir or RUN_DIR
    try:
        index = int((run_dir / STATE).read_text().strip())
    except (OSError, ValueError):
        return None
    device = f"/dev/zram{index}"
    return device if device in _active_swaps() else None


def _other_swap(device: str | None) -> bool:
    """True when a swap device other than `device` is active with free space."""
    return any(name != device for name in _active_swaps())


class _Lease:
    """This recording's use of the shared device (see the module docstring)."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.users_fd: int | None = None
        self._leaving: threading.Thread | None = None
        self._error: BaseException | None = None

    def _mutex(self) -> int:
        fd = os.open(self.run_dir / "sampler-swap.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                     0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def take(self, size_bytes: int, say) -> None:
        """Joins the shared device, or creates it when there is none."""
        from objtier.restore import Restorer
        from objtier.tiers.swap import ZramSwap

        self.run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        mutex = self._mutex()
        try:
            self.users_fd = os.open(self.run_dir / "sampler-swap.users",
                                    os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.flock(self.users_fd, fcntl.LOCK_SH)
            device = shared_device(self.run_dir)
            if device:
                say(f"temporary swap device {device} (zram) shared with another recording; "
                    f"the last recording using it removes it")
                return
            undo = Restorer()  # not entered: holds the creation's undo until the device is up
            try:
                zram = ZramSwap(size_bytes, undo, priority=0)
                (self.run_dir / STATE).write_text(f"{zram.index}\n")  # names it for leave()
            except BaseException:
                undo.restore()
                with contextlib.suppress(OSError):   # it must not name a removed device
                    (self.run_dir / STATE).unlink()
                raise
            say(f"temporary swap device {zram.device} (zram, removed at exit, or by the last "
                f"recording using it)")
        finally:
            os.close(mutex)

    def leave_soon(self) -> None:
        """Starts leave() in a thread (the program no longer needs the swap)."""
        if self.users_fd is None or self._leaving is not None:
            return
        self._leaving = threading.Thread(target=self._leave_in_thread,
                                         name="objtier-swap-removal")
        self._leaving.start()

    def _leave_in_thread(self) -> None:
        try:
            self._leave()
        except BaseException as error:  # reported by leave(), in the recording's thread
            self._error = error

    def leave(self) -> None:
        """Stops using the device; the last user removes it. After leave_soon(), waits for it
        and re-raises what it met."""
        if self._leaving is not None:
            self._leaving.join()
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            return
        self._leave()

    def _leave(self) -> None:
        from objtier.tiers.swap import remove_zram

        if self.users_fd is None:
            return
        mutex = self._mutex()
        try:
            try:
                fcntl.flock(self.users_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # another recording still samples with it
            state = self.run_dir / STATE
            try:
                index = int(state.read_text().strip())
            except (OSError, ValueError):
                return
            state.unlink(missing_ok=True)
            remove_zram(index)
        finally:
            os.close(self.users_fd)
            self.users_fd = None
            os.close(mutex)


class SwapUse:
    """What sampler_swap yields: release() says that the program has ended, so that the
    device (when this recording is its last user) is removed while the recording goes on."""

    def __init__(self, lease: _Lease | None = None):
        self._lease = lease

    def release(self) -> None:
        if self._lease is not None:
            self._lease.leave_soon()


@contextlib.contextmanager
def sampler_swap(sampler: str, say):
    """A temporary zram swap device while the pageout sampler records on a machine without
    swap (shared with the recordings that overlap this one); the last recording using it
    removes it on exit, error, Ctrl-C and SIGTERM (Restorer), or from release() on (SwapUse),
    the block's end waiting for the removal."""
    if sampler != "pageout":
        yield SwapUse()
        return
    shared = shared_device(RUN_DIR)
    if shared is None:
        if not needs_temporary_swap(sampler):
            yield SwapUse()
            return
    elif _other_swap(shared) or os.geteuid() != 0:
        yield SwapUse()  # another swap device serves as well, or no lease can be taken
        return
    from objtier.restore import Restorer

    with Restorer() as restorer:
        lease = _Lease(RUN_DIR)
        restorer.push("temporary zram swap device", lease.leave)
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        lease.take(min(total // 4, 8 << 30), say)
        yield SwapUse(lease)
