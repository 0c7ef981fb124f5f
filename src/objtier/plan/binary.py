"""The identity of the profiled binary, so a plan can tell when it meets another program.

Identity = absolute path, GNU build-id (hex of the NT_GNU_BUILD_ID note, read with pyelftools;
None when the file has no such note or is not ELF) and file size in bytes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile


def build_id(path: str | os.PathLike) -> str | None:
    """Lowercase hex GNU build-id of an ELF file, or None (no note, not ELF, unreadable)."""
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            for section in elf.iter_sections():
                if section.header["sh_type"] != "SHT_NOTE":
                    continue
                for note in section.iter_notes():
                    if note["n_type"] == "NT_GNU_BUILD_ID":
                        return str(note["n_desc"]).lower()
    except (OSError, ELFError, ValueError):
        return None
    return None


def identity(path: str | os.PathLike) -> dict[str, Any]:
    """{"path", "build_id", "size"} of a binary; size None when the file is missing."""
    p = Path(path)
    try:
        size: int | None = p.stat().st_size
    except OSError:
        size = None
    return {"path": str(p.resolve() if p.exists() else p), "build_id": build_id(p) if size
            is not None else None, "size": size}


def check_plan_binary(plan: dict[str, Any], exe: str | os.PathLike) -> list[str]:
    """Warnings when `exe` is not the binary the plan was made for (none when it is).

    Build-ids decide when both sides have one; otherwise file name and size are compared.
    """
    made_for = plan.get("binary") or {}
    if not made_for.get("path"):
        return ["the plan does not say which binary it was made for"]
    here = identity(exe)
    if here["size"] is None:
        return [f"{exe} does not exist; cannot check that the plan was made for it"]
    warnings = []
    planned_name = Path(made_for["path"]).name
    name = Path(here["path"]).name
    if made_for.get("build_id") and here["build_id"]:
        if made_for["build_id"] != here["build_id"]:
            if planned_name == name:
                warnings.append(f"{name} was rebuilt since the plan was made (build-id "
                                f"{here['build_id'][:12]}, plan has {made_for['build_id'][:12]}); "
                                f"allocation contexts may not match")
            else:
                warnings.append(f"the plan was made for another binary: {made_for['path']} "
                                f"(build-id {made_for['build_id'][:12]}), not {here['path']} "
                                f"(build-id {here['build_id'][:12]})")
        return warnings
    if planned_name != name:
        warnings.append(f"the plan was made for another binary: {made_for['path']}, "
                        f"not {here['path']}")
    elif made_for.get("size") is not None and made_for["size"] != here["size"]:
        warnings.append(f"{name} changed since the plan was made (size {here['size']} bytes, "
                        f"plan has {made_for['size']}); allocation contexts may not match")
    return warnings
