"""Helpers for the runtime's end-to-end tests: run a compiled program with libobjtier.so
preloaded and read its trace back with the real reader."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from objtier import native
from objtier.trace import open_trace


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    out: Path

    def trace(self):
        return open_trace(self.out)


# C: Locked: kB of /proc/self/smaps over [p, p + n) (needs stdio.h and string.h).
LOCKED_KB_C = r"""static long locked_kb(const void *p, size_t n) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    unsigned long a = (unsigned long)p, b = a + n, s, e;
    long sum = 0, kb;
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = s < b && a < e;
        else if (in && sscanf(line, "Locked: %ld kB", &kb) == 1)
            sum += kb;
    }
    fclose(f);
    return sum;
}
"""


# argv: MiB of the array, read-only sweeps over it. Writes the array once, then sums one byte
# per 256 of every page on each sweep; prints the sum.
SWEEP_C = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) unsigned char *alloc_data(size_t n) { return malloc(n); }
int main(int argc, char **argv) {
    size_t n = strtoul(argv[1], 0, 0) << 20;
    int sweeps = atoi(argv[2]);
    unsigned char *data = alloc_data(n);
    for (size_t i = 0; i < n; i++)
        data[i] = (unsigned char)(i * 2654435761u >> 13);
    unsigned long sum = 0;
    for (int s = 0; s < sweeps; s++)
        for (size_t i = 0; i < n; i += 256)
            sum += data[i];
    printf("sum %lu\n", sum);
    free(data);
    return 0;
}
"""


def keys_by_size(trace) -> dict[int, str]:
    """Object size -> context key of the recording (each size is one call site here)."""
    from objtier.analysis.objects import object_table

    table = object_table(trace, labels=False)
    return dict(zip(table.column("size").to_pylist(), table.column("context_key").to_pylist()))


def plan_text(entries: list[str], phases: tuple[str, ...] = ()) -> str:
    lines = ["objtier-plan 1", "# written by the test", "budget 8388608 4096", "phase * - *"]
    lines += [f"phase {p} * {p}" for p in phases]
    return "\n".join(lines + entries) + "\n"


def runtime_env(out: Path | None, **settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env["LD_PRELOAD"] = str(native.runtime_library())
    if out is not None:
        env["OBJTIER_OUTPUT"] = str(out)
    env.setdefault("OBJTIER_LOG", "1")
    env.setdefault("OBJTIER_SAMPLER", "fault")  # what these tests exercise unless they say
    for key, value in settings.items():
        env[f"OBJTIER_{key.upper()}"] = str(value)
    return env


@pytest.fixture
def run_traced(tmp_path):
    """run_traced(exe, *args, name="out", **settings) -> Run; settings become OBJTIER_* vars."""
    counter = [0]

    def _run(exe, *args, name: str | None = None, timeout: float = 120, **settings) -> Run:
        counter[0] += 1
        out = tmp_path / (name or f"trace{counter[0]}")
        proc = subprocess.run([str(exe), *map(str, args)], env=runtime_env(out, **settings),
                              capture_output=True, text=True, timeout=timeout)
        return Run(proc.returncode, proc.stdout, proc.stderr, out)

    return _run


def frames_of(trace, context_id: int, pid: int | None = None) -> list[tuple[str, int]]:
    """(module path, offset) frames of one context."""
    rows = trace.contexts.to_pylist()
    for row in rows:
        if row["context"] == context_id and (pid is None or row["pid"] == pid):
            return [(f["module"], f["offset"]) for f in row["frames"]]
    raise AssertionError(f"context {context_id} not in trace")


def samples_in(trace, addr: int, size: int) -> int:
    return samples_in_table(trace.samples, addr, size)


def samples_in_table(samples, addr: int, size: int) -> int:
    a = samples.column("addr").to_numpy()
    return int(((a >= addr) & (a < addr + size)).sum())


def printed(stdout: str) -> dict[str, int]:
    """The test programs print `name 0x...` lines for the addresses they use."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].startswith("0x"):
            out[parts[0]] = int(parts[1], 16)
    return out


def np_sorted(column) -> np.ndarray:
    return np.sort(column.to_numpy())


@pytest.fixture
def swap():
    """The pageout sampler's swap (a temporary zram device while none is active, removed
    after); skips where perf_event_open is not permitted. Needs root."""
    from objtier.commands.record import sampler_swap
    from objtier.record.sampler_choice import perf_permitted

    if not perf_permitted()[0]:
        pytest.skip("perf_event_open is not permitted")
    with sampler_swap("pageout", lambda text: None):
        yield
