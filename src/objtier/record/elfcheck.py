"""What `record` must know about an executable before it runs it, read from the ELF file itself.

A few fields of the ELF header, program headers and section headers, read with the struct
module (no ELF library: this runs before every recording, and importing one costs more than
reading them). ELF32 and ELF64, either byte order. Encodings (System V gABI):
  e_ident[4] EI_CLASS 1 = 32-bit, 2 = 64-bit; e_ident[5] EI_DATA 1 = little, 2 = big endian
  PT_INTERP = 3: the program interpreter (the dynamic loader); no PT_INTERP = static, and no
    dynamic loader means nothing reads LD_PRELOAD, so the runtime never loads.
  SHT_DYNAMIC = 6, SHT_DYNSYM = 11; DT_NEEDED = 1 (d_val: offset into the linked string table).

Which programs cannot be recorded, and why (`unrecordable`):
  - statically linked (no PT_INTERP, also static-pie): no dynamic loader, no LD_PRELOAD;
  - set-user-ID / set-group-ID to another identity, or with file capabilities: the loader runs
    them in secure-execution mode (AT_SECURE) and ignores LD_PRELOAD.
A script (#!) is judged by its interpreter (one level, `/usr/bin/env NAME` resolved on PATH).
"""

from __future__ import annotations

import os
import shutil
import stat
import struct
from dataclasses import dataclass, field

PT_INTERP = 3
SHT_DYNAMIC, SHT_DYNSYM = 6, 11
DT_NULL, DT_NEEDED = 0, 1
SHN_UNDEF = 0
HEADER_READ = 64 << 10  # bytes read first: ELF header and, usually, the program headers


@dataclass
class ElfInfo:
    interpreter: str | None          # PT_INTERP path; None: statically linked
    needed: list[str] = field(default_factory=list)   # DT_NEEDED names
    dynstr: bytes = b""              # the dynamic string table (.dynstr)
    _defined: set[str] | None = None  # defined dynamic symbols, decoded on first use
    _symbols: tuple | None = None    # (.dynsym bytes, struct layout of an entry, entry bytes)

    def defines(self, name: str) -> bool:
        """True when the dynamic symbol table defines `name` (not an undefined reference)."""
        if (name.encode() + b"\0") not in self.dynstr:  # cheap test first: most never match
            return False
        if self._defined is None:
            self._defined = set()
            if self._symbols:
                data, layout, entsize = self._symbols
                for entry in range(0, len(data) - entsize + 1, entsize):
                    fields = struct.unpack_from(layout, data, entry)
                    if fields[-1] != SHN_UNDEF:
                        self._defined.add(_string(self.dynstr, fields[0]))
        return name in self._defined


def _string(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset:end if end >= 0 else len(table)].decode("utf-8", "replace")


def read_elf(path: str) -> ElfInfo | None:
    """The interpreter, DT_NEEDED names and dynamic symbols of the ELF file at path; None when
    it is not an ELF file (a script, or unreadable). Malformed tables are read as far as they
    make sense, never raised."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEADER_READ)
            if head[:4] != b"\x7fELF" or len(head) < 52 or head[4] not in (1, 2) \
                    or head[5] not in (1, 2):
                return None
            wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
            if wide:
                phoff, shoff = struct.unpack_from(order + "QQ", head, 32)
                phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", head, 54)
            else:
                phoff, shoff = struct.unpack_from(order + "II", head, 28)
                phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", head, 42)
            info = ElfInfo(interpreter=None)
            for i in range(phnum):
                ph = _read(handle, head, phoff + i * phentsize, phentsize)
                if len(ph) < (56 if wide else 32):
                    break
                if struct.unpack_from(order + "I", ph, 0)[0] != PT_INTERP:
                    continue
                offset, size = (struct.unpack_from(order + "Q", ph, 8)[0],
                                struct.unpack_from(order + "Q", ph, 32)[0]) if wide else \
                    (struct.unpack_from(order + "I", ph, 4)[0],
                     struct.unpack_from(order + "I", ph, 16)[0])
                info.interpreter = _string(_read(handle, head, offset, min(size, 4096)), 0)
            if info.interpreter is not None:
                _read_dynamic(handle, head, info, wide, order, shoff, shentsize, shnum)
            return info
    except (OSError, struct.error):
        return None


def _read(handle, head: bytes, offset: int, size: int) -> bytes:
    if offset + size <= len(head):
        return head[offset:offset + size]
    handle.seek(offset)
    return handle.read(size)


def _read_dynamic(handle, head, info: ElfInfo, wide: bool, order: str, shoff: int,
                  shentsize: int, shnum: int) -> None:
    """DT_NEEDED names and the dynamic symbol table, from the section headers."""
    # section header: sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, ...
    layout = order + ("IIQQQQII" if wide else "IIIIIIII")
    sections = []
    for i in range(min(shnum, 4096)):
        raw = _read(handle, head, shoff + i * shentsize, struct.calcsize(layout))
        if len(raw) < struct.calcsize(layout):
            return
        sections.append(struct.unpack(layout, raw))
    for _name, kind, _flags, _addr, offset, size, link, _info in sections:
        if kind not in (SHT_DYNAMIC, SHT_DYNSYM) or link >= len(sections) or size > 1 << 28:
            continue
        strtab = sections[link]
        strings = _read(handle, head, strtab[4], min(strtab[5], 1 << 28))
        data = _read(handle, head, offset, size)
        if kind == SHT_DYNAMIC:
            entry = order + ("qQ" if wide else "iI")
            for tag, value in struct.iter_unpack(entry, data[:len(data) // struct.calcsize(entry)
                                                         * struct.calcsize(entry)]):
                if tag == DT_NULL:
                    break
                if tag == DT_NEEDED:
                    info.needed.append(_string(strings, value))
        else:
            info.dynstr = strings
            # Elf64_Sym: st_name u32, st_info u8, st_other u8, st_shndx u16, value, size;
            # Elf32_Sym: st_name, st_value, st_size u32, st_info, st_other u8, st_shndx u16
            symbol = order + ("IBBH" if wide else "IIIBBH")
            entsize = 24 if wide else 16
            info._symbols = (data, symbol, entsize)  # st_name first, st_shndx last


def shebang_words(path: str | os.PathLike) -> list[str] | None:
    """The words of a script's #! line (at most its first 256 bytes), else None."""
    try:
        with open(path, "rb") as handle:
            line = handle.readline(256)
    except OSError:
        return None
    if not line.startswith(b"#!"):
        return None
    return line[2:].decode("utf-8", "replace").split() or None


def script_interpreter(path: str) -> str | None:
    """The interpreter a #! script names (one level; `env NAME` looked up on PATH), else None."""
    words = shebang_words(path)
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        return shutil.which(rest[0]) if rest else None
    return words[0]


def unrecordable(path: str) -> str | None:
    """Why the runtime cannot be preloaded into the program at path (one clause naming the
    reason and what works instead), or None when it can be."""
    target = path
    interpreter = script_interpreter(path)
    if interpreter:
        target = interpreter
    problem = _secure_execution(target)
    if problem:
        return problem
    info = read_elf(target)
    if info is not None and info.interpreter is None:
        what = f"{path}'s interpreter {target}" if target != path else path
        return (f"{what} is statically linked (no ELF interpreter), so nothing loads the "
                f"runtime (LD_PRELOAD) into it and the recording would hold no objects; "
                f"record a dynamically linked build (C/C++: without -static; Go: with cgo, "
                f"CGO_ENABLED=1, or -ldflags=-linkmode=external)")
    return None


def _secure_execution(path: str) -> str | None:
    """Why the loader would run path in secure-execution mode (LD_PRELOAD ignored), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_mode & stat.S_ISUID and st.st_uid != os.getuid():
        return (f"{path} is set-user-ID (owner uid {st.st_uid}), so the loader ignores "
                f"LD_PRELOAD and the runtime never loads; record a copy without the set-user-ID "
                f"bit, run as its owner")
    if st.st_mode & stat.S_ISGID and st.st_gid != os.getgid():
        return (f"{path} is set-group-ID (group {st.st_gid}), so the loader ignores "
                f"LD_PRELOAD and the runtime never loads; record a copy without the set-group-ID "
                f"bit")
    try:
        os.getxattr(path, "security.capability")
    except OSError:
        return None
    return (f"{path} has file capabilities (security.capability), so the loader ignores "
            f"LD_PRELOAD and the runtime never loads; record a copy without them")
