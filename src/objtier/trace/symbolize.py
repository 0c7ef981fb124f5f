"""Offline symbolization of (module, offset) frames into "function (file:line)".

Uses binutils' addr2line in one batch per module (it follows build-id and debuglink debug
files), and falls back to "module+0xoffset" when the module is gone or has no symbols.
Return addresses point after the call instruction, so offset - 1 is looked up.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable

from objtier.trace.datasyms import data_symbol

_cache: dict[tuple[str, int], str] = {}


def _fallback(module: str, offset: int) -> str:
    name = os.path.basename(module) if module else "?"
    return f"{name}+{offset:#x}"


def _lookup_module(module: str, offsets: list[int]) -> dict[int, str]:
    out = {o: _fallback(module, o) for o in offsets}
    addr2line = shutil.which("addr2line")
    if not module or not addr2line or not os.path.exists(module):
        return out
    query = "\n".join(f"{max(o - 1, 0):#x}" for o in offsets)
    try:
        run = subprocess.run([addr2line, "-f", "-C", "-e", module], input=query,
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return out
    lines = run.stdout.splitlines()
    if run.returncode != 0 or len(lines) < 2 * len(offsets):
        return out
    for i, offset in enumerate(offsets):
        function, location = lines[2 * i], lines[2 * i + 1]
        variable = data_symbol(module, max(offset - 1, 0))
        if variable:  # a static data object: name the variable, not the nearest function
            function = variable
        if function == "??":
            continue
        location = location.split(" (discriminator")[0]
        if location.startswith("??"):
            out[offset] = f"{function} ({os.path.basename(module)})"
        else:
            path, _, line = location.rpartition(":")
            out[offset] = f"{function} ({os.path.basename(path)}:{line})"
    return out


def symbolize(frames: Iterable[tuple[str, int]]) -> list[str]:
    """Symbolize (module path, offset) pairs, batching lookups per module; results cached."""
    frames = list(frames)
    missing: dict[str, list[int]] = defaultdict(list)
    for module, offset in frames:
        if (module, offset) not in _cache:
            missing[module].append(offset)
    for module, offsets in missing.items():
        for offset, text in _lookup_module(module, sorted(set(offsets))).items():
            _cache[(module, offset)] = text
    return [_cache[(m, o)] for m, o in frames]


def symbolize_frames(frames: list[dict]) -> list[str]:
    """frames as in Trace.contexts: dicts with module and offset."""
    return symbolize((f["module"], int(f["offset"])) for f in frames)


def context_labels(contexts_frames: list[list[dict]], depth: int = 3) -> list[str]:
    """One label per context: its innermost `depth` symbolized frames joined by " <- ".

    All frames of all contexts are symbolized in one batch per module.
    """
    flat = [(f["module"], int(f["offset"])) for frames in contexts_frames for f in frames[:depth]]
    names = iter(symbolize(flat))
    labels = []
    for frames in contexts_frames:
        parts = [next(names) for _ in frames[:depth]]
        labels.append(" <- ".join(parts) if parts else "(no context)")
    return labels
