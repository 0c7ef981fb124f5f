"""Write .otr files from Python: the recorder's counters timeline and synthetic test traces.

Records are buffered per tag and written as blocks (header + payload, CRC-32) exactly as the C
runtime writes them; see native/include/objtier/trace_format.h.
"""

from __future__ import annotations

import os
import struct
import time
import zlib
from pathlib import Path

import numpy as np

from objtier.outputs import open_private
from objtier.trace import format as F

_KINDS = {"process": F.FILE_PROCESS, "counters": F.FILE_COUNTERS, "perf": F.FILE_PERF}


def _pad8(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 8)


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<I", len(raw)) + raw


class TraceWriter:
    """Buffered writer of one .otr file. Use as a context manager or call close()."""

    BLOCK_BYTES = 64 * 1024

    def __init__(self, path: str | Path, kind: str = "process", pid: int = 0, ppid: int = 0,
                 start_mono_ns: int | None = None, start_real_ns: int | None = None,
                 page_bytes: int = 4096):
        self.path = Path(path)
        self._file = open_private(self.path, what="trace")  # 0600, never through a link
        header = np.zeros(1, dtype=F.FILE_HEADER)
        header["magic"] = F.MAGIC
        header["version_major"] = F.VERSION_MAJOR
        header["version_minor"] = F.VERSION_MINOR
        header["header_bytes"] = F.FILE_HEADER.itemsize
        header["endianness"] = 1
        header["pointer_bytes"] = 8
        header["arch"] = 62
        header["kind"] = _KINDS[kind]
        header["pid"] = pid
        header["ppid"] = ppid
        header["page_bytes"] = page_bytes
        header["start_mono_ns"] = time.monotonic_ns() if start_mono_ns is None else start_mono_ns
        header["start_real_ns"] = time.time_ns() if start_real_ns is None else start_real_ns
        self._file.write(header.tobytes())
        self._fixed: dict[int, list[np.ndarray]] = {}
        self._fixed_bytes: dict[int, int] = {}
        self.records = 0

    # -- low level --
    def _write_block(self, tag: int, record_size: int, count: int, payload: bytes) -> None:
        block = np.zeros(1, dtype=F.BLOCK_HEADER)
        block["magic"] = F.BLOCK_MAGIC
        block["tag"] = tag
        block["record_size"] = record_size
        block["payload_bytes"] = len(payload)
        block["record_count"] = count
        block["crc32"] = zlib.crc32(payload)
        self._file.write(block.tobytes() + payload)
        self.records += count

    def variable(self, tag: int, bodies: list[bytes]) -> None:
        """Write variable-size records (each body gets its u32 length prefix and padding)."""
        payload = b"".join(struct.pack("<I", len(b)) + _pad8(b) for b in bodies)
        self._write_block(tag, 0, len(bodies), payload)

    def fixed(self, tag: int, records: np.ndarray) -> None:
        """Queue fixed-size records (a structured array of F.FIXED[tag])."""
        records = np.asarray(records, dtype=F.FIXED[tag])
        self._fixed.setdefault(tag, []).append(records)
        self._fixed_bytes[tag] = self._fixed_bytes.get(tag, 0) + records.nbytes
        if self._fixed_bytes[tag] >= self.BLOCK_BYTES:
            self._flush_tag(tag)

    def _flush_tag(self, tag: int) -> None:
        parts = self._fixed.pop(tag, [])
        self._fixed_bytes.pop(tag, None)
        if not parts:
            return
        records = np.concatenate(parts)
        dtype = F.FIXED[tag]
        per_block = max(1, self.BLOCK_BYTES // dtype.itemsize)
        for start in range(0, len(records), per_block):
            chunk = records[start:start + per_block]
            self._write_block(tag, dtype.itemsize, len(chunk), chunk.tobytes())

    def flush(self) -> None:
        for tag in list(self._fixed):
            self._flush_tag(tag)
        self._file.flush()

    def close(self, end_time_ns: int | None = None, exit_status: int = 0,
              write_end: bool = True) -> None:
        if self._file.closed:
            return
        self.flush()
        if write_end:
            end = np.zeros(1, dtype=F.END)
            end["time_ns"] = time.monotonic_ns() if end_time_ns is None else end_time_ns
            end["records"] = self.records
            end["exit_status"] = exit_status
            self._write_block(F.TAG_END, F.END.itemsize, 1, end.tobytes())
        self._file.close()

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- records --
    def process(self, pid: int, ppid: int, time_ns: int, exe: str, argv: list[str],
                config: dict[str, str] | None = None) -> None:
        config_text = "".join(f"{k}={v}\n" for k, v in (config or {}).items()).encode()
        head = np.zeros(1, dtype=F.PROCESS_HEAD)
        head["pid"], head["ppid"], head["time_ns"] = pid, ppid, time_ns
        head["argc"], head["config_len"] = len(argv), len(config_text)
        body = head.tobytes() + _string(exe) + b"".join(_string(a) for a in argv) + config_text
        self.variable(F.TAG_PROCESS, [body])

    def module(self, module_id: int, path: str, build_id: str = "", base: int = 0,
               start: int = 0, end: int = 0) -> None:
        build = bytes.fromhex(build_id)
        raw_path = path.encode()
        head = np.zeros(1, dtype=F.MODULE_HEAD)
        head["id"], head["build_id_len"], head["path_len"] = module_id, len(build), len(raw_path)
        head["base"], head["start"], head["end"] = base, start, end
        self.variable(F.TAG_MODULE, [head.tobytes() + build + raw_path])

    def context(self, context_id: int, frames: list[tuple[int, int]]) -> None:
        """frames: (module id, offset) innermost first."""
        head = np.zeros(1, dtype=F.CONTEXT_HEAD)
        head["id"], head["depth"] = context_id, len(frames)
        array = np.zeros(len(frames), dtype=F.FRAME)
        for i, (module_id, offset) in enumerate(frames):
            array[i]["module"], array[i]["offset"] = module_id, offset
        self.variable(F.TAG_CONTEXT, [head.tobytes() + array.tobytes()])

    def counter_def(self, counter_id: int, name: str, unit: str = "") -> None:
        head = np.zeros(1, dtype=F.COUNTER_DEF_HEAD)
        raw_name, raw_unit = name.encode(), unit.encode()
        head["id"], head["name_len"], head["unit_len"] = counter_id, len(raw_name), len(raw_unit)
        self.variable(F.TAG_COUNTER_DEF, [head.tobytes() + raw_name + raw_unit])

    def name(self, name_id: int, text: str) -> None:
        raw = text.encode()
        head = np.zeros(1, dtype=F.NAME_HEAD)
        head["id"], head["len"] = name_id, len(raw)
        self.variable(F.TAG_NAME, [head.tobytes() + raw])

    def _one(self, tag: int, **fields) -> None:
        record = np.zeros(1, dtype=F.FIXED[tag])
        for key, value in fields.items():
            record[key] = value
        self.fixed(tag, record)

    def alloc(self, time_ns: int, seq: int, addr: int, size: int, tid: int = 1,
              context: int = 0, kind: int = 1) -> None:
        self._one(F.TAG_ALLOC, time_ns=time_ns, seq=seq, addr=addr, size=size, tid=tid,
                  context=context, kind=kind)

    def free(self, time_ns: int, seq: int, addr: int, size: int = 0, tid: int = 1,
             kind: int = 1) -> None:
        self._one(F.TAG_FREE, time_ns=time_ns, seq=seq, addr=addr, size=size, tid=tid, kind=kind)

    def sample(self, time_ns: int, addr: int, tid: int = 1, latency: int = 0, source: int = 1,
               level: int = 0, tlb: int = 0, flags: int = 0, node: int = F.NODE_UNKNOWN,
               weight: int = 1) -> None:
        self._one(F.TAG_SAMPLE, time_ns=time_ns, addr=addr, tid=tid, latency=latency,
                  source=source, level=level, tlb=tlb, flags=flags, node=node, weight=weight)

    def samples(self, records: np.ndarray) -> None:
        """Bulk samples: a structured array with F.SAMPLE's fields."""
        self.fixed(F.TAG_SAMPLE, records)

    def window(self, arm_ns: int, alloc_seq: int, start: int, pages: int, dwell_ns: int,
               touched: int = 0, touched_ns: int = 0) -> None:
        """A fault-sampler scan window (format 1.1): `pages` armed for `dwell_ns`, `touched`
        of them after `touched_ns` in all."""
        self._one(F.TAG_WINDOW, arm_ns=arm_ns, alloc_seq=alloc_seq, start=start, pages=pages,
                  dwell_ns=dwell_ns, touched=touched, touched_ns=touched_ns)

    def counter(self, time_ns: int, counter_id: int, value: int) -> None:
        self._one(F.TAG_COUNTERS, time_ns=time_ns, id=counter_id, value=value)

    def phase(self, time_ns: int, name: int, event: int, tid: int = 1) -> None:
        self._one(F.TAG_PHASE, time_ns=time_ns, name=name, event=event, tid=tid)

    def sampler_stats(self, time_ns: int, source: int, samples: int, lost: int = 0,
                      pages_armed: int = 0, windows: int = 0) -> None:
        self._one(F.TAG_SAMPLER_STATS, time_ns=time_ns, source=source, samples=samples,
                  lost=lost, pages_armed=pages_armed, windows=windows)


def default_process_path(directory: str | Path, pid: int) -> Path:
    return Path(directory) / f"proc-{pid}.otr"


def current_pid() -> int:
    return os.getpid()
