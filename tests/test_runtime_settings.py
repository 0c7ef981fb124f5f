"""The Python mirror of the runtime's settings table matches native/runtime/core/config.c, and
runtime_env checks names and bounds as the runtime does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from objtier.errors import UsageError
from objtier.runtime_settings import BY_NAME, SAMPLERS, SETTINGS, TIERS, runtime_env

CONFIG_C = Path(__file__).resolve().parents[1] / "native" / "runtime" / "core" / "config.c"
KINDS = {"T_U64": "u64", "T_BOOL": "bool", "T_PATH": "path", "T_SAMPLER": "sampler",
         "T_TIER": "tier"}
HALF = (1 << 64) // 2 - 1


def _c_number(text: str) -> int:
    text = text.strip()
    constants = {"UINT64_MAX / 2": HALF, "RT_MAX_STACK_DEPTH": 32, "RT_MAX_WINDOW_PAGES": 65536}
    if text in constants:
        return constants[text]
    shift = re.fullmatch(r"(\d+)(?:ULL|U|ULL)? << (\d+)", text)
    if shift:
        return int(shift.group(1)) << int(shift.group(2))
    return int(text.rstrip("ULul"))


def _c_table() -> list[tuple[str, str, str, int, int]]:
    source = CONFIG_C.read_text()
    body = source[source.index("static const rt_setting settings[]"):]
    body = body[:body.index("};")]
    rows = re.findall(r'\{"(OBJTIER_\w+)", (T_\w+), "([^"]*)", ([^,]+), ([^,]+), F\(\w+\)\}',
                      body)
    assert rows, "no settings found in config.c"
    return [(n, KINDS[k], d, _c_number(lo), _c_number(hi)) for n, k, d, lo, hi in rows]


def _c_names(array: str) -> tuple[str, ...]:
    source = CONFIG_C.read_text()
    match = re.search(rf"{array}\[\] = \{{([^}}]*)\}}", source)
    assert match, array
    return tuple(re.findall(r'"(\w+)"', match.group(1)))


def test_mirror_matches_config_c():
    c_rows = _c_table()
    assert [r[0] for r in c_rows] == [s.name for s in SETTINGS]
    for name, kind, default, low, high in c_rows:
        mirror = BY_NAME[name]
        assert (mirror.kind, mirror.default) == (kind, default), name
        if kind == "u64":
            assert (mirror.low, mirror.high) == (low, high), name
    assert SAMPLERS == _c_names("sampler_names")
    assert TIERS == _c_names("tier_names")


def test_runtime_env_formats_and_checks():
    env = runtime_env(sampler="none", min_size=4096, follow_forks=True, plan=None)
    assert env == {"OBJTIER_SAMPLER": "none", "OBJTIER_MIN_SIZE": "4096",
                   "OBJTIER_FOLLOW_FORKS": "1"}
    with pytest.raises(UsageError, match="unknown runtime setting OBJTIER_NO_SUCH"):
        runtime_env(no_such=1)
    with pytest.raises(UsageError, match="OBJTIER_STACK_DEPTH must be between 1 and 32"):
        runtime_env(stack_depth=33)
    with pytest.raises(UsageError, match="OBJTIER_RATE must be between"):
        runtime_env(rate=0)
    with pytest.raises(UsageError, match="OBJTIER_SAMPLER must be one of"):
        runtime_env(sampler="pebs")
    with pytest.raises(UsageError, match="OBJTIER_LOG must be 0 or 1"):
        runtime_env(log=2)
