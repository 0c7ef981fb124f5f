"""Host-side parts of the test machine: module load order, job scripts, QEMU command, CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from objtier.errors import EnvironmentProblem
from objtier.testbed import KernelImage, MachineConfig, TestbedPaths
from objtier.testbed.machine import job_script
from objtier.testbed.modules import GUEST_MODULES, load_order_from_modules_dep, resolve
from objtier.testbed.qemu import kernel_cmdline, qemu_command


def test_modules_dep_order_puts_dependencies_first():
    text = ("kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/netfs/netfs.ko\n"
            "kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko\n"
            "kernel/net/9p/9pnet.ko: kernel/fs/netfs/netfs.ko\n"
            "kernel/fs/netfs/netfs.ko:\n")
    order = load_order_from_modules_dep(text)
    assert sorted(order) == sorted(line.split(":")[0] for line in text.splitlines())
    for line in text.splitlines():
        mod, deps = line.split(":")
        assert all(order.index(d) < order.index(mod) for d in deps.split())


def test_resolve_reads_modinfo_of_the_fetched_kernel():
    image = KernelImage.load(TestbedPaths.default())
    if image is None:
        pytest.skip("guest kernel not fetched (`objtier testbed fetch`)")
    order = resolve(Path(image.modules))
    names = [name for name, _, _ in order]
    assert set(GUEST_MODULES) <= set(names)
    for name, _, depends in order:
        assert all(names.index(d) < names.index(name) for d in depends if d in names)


def test_job_script_quotes_argv_and_sets_cwd_and_env():
    script = job_script(["echo", "a b", "$HOME"], "/work dir", {"X": "1 2"})
    assert "exec echo 'a b' '$HOME'" in script
    assert "cd '/work dir' || exit 126" in script
    assert "export X='1 2'" in script
    assert script.startswith("#!/bin/sh\n")


def test_qemu_command_has_two_nodes_with_hmat(tmp_path):
    cmd = qemu_command(MachineConfig(fast_mib=512, slow_mib=256), vmlinuz=tmp_path / "vmlinuz",
                       initramfs=tmp_path / "initrd", repo=Path("/work/main"),
                       spool=tmp_path / "spool", socket=tmp_path / "s", console=tmp_path / "c")
    joined = " ".join(cmd)
    assert "-machine pc,hmat=on" in joined and "-accel tcg,thread=single" in joined
    assert "node,nodeid=0,cpus=0-1,memdev=mem0,initiator=0" in joined
    assert "node,nodeid=1,memdev=mem1,initiator=0" in joined
    assert "target=1,hierarchy=memory,data-type=access-latency,latency=300" in joined
    assert "size=512M" in joined and "size=256M" in joined and "-m 768M" in joined
    assert "path=/,security_model=none,multidevs=remap,readonly=on" in joined


def test_repo_path_with_spaces_is_refused():
    with pytest.raises(EnvironmentProblem, match="white space"):
        kernel_cmdline(MachineConfig(), Path("/a b"))


def test_cli_run_without_a_guest_is_a_one_line_error(tmp_path):
    env = {"OBJTIER_TESTBED_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "objtier", "testbed", "run", "--", "true"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 4
    assert done.stderr == "objtier testbed: no guest is running: `objtier testbed up` first\n"
    status = subprocess.run([sys.executable, "-m", "objtier", "testbed", "status"],
                            capture_output=True, text=True, env=env)
    assert status.returncode == 1 and status.stdout.startswith("not running")
