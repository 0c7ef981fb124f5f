"""Kernel modules for the guest initramfs: dependencies and load order.

A kernel extracted with `dpkg -x` has no modules.dep (depmod runs at install time), and the host
need not have kmod. So this module reads each module's `.modinfo` ELF section (`depends=a,b`,
module names with '_' where file names may have '-'), writes a modules.dep in depmod's format
(`kernel/path/a.ko: kernel/path/b.ko ...`, paths relative to lib/modules/<kver>), and derives the
insmod order from it: every module after all of its dependencies.
"""

from __future__ import annotations

import io
import lzma
from pathlib import Path

from elftools.elf.elffile import ELFFile

from objtier.errors import EnvironmentProblem

# What the guest loads: 9p over virtio for the shared trees. Everything else the guest needs
# (virtio-pci, virtio-console, serial, NUMA, HMAT, memory tiers) is built into Debian's kernel.
GUEST_MODULES = ("9pnet_virtio", "9p")


def module_name(path: Path) -> str:
    """`9pnet_virtio.ko.xz` -> `9pnet_virtio`; kernel module names use '_' for '-'."""
    name = path.name
    for suffix in (".xz", ".zst", ".gz"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".ko").replace("-", "_")


def read_ko(path: Path) -> bytes:
    """The uncompressed ELF bytes of a module file (.ko or .ko.xz)."""
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith((".zst", ".gz")):
        raise EnvironmentProblem(f"{path.name}: only .ko and .ko.xz modules are supported")
    return data


def modinfo_depends(elf_bytes: bytes) -> list[str]:
    """The `depends=` entry of a module's .modinfo section (NUL-separated key=value strings)."""
    elf = ELFFile(io.BytesIO(elf_bytes))
    section = elf.get_section_by_name(".modinfo")
    if section is None:
        return []
    for entry in section.data().split(b"\0"):
        if entry.startswith(b"depends="):
            value = entry[len(b"depends="):].decode()
            return [d for d in value.split(",") if d]
    return []


def index_modules(modules_dir: Path) -> dict[str, Path]:
    """Module name -> file for every module under lib/modules/<kver>/kernel."""
    return {module_name(p): p for p in (modules_dir / "kernel").rglob("*.ko*")}


def resolve(modules_dir: Path, wanted: tuple[str, ...] = GUEST_MODULES) -> list[tuple[str, Path, list[str]]]:
    """(name, file, depends) for `wanted` and everything they need, in a valid load order."""
    index = index_modules(modules_dir)
    builtin_file = modules_dir / "modules.builtin"
    builtin = set()
    if builtin_file.is_file():
        builtin = {module_name(Path(line.strip())) for line in builtin_file.read_text().splitlines()
                   if line.strip()}
    order: list[tuple[str, Path, list[str]]] = []
    state: dict[str, str] = {}  # name -> "visiting" | "done"

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if state.get(name) == "done" or name in builtin:
            return
        if state.get(name) == "visiting":
            raise EnvironmentProblem(f"module dependency cycle: {' -> '.join(chain + (name,))}")
        path = index.get(name)
        if path is None:
            raise EnvironmentProblem(f"kernel module {name} not found under {modules_dir}")
        state[name] = "visiting"
        depends = modinfo_depends(read_ko(path))
        for dep in depends:
            visit(dep, chain + (name,))
        state[name] = "done"
        order.append((name, path, depends))

    for name in wanted:
        visit(name, ())
    return order


def modules_dep_text(modules_dir: Path, order: list[tuple[str, Path, list[str]]]) -> str:
    """modules.dep lines for the resolved modules (paths relative to lib/modules/<kver>)."""
    by_name = {name: path for name, path, _ in order}
    lines = []
    for name, path, depends in order:
        rel = path.relative_to(modules_dir)
        deps = " ".join(str(by_name[d].relative_to(modules_dir)) for d in depends if d in by_name)
        lines.append(f"{rel}: {deps}".rstrip())
    return "\n".join(lines) + "\n"


def load_order_from_modules_dep(text: str) -> list[str]:
    """Module files (relative paths) from a modules.dep text, each after its dependencies."""
    deps: dict[str, list[str]] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        head, tail = line.split(":", 1)
        deps[head.strip()] = tail.split()
    out: list[str] = []
    seen: set[str] = set()

    def visit(mod: str) -> None:
        if mod in seen:
            return
        seen.add(mod)
        for dep in deps.get(mod, []):
            visit(dep)
        out.append(mod)

    for mod in deps:
        visit(mod)
    return out


def unpack_modules(modules_dir: Path, names: tuple[str, ...], dest: Path) -> list[Path]:
    """The modules `names` and their dependencies (resolve), uncompressed into dest as plain
    .ko files (insmod in the guest's busybox takes no compressed ones), in load order.
    EnvironmentProblem when one cannot be unpacked."""
    files = []
    for name, path, _ in resolve(modules_dir, names):
        out = dest / f"{name}.ko"
        try:
            out.write_bytes(read_ko(path))
        except lzma.LZMAError as error:
            raise EnvironmentProblem(f"cannot unpack {path.name}: {error}") from None
        files.append(out)
    return files
