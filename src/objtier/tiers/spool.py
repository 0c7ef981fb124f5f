"""Files that a program under a memory limit writes for objtier (its trace, the runtime's
counts) are kept on tmpfs while it runs and moved to their place afterwards.

Why: a file page is charged to the memory cgroup of the task that writes it, so the trace's
pages sit on the program's own file LRU. On cgroup v1, reclaim that takes a batch of dirty file
pages not yet queued for writeback stalls the program (the kernel throttles such reclaim for up
to 100 ms; v1 has no other dirty throttling), and in a cgroup of a few MiB the trace's one or
two dirty pages can be all that list holds. Measured (real, test VM, 2026-11-27, CC uniform
s17 at 50 % local, 10 MiB cgroup, zram, 9 interleaved runs each): wall 0.43 s with the trace
directory on disk, 0.17 s on tmpfs, 0.17 s with no trace; timed region, major faults and CPU
time equal — the extra time is spent waiting. The dirty page also stays charged after the run
and slows the next run in the same cgroup, whichever arm that is. A tmpfs page is swap-backed:
reclaimed like the program's own memory, never written back.

    with Spool(final_dir) as spool:      # final_dir exists (0700)
        env = ... OBJTIER_OUTPUT=spool.path ...
        run the program
        spool.land()                     # files now in final_dir; also done on leaving
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from objtier.errors import ObjtierError

SPOOL_BASE = Path("/dev/shm")
COPY_CHUNK = 1 << 20


def tmpfs_base(mounts: str = "/proc/self/mounts") -> Path | None:
    """SPOOL_BASE when it is a tmpfs mount we can write into, else None (then the program
    writes into the final directory directly, as before)."""
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError:
        return None
    kinds = {fields[1]: fields[2] for fields in (line.split() for line in lines)
             if len(fields) >= 3}
    if kinds.get(str(SPOOL_BASE)) != "tmpfs" or not os.access(SPOOL_BASE, os.W_OK | os.X_OK):
        return None
    return SPOOL_BASE


def _move_private(source: Path, target: Path) -> None:
    """Copy source to a new file target (0600, never through a link), then remove source."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
        shutil.copyfileobj(src, out, COPY_CHUNK)
    source.unlink()


class Spool:
    """A private tmpfs directory standing in for `final` while a program runs (see the module
    docstring). `path` is where the program writes; land() moves every file into `final` and
    removes the spool; leaving the `with` block lands too, on error as well, so nothing the
    program wrote is lost. Without a usable tmpfs, path is final and land() does nothing."""

    def __init__(self, final: Path, base: Path | None = None):
        self.final = Path(final)
        base = tmpfs_base() if base is None else base
        self.path = (Path(tempfile.mkdtemp(prefix="objtier-spool-", dir=base))
                     if base is not None else self.final)

    @property
    def spooled(self) -> bool:
        return self.path != self.final

    def land(self) -> None:
        if not self.spooled or not self.path.exists():
            return
        try:
            for entry in sorted(self.path.iterdir()):
                if entry.is_file() and not entry.is_symlink():
                    _move_private(entry, self.final / entry.name)
            self.path.rmdir()
        except OSError as e:
            raise ObjtierError(f"cannot move the run's files from {self.path} to "
                               f"{self.final}: {e.strerror or e}; what is left is kept in "
                               f"{self.path}") from None

    def __enter__(self) -> "Spool":
        return self

    def __exit__(self, *exc) -> None:
        self.land()
