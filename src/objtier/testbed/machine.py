"""The test machine: boot, run commands, stop.

    with Testbed() as tb:                 # fetches the kernel and builds the initramfs if needed
        rc, out, err = tb.run(["numactl", "-H"])

A Testbed owns one run directory (<cache>/run by default). `start()` launches QEMU, records
qemu.pid and state.json, and waits for the guest's READY line. `attach()` instead uses a guest
started earlier (by `objtier testbed up`) in the same run directory. `stop()` powers the guest
off (HALT, then SIGTERM, then SIGKILL) and removes the run directory's state.

Process ownership: `start(detached=False)` (the Python API, tests) gives QEMU PR_SET_PDEATHSIG
SIGKILL, so QEMU dies with the Python process even on SIGKILL; `detached=True` (`testbed up`)
puts QEMU into its own session to outlive the command. A failure or Ctrl-C during start() always
stops the half-started guest.

Commands run in the guest as root in `chroot /host`: the host's root file system (read-only)
with the project tree read-write at its host path, the guest's own /proc, /sys, /dev, /tmp and
/run. Each job is a shell script in the spool (a 9p share); its stdout and stderr go to separate
spool files that the host reads when the guest reports DONE.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from objtier.errors import EnvironmentProblem, ObjtierError
from objtier.restore import die_with_parent
from objtier.testbed.channel import Channel, ChannelClosed
from objtier.testbed.fetch import KernelImage, fetch_kernel
from objtier.testbed.initramfs import build_initramfs
from objtier.testbed.paths import TestbedPaths, repo_root
from objtier.testbed.qemu import MachineConfig, qemu_command

GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BOOT_TIMEOUT_S = 300.0      # TCG boot takes ~10 s on 2 host cores; generous for loaded CI hosts
# console lines that say why a guest kernel stopped; the first one found is reported
CONSOLE_CAUSES = ("Kernel panic", "Oops", "BUG:", "Out of memory", "invoked oom-killer",
                  "Attempted to kill init", "objtier-init: powering off")


class GuestTimeout(ObjtierError):
    """A guest command ran longer than its timeout and was killed."""

    exit_code = 124


@dataclass(frozen=True)
class GuestResult:
    returncode: int   # exit status; 128+N when the job was killed by signal N
    stdout: str
    stderr: str

    def __iter__(self):   # rc, out, err = tb.run(...)
        return iter((self.returncode, self.stdout, self.stderr))


def _pid_is_qemu(pid: int, sock: Path) -> bool:
    """True when `pid` is alive and is the QEMU serving `sock` (guards against pid reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return False
    return any(str(sock).encode() in arg for arg in cmdline)


def job_script(cmd: list[str] | str, cwd: str, env: dict[str, str]) -> str:
    """The /bin/sh script a job runs in the guest. A list is exec'd; a string is shell code."""
    lines = ["#!/bin/sh", f"export PATH={GUEST_PATH} HOME=/root LANG=C.UTF-8 TERM=dumb"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines.append(f"cd {shlex.quote(cwd)} || exit 126")
    lines.append(cmd if isinstance(cmd, str) else "exec " + shlex.join(cmd))
    return "\n".join(lines) + "\n"


class Testbed:
    """One two-node guest. See the module docstring."""

    __test__ = False   # not a pytest test class

    _ids = itertools.count()

    def __init__(self, paths: TestbedPaths | None = None, config: MachineConfig | None = None,
                 log=None):
        self.paths = paths or TestbedPaths.default()
        self.config = config or MachineConfig()
        self.repo = repo_root()
        self.log = log or (lambda msg: None)
        self._proc: subprocess.Popen | None = None
        self.boot_seconds: float | None = None

    # ---- preparation -------------------------------------------------------------------------

    def prepare(self, fetch: bool = True) -> tuple[KernelImage, Path]:
        """The kernel image (fetched when missing and `fetch`) and an up-to-date initramfs."""
        image = KernelImage.load(self.paths)
        if image is None:
            if not fetch:
                raise EnvironmentProblem("no guest kernel yet: run `objtier testbed fetch`")
            image = fetch_kernel(self.paths, log=self.log)
        initramfs = build_initramfs(image, self.paths.initramfs(image.version))
        return image, initramfs

    # ---- lifecycle ---------------------------------------------------------------------------

    def pid(self) -> int | None:
        """PID of this run directory's QEMU when it is running, else None."""
        try:
            pid = int(self.paths.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _pid_is_qemu(pid, self.paths.socket) else None

    def is_running(self) -> bool:
        return self.pid() is not None

    def start(self, detached: bool = False, timeout: float = BOOT_TIMEOUT_S) -> "Testbed":
        if self.is_running():
            raise EnvironmentProblem(f"a guest is already running (pid {self.pid()}); "
                                     "`objtier testbed down` first")
        image, initramfs = self.prepare()
        self._clean_run_dir()
        run = self.paths.run
        self.paths.spool.mkdir(parents=True, exist_ok=True)
        cmd = qemu_command(self.config, vmlinuz=Path(image.vmlinuz), initramfs=initramfs,
                           repo=self.repo, spool=self.paths.spool, socket=self.paths.socket,
                           console=self.paths.console)
        self.log(f"testbed: booting {image.version} under TCG ({self.config.cpus} vCPUs, "
                 f"node0 {self.config.fast_mib} MiB + node1 {self.config.slow_mib} MiB)")
        t0 = time.monotonic()
        with open(self.paths.qemu_log, "wb") as qlog:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=qlog, stderr=qlog, cwd=run,
                start_new_session=detached,
                preexec_fn=None if detached else die_with_parent(signal.SIGKILL))
        self.paths.pidfile.write_text(f"{self._proc.pid}\n")
        try:
            uptime = self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        self.boot_seconds = time.monotonic() - t0
        state = {"pid": self._proc.pid, "kernel": image.version, "package": image.package,
                 "started": time.time(), "boot_seconds": round(self.boot_seconds, 2),
                 "guest_uptime_at_ready": uptime, "repo": str(self.repo),
                 "config": asdict(self.config), "qemu": cmd}
        self.paths.state.write_text(json.dumps(state, indent=1) + "\n")
        self.log(f"testbed: guest ready in {self.boot_seconds:.1f} s (guest uptime {uptime} s)")
        return self

    def attach(self) -> "Testbed":
        """Use the guest already running in this run directory."""
        if not self.is_running():
            raise EnvironmentProblem("no guest is running: `objtier testbed up` first")
        return self

    def _wait_ready(self, timeout: float) -> float:
        def alive() -> None:
            if self._proc is not None and self._proc.poll() is not None:
                raise EnvironmentProblem(f"QEMU exited during boot: {self._last_words()}")

        deadline = time.monotonic() + timeout
        while not self.paths.socket.exists():
            alive()
            if time.monotonic() > deadline:
                raise EnvironmentProblem("QEMU did not create its command socket")
            time.sleep(0.05)
        with Channel(self.paths.socket, self.paths.lock) as chan:
            words = chan.wait_for(lambda w: w[0] == "READY", deadline - time.monotonic(), tick=alive)
        if words is None:
            raise EnvironmentProblem(f"guest not ready after {timeout:.0f} s: {self._last_words()}")
        return float(words[1]) if len(words) > 1 else float("nan")

    def exit_status(self) -> int | None:
        """QEMU's exit status when this object started it and it has exited, else None."""
        return self._proc.poll() if self._proc is not None else None

    def _exit_note(self, wait_s: float = 5.0) -> str:
        """" (QEMU exit status N)" once the QEMU this object started has exited (waiting up to
        `wait_s` for a dying one, so its console is complete), else ""."""
        if self._proc is None:
            return ""
        try:
            return f" (QEMU exit status {self._proc.wait(wait_s)})"
        except subprocess.TimeoutExpired:
            return ""

    def why_not_running(self) -> str:
        status = self.exit_status()
        if status is None:
            return "no guest is running: `objtier testbed up` first"
        return f"the guest is gone (QEMU exit status {status}): {self._last_words()}"

    def console_tail(self, lines: int = 40) -> str:
        """The last `lines` lines of the guest's serial console (a panic, an OOM report)."""
        try:
            text = self.paths.console.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _last_words(self) -> str:
        """For error messages: QEMU's last log line, else the guest console's first line that
        says why a kernel stops (a panic, an oops, the OOM killer, our init's own message), else
        the console's last line."""
        for path in (self.paths.qemu_log, self.paths.console):
            try:
                lines = [l.strip() for l in path.read_text(errors="replace").splitlines()
                         if l.strip()]
            except OSError:
                continue
            if not lines:
                continue
            if path == self.paths.console:
                cause = next((l for l in lines if any(m in l for m in CONSOLE_CAUSES)), None)
                if cause is not None:
                    return f"{path.name}: {cause} ... {lines[-1]}"
            return f"{path.name}: {lines[-1]}"
        return "no output (see the run directory)"

    def stop(self, grace: float = 10.0) -> bool:
        """Power off and clean up; True when a guest was running. Safe to call repeatedly."""
        pid = self._proc.pid if self._proc is not None and self._proc.poll() is None else self.pid()
        was_running = pid is not None
        if pid is not None:
            try:
                with Channel(self.paths.socket, self.paths.lock, connect_timeout=1.0,
                             lock_timeout=1.0) as chan:
                    chan.send("HALT", "halt")
            except (ChannelClosed, OSError):
                pass
            if not self._wait_exit(pid, grace / 2):
                self._signal(pid, signal.SIGTERM)
                if not self._wait_exit(pid, grace / 2):
                    self._signal(pid, signal.SIGKILL)
                    self._wait_exit(pid, grace)
        self._proc = None
        self._clean_run_dir(keep_logs=True)
        return was_running

    def _signal(self, pid: int, sig: int) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass

    def _wait_exit(self, pid: int, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.pid == pid:
                if self._proc.poll() is not None:
                    return True
            elif not _pid_is_qemu(pid, self.paths.socket):
                return True
            time.sleep(0.05)
        return False

    def _clean_run_dir(self, keep_logs: bool = False) -> None:
        for path in (self.paths.pidfile, self.paths.socket, self.paths.state, self.paths.lock):
            path.unlink(missing_ok=True)
        if not keep_logs:
            for path in (self.paths.console, self.paths.qemu_log):
                path.unlink(missing_ok=True)
        shutil.rmtree(self.paths.spool, ignore_errors=True)

    def status(self) -> dict:
        info: dict = {"running": False, "run_dir": str(self.paths.run)}
        image = KernelImage.load(self.paths)
        info["kernel"] = image.package if image else None
        pid = self.pid()
        if pid is not None:
            info["running"] = True
            try:
                info.update(json.loads(self.paths.state.read_text()))
            except (OSError, ValueError):
                info["pid"] = pid
                info["state"] = "booting"
            info.pop("qemu", None)
        return info

    def __enter__(self) -> "Testbed":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- commands ----------------------------------------------------------------------------

    def run(self, cmd: list[str] | str, cwd: str | os.PathLike | None = None,
            env: dict[str, str] | None = None, timeout: float | None = None,
            stream: bool = False) -> GuestResult:
        """Run `cmd` in the guest; returns (returncode, stdout, stderr).

        cmd: an argv list (exec'd) or a shell command string. cwd: a path inside the guest's
        view (default: the project root). timeout (s): the job's session is SIGKILLed and
        GuestTimeout raised. stream: copy output to this process's stdout/stderr as it comes.
        Ctrl-C kills the guest job too.
        """
        pid = self.pid()
        if pid is None:
            raise EnvironmentProblem(self.why_not_running())
        shown = cmd if isinstance(cmd, str) else shlex.join(cmd)
        ident = f"j{os.getpid()}-{next(self._ids)}-{secrets.token_hex(3)}"
        spool = self.paths.spool
        script, out, err = (spool / f"{ident}.{ext}" for ext in ("sh", "out", "err"))
        script.write_text(job_script(cmd, str(cwd or self.repo), env or {}))
        offsets = [0, 0]

        def pump() -> None:
            if not _pid_is_qemu(pid, self.paths.socket):
                raise EnvironmentProblem(f"the guest stopped during `{shown}`"
                                         f"{self._exit_note()}: {self._last_words()}")
            if stream:
                for i, (path, sink) in enumerate(((out, sys.stdout), (err, sys.stderr))):
                    offsets[i] = _copy_new(path, offsets[i], sink)

        try:
            with Channel(self.paths.socket, self.paths.lock) as chan:
                chan.send("RUN", ident)
                try:
                    done = chan.wait_for(lambda w: w[0] == "DONE" and w[1:2] == [ident],
                                         timeout if timeout is not None else float("inf"),
                                         tick=pump)
                except KeyboardInterrupt:
                    chan.send("KILL", ident)
                    chan.wait_for(lambda w: w[0] == "DONE" and w[1:2] == [ident], 10.0)
                    raise
                if done is None:
                    chan.send("KILL", ident)
                    chan.wait_for(lambda w: w[0] == "DONE" and w[1:2] == [ident], 10.0)
                    raise GuestTimeout(f"guest command timed out after {timeout:g} s: {shown}")
            if stream:
                pump()
        except ChannelClosed:
            raise EnvironmentProblem(f"the guest stopped during `{shown}`"
                                     f"{self._exit_note()}: {self._last_words()}") from None
        else:
            rc = int(done[2]) if len(done) > 2 else 255
            return GuestResult(rc, _read(out), _read(err))
        finally:
            for path in (script, out, err):
                path.unlink(missing_ok=True)

    def run_checked(self, script: str, timeout: float = 120.0) -> str:
        """Run a shell script in the guest; its stdout, or ObjtierError naming the script and
        the end of its output when it exits non-zero."""
        rc, out, err = self.run(script, timeout=timeout)
        if rc != 0:
            raise ObjtierError(f"guest command failed ({rc}): {script.strip()[:80]}: "
                               f"{(err or out).strip()[-300:]}")
        return out


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _copy_new(path: Path, offset: int, sink) -> int:
    """Copy bytes of `path` from `offset` to `sink`; returns the new offset."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return offset
    if data:
        sink.buffer.write(data) if hasattr(sink, "buffer") else sink.write(data.decode(errors="replace"))
        sink.flush()
    return offset + len(data)
