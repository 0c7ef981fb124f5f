"""The two-node QEMU test machine (node 0: CPUs + DRAM, node 1: CPU-less lower memory tier).

See docs/testbed.md. Public API: Testbed, GuestResult, GuestTimeout, MachineConfig,
TestbedPaths, fetch_kernel.
"""

from objtier.testbed.fetch import KernelImage, fetch_kernel
from objtier.testbed.machine import GuestResult, GuestTimeout, Testbed
from objtier.testbed.paths import TestbedPaths
from objtier.testbed.qemu import MachineConfig

__all__ = ["GuestResult", "GuestTimeout", "KernelImage", "MachineConfig", "Testbed",
           "TestbedPaths", "fetch_kernel"]
