"""Read objtier traces (.otr files and recording directories) into columnar tables.

Blocks are validated (magic, CRC-32) and fixed-size blocks are viewed as numpy structured arrays
without a per-record Python loop; only the rare variable-size records (process, modules,
contexts, counter and name definitions) are decoded one by one. A partial block at the end of a
file — a process killed mid-write — is dropped with a warning; everything before it is kept.
"""

from __future__ import annotations

import stat
import struct
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa

from objtier.errors import TraceError
from objtier.trace import format as F
from objtier.trace.contexts import context_key


@dataclass
class ProcessInfo:
    pid: int
    ppid: int
    exe: str
    argv: list[str]
    config: dict[str, str]
    start_mono_ns: int
    start_real_ns: int
    page_bytes: int
    complete: bool  # the file ends with an END record (clean exit)
    path: Path


@dataclass
class RawFile:
    """One decoded .otr file: its header, fixed records per tag, variable records per tag."""

    path: Path
    header: np.void
    fixed: dict[int, list[np.ndarray]] = field(default_factory=dict)
    variable: dict[int, list[bytes]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # File order of blocks: (tag, index into fixed[tag] or first index into variable[tag], count)
    blocks: list[tuple[int, int, int]] = field(default_factory=list)

    def records(self, tag: int) -> np.ndarray:
        parts = self.fixed.get(tag)
        if not parts:
            return np.zeros(0, dtype=F.FIXED[tag])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def read_file(path: str | Path) -> RawFile:
    """Decode one .otr file. Raises TraceError for anything that is not a readable trace."""
    path = Path(path)
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO or device would block or not end
            if path.is_dir():
                raise IsADirectoryError
            raise TraceError(f"{path} is not a regular file; expected an .otr file")
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"no such trace file: {path}") from None
    except IsADirectoryError:
        raise TraceError(f"{path} is a directory; expected an .otr file") from None
    except OSError as error:
        raise TraceError(f"cannot read {path}: {error.strerror}") from None

    header = _parse_header(data, path)
    raw = RawFile(path=path, header=header)
    newer_minor = int(header["version_minor"]) > F.VERSION_MINOR
    offset = int(header["header_bytes"])
    block_size = F.BLOCK_HEADER.itemsize
    end = len(data)
    while offset < end:
        if end - offset < block_size:
            raw.warnings.append(f"{path.name}: {end - offset} bytes of a partial block at the end "
                                f"were ignored (the process stopped mid-write)")
            break
        block = np.frombuffer(data, dtype=F.BLOCK_HEADER, count=1, offset=offset)[0]
        if int(block["magic"]) != F.BLOCK_MAGIC:
            raise TraceError(f"corrupt trace: bad block magic at byte {offset} of {path}")
        payload_bytes = int(block["payload_bytes"])
        start = offset + block_size
        if start + payload_bytes > end:
            raw.warnings.append(f"{path.name}: last block at byte {offset} is cut short "
                                f"({end - start} of {payload_bytes} bytes); it was ignored")
            break
        payload = memoryview(data)[start:start + payload_bytes]
        if zlib.crc32(payload) != int(block["crc32"]):
            raise TraceError(f"corrupt trace: block at byte {offset} of {path} fails its checksum")
        _decode_block(raw, int(block["tag"]), int(block["record_size"]),
                      int(block["record_count"]), data, start, payload_bytes, newer_minor, offset)
        offset = start + payload_bytes
    return raw


def _parse_header(data: bytes, path: Path) -> np.void:
    if len(data) < F.FILE_HEADER.itemsize:
        if data[:8] == F.MAGIC[: len(data[:8])] and len(data) > 0:
            raise TraceError(f"trace {path} is cut short inside its header ({len(data)} bytes)")
        raise TraceError(f"not an objtier trace: {path}")
    header = np.frombuffer(data, dtype=F.FILE_HEADER, count=1)[0]
    if bytes(header["magic"]).ljust(8, b"\0") != F.MAGIC:
        raise TraceError(f"not an objtier trace (bad magic): {path}")
    major, minor = int(header["version_major"]), int(header["version_minor"])
    if major != F.VERSION_MAJOR:
        raise TraceError(f"trace {path} has format version {major}.{minor}; this objtier reads "
                         f"version {F.VERSION_MAJOR}.x")
    if int(header["endianness"]) != 1 or int(header["pointer_bytes"]) != 8:
        raise TraceError(f"trace {path} was written on a big-endian or 32-bit machine, "
                         f"which this objtier does not read")
    if int(header["header_bytes"]) < F.FILE_HEADER.itemsize:
        raise TraceError(f"corrupt trace: header size {int(header['header_bytes'])} in {path}")
    return header


def _decode_block(raw: RawFile, tag: int, record_size: int, count: int, data: bytes,
                  start: int, payload_bytes: int, newer_minor: bool, offset: int) -> None:
    if tag in F.FIXED:
        dtype = F.FIXED[tag]
        if record_size < dtype.itemsize or (record_size > dtype.itemsize and not newer_minor):
            raise TraceError(f"corrupt trace: {F.TAG_NAMES[tag]} records of {record_size} bytes "
                             f"at byte {offset} of {raw.path} (expected {dtype.itemsize})")
        if count * record_size > payload_bytes:
            raise TraceError(f"corrupt trace: block at byte {offset} of {raw.path} claims "
                             f"{count} records but holds {payload_bytes} bytes")
        if record_size == dtype.itemsize:
            records = np.frombuffer(data, dtype=dtype, count=count, offset=start)
        else:  # a newer writer appended fields: keep the ones this reader knows
            wide = np.dtype({"names": list(dtype.names),
                             "formats": [dtype.fields[n][0] for n in dtype.names],
                             "offsets": [dtype.fields[n][1] for n in dtype.names],
                             "itemsize": record_size})
            records = np.frombuffer(data, dtype=wide, count=count, offset=start).astype(dtype)
        parts = raw.fixed.setdefault(tag, [])
        raw.blocks.append((tag, len(parts), count))
        parts.append(records)
    elif tag in F.VARIABLE:
        position, stop = start, start + payload_bytes
        out = raw.variable.setdefault(tag, [])
        raw.blocks.append((tag, len(out), count))
        for _ in range(count):
            if position + 4 > stop:
                raise TraceError(f"corrupt trace: record overruns block at byte {offset} "
                                 f"of {raw.path}")
            (length,) = struct.unpack_from("<I", data, position)
            body_start = position + 4
            if body_start + length > stop:
                raise TraceError(f"corrupt trace: record overruns block at byte {offset} "
                                 f"of {raw.path}")
            out.append(bytes(data[body_start:body_start + length]))
            position = body_start + ((length + 7) & ~7)
    elif not newer_minor:
        raise TraceError(f"corrupt trace: unknown record tag {tag} at byte {offset} of {raw.path}")


# --- variable-record decoders ------------------------------------------------------------
# Each checks every length against the record body: a corrupt body is a TraceError, never a
# read past the end (numpy and struct would raise their own errors) or a silent short field.

def _corrupt(what: str) -> TraceError:
    return TraceError(f"corrupt trace: a {what} record is shorter than its fields say")


def _head(body: bytes, dtype: np.dtype, what: str) -> np.void:
    if len(body) < dtype.itemsize:
        raise _corrupt(what)
    return np.frombuffer(body, dtype=dtype, count=1)[0]


def _bytes_at(body: bytes, position: int, length: int, what: str) -> bytes:
    if position + length > len(body):
        raise _corrupt(what)
    return body[position:position + length]


def _string_at(body: bytes, position: int, what: str = "PROCESS") -> tuple[str, int]:
    if position + 4 > len(body):
        raise _corrupt(what)
    (length,) = struct.unpack_from("<I", body, position)
    text = _bytes_at(body, position + 4, length, what).decode("utf-8", "replace")
    return text, position + 4 + length


def decode_process(body: bytes) -> dict:
    head = _head(body, F.PROCESS_HEAD, "PROCESS")
    position = F.PROCESS_HEAD.itemsize
    exe, position = _string_at(body, position)
    argc = int(head["argc"])
    if argc > (len(body) - position) // 4:  # every argument takes at least its 4-byte length
        raise _corrupt("PROCESS")
    argv = []
    for _ in range(argc):
        arg, position = _string_at(body, position)
        argv.append(arg)
    config_text = _bytes_at(body, position, int(head["config_len"]), "PROCESS").decode(
        "utf-8", "replace")
    config = dict(line.split("=", 1) for line in config_text.splitlines() if "=" in line)
    return {"pid": int(head["pid"]), "ppid": int(head["ppid"]), "time_ns": int(head["time_ns"]),
            "exe": exe, "argv": argv, "config": config}


def decode_module(body: bytes) -> dict:
    head = _head(body, F.MODULE_HEAD, "MODULE")
    position = F.MODULE_HEAD.itemsize
    build_len, path_len = int(head["build_id_len"]), int(head["path_len"])
    build_id = _bytes_at(body, position, build_len, "MODULE").hex()
    path = _bytes_at(body, position + build_len, path_len, "MODULE").decode("utf-8", "replace")
    return {"id": int(head["id"]), "path": path, "build_id": build_id, "base": int(head["base"]),
            "start": int(head["start"]), "end": int(head["end"])}


def decode_context(body: bytes) -> tuple[int, np.ndarray]:
    head = _head(body, F.CONTEXT_HEAD, "CONTEXT")
    depth = int(head["depth"])
    if F.CONTEXT_HEAD.itemsize + depth * F.FRAME.itemsize > len(body):
        raise TraceError("corrupt trace: a context record is shorter than its depth")
    frames = np.frombuffer(body, dtype=F.FRAME, count=depth, offset=F.CONTEXT_HEAD.itemsize)
    return int(head["id"]), frames


def decode_named(body: bytes, head_dtype: np.dtype) -> dict:
    what = "COUNTER_DEF" if head_dtype is F.COUNTER_DEF_HEAD else "NAME"
    head = _head(body, head_dtype, what)
    position = head_dtype.itemsize
    if head_dtype is F.COUNTER_DEF_HEAD:
        name_len, unit_len = int(head["name_len"]), int(head["unit_len"])
        name = _bytes_at(body, position, name_len, what).decode("utf-8", "replace")
        unit = _bytes_at(body, position + name_len, unit_len, what).decode("utf-8", "replace")
        return {"id": int(head["id"]), "name": name, "unit": unit}
    return {"id": int(head["id"]),
            "name": _bytes_at(body, position, int(head["len"]), what).decode("utf-8", "replace")}


# --- the recording -------------------------------------------------------------------------

def _gather(parts: list[np.ndarray], name: str, dtype: np.dtype) -> np.ndarray:
    """One field of many record arrays as one contiguous column (a single copy)."""
    if not parts:
        return np.zeros(0, dtype=dtype.fields[name][0])
    out = np.empty(sum(len(p) for p in parts), dtype=dtype.fields[name][0])
    position = 0
    for part in parts:
        out[position:position + len(part)] = part[name]
        position += len(part)
    return out


class Trace:
    """A recording: one or more process files and optional counters files.

    Tables are built on first access and cached. Every table carries a `pid` column
    (0 for counters).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.is_dir():
            files = sorted(self.path.glob("*.otr"))
            if not files:
                raise TraceError(f"no trace files (*.otr) in {self.path}")
        elif self.path.exists():
            files = [self.path]
        else:
            raise TraceError(f"no such trace: {self.path}")
        self.files = [read_file(f) for f in files]
        self.warnings = [w for f in self.files for w in f.warnings]
        self._process_files = [f for f in self.files if int(f.header["kind"]) == F.FILE_PROCESS]
        self._perf_files = [f for f in self.files if int(f.header["kind"]) == F.FILE_PERF]
        self._process_files.sort(key=lambda f: (int(f.header["pid"]),
                                                int(f.header["start_mono_ns"])))
        self._number_images()

    def _number_images(self) -> None:
        """A program that execs keeps its pid, so one pid may own several files (images).
        Later images of a pid get their seq and context ids shifted past the earlier ones',
        keeping (pid, seq) and (pid, context) unique across the recording."""
        self._seq_offset: dict[int, int] = {}
        self._ctx_offset: dict[int, int] = {}
        next_seq: dict[int, int] = {}
        next_ctx: dict[int, int] = {}
        for raw in self._process_files:
            pid = int(raw.header["pid"])
            self._seq_offset[id(raw)] = next_seq.get(pid, 0)
            self._ctx_offset[id(raw)] = next_ctx.get(pid, 0)
            seqs = [int(raw.records(tag)["seq"].max()) for tag in (F.TAG_ALLOC, F.TAG_FREE)
                    if len(raw.records(tag))]
            contexts = [decode_context(b)[0] for b in raw.variable.get(F.TAG_CONTEXT, [])]
            next_seq[pid] = self._seq_offset[id(raw)] + (max(seqs) + 1 if seqs else 0)
            next_ctx[pid] = self._ctx_offset[id(raw)] + (max(contexts) if contexts else 0)
            # later images' ids are shifted in their own fields (u64 seq, u32 context)
            if next_seq[pid] >= 1 << 64 or next_ctx[pid] >= 1 << 32:
                raise TraceError(f"corrupt trace: pid {pid}'s images number their objects or "
                                 f"contexts beyond the format's range ({raw.path})")

    # -- processes and metadata --
    @cached_property
    def processes(self) -> list[ProcessInfo]:
        out = []
        for raw in self._process_files:
            header = raw.header
            bodies = raw.variable.get(F.TAG_PROCESS, [])
            info = decode_process(bodies[0]) if bodies else {
                "exe": "", "argv": [], "config": {}}
            out.append(ProcessInfo(
                pid=int(header["pid"]), ppid=int(header["ppid"]), exe=info["exe"],
                argv=info["argv"], config=info["config"],
                start_mono_ns=int(header["start_mono_ns"]),
                start_real_ns=int(header["start_real_ns"]), page_bytes=int(header["page_bytes"]),
                complete=len(raw.records(F.TAG_END)) > 0, path=raw.path))
        return out

    @cached_property
    def start_ns(self) -> int:
        starts = [int(f.header["start_mono_ns"]) for f in self.files]
        return min(starts) if starts else 0

    def _fixed_table(self, tag: int, files: list[RawFile] | None = None) -> pa.Table:
        """Fixed records of one tag from every file, column by column without first
        concatenating whole records (each column is copied once)."""
        files = self._process_files if files is None else files
        dtype = F.FIXED[tag]
        parts: list[np.ndarray] = []
        pids: list[np.ndarray] = []
        for raw in files:
            shift_seq, shift_ctx = self._seq_offset.get(id(raw), 0), self._ctx_offset.get(id(raw), 0)
            for records in raw.fixed.get(tag, []):
                if shift_seq or shift_ctx:
                    records = records.copy()
                    for name in ("seq", "alloc_seq"):
                        if name in records.dtype.names:
                            records[name] += shift_seq
                    if "context" in records.dtype.names:
                        nonzero = records["context"] != 0
                        records["context"][nonzero] += shift_ctx
                parts.append(records)
                pids.append(np.full(len(records), int(raw.header["pid"]), dtype=np.uint32))
        columns = {"pid": pa.array(np.concatenate(pids) if pids else np.zeros(0, np.uint32),
                                   type=pa.uint32())}
        for name in dtype.names:
            if not name.startswith("reserved"):
                columns[name] = pa.array(_gather(parts, name, dtype))
        return pa.table(columns)

    @cached_property
    def allocations(self) -> pa.Table:
        """One row per recorded object, sorted by (pid, seq)."""
        table = self._fixed_table(F.TAG_ALLOC)
        return table.sort_by([("pid", "ascending"), ("seq", "ascending")])

    @cached_property
    def frees(self) -> pa.Table:
        table = self._fixed_table(F.TAG_FREE)
        return table.sort_by([("pid", "ascending"), ("seq", "ascending")])

    @cached_property
    def samples(self) -> pa.Table:
        """Samples in file order (time order per thread; merge-sort by time_ns if needed):
        perf's (perf_samples) when the recording has perf files, else the runtime's."""
        return self.perf_samples if self._perf_files else self.runtime_samples

    @cached_property
    def runtime_samples(self) -> pa.Table:
        """The runtime sampler's samples (the process files)."""
        return self._fixed_table(F.TAG_SAMPLE)

    @cached_property
    def perf_samples(self) -> pa.Table:
        """Samples imported from perf (perf-<pid>.otr, format 1.5+: record --with-perf,
        import-perf); empty when the recording has none."""
        return self._fixed_table(F.TAG_SAMPLE, self._perf_files)

    @cached_property
    def phases(self) -> pa.Table:
        return self._fixed_table(F.TAG_PHASE)

    @cached_property
    def sampler_stats(self) -> pa.Table:
        return self._fixed_table(F.TAG_SAMPLER_STATS)

    @cached_property
    def access_counts(self) -> pa.Table:
        return self._fixed_table(F.TAG_ACCESS_COUNT)

    @cached_property
    def cct_nodes(self) -> pa.Table:
        return self._fixed_table(F.TAG_CCT_NODE)

    @cached_property
    def residency(self) -> pa.Table:
        return self._fixed_table(F.TAG_RESIDENCY)

    @cached_property
    def placements(self) -> pa.Table:
        return self._fixed_table(F.TAG_PLACEMENT)

    @cached_property
    def windows(self) -> pa.Table:
        """Fault-sampler scan windows (format 1.1+; empty for older traces)."""
        return self._fixed_table(F.TAG_WINDOW)

    @cached_property
    def accesses(self) -> pa.Table:
        """The ordered access stream (OBJTIER_TRACE_STREAM, format 1.2+), sorted by
        (pid, order): one interleaving of all threads' loads and stores."""
        return self._fixed_table(F.TAG_ACCESS).sort_by([("pid", "ascending"),
                                                        ("order", "ascending")])

    @cached_property
    def regions(self) -> pa.Table:
        """Code-region markers (objtier_region_begin/end, format 1.3+; empty for older
        traces), in each process file's order."""
        return self._fixed_table(F.TAG_REGION)

    @cached_property
    def site_allocations(self) -> pa.Table:
        """Sampled small blocks (SITE_ALLOC, since 1.4), sorted by (pid, seq)."""
        return self._fixed_table(F.TAG_SITE_ALLOC).sort_by([("pid", "ascending"),
                                                            ("seq", "ascending")])

    @cached_property
    def site_frees(self) -> pa.Table:
        """Frees of sampled small blocks (SITE_FREE, since 1.4), sorted by (pid, seq)."""
        return self._fixed_table(F.TAG_SITE_FREE).sort_by([("pid", "ascending"),
                                                           ("seq", "ascending")])

    @cached_property
    def site_regions(self) -> pa.Table:
        """Watched sites' arena chunks (SITE_REGION, since 1.6; OBJTIER_ARENA_SITES), sorted
        by (pid, addr)."""
        return self._fixed_table(F.TAG_SITE_REGION).sort_by([("pid", "ascending"),
                                                             ("addr", "ascending")])

    @cached_property
    def ends(self) -> pa.Table:
        return self._fixed_table(F.TAG_END)

    @cached_property
    def modules(self) -> pa.Table:
        rows = {k: [] for k in ("pid", "id", "path", "build_id", "base", "start", "end")}
        for raw in self._process_files:
            for body in raw.variable.get(F.TAG_MODULE, []):
                module = decode_module(body)
                rows["pid"].append(int(raw.header["pid"]))
                for key in ("id", "path", "build_id", "base", "start", "end"):
                    rows[key].append(module[key])
        return pa.table({
            "pid": pa.array(rows["pid"], pa.uint32()), "id": pa.array(rows["id"], pa.uint32()),
            "path": pa.array(rows["path"], pa.string()),
            "build_id": pa.array(rows["build_id"], pa.string()),
            "base": pa.array(rows["base"], pa.uint64()),
            "start": pa.array(rows["start"], pa.uint64()),
            "end": pa.array(rows["end"], pa.uint64())})

    @cached_property
    def contexts(self) -> pa.Table:
        """pid, context, key (stable 16-hex key), frames: list of {module, build_id, offset}."""
        pids, ids, keys, frame_lists = [], [], [], []
        for raw in self._process_files:
            pid = int(raw.header["pid"])
            modules = {m["id"]: (m["path"], m["build_id"])  # module ids are per file
                       for m in map(decode_module, raw.variable.get(F.TAG_MODULE, []))}
            for body in raw.variable.get(F.TAG_CONTEXT, []):
                cid, frames = decode_context(body)
                cid += self._ctx_offset.get(id(raw), 0)
                resolved = []
                for module_id, offset in zip(frames["module"].tolist(), frames["offset"].tolist()):
                    path, build_id = modules.get(module_id, ("", ""))
                    resolved.append({"module": path, "build_id": build_id, "offset": offset})
                pids.append(pid)
                ids.append(cid)
                keys.append(context_key([(f["module"], f["offset"]) for f in resolved]))
                frame_lists.append(resolved)
        frame_type = pa.list_(pa.struct([("module", pa.string()), ("build_id", pa.string()),
                                         ("offset", pa.uint64())]))
        return pa.table({"pid": pa.array(pids, pa.uint32()),
                         "context": pa.array(ids, pa.uint32()),
                         "key": pa.array(keys, pa.string()),
                         "frames": pa.array(frame_lists, frame_type)})

    @cached_property
    def counters(self) -> pa.Table:
        """Long form: time_ns, name, unit, value — from every file that defines counters."""
        times, names, units, values = [], [], [], []
        for raw in self.files:
            defs = {d["id"]: d for d in (decode_named(b, F.COUNTER_DEF_HEAD)
                                         for b in raw.variable.get(F.TAG_COUNTER_DEF, []))}
            records = raw.records(F.TAG_COUNTERS)
            if not len(records):
                continue
            # one lookup per distinct id (ids are u32: a table indexed by id could be huge)
            distinct, inverse = np.unique(records["id"], return_inverse=True)
            lookup_names = np.array([defs.get(i, {"name": f"counter{i}"})["name"]
                                     for i in distinct.tolist()], dtype=object)
            lookup_units = np.array([defs.get(i, {"unit": ""})["unit"]
                                     for i in distinct.tolist()], dtype=object)
            times.append(records["time_ns"])
            names.append(lookup_names[inverse])
            units.append(lookup_units[inverse])
            values.append(records["value"])
        if not times:
            return pa.table({"time_ns": pa.array([], pa.uint64()), "name": pa.array([], pa.string()),
                             "unit": pa.array([], pa.string()), "value": pa.array([], pa.int64())})
        return pa.table({"time_ns": pa.array(np.concatenate(times)),
                         "name": pa.array(np.concatenate(names), pa.string()),
                         "unit": pa.array(np.concatenate(units), pa.string()),
                         "value": pa.array(np.concatenate(values))})

    @cached_property
    def names(self) -> dict[tuple[int, int], str]:
        """(pid, name id) -> string, for phase names and other named ids."""
        out = {}
        for raw in self._process_files:
            for body in raw.variable.get(F.TAG_NAME, []):
                named = decode_named(body, F.NAME_HEAD)
                out[(int(raw.header["pid"]), named["id"])] = named["name"]
        return out


def open_trace(path: str | Path) -> Trace:
    """Open a recording directory (proc-*.otr, counters.otr) or a single .otr file."""
    return Trace(path)
