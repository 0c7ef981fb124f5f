"""The fast-tier budget: "8G", "1.5GiB", "4096" (bytes) or "70%" of the footprint.

Sizes are units.parse_size's: binary suffixes, as in memory cgroup limits and the kernel's
memparse (K = KB = KiB = 1024 bytes, M, G, T, P; case-insensitive). A
percentage is of the footprint: the peak of live bytes when the object table has lifetimes,
else the sum of object sizes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from objtier.errors import UsageError
from objtier.units import parse_size

_PCT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$")


@dataclass(frozen=True)
class Budget:
    """A parsed fast-tier budget."""

    bytes: int            # fast-tier capacity in bytes
    given: str            # the user's text, e.g. "8G" or "70%"
    percent: float | None # the percentage when given as PCT, else None
    footprint_bytes: int  # the footprint PCT refers to (0 when unknown and not needed)


def parse_budget(text: str, footprint_bytes: int) -> Budget:
    """Parse --fast: SIZE, or PCT of `footprint_bytes`. Rejects zero, negative and > 100%."""
    text = str(text)
    pct = _PCT.match(text)
    if pct:
        percent = float(pct.group(1))
        if not 0 < percent <= 100:
            raise UsageError(f"bad budget {text!r}: a percentage must be in (0, 100]")
        if footprint_bytes <= 0:
            raise UsageError(f"budget {text!r} is relative, but the profile's footprint is "
                             f"0 bytes; give a size such as 512M")
        return Budget(int(footprint_bytes * percent / 100.0), text.strip(), percent,
                      int(footprint_bytes))
    if "%" in text:
        raise UsageError(f"bad budget {text!r}: expected a size (8G, 512M) or a percentage (70%)")
    try:
        size = parse_size(text)
    except UsageError:
        raise UsageError(f"bad budget {text!r}: expected a size (8G, 512M, 1.5GiB, bytes) "
                         f"or a percentage (70%)") from None
    if size <= 0:
        raise UsageError(f"bad budget {text!r}: the fast tier needs at least one byte")
    return Budget(size, text.strip(), None, int(max(footprint_bytes, 0)))


def peak_live_bytes(size: np.ndarray, alloc_ns: np.ndarray, free_ns: np.ndarray) -> int:
    """Peak of the sum of live object sizes. free_ns < 0 = never freed.

    An object is live on [alloc_ns, free_ns); at equal times frees are applied before
    allocations, so a free immediately followed by an allocation does not double count.
    """
    size = np.asarray(size, dtype=np.int64)
    if len(size) == 0:
        return 0
    freed = np.asarray(free_ns) >= 0
    times = np.concatenate([np.asarray(alloc_ns), np.asarray(free_ns)[freed]])
    delta = np.concatenate([size, -size[freed]])
    # sort by time, frees (negative delta) first at ties
    order = np.lexsort((delta > 0, times))
    return int(max(np.cumsum(delta[order]).max(), 0))


def footprint(size: np.ndarray, alloc_ns: np.ndarray | None = None,
              free_ns: np.ndarray | None = None, peak_bytes: int | None = None) -> int:
    """The footprint a PCT budget refers to: `peak_bytes` if given, else the peak of live
    bytes when lifetimes are known, else the sum of object sizes."""
    if peak_bytes is not None:
        return int(peak_bytes)
    if alloc_ns is not None and free_ns is not None:
        return peak_live_bytes(size, alloc_ns, free_ns)
    return int(np.asarray(size, dtype=np.int64).sum())
