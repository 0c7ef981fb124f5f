"""Range checks for numeric options and settings, shared by every subcommand.

One rule for the whole command line: a number outside the range objtier acts on is rejected
with the range in the message, never clamped, never ignored. The checks raise UsageError
(one line); `option(...)` wraps them as argparse `type=` callables, so argparse reports them
as "objtier CMD: argument --X: MESSAGE" (one line, exit code 2).

The limits that mirror the runtime's settings table (native/runtime/core/config.c) are named here
so the CLI and the runtime agree: a value the runtime would refuse is refused up front.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

from objtier.errors import UsageError

T = TypeVar("T")

# Mirrors of native/runtime/core/config.c bounds (inclusive).
RATE_MAX = 10_000_000                # OBJTIER_RATE: samples per second
STACK_DEPTH_MAX = 32                 # OBJTIER_STACK_DEPTH: RT_MAX_STACK_DEPTH
LLC_BYTES_MAX = 1 << 40              # OBJTIER_LLC_BYTES
LLC_WAYS_MAX = 64                    # OBJTIER_LLC_WAYS
LLC_LINE_MAX = 4096                  # OBJTIER_LLC_LINE
BYTES_MAX = (1 << 63) - 1            # any byte count: sizes are int64 in tables, u64 in C
COUNT_MAX = (1 << 62)                # record counts, row limits: far beyond any real trace
INTERVAL_MS_MAX = 3_600_000          # one hour: the runtime's longest period (config.c)


def _describe(lo: float | None, hi: float | None, lo_open: bool = False) -> str:
    def show(v: float) -> str:
        return f"{v:g}" if isinstance(v, float) else str(v)
    if lo is not None and hi is not None:
        if lo_open:
            return f"greater than {show(lo)} and at most {show(hi)}"
        return f"from {show(lo)} to {show(hi)}"
    if lo is not None:
        return f"greater than {show(lo)}" if lo_open else f"at least {show(lo)}"
    if hi is not None:
        return f"at most {show(hi)}"
    return "a finite number"


def check_range(value: T, what: str, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, unit: str = "") -> T:
    """value when lo <= value <= hi (lo < value with lo_open) and finite; UsageError naming
    the valid range otherwise."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and isinstance(value, float):
        ok = math.isfinite(value)
    if ok and lo is not None:
        ok = value > lo if lo_open else value >= lo
    if ok and hi is not None:
        ok = value <= hi
    if not ok:
        suffix = f" {unit}" if unit else ""
        raise UsageError(f"{what} must be {_describe(lo, hi, lo_open)}{suffix}, got {value!r}")
    return value


def parse_int(text: str, what: str, lo: int | None = None, hi: int | None = None,
              unit: str = "") -> int:
    """A decimal integer in [lo, hi]. "1e4"-style text is accepted when it is a whole number
    (so `--rate 1e12` is reported as out of range, not as a bad spelling)."""
    raw = str(text).strip()
    try:
        value = int(raw, 10)
    except ValueError:
        try:
            number = float(raw)
        except ValueError:
            raise UsageError(f"{what} must be an integer, got {text!r}") from None
        if not math.isfinite(number) or number != int(number):
            raise UsageError(f"{what} must be an integer "
                             f"{_describe(lo, hi)}{' ' + unit if unit else ''}, got {text!r}")
        value = int(number)
    return check_range(value, what, lo, hi, unit=unit)


def parse_float(text: str, what: str, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, unit: str = "") -> float:
    """A finite decimal number in [lo, hi] ((lo, hi] with lo_open); nan and inf are refused."""
    try:
        value = float(str(text).strip())
    except ValueError:
        raise UsageError(f"{what} must be a number, got {text!r}") from None
    return check_range(value, what, lo, hi, lo_open, unit)


def parse_bytes(text: str, what: str, lo: int = 0, hi: int = BYTES_MAX) -> int:
    """A size ("4096", "128K", "1.5GiB") in [lo, hi] bytes."""
    from objtier.units import parse_size

    value = parse_size(text, what)
    if not lo <= value <= hi:
        raise UsageError(f"{what} must be from {_show_bytes(lo)} to {_show_bytes(hi)}, "
                         f"got {text!r}")
    return value


def _show_bytes(n: int) -> str:
    """Exact: "1 byte", "4 KiB", "1 TiB", else the number of bytes."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} byte" + ("" if n == 1 else "s")


def option(parse: Callable[..., T], *bounds, what: str = "the value", **named
           ) -> Callable[[str], T]:
    """An argparse type: parse(text, what, *bounds, **named) with argparse's one-line report,
    "objtier CMD: argument --X: MESSAGE" (so the message itself names no option)."""
    def convert(text: str) -> T:
        try:
            return parse(text, what, *bounds, **named)
        except UsageError as error:
            message = str(error)
            raise argparse.ArgumentTypeError(message.removeprefix("the value ")) from None
    convert.__name__ = parse.__name__.removeprefix("parse_")
    return convert


def int_option(lo: int | None = None, hi: int | None = None, unit: str = "") -> Callable:
    return option(parse_int, lo, hi, unit=unit)


def float_option(lo: float | None = None, hi: float | None = None, lo_open: bool = False,
                 unit: str = "") -> Callable:
    return option(parse_float, lo, hi, lo_open, unit=unit)


def bytes_option(lo: int = 0, hi: int = BYTES_MAX) -> Callable:
    return option(parse_bytes, lo, hi, what="size")
