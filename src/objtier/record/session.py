"""One recording: run a program under the runtime with a counters timeline, into a directory.
Used by `objtier record` and by the experiment harness."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from objtier.errors import UsageError
from objtier.record.counters import CountersCollector
from objtier.record.launch import run_program, runtime_env


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
    extra_env: dict[str, str] = field(default_factory=dict)

    def validate(self) -> None:
        if self.rate <= 0:
            raise UsageError(f"--rate must be positive, got {self.rate}")
        if not 1 <= self.stack_depth <= 32:
            raise UsageError(f"--stack-depth must be between 1 and 32, got {self.stack_depth}")
        if self.counters_interval_ms < 0:
            raise UsageError("--counters-interval must be 0 (off) or a positive number of ms")
        if self.min_size < 1:
            raise UsageError("--min-size must be at least 1 byte")

    def runtime_settings(self, output: Path) -> dict[str, str]:
        return {
            "OBJTIER_OUTPUT": str(output.resolve()),
            "OBJTIER_SAMPLER": self.sampler,
            "OBJTIER_RATE": str(self.rate),
            "OBJTIER_MIN_SIZE": str(self.min_size),
            "OBJTIER_STACK_DEPTH": str(self.stack_depth),
            "OBJTIER_FOLLOW_FORKS": "1" if self.follow_forks else "0",
            **({"OBJTIER_TRACE_LIMIT": str(self.trace_limit)} if self.trace_limit else {}),
            **({"OBJTIER_LLC_BYTES": str(self.llc[0]), "OBJTIER_LLC_WAYS": str(self.llc[1]),
                "OBJTIER_LLC_LINE": str(self.llc[2])} if self.llc else {}),
            **self.extra_env,
        }


def prepare_output(output: Path, force: bool) -> None:
    """Create the recording directory; replace an old recording only with force."""
    if output.exists():
        if not force:
            raise UsageError(f"{output} exists; choose another -o or pass --force to replace it")
        if output.is_dir() and all(p.suffix == ".otr" for p in output.iterdir()):
            shutil.rmtree(output)
        else:
            raise UsageError(f"{output} is not a recording directory; refusing to replace it")
    output.mkdir(parents=True)


def record_program(command: list[str], output: Path, settings: RecordSettings,
                   force: bool = False, preexec=None) -> tuple[int, float]:
    """Run command under the runtime; returns (raw returncode, seconds). The trace is in output."""
    settings.validate()
    env = runtime_env(settings.runtime_settings(output))  # fails early when not built
    prepare_output(output, force)
    collectors: list[CountersCollector] = []

    def start_counters(pid: int) -> None:
        if settings.counters_interval_ms > 0:
            collector = CountersCollector(output / "counters.otr", pid,
                                          settings.counters_interval_ms / 1000)
            collectors.append(collector)
            collector.start()

    started = time.monotonic()
    try:
        returncode = run_program(command, env, on_start=start_counters, preexec=preexec)
    finally:
        for collector in collectors:
            collector.stop()
    return returncode, time.monotonic() - started
