"""Level lists of `--knob KNOB=LEVELS`: "100,90,80", "100:10:-10" (start:stop:step, stop
included when the step lands on it), "50%,25%" (a trailing % is allowed everywhere), or a mix
"100,90:50:-20". Pure; the knob checks the range and the order."""

from __future__ import annotations

import math

from objtier.errors import UsageError

MAX_LEVELS = 200


def _number(text: str, where: str) -> float:
    body = text.strip().rstrip("%").strip()
    try:
        value = float(body)
    except ValueError:
        raise UsageError(f"--knob {where}: {text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise UsageError(f"--knob {where}: {text.strip()!r} is not a finite number")
    return value


def parse_levels(text: str, where: str) -> list[float]:
    """Numbers of a level list, in the order given; UsageError for anything malformed."""
    if not text.strip():
        raise UsageError(f"--knob {where}: no levels given (e.g. {where}=100,75,50)")
    out: list[float] = []
    for item in text.split(","):
        if not item.strip():
            raise UsageError(f"--knob {where}: empty level in {text!r}")
        parts = item.split(":")
        if len(parts) == 1:
            out.append(_number(parts[0], where))
            continue
        if len(parts) != 3:
            raise UsageError(f"--knob {where}: {item!r}: a range is START:STOP:STEP")
        start, stop, step = (_number(p, where) for p in parts)
        if step == 0 or (stop - start) * step < 0:
            raise UsageError(f"--knob {where}: {item!r}: the step does not lead from "
                             f"{start:g} to {stop:g}")
        count = int(math.floor((stop - start) / step + 1e-9)) + 1
        if count > MAX_LEVELS:
            raise UsageError(f"--knob {where}: {item!r} makes {count} levels (at most "
                             f"{MAX_LEVELS})")
        out.extend(round(start + i * step, 9) for i in range(count))
    if len(set(out)) != len(out):
        raise UsageError(f"--knob {where}: a level is listed twice")
    if len(out) > MAX_LEVELS:
        raise UsageError(f"--knob {where}: {len(out)} levels (at most {MAX_LEVELS})")
    return out


def parse_knob(text: str) -> tuple[str, str]:
    """"local=100,50" -> ("local", "100,50")."""
    name, sep, levels = text.partition("=")
    if not sep or not name.strip():
        raise UsageError(f"--knob {text!r}: expected KNOB=LEVELS, e.g. local=100,75,50")
    return name.strip(), levels


def parse_int_list(text: str, what: str) -> list[int]:
    """"1,2,4" -> [1, 2, 4]: positive integers."""
    values = parse_levels(text, what)
    if any(v != int(v) or v < 1 for v in values):
        raise UsageError(f"{what}: {text!r}: expected positive whole numbers")
    return [int(v) for v in values]
