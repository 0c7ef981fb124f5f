"""The QEMU command line of the two-node test machine.

Shape (all sizes in MiB, latencies in ns, bandwidths in MB/s):
    node 0: all vCPUs + `fast_mib` of RAM                       (the DRAM tier)
    node 1: no CPU, `slow_mib` of RAM, HMAT says it is slower    (the lower tier)
`-machine hmat=on` makes QEMU publish ACPI SRAT/SLIT/HMAT tables. The guest kernel (6.10+) turns
HMAT read+write latency and bandwidth into an abstract distance per node (mm/memory-tiers.c,
`mt_perf_to_adistance`, DRAM reference taken from the CPU node), so node 1 lands in a lower
memory tier and becomes node 0's demotion target. HMAT entries must exist for both targets,
otherwise the kernel has no DRAM reference and puts node 1 into the DRAM tier.
Under TCG both nodes are equally fast in reality; the numbers only steer the guest kernel.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from objtier.errors import EnvironmentProblem

QEMU = "qemu-system-x86_64"
PORT_NAME = "objtier.cmd"  # virtio-serial port name; guest_init.sh looks it up in sysfs


@dataclass(frozen=True)
class MachineConfig:
    cpus: int = 2
    fast_mib: int = 1024
    slow_mib: int = 1024
    fast_latency_ns: int = 100
    slow_latency_ns: int = 300        # 3x DRAM latency, 1/4 bandwidth -> adistance ~ 6912, tier 54
    fast_bandwidth_mbps: int = 100_000
    slow_bandwidth_mbps: int = 25_000
    slit_remote: int = 20             # SLIT distance node0 <-> node1 (local is 10)
    extra_append: tuple[str, ...] = field(default_factory=tuple)

    def validate(self) -> None:
        if self.cpus < 1 or self.fast_mib < 256 or self.slow_mib < 128:
            raise EnvironmentProblem("test machine needs >= 1 CPU, >= 256 MiB fast and >= 128 MiB slow memory")


def find_qemu() -> str:
    path = shutil.which(QEMU)
    if not path:
        raise EnvironmentProblem(f"{QEMU} not found: apt-get install qemu-system-x86")
    return path


def kernel_cmdline(config: MachineConfig, repo: Path) -> str:
    if any(c.isspace() for c in str(repo)):
        raise EnvironmentProblem(f"the project path must not contain white space: {repo}")
    parts = [
        "console=ttyS0", "loglevel=4", "panic=-1", "rdinit=/init",
        "mitigations=off", "nokaslr", "tsc=reliable",
        # skip the IO-APIC timer check: on a loaded host the emulated CPU is too slow for it
        # and the kernel panics at boot ("IO-APIC + timer doesn't work!")
        "no_timer_check",
        f"objtier.repo={repo}",
        *config.extra_append,
    ]
    return " ".join(parts)


def qemu_command(config: MachineConfig, *, vmlinuz: Path, initramfs: Path, repo: Path,
                 spool: Path, socket: Path, console: Path) -> list[str]:
    config.validate()
    cpus_last = config.cpus - 1
    total = config.fast_mib + config.slow_mib
    cmd = [
        find_qemu(),
        # one TCG thread for all vCPUs: with thread=multi, a vCPU can still run an int3 the
        # guest kernel wrote while patching a static key after the patch is complete (QEMU's
        # cross-modifying code is not synchronized between vCPU threads); the kernel then dies
        # with "Oops: int3" and panics — seen at boot and when a test flips numa_balancing
        "-accel", "tcg,thread=single",
        "-machine", "pc,hmat=on",
        "-cpu", "max",
        "-smp", str(config.cpus),
        "-m", f"{total}M",
        "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
        "-object", f"memory-backend-ram,id=mem0,size={config.fast_mib}M",
        "-object", f"memory-backend-ram,id=mem1,size={config.slow_mib}M",
        "-numa", f"node,nodeid=0,cpus=0-{cpus_last},memdev=mem0,initiator=0",
        "-numa", "node,nodeid=1,memdev=mem1,initiator=0",
        "-numa", f"dist,src=0,dst=1,val={config.slit_remote}",
    ]
    for target, lat, bw in ((0, config.fast_latency_ns, config.fast_bandwidth_mbps),
                            (1, config.slow_latency_ns, config.slow_bandwidth_mbps)):
        base = f"hmat-lb,initiator=0,target={target},hierarchy=memory"
        cmd += ["-numa", f"{base},data-type=access-latency,latency={lat}",
                "-numa", f"{base},data-type=access-bandwidth,bandwidth={bw}M"]
    shares = (("hostroot", Path("/"), True), ("repo", repo, False), ("spool", spool, False))
    for tag, path, readonly in shares:
        fsdev = f"local,id=fs_{tag},path={path},security_model=none,multidevs=remap"
        if readonly:
            fsdev += ",readonly=on"
        cmd += ["-fsdev", fsdev, "-device", f"virtio-9p-pci,fsdev=fs_{tag},mount_tag={tag}"]
    cmd += [
        "-device", "virtio-serial-pci,id=vser0",
        "-chardev", f"socket,id=cmd0,path={socket},server=on,wait=off",
        "-device", f"virtserialport,bus=vser0.0,chardev=cmd0,name={PORT_NAME}",
        "-chardev", f"file,id=con0,path={console}",
        "-serial", "chardev:con0",
        "-kernel", str(vmlinuz),
        "-initrd", str(initramfs),
        "-append", kernel_cmdline(config, repo),
    ]
    return cmd
