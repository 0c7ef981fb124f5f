"""C-AMAT from hardware counters (`objtier camat --source pmu`).

The seed's measurement (§3.5, Table 1) per level from counting events:
  L1 accesses        loads + stores retired
  L1 active cycles   cycles with a load pending anywhere in the memory system
  L1 miss cycles     cycles with an L1D miss pending       (= L2 active cycles)
  L1 pure-miss cycles cycles stalled with an L1D miss pending and nothing else executing
  L2 accesses        L2 requests
and Intel's top-down memory-level parallelism L1D_PEND_MISS.PENDING / PENDING_CYCLES as the
miss concurrency C_M. Then C-AMAT_1 = active / accesses, kappa_1 = pure-miss / miss cycles,
pMC/N = pure-miss cycles / accesses, H/C_H = C-AMAT_1 - pMC/N (the seed's Eq. 9),
MR_1 = L2 accesses / L1 accesses, C-AMAT_2 = L1 miss cycles / L2 accesses.

Event encodings are per CPU family (raw PERF_TYPE_RAW configs: event | umask << 8 |
cmask << 24 on Intel, event | umask << 8 on AMD, the PMUv3 number on Arm). A family lacking an
event needed for a term (AMD Zen and Arm have no pending-cycle events) is refused with one line
naming the event. The events are opened as one counting group (scheduled together, so the ratios
come from the same cycles), inherited by every thread, enabled at exec and read at exit.
Per-region readings at the program's phase markers come from the runtime (pmu_regions.py).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from dataclasses import dataclass

from objtier.errors import EnvironmentProblem, UsageError

PERF_TYPE_HARDWARE = 0
PERF_TYPE_RAW = 4
PERF_COUNT_HW_CPU_CYCLES = 0
# read_format
FORMAT_TOTAL_TIME_ENABLED = 1
FORMAT_TOTAL_TIME_RUNNING = 2
# flag bits of perf_event_attr (the bitfield after read_format)
FLAG_DISABLED = 1 << 0
FLAG_INHERIT = 1 << 1
FLAG_EXCLUDE_KERNEL = 1 << 5
FLAG_EXCLUDE_HV = 1 << 6
FLAG_ENABLE_ON_EXEC = 1 << 12
ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7

SYSCALL = {"x86_64": 298, "aarch64": 241}


@dataclass(frozen=True)
class Event:
    name: str
    config: int
    type: int = PERF_TYPE_RAW


def intel(event: int, umask: int, cmask: int = 0) -> int:
    return event | umask << 8 | cmask << 24


# Terms: loads, stores, l1_active, l1_miss_cycles, l1_pure_miss_cycles, l2_accesses,
# pending (sum over cycles of L1D misses outstanding), pending_cycles (cycles with >= 1).
# Encodings from the vendors' event lists (Intel perfmon, AMD PPR, Arm PMUv3).
FAMILIES: dict[str, dict[str, Event | None]] = {
    "intel-haswell": {  # Haswell, Broadwell (the seed's Table 1)
        "loads": Event("MEM_UOPS_RETIRED.ALL_LOADS", intel(0xD0, 0x81)),
        "stores": Event("MEM_UOPS_RETIRED.ALL_STORES", intel(0xD0, 0x82)),
        "l1_active": Event("CYCLE_ACTIVITY.CYCLES_LDM_PENDING", intel(0xA3, 0x02, 2)),
        "l1_miss_cycles": Event("CYCLE_ACTIVITY.CYCLES_L1D_PENDING", intel(0xA3, 0x08, 8)),
        "l1_pure_miss_cycles": Event("CYCLE_ACTIVITY.STALLS_L1D_PENDING", intel(0xA3, 0x0C, 12)),
        "l2_accesses": Event("L2_RQSTS.REFERENCES", intel(0x24, 0xFF)),
        "pending": Event("L1D_PEND_MISS.PENDING", intel(0x48, 0x01)),
        "pending_cycles": Event("L1D_PEND_MISS.PENDING_CYCLES", intel(0x48, 0x01, 1)),
    },
    "intel-skylake": {  # Skylake through Sapphire Rapids cores: the renamed CYCLE_ACTIVITY events
        "loads": Event("MEM_INST_RETIRED.ALL_LOADS", intel(0xD0, 0x81)),
        "stores": Event("MEM_INST_RETIRED.ALL_STORES", intel(0xD0, 0x82)),
        "l1_active": Event("CYCLE_ACTIVITY.CYCLES_MEM_ANY", intel(0xA3, 0x10, 16)),
        "l1_miss_cycles": Event("CYCLE_ACTIVITY.CYCLES_L1D_MISS", intel(0xA3, 0x08, 8)),
        "l1_pure_miss_cycles": Event("CYCLE_ACTIVITY.STALLS_L1D_MISS", intel(0xA3, 0x0C, 12)),
        "l2_accesses": Event("L2_RQSTS.REFERENCES", intel(0x24, 0xFF)),
        "pending": Event("L1D_PEND_MISS.PENDING", intel(0x48, 0x01)),
        "pending_cycles": Event("L1D_PEND_MISS.PENDING_CYCLES", intel(0x48, 0x01, 1)),
    },
    "amd-zen": {  # Zen 2/3/4: accesses, misses and MAB occupancy; no stall-on-miss cycles
        "loads": Event("LS_DISPATCH.LD_DISPATCH", 0x29 | 0x01 << 8),
        "stores": Event("LS_DISPATCH.STORE_DISPATCH", 0x29 | 0x02 << 8),
        "l1_active": None,
        "l1_miss_cycles": Event("LS_ALLOC_MAB_COUNT (cmask 1)", 0x5F | 1 << 24),
        "l1_pure_miss_cycles": None,
        "l2_accesses": Event("L2_REQUEST_G1.ALL", 0x60 | 0xFF << 8),
        "pending": Event("LS_ALLOC_MAB_COUNT", 0x5F),
        "pending_cycles": Event("LS_ALLOC_MAB_COUNT (cmask 1)", 0x5F | 1 << 24),
    },
    "arm-pmuv3": {  # Neoverse and other PMUv3 cores: common events only
        "loads": Event("MEM_ACCESS_RD", 0x66),
        "stores": Event("MEM_ACCESS_WR", 0x67),
        "l1_active": None,
        "l1_miss_cycles": None,
        "l1_pure_miss_cycles": None,
        "l2_accesses": Event("L2D_CACHE", 0x16),
        "pending": None,
        "pending_cycles": None,
    },
}
MISSING_REASON = {
    "l1_active": "L1 active cycles (cycles with a load pending)",
    "l1_miss_cycles": "L1 miss cycles (cycles with an L1D miss pending)",
    "l1_pure_miss_cycles": "L1 pure-miss cycles (stalls with an L1D miss pending)",
    "pending": "outstanding L1D misses per cycle",
    "pending_cycles": "cycles with an L1D miss outstanding",
}
# Intel family-6 models by core generation (CPUID display model).
_HASWELL_MODELS = {0x3C, 0x3F, 0x45, 0x46, 0x3D, 0x47, 0x4F, 0x56}
_SKYLAKE_ON_MODELS = {0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6, 0x66, 0x6A, 0x6C, 0x7D, 0x7E,
                      0x8C, 0x8D, 0xA7, 0x8F, 0x97, 0x9A, 0xB7, 0xBA, 0xBF, 0xAA, 0xAC, 0xCF,
                      0xC6, 0xC5, 0xAD, 0xAE}


def cpu_family(cpuinfo: str, machine: str | None = None) -> str:
    """The event family of a CPU from /proc/cpuinfo text; UsageError when unknown."""
    machine = machine or platform.machine()
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    if machine == "aarch64" or "CPU implementer" in fields:
        return "arm-pmuv3"
    vendor = fields.get("vendor_id", "")
    if vendor == "AuthenticAMD" and int(fields.get("cpu family", "0")) >= 0x17:
        return "amd-zen"
    if vendor == "GenuineIntel" and fields.get("cpu family") == "6":
        model = int(fields.get("model", "0"))
        if model in _HASWELL_MODELS:
            return "intel-haswell"
        if model in _SKYLAKE_ON_MODELS:
            return "intel-skylake"
    raise UsageError(f"no C-AMAT event table for this CPU ({vendor or machine}, family "
                     f"{fields.get('cpu family', '?')}, model {fields.get('model', '?')}); "
                     "use --source sim")


def events_for(family: str) -> dict[str, Event]:
    """The family's events; EnvironmentProblem naming the first event a C-AMAT term needs
    and the family lacks."""
    table = FAMILIES[family]
    for term, event in table.items():
        if event is None:
            raise EnvironmentProblem(f"{family} has no counter for {MISSING_REASON[term]} "
                                     f"(needed for C-AMAT); use --source sim")
    return {term: event for term, event in table.items() if event is not None}


def attr_bytes(event: Event, leader: bool) -> bytes:
    """perf_event_attr for one counting event of the group (128 bytes, little-endian)."""
    flags = FLAG_INHERIT | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV
    if leader:
        flags |= FLAG_DISABLED | FLAG_ENABLE_ON_EXEC
    head = struct.pack("<IIQQQQQ", event.type, ATTR_SIZE, event.config, 0, 0,
                       FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING, flags)
    return head + bytes(ATTR_SIZE - len(head))


def _syscall_opener():
    libc = ctypes.CDLL(None, use_errno=True)
    number = SYSCALL.get(platform.machine())
    if number is None:
        raise EnvironmentProblem(f"perf_event_open: unsupported architecture {platform.machine()}")

    def open_event(attr: bytes, pid: int, cpu: int, group_fd: int, flags: int) -> int:
        buf = ctypes.create_string_buffer(attr, len(attr))
        fd = libc.syscall(number, buf, pid, cpu, group_fd, flags)
        if fd < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        return fd

    return open_event


class CounterGroup:
    """One counting group on a process (and its threads), in term order, leader first."""

    PERF_FLAG_FD_CLOEXEC = 8

    def __init__(self, events: dict[str, Event], pid: int, opener=None):
        self.terms = list(events)
        self.events = events
        self.fds: list[int] = []
        open_event = opener or _syscall_opener()
        try:
            for i, term in enumerate(self.terms):
                leader = -1 if i == 0 else self.fds[0]
                try:
                    fd = open_event(attr_bytes(events[term], i == 0), pid, -1, leader,
                                    self.PERF_FLAG_FD_CLOEXEC)
                except OSError as e:
                    raise EnvironmentProblem(_open_error(events[term], e)) from None
                self.fds.append(fd)
        except BaseException:
            self.close()
            raise

    def read(self) -> dict[str, float]:
        """Counts per term, scaled by enabled/running time when the group was multiplexed."""
        out = {}
        for term, fd in zip(self.terms, self.fds):
            data = os.read(fd, 24)
            if len(data) < 24:
                raise EnvironmentProblem(f"short read of {self.events[term].name}")
            value, enabled, running = struct.unpack("<QQQ", data)
            out[term] = float(value) * (enabled / running) if running else 0.0
        return out

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


def _open_error(event: Event, e: OSError) -> str:
    if e.errno in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV):
        return (f"this machine has no hardware counter for {event.name} "
                f"(perf_event_open: {e.strerror}); use --source sim")
    if e.errno in (errno.EACCES, errno.EPERM):
        return (f"perf_event_open({event.name}) not permitted: lower "
                "/proc/sys/kernel/perf_event_paranoid or run as root")
    return f"perf_event_open({event.name}) failed: {e.strerror}"


def camat_from_counts(c: dict[str, float]) -> dict:
    """The seed's per-level terms from one reading (term -> count)."""
    def div(a, b):
        return a / b if b else None

    n1 = c["loads"] + c["stores"]
    camat1 = div(c["l1_active"], n1)
    pmc_per_access = div(c["l1_pure_miss_cycles"], n1)
    hit_part = camat1 - pmc_per_access if camat1 is not None and pmc_per_access is not None else None
    l1 = {"level": "L1", "H": None, "C_H": None, "MR": div(c["l2_accesses"], n1), "pMR": None,
          "pAMP": None, "C_M": div(c["pending"], c["pending_cycles"]),
          "kappa": div(c["l1_pure_miss_cycles"], c["l1_miss_cycles"]), "camat": camat1,
          "amat": None}
    l2 = {"level": "L2", "H": None, "C_H": None, "MR": None, "pMR": None, "pAMP": None,
          "C_M": None, "kappa": None, "camat": div(c["l1_miss_cycles"], c["l2_accesses"]),
          "amat": None}
    return {"levels": [l1, l2],
            "derived": {"accesses": n1, "hit_part": hit_part,
                        "pure_miss_part": pmc_per_access,
                        "apc": div(n1, c["l1_active"]),
                        "miss_latency": div(c["pending"], c["l2_accesses"])}}


def read_cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def measure(command: list[str], env: dict[str, str], events: dict[str, Event], run,
            opener=None) -> tuple[int, dict[str, float]]:
    """Run command with the counting group: opened on this process, disabled, inherited by the
    child and enabled at its exec, so the counts are the program's (its threads' included,
    folded in as they exit). run(command, env) -> raw returncode."""
    group = CounterGroup(events, 0, opener)
    try:
        returncode = run(command, env)
        return returncode, group.read()
    finally:
        group.close()


def pmu_report(counts: dict[str, float], family: str, events: dict[str, Event]) -> dict:
    """The camat.json fields of a counter reading."""
    terms = camat_from_counts(counts)
    return {"source": "pmu", "levels": terms["levels"], "objects": [], "regions": [],
            "parameters": {"family": family,
                           "events": {t: {"name": e.name, "config": hex(e.config)}
                                      for t, e in events.items()}},
            "counts": [{"level": "L1", "accesses": terms["derived"]["accesses"],
                        "apc": terms["derived"]["apc"]}],
            "raw_counts": counts, "derived": terms["derived"]}
