"""Parsing and printing of byte sizes: "128K", "8G", "1.5GiB", "4096"."""

from __future__ import annotations

import re

from objtier.errors import UsageError

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
MAX_BYTES = (1 << 63) - 1  # sizes are int64 in tables and u64 in the runtime
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str, what: str = "size") -> int:
    """Bytes from "4096", "128K", "64M", "8G", "1.5GiB" (binary units). UsageError otherwise."""
    match = _SIZE.match(str(text))
    if not match:
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
