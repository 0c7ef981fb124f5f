"""Which access sampler a recording uses, and why.

perf  — PEBS (Intel) or IBS (AMD) through perf_event_open when the CPU exposes them; on a
        machine without a hardware PMU the runtime's perf sampler uses software page-fault
        events (minor and major faults with their data addresses), which needs only
        perf_event_open to be permitted.
pageout — sampled pages pushed to swap (MADV_PAGEOUT) and their next touch seen as a major
        page fault through a perf software event: the kernel services every access, system
        calls included, so the program cannot tell. Needs perf_event_open and an active swap
        device; `objtier record` adds a temporary zram swap device when it runs as root on a
        machine without swap (removed at exit).
wp    — userfaultfd asynchronous write-protect with PAGEMAP_SCAN (Linux 6.7+): the kernel
        resolves every write to a watched page itself; sees first writes only (opt-in).
fault — user-space hint faults (PROT_NONE scan windows), works anywhere; precise, but the
        program can see the protections it changes (opt-in: docs/runtime.md lists the hazards).
trace — exact load/store counts from compiler instrumentation: the program must be built with
        `objtier cc` / `objtier c++` (docs/exact.md).
none  — allocations only.
"""

from __future__ import annotations

import os
from pathlib import Path

from objtier.errors import EnvironmentProblem, UsageError

SAMPLERS = ("auto", "perf", "pageout", "wp", "fault", "trace", "damon", "none")
EVENT_SOURCES = Path("/sys/bus/event_source/devices")
PROC_SWAPS = Path("/proc/swaps")
ZRAM_CONTROL = Path("/sys/class/zram-control")


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


def swap_active(swaps: Path = PROC_SWAPS) -> bool:
    """True when /proc/swaps lists a swap device or file with free space."""
    try:
        lines = swaps.read_text().splitlines()[1:]
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and fields[2].isdigit() and fields[3].isdigit() \
                and int(fields[2]) > int(fields[3]):
            return True
    return False


def temporary_zram_possible() -> bool:
    """True when this process may add a zram swap device for a recording (root, zram)."""
    if os.geteuid() != 0:
        return False
    if ZRAM_CONTROL.exists():
        return True
    modules = Path("/lib/modules") / os.uname().release  # zram as a module, not loaded yet
    return modules.exists() and any(modules.rglob("zram.ko*"))


def userfaultfd_wp_problem() -> str | None:
    """Why the wp sampler cannot run here, or None."""
    release = os.uname().release
    numbers = [int(part) for part in release.split("-")[0].split(".")[:2] if part.isdigit()]
    if len(numbers) == 2 and tuple(numbers) < (6, 7):
        return f"kernel {release} has no asynchronous userfaultfd write-protect (needs 6.7)"
    knob = Path("/proc/sys/vm/unprivileged_userfaultfd")
    if os.geteuid() != 0 and knob.exists() and knob.read_text().strip() != "1":
        return "vm.unprivileged_userfaultfd is 0; run as root"
    if not Path("/dev/userfaultfd").exists() and not knob.exists():
        return "this kernel has no userfaultfd"
    return None


def needs_temporary_swap(sampler: str, swaps: Path = PROC_SWAPS) -> bool:
    """True when `sampler` can only sample with a swap device this machine does not have."""
    return sampler == "pageout" and not swap_active(swaps)


PAGEOUT_WHY = ("sampled pages pushed to swap and their next touch seen as a major fault: the "
               "kernel services every access, system calls included")


def choose_sampler(requested: str, root: Path = EVENT_SOURCES,
                   transparent_default: bool = False,
                   swaps: Path = PROC_SWAPS) -> tuple[str, str]:
    """Return (sampler for the runtime, reason shown to the user). With transparent_default
    (`objtier record`), auto never picks a sampler the program could notice: PEBS/IBS, else
    pageout (with a temporary zram swap device when there is no swap, as root), else perf
    software page faults; without it auto keeps perf with PEBS/IBS, else fault."""
    if requested not in SAMPLERS:
        raise UsageError(f"unknown sampler '{requested}'; choose from {', '.join(SAMPLERS)}")
    hardware = hardware_memory_sampling(root)
    permitted, why_not = perf_permitted()
    if requested == "trace":
        return "trace", "exact counts from objtier cc instrumentation (--sampler trace)"
    if requested == "none":
        return "none", "allocations only, no access sampling (--sampler none)"
    if requested == "damon":   # the runtime tracks allocations; DAMON samples (record/damon_source)
        return "none", ("DAMON monitors the program's address space from the kernel (vaddr): "
                        "each region's access frequency, one page checked per region every "
                        "5 ms; estimated (--sampler damon)")
    if requested == "fault":
        return "fault", "user-space hint faults on PROT_NONE scan windows (--sampler fault)"
    if requested == "wp":
        problem = userfaultfd_wp_problem()
        if problem:
            raise EnvironmentProblem(f"the wp sampler is unavailable: {problem}")
        return "wp", ("first writes through userfaultfd asynchronous write-protect: the kernel "
                      "services every write; reads are not seen (--sampler wp)")
    if requested == "pageout":
        if not permitted:
            raise EnvironmentProblem(f"the pageout sampler is unavailable: {why_not}")
        if swap_active(swaps):
            return "pageout", PAGEOUT_WHY + " (--sampler pageout)"
        if not temporary_zram_possible():
            raise EnvironmentProblem(
                "the pageout sampler needs an active swap device and there is none; add swap "
                "(e.g. a zram device) or run as root so that record adds a temporary zram "
                "device")
        return "pageout", (PAGEOUT_WHY + "; no swap is active, so a temporary zram swap "
                           "device is added for the recording and removed after "
                           "(--sampler pageout)")
    if requested == "perf":
        if not permitted:
            raise EnvironmentProblem(f"the perf sampler is unavailable: {why_not}")
        if hardware:
            return "perf", f"{hardware.upper()} memory sampling through perf_event_open"
        return "perf", ("no hardware PMU for PEBS/IBS here; perf samples software page-fault "
                        "events (minor and major faults with data addresses)")
    if hardware and permitted:
        return "perf", f"{hardware.upper()} memory sampling through perf_event_open"
    if transparent_default:
        return _transparent_auto(permitted, why_not, swaps)
    reason = "no PEBS/IBS on this CPU" if not hardware else why_not
    return "fault", f"{reason}; using user-space hint faults (PROT_NONE scan windows)"


def _transparent_auto(permitted: bool, why_not: str, swaps: Path) -> tuple[str, str]:
    """auto for `objtier record` on a machine without PEBS/IBS."""
    if not permitted:
        raise EnvironmentProblem(
            f"no sampler that leaves the program unchanged is available ({why_not}); pass "
            "--sampler fault to sample with PROT_NONE windows (see its hazards in "
            "docs/runtime.md) or --sampler none")
    if swap_active(swaps):
        return "pageout", f"no PEBS/IBS on this CPU; {PAGEOUT_WHY}"
    if temporary_zram_possible():
        return "pageout", (f"no PEBS/IBS on this CPU; {PAGEOUT_WHY}; no swap is active, so a "
                           "temporary zram swap device is added for the recording and removed "
                           "after (--sampler perf or fault to avoid it)")
    return "perf", ("no PEBS/IBS, no swap and no root for a temporary zram device: software "
                    "page-fault events (first touches only, coarse); --sampler fault samples "
                    "accesses but changes page protections (docs/runtime.md)")
