"""Valid inputs the fuzz tests and the corrupt corpus start from: a process trace and a
counters trace holding every record type, a JSON plan and its text form with every record
kind (phases, a split entry, a pages entry, a large-folio record).

Built with the real writers (objtier.trace.writer, objtier.plan.textexport), so a change of
format shows up here as well.
"""

from __future__ import annotations

import json
from pathlib import Path

from objtier.plan import to_text
from objtier.trace import format as F
from objtier.trace.writer import TraceWriter

PAGE = 4096


def write_process_trace(path: Path) -> Path:
    """A small process trace with one record of every tag (two images' worth of contexts)."""
    with TraceWriter(path, kind="process", pid=4242, ppid=1, start_mono_ns=1_000,
                     start_real_ns=2_000) as w:
        w.process(4242, 1, 1_000, "/usr/bin/app", ["app", "--size", "8"],
                  {"OBJTIER_SAMPLER": "fault", "OBJTIER_RATE": "2000"})
        w.module(1, "/usr/bin/app", "ab" * 20, 0x400000, 0x400000, 0x500000)
        w.module(2, "/usr/lib/libc.so.6", "cd" * 20, 0x7F0000000000, 0x7F0000000000,
                 0x7F0000200000)
        w.context(1, [(1, 0x1234), (2, 0x29D90)])
        w.context(2, [(1, 0x2345), (1, 0x1111), (2, 0x29D90)])
        w.name(1, "load")
        w.counter_def(1, "proc.rss_bytes", "bytes")
        for i in range(4):
            w.alloc(1_000 + i * 100, i, 0x10000000 + i * 0x100000, 64 * PAGE, context=1 + i % 2)
        w.free(2_000, 0, 0x10000000, 64 * PAGE)
        for i in range(16):
            w.sample(1_500 + i, 0x10000000 + (i % 4) * 0x100000 + i * PAGE, weight=1 + i % 3)
        w.window(1_100, 1, 0x10100000, 8, 500, touched=3, touched_ns=200)
        w.phase(1_200, 1, 1)
        w.phase(1_800, 1, 2)
        w.counter(1_300, 1, 123456)
        w.sampler_stats(2_500, F.SOURCE_FAULT, 16, lost=1, pages_armed=64, windows=2)
        w.close(end_time_ns=3_000)
    return path


def write_counters_trace(path: Path) -> Path:
    with TraceWriter(path, kind="counters", pid=0, start_mono_ns=1_000) as w:
        w.counter_def(1, "vmstat.pswpin", "pages")
        w.counter_def(2, "proc.rss_bytes", "bytes")
        for t in range(5):
            w.counter(1_000 + t * 100, 1, t)
            w.counter(1_000 + t * 100, 2, 1 << 20)
    return path


def blocks(data: bytes) -> list[tuple[int, int, int]]:
    """(block offset, payload offset, payload bytes) of every block of a well-formed file."""
    import numpy as np

    header = np.frombuffer(data, dtype=F.FILE_HEADER, count=1)[0]
    out, offset = [], int(header["header_bytes"])
    while offset + F.BLOCK_HEADER.itemsize <= len(data):
        block = np.frombuffer(data, dtype=F.BLOCK_HEADER, count=1, offset=offset)[0]
        start = offset + F.BLOCK_HEADER.itemsize
        out.append((offset, start, int(block["payload_bytes"])))
        offset = start + int(block["payload_bytes"])
    return out


def fix_checksums(data: bytearray, layout: list[tuple[int, int, int]]) -> bytearray:
    """Recompute the CRC-32 of every block in layout (offsets of the unmutated file), so a
    mutation inside payloads reaches the decoders instead of failing the checksum."""
    import struct
    import zlib

    crc_at = F.BLOCK_HEADER.fields["crc32"][1]
    for offset, start, size in layout:
        if start + size <= len(data):
            struct.pack_into("<I", data, offset + crc_at, zlib.crc32(data[start:start + size]))
    return data


def plan_document() -> dict:
    """A valid plan (objtier.plan.validate_plan accepts it) with every kind of record."""
    key_a, key_b, key_c = "00000000000000aa", "00000000000000bb", "00000000000000cc"
    return {
        "format": "objtier-plan", "version": 1, "created": "2026-01-01T00:00:00+00:00",
        "generator": "objtier 0.1.0",
        "binary": {"path": "/usr/bin/app", "build_id": "ab" * 20, "size": 12345},
        "source": "run.otr",
        "budget": {"given": "70%", "bytes": 40 * PAGE, "percent": 70.0,
                   "footprint_bytes": 64 * PAGE, "page_bytes": PAGE},
        "algorithm": {"name": "halving", "params": {"alpha": 1.0, "beta": 1.0}},
        "warnings": [],
        "phases": [
            {"name": "*", "parent": None, "target": "*", "mean_duration_ns": None,
             "executions": 1, "similarity": None, "reason": "the whole program"},
            {"name": "load phase", "parent": "*", "target": "load phase",
             "mean_duration_ns": 1000, "executions": 2, "similarity": 0.5, "reason": "kept"},
        ],
        "summary": [],
        "large_folios": [{"context_key": key_c, "occurrence": None,
                          "size_min": 16 * PAGE, "size_max": 32 * PAGE}],
        "entries": [
            {"phase": "*", "context_key": key_a, "occurrence": None, "size_min": 8 * PAGE,
             "size_max": 16 * PAGE, "objects": 3, "tier": "fast", "fast_bytes": 16 * PAGE,
             "accesses": 10.0, "label": "main > a"},
            {"phase": "*", "context_key": key_b, "occurrence": 0, "size_min": 10 * PAGE,
             "size_max": 10 * PAGE, "objects": 1, "tier": "split", "fast_bytes": 4 * PAGE,
             "accesses": 5.0, "label": "main > b"},
            {"phase": "load phase", "context_key": key_c, "occurrence": 1,
             "size_min": 32 * PAGE, "size_max": 32 * PAGE, "objects": 1, "tier": "pages",
             "fast_bytes": 3 * PAGE, "ranges": [[0, PAGE], [4 * PAGE, 2 * PAGE]],
             "accesses": 7.0, "label": "main > c"},
            {"phase": "load phase", "context_key": key_a, "occurrence": None,
             "size_min": 0, "size_max": 4 * PAGE, "objects": 2, "tier": "slow",
             "fast_bytes": 0, "accesses": 0.0, "label": "main > a"},
        ],
    }


def plan_json() -> str:
    return json.dumps(plan_document(), indent=1)


def plan_text() -> str:
    return to_text(plan_document())


def fuzz_settings(examples: int):
    """Hypothesis settings of the fuzz tests: `examples` derandomized cases in the default
    suite (reproducible, bounded time); OBJTIER_FUZZ_EXAMPLES=N runs N random ones instead
    (a longer search, by hand)."""
    import os

    from hypothesis import HealthCheck, settings

    deep = os.environ.get("OBJTIER_FUZZ_EXAMPLES")
    return settings(max_examples=int(deep) if deep else examples, deadline=None,
                    derandomize=not deep, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
