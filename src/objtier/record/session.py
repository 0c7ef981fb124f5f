"""One recording: run a program under the runtime with a counters timeline, into a directory.
Used by `objtier record` and by the experiments (objtier.experiments)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from objtier.errors import UsageError
from objtier.record.counters import CountersCollector
from objtier.record.launch import run_program, runtime_env
from objtier.runtime_settings import runtime_env as settings_env


@dataclass
class RecordSettings:
    sampler: str = "fault"          # resolved sampler: none | fault | perf
    rate: int = 2000                # most samples per second
    min_size: int = 128 << 10       # bytes
    stack_depth: int = 8
    counters_interval_ms: int = 100  # 0 = no counters timeline
    follow_forks: bool = False
    trace_limit: int = 0            # trace sampler: full address trace records (0 = none)
    llc: tuple[int, int, int] | None = None  # trace sampler: cache model (bytes, ways, line)
    extra_env: dict[str, str] = field(default_factory=dict)  # more OBJTIER_* settings

    def validate(self) -> None:
        """The runtime's bounds (native/runtime/core/config.c), checked before the program starts:
        a value the runtime would refuse would otherwise record nothing."""
        from objtier import bounds as B

        B.check_range(self.rate, "--rate", 1, B.RATE_MAX, unit="samples per second")
        B.check_range(self.stack_depth, "--stack-depth", 1, B.STACK_DEPTH_MAX, unit="frames")
        B.check_range(self.counters_interval_ms, "--counters-interval", 0, B.INTERVAL_MS_MAX,
                      unit="ms (0 = off)")
        B.check_range(self.min_size, "--min-size", 1, B.BYTES_MAX // 2, unit="bytes")
        B.check_range(self.trace_limit, "--trace-limit", 0, B.BYTES_MAX // 2, unit="records")
        if self.llc is not None:
            B.check_range(self.llc[0], "--llc size", 1, B.LLC_BYTES_MAX, unit="bytes")
            B.check_range(self.llc[1], "--llc ways", 1, B.LLC_WAYS_MAX)
            B.check_range(self.llc[2], "--llc line", 1, B.LLC_LINE_MAX, unit="bytes")
            if self.llc[2] & (self.llc[2] - 1):
                raise UsageError(f"--llc line must be a power of two, got {self.llc[2]}")
            if self.llc[0] < self.llc[2]:
                raise UsageError(f"--llc size ({self.llc[0]} bytes) is smaller than its line "
                                 f"({self.llc[2]} bytes)")

    def runtime_settings(self, output: Path) -> dict[str, str]:
        """The recording's OBJTIER_* environment, built and checked by the one settings table
        (objtier.runtime_settings); extra_env's "OBJTIER_<NAME>" entries are settings too."""
        llc = dict(zip(("llc_bytes", "llc_ways", "llc_line"), self.llc or ()))
        extra = {name.removeprefix("OBJTIER_").lower(): value
                 for name, value in self.extra_env.items()}
        return settings_env(output=output.resolve(), sampler=self.sampler, rate=self.rate,
                            min_size=self.min_size, stack_depth=self.stack_depth,
                            follow_forks=self.follow_forks, trace_limit=self.trace_limit or None,
                            **llc, **extra)


def prepare_output(output: Path, force: bool) -> None:
    """Create the recording directory (mode 0700); replace an old recording only with force,
    never through a symbolic link."""
    from objtier.outputs import replace_dir

    replace_dir(output, force, lambda p: all(c.suffix == ".otr" for c in p.iterdir()),
                what="recording directory")


def _make_private(output: Path) -> None:
    """Mode 0600 for every trace file of the recording, whoever created it (the directory
    is 0700 from the start, so no other user could read them meanwhile)."""
    for path in output.glob("*.otr"):
        try:
            if not path.is_symlink():
                os.chmod(path, 0o600)
        except OSError:
            pass


def record_program(command: list[str], output: Path, settings: RecordSettings,
                   force: bool = False, preexec=None,
                   stats: dict | None = None, launch=None, attach=None) -> tuple[int, float]:
    """Run command under the runtime; returns (raw returncode, seconds). The trace is in output.
    stats, when given, receives "counters_cpu_s": the counters thread's CPU time (s).
    launch(command, env) -> (command, env, pid_of), when given, starts the program through
    another one (record --with-perf: perf); pid_of(started pid) is the program's pid.
    attach(pid), when given, is called with the program's pid once it runs (record --sampler
    damon: the kdamond's target)."""
    settings.validate()
    env = runtime_env(settings.runtime_settings(output))  # fails early when not built
    prepare_output(output, force)
    collectors: list[CountersCollector] = []
    command, env, pid_of = launch(command, env) if launch else (command, env, None)

    def start_counters(pid: int) -> None:
        pid = pid_of(pid) if pid_of else pid
        if settings.counters_interval_ms > 0:
            collector = CountersCollector(output / "counters.otr", pid,
                                          settings.counters_interval_ms / 1000)
            collectors.append(collector)
            collector.start()
        if attach is not None:
            attach(pid)

    started = time.monotonic()
    try:
        returncode = run_program(command, env, on_start=start_counters, preexec=preexec,
                                 name="objtier record")
    finally:
        try:
            for collector in collectors:
                collector.stop()
        finally:
            if stats is not None:
                stats["counters_cpu_s"] = sum(c.cpu_s for c in collectors)
            _make_private(output)
    return returncode, time.monotonic() - started
