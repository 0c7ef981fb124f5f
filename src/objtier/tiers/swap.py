"""The swap tier: local memory limited by a memory cgroup, with swap (zram or a device) behind it.

This is the "Xmem(X%)" set-up: a program whose footprint exceeds its cgroup's limit has its
coldest pages reclaimed to swap, and each later touch of such a page is a major fault served by
the slow tier. Fast memory = pages resident under the limit; slow memory = swap.

Everything created here (the cgroup, the zram device, swapon) is registered with a Restorer and
undone on exit, error, Ctrl-C or SIGTERM. Works with cgroup v1 (/sys/fs/cgroup/memory) and v2.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from objtier.errors import EnvironmentProblem
from objtier.restore import Restorer

CGROUP_V1 = Path("/sys/fs/cgroup/memory")
CGROUP_V2 = Path("/sys/fs/cgroup")
ZRAM_CONTROL = Path("/sys/class/zram-control")
THP_SYSFS = Path("/sys/kernel/mm/transparent_hugepage")


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise EnvironmentProblem(f"{what} needs root (it creates a memory cgroup and swap)")


@dataclass
class MemoryCgroup:
    path: Path
    version: int  # 1 or 2

    @classmethod
    def create(cls, name: str, limit_bytes: int, restorer: Restorer,
               swappiness: int | None = None) -> "MemoryCgroup":
        if (CGROUP_V1 / "memory.limit_in_bytes").exists():
            cgroup = cls(CGROUP_V1 / name, 1)
        elif (CGROUP_V2 / "cgroup.controllers").exists() and \
                "memory" in (CGROUP_V2 / "cgroup.controllers").read_text().split():
            cgroup = cls(CGROUP_V2 / name, 2)
        else:
            raise EnvironmentProblem("no memory cgroup controller (neither cgroup v1 "
                                     "/sys/fs/cgroup/memory nor v2 with memory enabled)")
        try:
            cgroup.path.mkdir()
        except FileExistsError:
            raise EnvironmentProblem(f"cgroup {cgroup.path} already exists; remove it or wait "
                                     f"for the other experiment to end") from None
        except OSError as error:
            raise EnvironmentProblem(f"cannot create cgroup {cgroup.path}: {error.strerror}") \
                from None
        restorer.push(f"cgroup {cgroup.path}", cgroup.remove)
        if cgroup.version == 1:
            cgroup._write("memory.limit_in_bytes", limit_bytes)
            if swappiness is not None:
                cgroup._write("memory.swappiness", swappiness)
        else:
            cgroup._write("memory.max", limit_bytes)
            cgroup._write("memory.swap.max", "max")
        return cgroup

    def _write(self, name: str, value) -> None:
        (self.path / name).write_text(f"{value}\n")

    def read(self, name: str) -> str:
        return (self.path / name).read_text()

    def add_self(self) -> None:
        """Move the calling process into the cgroup (used in the child before exec)."""
        (self.path / "cgroup.procs").write_text(f"{os.getpid()}\n")

    @property
    def limit_bytes(self) -> int:
        text = self.read("memory.limit_in_bytes" if self.version == 1 else "memory.max").strip()
        return int(text) if text != "max" else 1 << 62

    def peak_bytes(self) -> int | None:
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        return int(self.read(name)) if (self.path / name).exists() else None

    def reset_peak(self) -> None:
        if self.version == 1:
            self._write("memory.max_usage_in_bytes", 0)

    def stat(self) -> dict[str, int]:
        out = {}
        for line in self.read("memory.stat").splitlines():
            key, _, value = line.partition(" ")
            if value.strip().lstrip("-").isdigit():
                out[key] = int(value)
        return out

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in self.read("cgroup.procs").split()]
        except FileNotFoundError:
            return []

    def remove(self) -> None:
        """Kill what is left inside, then remove the cgroup directory."""
        if not self.path.exists():
            return
        for _ in range(50):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.05)
        self.path.rmdir()


class ZramSwap:
    """A zram device created for the experiment (hot_add), used as swap, removed after."""

    def __init__(self, size_bytes: int, restorer: Restorer, algorithm: str = "lz4",
                 priority: int = 100):
        if not ZRAM_CONTROL.exists():
            subprocess.run(["modprobe", "zram", "num_devices=0"], capture_output=True)
        if not ZRAM_CONTROL.exists():
            raise EnvironmentProblem("no zram support (module zram not available); "
                                     "use --swap DEVICE with an existing swap device")
        self.index = int((ZRAM_CONTROL / "hot_add").read_text())
        self.device = Path(f"/dev/zram{self.index}")
        self.sysfs = Path(f"/sys/block/zram{self.index}")
        restorer.push(f"zram device {self.device}", self.remove)
        algorithms = (self.sysfs / "comp_algorithm").read_text().replace("[", "").replace("]", "")
        if algorithm in algorithms.split():
            (self.sysfs / "comp_algorithm").write_text(algorithm)
        (self.sysfs / "disksize").write_text(str(size_bytes))
        write_swap_header(str(self.device), size_bytes)
        # set before swapon: a signal that lands while swapon runs must still lead to swapoff
        # (swapoff of a device that is not on fails quietly)
        self.swapped_on = True
        swapon(str(self.device), priority)

    def stats(self) -> dict[str, int]:
        fields = (self.sysfs / "mm_stat").read_text().split()
        return {"orig_data_size": int(fields[0]), "compr_data_size": int(fields[1]),
                "mem_used_total": int(fields[2])}

    def remove(self) -> None:
        if getattr(self, "swapped_on", False):
            swapoff(str(self.device))
            self.swapped_on = False
        if self.sysfs.exists():
            (self.sysfs / "reset").write_text("1")
            (ZRAM_CONTROL / "hot_remove").write_text(str(self.index))


SWAP_FLAG_PREFER = 0x8000     # swapon(2): the priority is in the low 15 bits


def write_swap_header(device: str, size_bytes: int) -> None:
    """What mkswap(8) writes on a new, zero-filled device, without starting a process: the
    first page holds the version-1 swap header (union swap_header in include/linux/swap.h:
    1024 boot bytes, version 1, last page, no bad pages, a UUID, no label) and ends with the
    "SWAPSPACE2" magic."""
    page = os.sysconf("SC_PAGE_SIZE")
    last_page = size_bytes // page - 1
    if last_page < 10:
        raise EnvironmentProblem(f"{device} is too small for swap ({size_bytes} bytes)")
    header = bytearray(page)
    header[1024:1036] = struct.pack("<III", 1, last_page, 0)
    uuid = bytearray(os.urandom(16))   # a version-4 UUID (module uuid costs 4 ms to import)
    uuid[6], uuid[8] = (uuid[6] & 0x0F) | 0x40, (uuid[8] & 0x3F) | 0x80
    header[1036:1052] = uuid
    header[page - 10:] = b"SWAPSPACE2"
    fd = os.open(device, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.pwrite(fd, bytes(header), 0)
        os.fsync(fd)
    finally:
        os.close(fd)


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def swapon(device: str, priority: int) -> None:
    """swapon(2) of device at priority (as `swapon -p`), without starting a swapon process;
    EnvironmentProblem when the kernel refuses."""
    import ctypes

    if _libc().swapon(os.fsencode(device), SWAP_FLAG_PREFER | (priority & 0x7FFF)) != 0:
        raise EnvironmentProblem(f"swapon {device} failed: {os.strerror(ctypes.get_errno())}")


def swapoff(device: str) -> bool:
    """swapoff(2) of device; False when it fails (e.g. the device is not swapped on)."""
    return _libc().swapoff(os.fsencode(device)) == 0


def remove_zram(index: int) -> None:
    """Swap off and remove zram device `index` (a device another process may have created:
    the pageout sampler's shared device, objtier.record.sampler_swap)."""
    device, sysfs = f"/dev/zram{index}", Path(f"/sys/block/zram{index}")
    swapoff(device)  # fails quietly when not on
    if sysfs.exists():
        (sysfs / "reset").write_text("1")
        (ZRAM_CONTROL / "hot_remove").write_text(str(index))


class DeviceSwap:
    """An existing swap device or file; swapped on for the experiment if it was not already."""

    def __init__(self, device: str, restorer: Restorer):
        self.device = device
        active = [line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:]]
        if os.path.realpath(device) in [os.path.realpath(a) for a in active]:
            return
        if not Path(device).exists():
            raise EnvironmentProblem(f"swap device {device} does not exist")
        _run(["swapon", device])
        restorer.push(f"swapon {device}", lambda: _run(["swapoff", device]))


def large_folio_size_problem(size_bytes: int) -> str | None:
    """Why size_bytes cannot be a large-folio size (a power of two of at least 8 KiB), or None."""
    if size_bytes < 8192 or size_bytes & (size_bytes - 1):
        return f"{size_bytes} bytes is not a power of two of at least 8 KiB"
    return None


class LargeFolios:
    """One large-folio size enabled for madvised anonymous memory while the experiment runs:
    transparent_hugepage/hugepages-<KiB>kB/enabled set to "madvise" when it was "never",
    restored after. Only memory a program advises MADV_HUGEPAGE (the runtime does, for the
    objects a plan names) gets such folios, so an arm without the advice keeps base pages;
    the setting is the same for every arm. Kernels before 6.8 have no per-size setting:
    EnvironmentProblem. On a synchronous swap device (zram), kernels from 6.13 on also swap
    such folios back in whole."""

    def __init__(self, size_bytes: int, restorer: Restorer):
        problem = large_folio_size_problem(size_bytes)
        if problem:
            raise EnvironmentProblem(f"large folio size: {problem}")
        self.path = THP_SYSFS / f"hugepages-{size_bytes >> 10}kB" / "enabled"
        if not self.path.exists():
            sizes = sorted(int(p.name[len("hugepages-"):-2])
                           for p in THP_SYSFS.glob("hugepages-*kB") if (p / "enabled").exists())
            raise EnvironmentProblem(
                f"this kernel has no {size_bytes >> 10} KiB large folios ({self.path} missing; "
                f"sizes offered: {', '.join(f'{k}K' for k in sizes) or 'none, kernel < 6.8'}); "
                f"use --large-folio off")
        text = self.path.read_text()
        chosen = text[text.index("[") + 1:text.index("]")] if "[" in text else None
        if chosen == "never":
            restorer.push(f"{self.path} = never", lambda: self.path.write_text("never"))
            self.path.write_text("madvise")


def _run(command: list[str]) -> None:
    if not shutil.which(command[0]):
        raise EnvironmentProblem(f"{command[0]} is not installed")
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        message = (run.stderr or run.stdout).strip().splitlines()
        raise EnvironmentProblem(f"{' '.join(command)} failed: "
                                 f"{message[-1] if message else run.returncode}")


def zswap_pages_since_boot() -> int:
    """Pages zswap stored or loaded since boot (/proc/vmstat zswpout + zswpin; 0 on kernels
    without the counters). Once zswap has been enabled, the kernel swaps large folios back in
    as base pages until the next boot, whatever zswap's setting now (mm/memory.c,
    alloc_swap_folio: "if (!zswap_never_enabled()) goto fallback", kernel 6.18): a count above
    0 means that has happened."""
    return sum(_read_vmstat(("zswpout", "zswpin")).values())


def large_folio_swapin_note() -> str | None:
    """One line for a run that enables large folios when the kernel will not swap them back in
    whole (zswap used since boot), else None."""
    used = zswap_pages_since_boot()
    if not used:
        return None
    return (f"zswap has been used since boot ({used} pages): this kernel swaps large folios "
            f"back in as base pages until the next boot")


def read_vmstat_swap() -> dict[str, int]:
    return _read_vmstat(("pswpin", "pswpout", "pgmajfault", "pgsteal_direct",
                         "pgsteal_kswapd"))


def _read_vmstat(keys: tuple[str, ...]) -> dict[str, int]:
    """The /proc/vmstat counters named in keys that this kernel has."""
    out = {}
    for line in Path("/proc/vmstat").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key in keys:
            out[key] = int(value)
    return out


class SwapTier:
    """Fast tier = memory under a cgroup limit; slow tier = swap. A context manager.

        with SwapTier(local_bytes, swap="zram") as tier:
            result = tier.run(command, env)
    """

    def __init__(self, local_bytes: int, swap: str = "zram", swap_bytes: int | None = None,
                 name: str | None = None, swappiness: int | None = None,
                 large_folio_bytes: int | None = None):
        self.local_bytes = local_bytes
        self.large_folio_bytes = large_folio_bytes  # None: leave the machine's setting
        self.swap = swap
        self.swap_bytes = swap_bytes
        self.name = name or f"objtier-{os.getpid()}"
        self.swappiness = swappiness
        self.restorer = Restorer()
        self.cgroup: MemoryCgroup | None = None
        self.swap_device: ZramSwap | DeviceSwap | None = None

    def __enter__(self) -> "SwapTier":
        require_root("the swap tier")
        self.restorer.__enter__()
        try:
            size = self.swap_bytes or max(self.local_bytes * 4, 256 << 20)
            if self.swap == "zram":
                self.swap_device = ZramSwap(size, self.restorer)
            else:
                self.swap_device = DeviceSwap(self.swap, self.restorer)
            self.cgroup = MemoryCgroup.create(self.name, self.local_bytes, self.restorer,
                                              self.swappiness)
            if self.large_folio_bytes:
                LargeFolios(self.large_folio_bytes, self.restorer)
        except BaseException:
            self.restorer.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.restorer.__exit__(*exc)

    def preexec(self) -> None:
        """For subprocess.Popen(preexec_fn=...): join the cgroup before exec."""
        assert self.cgroup is not None
        self.cgroup.add_self()
