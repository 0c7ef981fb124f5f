"""The runtime's settings: every OBJTIER_* variable libobjtier.so reads, mirrored from the one
table in native/runtime/core/config.c (a test checks this mirror against that table, name by name:
type, default and bounds).

`runtime_env(sampler="none", min_size=131072, ...)` is the one way Python code builds the
environment of a program run under the runtime: names are the settings' lower-case suffixes,
values are checked against the same bounds the runtime applies, and a wrong name or value is a
UsageError here rather than a runtime that silently stays passive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from objtier.errors import UsageError

U64, BOOL, PATH, SAMPLER, TIER = "u64", "bool", "path", "sampler", "tier"

SAMPLERS = ("none", "fault", "perf", "trace", "pageout", "wp", "auto")  # config.c sampler_names, id order
TIERS = ("swap", "numa")                        # config.c tier_names


@dataclass(frozen=True)
class Setting:
    name: str            # the environment variable
    kind: str            # U64 | BOOL | PATH | SAMPLER | TIER
    default: str         # as text, as in config.c
    low: int = 0         # inclusive bounds of a U64 (config.c min/max)
    high: int = 0


_HALF = (1 << 64) // 2 - 1          # UINT64_MAX / 2
SETTINGS: tuple[Setting, ...] = (
    Setting("OBJTIER_OUTPUT", PATH, ""),
    Setting("OBJTIER_SAMPLER", SAMPLER, "auto"),
    Setting("OBJTIER_RATE", U64, "2000", 1, 10_000_000),
    Setting("OBJTIER_OVERHEAD_BP", U64, "0", 0, 10_000),
    Setting("OBJTIER_MIN_SIZE", U64, "131072", 1, _HALF),
    Setting("OBJTIER_STACK_DEPTH", U64, "8", 1, 32),
    Setting("OBJTIER_FOLLOW_FORKS", BOOL, "0"),
    Setting("OBJTIER_WINDOW_PAGES", U64, "1024", 1, 65536),
    Setting("OBJTIER_FLUSH_MS", U64, "200", 1, 60000),
    Setting("OBJTIER_LOG", BOOL, "0"),
    Setting("OBJTIER_LLC_BYTES", U64, "0", 0, 1 << 40),
    Setting("OBJTIER_LLC_WAYS", U64, "0", 0, 64),
    Setting("OBJTIER_LLC_LINE", U64, "0", 0, 4096),
    Setting("OBJTIER_TRACE_LIMIT", U64, "0", 0, _HALF),
    Setting("OBJTIER_TRACE_STREAM", U64, "0", 0, _HALF),
    Setting("OBJTIER_TRACE_STREAM_WINDOW", U64, "0", 0, 1 << 30),
    Setting("OBJTIER_PLAN", PATH, ""),
    Setting("OBJTIER_TIER", TIER, "swap"),
    Setting("OBJTIER_MLOCK_LIMIT", U64, "0", 0, _HALF),
    Setting("OBJTIER_PAGEOUT", BOOL, "0"),
    Setting("OBJTIER_ADVISE_MS", U64, "0", 0, 3_600_000),
    Setting("OBJTIER_PRESSURE_MS", U64, "10", 0, 3_600_000),
    Setting("OBJTIER_INACTIVE_PCT", U64, "12", 1, 100),
    Setting("OBJTIER_READAHEAD_KB", U64, "0", 0, 1 << 20),
    Setting("OBJTIER_LARGE_FOLIOS", BOOL, "1"),
    Setting("OBJTIER_FAST_NODES", PATH, ""),
    Setting("OBJTIER_SLOW_NODES", PATH, ""),
    Setting("OBJTIER_NUMA_STRICT", BOOL, "1"),
    Setting("OBJTIER_RESIDENCY_MS", U64, "500", 0, 3_600_000),
    Setting("OBJTIER_SAMPLER_REASON", PATH, ""),
    Setting("OBJTIER_STATICS", BOOL, "1"),
    Setting("OBJTIER_SITE_PERIOD", U64, "64", 0, 1 << 30),
    Setting("OBJTIER_ARENA", PATH, ""),
    Setting("OBJTIER_ARENA_STATS", PATH, ""),
    Setting("OBJTIER_ARENA_SITES", PATH, ""),
    Setting("OBJTIER_ARENA_LEARN", U64, "0", 0, 256),
    Setting("OBJTIER_ARENA_LEARN_BYTES", U64, "4194304", 1, 1 << 40),
)
BY_NAME = {s.name: s for s in SETTINGS}


def _text(setting: Setting, value: Any) -> str:
    if setting.kind == BOOL:
        if value not in (True, False, 0, 1, "0", "1"):
            raise UsageError(f"{setting.name} must be 0 or 1, got {value!r}")
        return "1" if value in (True, 1, "1") else "0"
    if setting.kind == U64:
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise UsageError(f"{setting.name} must be an integer, got {value!r}") from None
        if not setting.low <= number <= setting.high:
            raise UsageError(f"{setting.name} must be between {setting.low} and "
                             f"{setting.high}, got {number}")
        return str(number)
    choices = SAMPLERS if setting.kind == SAMPLER else TIERS if setting.kind == TIER else None
    text = str(value)
    if choices is not None and text not in choices:
        raise UsageError(f"{setting.name} must be one of {', '.join(choices)}, got {text!r}")
    if setting.kind == PATH and len(text.encode()) >= 4096:
        raise UsageError(f"{setting.name} is too long ({len(text)} characters)")
    return text


def runtime_env(**values: Any) -> dict[str, str]:
    """{"OBJTIER_<NAME>": text} for the given settings (lower-case suffixes as keywords); a
    value of None leaves that setting out (the runtime's default applies)."""
    env = {}
    for key, value in values.items():
        name = f"OBJTIER_{key.upper()}"
        setting = BY_NAME.get(name)
        if setting is None:
            raise UsageError(f"unknown runtime setting {name}")
        if value is not None:
            env[name] = _text(setting, value)
    return env
