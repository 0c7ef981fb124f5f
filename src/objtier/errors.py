"""Typed errors. The CLI maps every ObjtierError to one line on stderr and its exit code."""


class ObjtierError(Exception):
    """An error the user can act on. str(error) is the one-line message."""

    exit_code = 2


class UsageError(ObjtierError):
    """A wrong option or argument."""

    exit_code = 2


class TraceError(ObjtierError):
    """A trace that cannot be read: missing, corrupt, truncated header, unknown version."""

    exit_code = 3


class EnvironmentProblem(ObjtierError):
    """The machine lacks something: root, a memory cgroup, swap, a built runtime."""

    exit_code = 4
