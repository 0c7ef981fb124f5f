"""The Python plan readers against the runtime's parser (native/runtime/place/plan.c, called through
ctypes): every plan `load_plan` accepts becomes a text form the runtime also accepts, entry
for entry, so that no accepted entry is silently dropped by the runtime; every text plan the
reference parser (parse_text) accepts, the runtime accepts too."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from objtier.errors import UsageError
from objtier.plan import load_plan, parse_text, to_text

from .seeds import fuzz_settings, plan_document, plan_text
from .test_plan_fuzz import FIELD_VALUES, JSON_VALUES, _at, _paths

REPO = Path(__file__).resolve().parents[2]
FUZZ = fuzz_settings(120)


@pytest.fixture(scope="module")
def runtime_parser(tmp_path_factory):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        pytest.skip("no C compiler")
    library = tmp_path_factory.mktemp("plancheck") / "libplan_check.so"
    build = subprocess.run(
        [compiler, "-std=gnu11", "-O1", "-shared", "-fPIC", "-DOBJTIER_SANITIZED=1",
         f"-I{REPO / 'native' / 'include'}", f"-I{REPO / 'native' / 'runtime' / 'core'}",
         f"-I{REPO / 'native' / 'runtime' / 'place'}",
         str(REPO / "native" / "fuzz" / "plan_check.c"),
         str(REPO / "native" / "runtime" / "place" / "plan.c"),
         str(REPO / "native" / "runtime" / "core" / "sys.c"),
         "-o", str(library)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    check = ctypes.CDLL(str(library)).objtier_plan_check
    check.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t,
                      ctypes.POINTER(ctypes.c_uint64)]
    check.restype = ctypes.c_int

    def parse(text: str) -> tuple[bool, int, str]:
        raw = text.encode("utf-8")
        err = ctypes.create_string_buffer(256)
        entries = ctypes.c_uint64(0)
        rc = check(raw, len(raw), err, len(err), ctypes.byref(entries))
        return rc == 0, entries.value, err.value.decode("utf-8", "replace")
    return parse


def test_the_runtime_reads_the_seed_plan(runtime_parser):
    ok, entries, why = runtime_parser(plan_text())
    assert ok, why
    assert entries == len(plan_document()["entries"])
    assert not runtime_parser("objtier-plan 1\nbudget -1 4096\n")[0]


@FUZZ
@given(data=st.data())
def test_every_plan_load_plan_accepts_the_runtime_reads_whole(runtime_parser, tmp_path_factory,
                                                              data):
    plan = plan_document()
    for _ in range(data.draw(st.integers(1, 3))):
        path, key = data.draw(st.sampled_from(list(_paths(plan))))
        _at(plan, path)[key] = data.draw(JSON_VALUES)
    file = tmp_path_factory.getbasetemp() / "differential.json"
    file.write_text(json.dumps(plan))
    try:
        accepted = load_plan(file)
    except UsageError:
        return
    ok, entries, why = runtime_parser(to_text(accepted))
    assert ok, f"load_plan accepted a plan the runtime refuses: {why}"
    assert entries == len(accepted["entries"])


@FUZZ
@given(data=st.data())
def test_every_text_plan_parse_text_accepts_the_runtime_accepts(runtime_parser, data):
    lines = [line.split(" ") for line in plan_text().split("\n")]
    for _ in range(data.draw(st.integers(1, 3))):
        row = data.draw(st.integers(1, len(lines) - 2))
        column = data.draw(st.integers(0, len(lines[row]) - 1))
        lines[row][column] = data.draw(FIELD_VALUES)
    text = "\n".join(" ".join(fields) for fields in lines)
    try:
        parsed = parse_text(text)
    except UsageError:
        return
    ok, entries, why = runtime_parser(text)
    assert ok, f"parse_text accepted a text plan the runtime refuses: {why}"
    assert entries == len(parsed["entries"])
