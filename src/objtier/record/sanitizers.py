"""Programs objtier cannot record: sanitizer builds whose runtime must be loaded first.

AddressSanitizer, ThreadSanitizer, MemorySanitizer and HWASan replace malloc and check at
start-up that their runtime is the first library in the process ("ASan runtime does not come
first in initial library list"); a preloaded libobjtier.so comes first, so such a program would
abort under `record` with an exit status it never has alone. `record` refuses them up front
instead, naming the sanitizer. Detection reads the executable's dynamic section and dynamic
symbols with pyelftools: a DT_NEEDED sanitizer runtime (gcc's default, libasan.so.N) or the
sanitizer's init symbol linked in (clang's default static runtime).
"""

from __future__ import annotations

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

# name -> (DT_NEEDED prefixes, init symbols)
SANITIZERS = {
    "AddressSanitizer": (("libasan.so", "libclang_rt.asan"), ("__asan_init",)),
    "ThreadSanitizer": (("libtsan.so", "libclang_rt.tsan"), ("__tsan_init",)),
    "MemorySanitizer": (("libclang_rt.msan",), ("__msan_init",)),
    "HWAddressSanitizer": (("libhwasan.so", "libclang_rt.hwasan"), ("__hwasan_init",)),
}


def sanitizer_of(path: str) -> str | None:
    """The sanitizer the executable at path is built with, or None (also for non-ELF files
    such as scripts, whose interpreter is checked when it is recorded itself)."""
    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            needed: list[str] = []
            symbols: set[str] = set()
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    needed += [t.needed for t in section.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
                elif isinstance(section, SymbolTableSection) and section.name == ".dynsym":
                    symbols.update(s.name for s in section.iter_symbols()
                                   if s["st_shndx"] != "SHN_UNDEF")
    except (OSError, ELFError, ValueError):
        return None
    for name, (libraries, inits) in SANITIZERS.items():
        if any(n.startswith(libraries) for n in needed) or symbols.intersection(inits):
            return name
    return None
