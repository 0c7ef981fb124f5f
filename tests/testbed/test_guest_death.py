"""A guest whose kernel dies: the next command says why in one line, not "no guest is running".

Boots its own small guest (its own run directory), crashes its kernel with sysrq-c (panic=-1 and
-no-reboot make QEMU exit) and checks what the host side reports."""

from __future__ import annotations

import shutil

import pytest

from objtier.errors import EnvironmentProblem
from objtier.testbed import MachineConfig

from .guest_helpers import prepared_testbed


@pytest.mark.guest
def test_a_guest_kernel_panic_is_named_by_the_next_command():
    tb = prepared_testbed("run-panic", MachineConfig(fast_mib=256, slow_mib=128))
    tb.start()
    try:
        try:
            rc, _, _ = tb.run("echo 1 > /proc/sys/kernel/sysrq && echo c > /proc/sysrq-trigger",
                              timeout=120)
        except EnvironmentProblem as error:      # the guest died before the job could say DONE
            assert "the guest stopped during" in str(error) and "Kernel panic" in str(error), error
        else:
            pytest.fail(f"sysrq-c returned {rc} and the guest lived on")
        assert tb.exit_status() is not None
        with pytest.raises(EnvironmentProblem,
                           match=r"^the guest is gone \(QEMU exit status \d+\): "
                                 r"console\.log: \[ *[0-9.]+\] Kernel panic"):
            tb.run(["true"])
        console = tb.paths.console.read_text(errors="replace")
        assert "sysrq" in console.lower()    # the trigger, some 30-60 lines above the panic's end
        assert console.rstrip().endswith(tb.console_tail(5).rstrip())
    finally:   # a guest that survived must not run on beside the rest of the suite
        tb.stop()
        shutil.rmtree(tb.paths.run, ignore_errors=True)
