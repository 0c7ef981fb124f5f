"""Stable calling-context keys (see the end of native/include/objtier/trace_format.h).

key = FNV-1a 64 over, for each frame from innermost outwards: basename(module path), one NUL
byte, the frame offset as 8 little-endian bytes. Printed as 16 lowercase hex digits. The runtime
computes the same value when it matches plan entries to allocations.
"""

from __future__ import annotations

import os
import struct

FNV64_OFFSET = 0xCBF29CE484222325
FNV64_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


def fnv64(data: bytes, h: int = FNV64_OFFSET) -> int:
    for byte in data:
        h ^= byte
        h = (h * FNV64_PRIME) & _MASK
    return h


def context_key(frames: list[tuple[str, int]]) -> str:
    """frames: (module path or '' when unknown, offset) innermost first -> 16 hex digits."""
    h = FNV64_OFFSET
    for module, offset in frames:
        h = fnv64(os.path.basename(module).encode() + b"\0" + struct.pack("<Q", offset), h)
    return f"{h:016x}"
