"""The plan's binary identity: GNU build-ids of real gcc-built programs."""

from __future__ import annotations

import shutil

import pytest

from objtier.plan import build_id, check_plan_binary, identity

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

HOT = "#include <stdlib.h>\nint main(void){char *p = malloc(1 << 20); p[0] = 1; return p[0] - 1;}\n"
COLD = "#include <stdio.h>\nint main(void){puts(\"cold\"); return 0;}\n"


def plan_for(exe):
    return {"binary": identity(exe)}


def test_build_id_is_read_from_the_elf_note(compile_c):
    exe = compile_c(HOT, name="hot", flags=("-O1", "-Wl,--build-id=sha1"))
    bid = build_id(exe)
    assert bid is not None and len(bid) == 40 and not bid.strip("0123456789abcdef")
    assert identity(exe)["size"] == exe.stat().st_size
    assert build_id(exe.with_suffix(".c")) is None  # not ELF


def test_same_binary_gives_no_warning(compile_c):
    exe = compile_c(HOT, name="hot", flags=("-O1", "-Wl,--build-id=sha1"))
    assert check_plan_binary(plan_for(exe), exe) == []


def test_another_binary_gives_a_warning(compile_c):
    hot = compile_c(HOT, name="hot", flags=("-O1", "-Wl,--build-id=sha1"))
    cold = compile_c(COLD, name="cold", flags=("-O1", "-Wl,--build-id=sha1"))
    warnings = check_plan_binary(plan_for(hot), cold)
    assert len(warnings) == 1 and "made for another binary" in warnings[0]
    assert str(hot) in warnings[0] and str(cold) in warnings[0]


def test_a_rebuilt_binary_gives_a_warning(compile_c, tmp_path):
    exe = compile_c(HOT, name="app", flags=("-O1", "-Wl,--build-id=sha1"))
    plan = plan_for(exe)
    compile_c(HOT + "const char *version = \"2\";\n", name="app",
              flags=("-O1", "-Wl,--build-id=sha1"))
    warnings = check_plan_binary(plan, exe)
    assert len(warnings) == 1 and "was rebuilt" in warnings[0]


def test_without_build_ids_name_and_size_decide(compile_c):
    exe = compile_c(HOT, name="app", flags=("-O1", "-Wl,--build-id=none"))
    assert build_id(exe) is None
    plan = plan_for(exe)
    assert check_plan_binary(plan, exe) == []
    compile_c(HOT + "int unused_padding[4096] = {1};\n", name="app",
              flags=("-O1", "-Wl,--build-id=none"))
    warnings = check_plan_binary(plan, exe)
    assert len(warnings) == 1 and "changed since the plan was made" in warnings[0]


def test_missing_binary_and_unknown_plan_binary(tmp_path):
    assert "does not exist" in check_plan_binary({"binary": {"path": "/bin/true"}},
                                                 tmp_path / "gone")[0]
    assert "does not say" in check_plan_binary({}, "/bin/true")[0]
