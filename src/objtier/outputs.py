"""Files and directories objtier writes: private modes, no writing through symbolic links, and
one-line errors.

Traces, plans and reports hold addresses, command lines and environment settings, so
every directory objtier creates is mode 0700 and every file it writes is 0600, whatever the
umask. An output path that is a symbolic link (to a directory, or dangling) is refused rather
than followed or replaced. Any OSError becomes a UsageError naming the path.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from objtier.errors import UsageError

DIR_MODE = 0o700
FILE_MODE = 0o600


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def refuse_symlink(path: Path, what: str = "output") -> None:
    if path.is_symlink():
        target = os.readlink(path)
        state = "" if path.exists() else " (dangling)"
        raise UsageError(f"{what} {path} is a symbolic link to {target}{state}; "
                         f"give the real path")


def make_private_dir(path: str | os.PathLike, what: str = "output directory",
                     exist_ok: bool = False) -> Path:
    """Create path (and missing parents) as a 0700 directory. With exist_ok an existing
    directory (not a link) is reused as it is. UsageError (one line) for anything else."""
    path = Path(path)
    refuse_symlink(path, what)
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{what} {path} exists and is not a directory")
        if exist_ok:
            return path
        raise UsageError(f"{what} {path} already exists")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=DIR_MODE)
        os.chmod(path, DIR_MODE)  # mkdir's mode is masked by the umask; this is not
    except OSError as error:
        raise UsageError(f"cannot create {what} {path}: {_reason(error)}") from None
    return path


def replace_dir(path: str | os.PathLike, force: bool, is_ours: Callable[[Path], bool],
                what: str = "output directory", hint: str = "",
                reuse_empty: bool = False) -> Path:
    """Create path as a fresh 0700 directory: every command's output directory goes through
    here. An existing one is removed first only with force and only when is_ours(path) says
    objtier wrote it; never through a link. With reuse_empty an existing empty directory is
    used as it is."""
    path = Path(path)
    refuse_symlink(path, what)
    if reuse_empty and path.is_dir() and not any(path.iterdir()):
        return path
    if path.exists():
        if not force:
            raise UsageError(f"{path} exists; choose another -o or pass --force to replace it"
                             + hint)
        if not path.is_dir() or not is_ours(path):
            raise UsageError(f"{path} is not a {what} objtier wrote; refusing to replace it")
        try:
            shutil.rmtree(path)
        except OSError as error:
            raise UsageError(f"cannot replace {path}: {_reason(error)}") from None
    return make_private_dir(path, what)


def open_private(path: str | os.PathLike, binary: bool = True, what: str = "output file"):
    """Open path for writing (created or truncated) with mode 0600, never through a link."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, FILE_MODE)
    except OSError as error:
        if path.is_symlink():
            refuse_symlink(path, what)
        raise UsageError(f"cannot write {what} {path}: {_reason(error)}") from None
    try:
        os.fchmod(fd, FILE_MODE)  # an existing file keeps its old mode through O_TRUNC
    except OSError:
        pass
    text = {} if binary else {"encoding": "utf-8", "newline": ""}  # "\n" written as is
    return os.fdopen(fd, "wb" if binary else "w", **text)


def write_private(path: str | os.PathLike, data: str | bytes, what: str = "output file") -> None:
    """Write data to path, mode 0600; UsageError (one line) on failure."""
    try:
        with open_private(path, isinstance(data, bytes), what) as f:
            f.write(data)
    except OSError as error:
        raise UsageError(f"cannot write {what} {path}: {_reason(error)}") from None


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Files and directories created inside are at most 0600 / 0700 (umask 077). Only for
    code that starts no program of the user's: a child would inherit the umask."""
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)
