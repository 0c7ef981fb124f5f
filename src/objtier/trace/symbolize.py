"""Offline symbolization of (module, offset) frames into "function (file:line)".

Uses binutils' addr2line in one batch per module (it follows build-id and debuglink debug
files; -C demangles C++ names, -i adds the frames the compiler inlined at the address), and
falls back to "module+0xoffset" when the module is gone or has no symbols. A frame without
line information reads "f (module)": the module was built without -g.
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


def short_name(function: str) -> str:
    """A demangled C++ name without its parameter list ("ns::f<int>(long) const" ->
    "ns::f<int>"); C names are unchanged."""
    name = function.strip()
    for suffix in (" const", " volatile", " &&", " &"):
        name = name.removesuffix(suffix)
    if not name.endswith(")") or name.startswith("("):
        return function
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i] if i > 0 and "operator" not in name[max(0, i - 10):i] \
                else function
    return function


def _is_library_source(path: str) -> bool:
    """Headers and sources of the toolchain and system libraries (not the program's code)."""
    return path.startswith(("/usr/include/", "/usr/lib/", "/usr/local/include/")) or \
        "/include/c++/" in path


def _frame_text(module: str, chain: list[tuple[str, str]]) -> str | None:
    """One frame's text from its inline chain (innermost first, the real function last):
    "f (file.c:12)"; inlined frames are marked, and library-header frames between the
    innermost one and the program's code are folded into "(+N inlined)"."""
    parts = []
    folded = 0
    for i, (function, location) in enumerate(chain):
        if function == "??":
            continue
        location = location.split(" (discriminator")[0]
        path, _, line = location.rpartition(":")
        inlined = i < len(chain) - 1
        if 0 < i < len(chain) - 1 and _is_library_source(path):
            folded += 1
            continue
        if folded:
            parts.append(f"(+{folded} inlined)")
            folded = 0
        name = short_name(function)
        where = f"{os.path.basename(module)}" if location.startswith("??") or not path \
            else f"{os.path.basename(path)}:{line}"
        parts.append(f"{name} ({where})" + (" [inlined]" if inlined else ""))
    if folded:
        parts.append(f"(+{folded} inlined)")
    return " <- ".join(parts) if parts else None


def _lookup_module(module: str, offsets: list[int]) -> dict[int, str]:
    """addr2line once for the module: -a marks where each address's answer starts, -i adds
    the frames inlined at it (DWARF inline records), -C demangles C++ names."""
    out = {o: _fallback(module, o) for o in offsets}
    addr2line = shutil.which("addr2line")
    if not module or not addr2line or not os.path.exists(module):
        return out
    query = "\n".join(f"{max(o - 1, 0):#x}" for o in offsets)
    try:
        run = subprocess.run([addr2line, "-a", "-f", "-i", "-C", "-e", module], input=query,
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return out
    if run.returncode != 0:
        return out
    chains: list[list[tuple[str, str]]] = []
    lines = run.stdout.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("0x"):
            chains.append([])
            i += 1
            continue
        if not chains or i + 1 >= len(lines):
            break
        chains[-1].append((lines[i], lines[i + 1]))
        i += 2
    if len(chains) != len(offsets):
        return out
    for offset, chain in zip(offsets, chains):
        variable = data_symbol(module, max(offset - 1, 0))
        if variable and chain:  # a static data object: the variable, at its declaration line
            chain = [(variable, chain[-1][1])]
        text = _frame_text(module, chain)
        if text is not None:
            out[offset] = text
    return out


def has_line_info(text: str) -> bool:
    """A symbolized frame names a source line ("f (file.c:12)")."""
    return bool(text) and ":" in text.rpartition("(")[2]


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
