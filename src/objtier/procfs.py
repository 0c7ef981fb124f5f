"""Facts about this machine read from /proc (procfs)."""

from __future__ import annotations

from pathlib import Path


def meminfo_bytes(field: str, path: Path = Path("/proc/meminfo")) -> int | None:
    """A /proc/meminfo field ("MemTotal", "MemAvailable", ...) in bytes; None if absent."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, _, rest = line.partition(":")
        if name == field:
            return int(rest.split()[0]) * 1024  # the file's unit is kB
    return None
