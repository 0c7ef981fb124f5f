"""Where the test machine keeps its files.

Layout of the cache directory (default: <repo>/.testbed, git-ignored; override with
OBJTIER_TESTBED_DIR):

    apt/            a private apt configuration (sources, lists, cache): the host's apt is not touched
    debs/           downloaded .deb files
    kernel/<kver>/  `dpkg -x` of the kernel package (boot/vmlinuz-<kver>, lib/modules/<kver>/)
    kernel.json     which extracted kernel is current: {"version", "package", "vmlinuz", "modules"}
    initramfs-<kver>.cpio.gz
    run/            a running guest: qemu.pid, state.json, channel.sock, channel.lock,
                    console.log (guest serial console), qemu.log, spool/ (9p: job scripts and outputs)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def repo_root() -> Path:
    """The project tree the guest mounts read-write at the same absolute path."""
    env = os.environ.get("OBJTIER_TESTBED_REPO")
    if env:
        return Path(env).resolve()
    # src/objtier/testbed/paths.py -> repository root
    return Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class TestbedPaths:
    __test__ = False   # not a pytest test class
    root: Path
    run_name: str = "run"   # one running guest per run directory

    @classmethod
    def default(cls) -> "TestbedPaths":
        env = os.environ.get("OBJTIER_TESTBED_DIR")
        return cls(Path(env).resolve() if env else repo_root() / ".testbed")

    @property
    def apt(self) -> Path:
        return self.root / "apt"

    @property
    def debs(self) -> Path:
        return self.root / "debs"

    @property
    def kernels(self) -> Path:
        return self.root / "kernel"

    @property
    def kernel_json(self) -> Path:
        return self.root / "kernel.json"

    def initramfs(self, kver: str) -> Path:
        return self.root / f"initramfs-{kver}.cpio.gz"

    @property
    def run(self) -> Path:
        return self.root / self.run_name

    @property
    def pidfile(self) -> Path:
        return self.run / "qemu.pid"

    @property
    def socket(self) -> Path:
        return self.run / "channel.sock"

    @property
    def console(self) -> Path:
        return self.run / "console.log"

    @property
    def spool(self) -> Path:
        return self.run / "spool"

    @property
    def lock(self) -> Path:
        return self.run / "channel.lock"

    @property
    def qemu_log(self) -> Path:
        return self.run / "qemu.log"

    @property
    def state(self) -> Path:
        return self.run / "state.json"
