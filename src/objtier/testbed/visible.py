"""What a command run in the guest can see, checked on the host before the guest boots.

The guest runs commands in `chroot /host` (guest_init.sh): the host's root file system, read
only, with the guest's own file systems mounted over some of it, and the project tree mounted
read-write at its host path last (so a tree under /tmp is still seen). A host path is visible
in the guest when it lies inside the project tree, or outside every directory in GUEST_MOUNTS.
Guest jobs start in the project root (Testbed.run), so a relative path means the same file in
the guest only when the host's working directory is that root.
"""

from __future__ import annotations

import os
from pathlib import Path

from objtier.errors import UsageError

# directories the guest mounts its own file system over (guest_init.sh): host files below
# them are not seen in the guest. /dev/shm and /dev/pts are below /dev.
GUEST_MOUNTS = {"/tmp": "tmpfs", "/run": "tmpfs", "/dev": "devtmpfs", "/proc": "proc",
                "/sys": "sysfs"}


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def hidden_by(path: str | os.PathLike, repo: Path) -> str | None:
    """The guest mount that hides the host path `path` from guest commands, e.g. "/tmp
    (tmpfs)"; None when the guest sees it. Both the path as written and the file it resolves
    to on the host (symbolic links followed) must be visible: the guest follows the same
    links, through its own mounts."""
    roots = (Path(os.path.abspath(repo)), Path(os.path.realpath(repo)))
    for candidate in (Path(os.path.abspath(path)), Path(os.path.realpath(path))):
        if any(_inside(candidate, root) for root in roots):
            continue
        for mount, fs in GUEST_MOUNTS.items():
            if _inside(candidate, Path(mount)):
                return f"{mount} ({fs})"
    return None


def _interpreter(program: Path) -> str | None:
    """The interpreter a `#!` line names (its first word), or None."""
    from objtier.record.elfcheck import shebang_words

    words = shebang_words(program)
    return words[0] if words else None


def check_guest_command(command: list[str], repo: Path, cwd: str | os.PathLike | None = None
                        ) -> list[str]:
    """`command` (its program resolved on the host: objtier.record.launch.resolve_command) as
    the guest must be given it: the program's path made absolute. UsageError (one line) when
    the guest cannot run it: the program, the interpreter of its `#!` line, or an argument
    that names an existing host file (ARG or --opt=ARG) lies where the guest does not see it,
    or a relative argument names a host file while the host works outside the project root."""
    if not command:
        raise UsageError("no command given")
    cwd = Path(cwd if cwd is not None else os.getcwd())
    repo = Path(os.path.realpath(repo))
    program = Path(command[0]) if os.path.isabs(command[0]) else cwd / command[0]
    program = Path(os.path.abspath(program))
    where = hidden_by(program, repo)
    if where is not None:
        raise UsageError(f"{program} is under {where}, which the guest mounts over: it cannot "
                         f"run there; put the program inside the project tree {repo} or "
                         f"under /usr, /opt or /home")
    interpreter = _interpreter(program)
    if interpreter is not None and os.path.isabs(interpreter):
        where = hidden_by(interpreter, repo)
        if where is not None:
            raise UsageError(f"{program}'s interpreter {interpreter} is under {where}, which "
                             f"the guest mounts over; put it inside the project tree {repo}")
    same_dir = Path(os.path.realpath(cwd)) == repo
    for arg in command[1:]:
        value = arg.partition("=")[2] if arg.startswith("-") and "=" in arg else arg
        if not value:
            continue
        candidate = Path(value) if os.path.isabs(value) else cwd / value
        if not os.path.lexists(candidate):
            continue   # not a file on the host: a word, a number, or an output to create
        if not os.path.isabs(value) and not same_dir:
            raise UsageError(f"argument {arg!r} is a path relative to {cwd}, but the guest runs "
                             f"the command in {repo}; give it as {os.path.abspath(candidate)}")
        where = hidden_by(candidate, repo)
        if where is not None:
            raise UsageError(f"argument {arg!r} names {os.path.abspath(candidate)}, under "
                             f"{where}, which the guest mounts over; move it inside the "
                             f"project tree {repo}")
    return [str(program), *command[1:]]
