"""Data symbols of an ELF file: which global or static variable holds a module offset.

The runtime names a static data object (ALLOC kind "static") by a one-frame context
(module, symbol value + 1); addr2line finds the source line of such an address but names the
nearest function-like symbol, not the variable. This module reads the file's symbol tables
(.symtab, else .dynsym) with pyelftools and answers with the STT_OBJECT symbol that contains
an offset. Offsets are module-relative (ELF st_value), as in context frames.
"""

from __future__ import annotations

import bisect
from functools import lru_cache

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection


@lru_cache(maxsize=64)
def _object_symbols(path: str) -> tuple[list[int], list[tuple[int, int, str]]]:
    """(sorted starts, [(start, size, name)]) of the file's sized STT_OBJECT symbols."""
    symbols: dict[int, tuple[int, int, str]] = {}
    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            tables = [s for s in elf.iter_sections() if isinstance(s, SymbolTableSection)]
            full = [s for s in tables if s.name == ".symtab"]
            for table in full or tables:
                for sym in table.iter_symbols():
                    if sym["st_info"]["type"] != "STT_OBJECT" or sym["st_size"] <= 0 \
                            or not sym.name:
                        continue
                    start = int(sym["st_value"])
                    # one name per address: the first global-looking (no dot) name wins
                    if start not in symbols or "." in symbols[start][2]:
                        symbols[start] = (start, int(sym["st_size"]), sym.name)
    except (OSError, ELFError, ValueError, KeyError):
        return [], []
    rows = sorted(symbols.values())
    return [r[0] for r in rows], rows


def data_symbol(path: str, offset: int) -> str | None:
    """Name of the data symbol whose [st_value, st_value + st_size) holds offset, or None."""
    if not path:
        return None
    starts, rows = _object_symbols(path)
    i = bisect.bisect_right(starts, offset) - 1
    if i < 0:
        return None
    start, size, name = rows[i]
    return name if start <= offset < start + size else None
