"""Programs objtier cannot record: sanitizer builds whose runtime must be loaded first.

AddressSanitizer, ThreadSanitizer, MemorySanitizer and HWASan replace malloc and check at
start-up that their runtime is the first library in the process ("ASan runtime does not come
first in initial library list"); a preloaded libobjtier.so comes first, so such a program would
abort under `record` with an exit status it never has alone. `record` refuses them up front
instead, naming the sanitizer. Detection reads the executable's dynamic section and dynamic
symbols (objtier.record.elfcheck): a DT_NEEDED sanitizer runtime (gcc's default, libasan.so.N) or the
sanitizer's init symbol linked in (clang's default static runtime).
"""

from __future__ import annotations

from objtier.record.elfcheck import read_elf

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
    elf = read_elf(path)
    if elf is None:
        return None
    for name, (libraries, inits) in SANITIZERS.items():
        if any(n.startswith(libraries) for n in elf.needed) or any(map(elf.defines, inits)):
            return name
    return None
