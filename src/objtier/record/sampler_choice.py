"""Which access sampler a recording uses, and why.

perf  — PEBS (Intel) or IBS (AMD) through perf_event_open when the CPU exposes them; on a
        machine without a hardware PMU the runtime's perf sampler uses software page-fault
        events (minor and major faults with their data addresses), which needs only
        perf_event_open to be permitted.
fault — user-space hint faults (PROT_NONE scan windows), works anywhere.
trace — exact load/store counts from compiler instrumentation: the program must be built with
        `objtier cc` / `objtier c++` (docs/exact.md).
none  — allocations only.
"""

from __future__ import annotations

import os
from pathlib import Path

from objtier.errors import EnvironmentProblem, UsageError

SAMPLERS = ("auto", "perf", "fault", "trace", "none")
EVENT_SOURCES = Path("/sys/bus/event_source/devices")


def hardware_memory_sampling(root: Path = EVENT_SOURCES) -> str | None:
    """'pebs' or 'ibs' when the CPU offers precise memory sampling, else None."""
    if (root / "ibs_op").exists():
        return "ibs"
    if (root / "cpu" / "events" / "mem-loads").exists():
        return "pebs"
    return None


def perf_permitted() -> tuple[bool, str]:
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid")
    if not paranoid.exists():
        return False, "this kernel has no perf_event_open (no /proc/sys/kernel/perf_event_paranoid)"
    level = int(paranoid.read_text().strip() or "2")
    if os.geteuid() != 0 and level > 2:
        return False, f"perf_event_paranoid is {level}; run as root or lower it to 2"
    return True, ""


def choose_sampler(requested: str, root: Path = EVENT_SOURCES) -> tuple[str, str]:
    """Return (sampler for the runtime, reason shown to the user)."""
    if requested not in SAMPLERS:
        raise UsageError(f"unknown sampler '{requested}'; choose from {', '.join(SAMPLERS)}")
    hardware = hardware_memory_sampling(root)
    permitted, why_not = perf_permitted()
    if requested == "trace":
        return "trace", "exact counts from objtier cc instrumentation (--sampler trace)"
    if requested == "none":
        return "none", "allocations only, no access sampling (--sampler none)"
    if requested == "fault":
        return "fault", "user-space hint faults on PROT_NONE scan windows (--sampler fault)"
    if requested == "perf":
        if not permitted:
            raise EnvironmentProblem(f"the perf sampler is unavailable: {why_not}")
        if hardware:
            return "perf", f"{hardware.upper()} memory sampling through perf_event_open"
        return "perf", ("no hardware PMU for PEBS/IBS here; perf samples software page-fault "
                        "events (minor and major faults with data addresses)")
    if hardware and permitted:
        return "perf", f"{hardware.upper()} memory sampling through perf_event_open"
    reason = "no PEBS/IBS on this CPU" if not hardware else why_not
    return "fault", f"{reason}; using user-space hint faults (PROT_NONE scan windows)"
