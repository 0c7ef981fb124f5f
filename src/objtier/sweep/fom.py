"""The figure of merit of one run: the project's `FOM name=value unit time=s` line (default),
the first capture group of --fom REGEX on the program's stdout (the last matching line wins),
or with --time the run's wall time [s]. Pure."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from objtier.errors import UsageError


@dataclass(frozen=True)
class FomSource:
    kind: str                       # "line" | "regex" | "time"
    pattern: re.Pattern | None = None
    higher_is_better: bool = True

    def describe(self) -> str:
        if self.kind == "time":
            return "wall time [s]"
        if self.kind == "regex":
            return f"--fom {self.pattern.pattern!r}"
        return "the program's FOM line"


def make_source(regex: str | None, time: bool, higher: bool | None) -> FomSource:
    """From the command line; UsageError for a bad or group-less regex."""
    if regex is not None and time:
        raise UsageError("--fom and --time exclude each other")
    if time:
        return FomSource("time", None, False if higher is None else higher)
    if regex is None:
        return FomSource("line", None, True if higher is None else higher)
    try:
        pattern = re.compile(regex, re.MULTILINE)
    except re.error as error:
        raise UsageError(f"--fom {regex!r}: not a regular expression ({error})") from None
    if pattern.groups < 1:
        raise UsageError(f"--fom {regex!r}: needs one capture group around the number, "
                         f"e.g. 'rate: ([0-9.]+)'")
    return FomSource("regex", pattern, True if higher is None else higher)


def extract(source: FomSource, stdout: str, wall_s: float) -> tuple[float | None, str | None,
                                                                    str | None]:
    """(value, unit, problem): the FoM of one run, or None and why not."""
    if source.kind == "time":
        return wall_s, "s", None
    if source.kind == "line":
        from objtier.workloads import FomError, parse_fom

        try:
            fom = parse_fom(stdout)
        except FomError as error:
            return None, None, str(error)
        return fom.value, fom.unit, None
    matches = list(source.pattern.finditer(stdout))
    if not matches:
        return None, None, f"no match of --fom {source.pattern.pattern!r} in the output"
    text = matches[-1].group(1)
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None, None, f"--fom matched {text!r}, which is not a number"
    if not math.isfinite(value):
        return None, None, f"--fom matched {text!r}, which is not finite"
    return value, None, None
