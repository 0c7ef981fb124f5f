"""Parsing and printing of byte sizes: "128K", "8G", "1.5GiB", "4096"."""

from __future__ import annotations

import re

from objtier.errors import UsageError

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
MAX_BYTES = (1 << 63) - 1  # sizes are int64 in tables and u64 in the runtime
# a number ("4096", "1.5", ".5", "2."), a binary unit, then "B", "iB", "i" or nothing ("i"
# only after a unit)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGTP]?)(I?B?)\s*$", re.IGNORECASE)


def parse_size(text: str, what: str = "size") -> int:
    """Bytes from "4096", "128K", "64M", "8G", "1.5GiB", "8Gi" (binary units: K = KB = KiB =
    1024 bytes, M, G, T, P; case-insensitive, as in memory cgroup limits and the kernel's
    memparse). UsageError otherwise, naming `what`."""
    match = _SIZE.match(str(text))
    if not match or ("I" in match.group(3).upper() and not match.group(2)):
        raise UsageError(f"invalid {what} '{text}': expected bytes or a number with K, M, G or T")
    number, unit = float(match.group(1)), match.group(2).upper()
    value = int(number * _UNITS[unit])
    if value > MAX_BYTES:
        raise UsageError(f"invalid {what} '{text}': more than {MAX_BYTES} bytes")
    return value


def format_bytes(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"
