"""A recording read in plain Python (struct and zlib, no numpy or pyarrow): what `objtier
record` needs for its closing summary, without the 0.2 s or so (measured on the 2-CPU test VM)
that importing the columnar reader (objtier.trace.reader: numpy, pyarrow) costs before it
reads a byte.

It reads only what it can read exactly as the columnar reader would: a recording with anything
unusual — a partial or corrupt block, a record tag or a record size this module does not know
(a newer minor version is read when its records are all known ones), more records to decode
than LIMIT_RECORDS or small blocks than LIMIT_SITE_RECORDS, many partial unmaps — raises
Unsupported, and the caller uses the columnar reader, which reports the problem in its own
words. Fixed records are counted from the block headers; only ALLOC, FREE, COUNTERS,
ACCESS_COUNT, SITE_ALLOC/SITE_FREE and SITE_REGION records are decoded (never SAMPLE records).
The record layouts are those of native/include/objtier/trace_format.h;
tests/trace/test_light.py checks them against objtier.trace.format and compares what both
readers give for real recordings.
"""

from __future__ import annotations

import stat
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"OBJTIER\0"
VERSION_MAJOR = 1
VERSION_MINOR = 5   # what CountersFile (record.counters) writes; any minor is read (see below)
BLOCK_MAGIC = 0x4B42544F
FILE_PROCESS, FILE_COUNTERS, FILE_PERF = 1, 2, 3
TAG_PROCESS, TAG_MODULE, TAG_CONTEXT, TAG_ALLOC, TAG_FREE, TAG_SAMPLE = 1, 2, 3, 4, 5, 6
TAG_COUNTER_DEF, TAG_COUNTERS, TAG_END, TAG_ACCESS_COUNT = 7, 8, 12, 13
TAG_SITE_ALLOC, TAG_SITE_FREE, TAG_SITE_REGION = 20, 21, 22
VARIABLE = frozenset({TAG_PROCESS, TAG_MODULE, TAG_CONTEXT, TAG_COUNTER_DEF, 10})
# bytes of each fixed record (format 1.6), by tag
FIXED_BYTES = {4: 48, 5: 40, 6: 40, 8: 24, 9: 24, 11: 48, 12: 24, 13: 40, 14: 32, 15: 32,
               16: 48, 17: 48, 18: 40, 19: 32, 20: 48, 21: 32, 22: 48}

FILE_HEADER = struct.Struct("<8sHHHBBHHIIIQQ16x")
BLOCK_HEADER = struct.Struct("<IHHIIII")
ALLOC = struct.Struct("<QQQQIIHHI")      # time_ns seq addr size tid context kind flags -
FREE = struct.Struct("<QQQQIHH")         # time_ns seq addr size tid kind flags
COUNTER = struct.Struct("<QIIq")         # time_ns id - value
END = struct.Struct("<QQII")             # time_ns records exit_status -
ACCESS_COUNT = struct.Struct("<QIIQQQ")  # alloc_seq cct_node - loads stores llc_misses
SITE_ALLOC = struct.Struct("<QQQQIIIHH")  # time_ns seq addr size tid context period kind flags
SITE_FREE = struct.Struct("<QQQIHH")     # time_ns seq addr tid kind flags
SITE_REGION = struct.Struct("<QQQQQII")  # time_ns seq addr len key context site
PROCESS_HEAD = struct.Struct("<IIQII")   # pid ppid time_ns argc config_len
COUNTER_DEF_HEAD = struct.Struct("<IHH")  # id unit_len name_len
CONTEXT_HEAD = struct.Struct("<II")      # id depth (then depth frames of 16 bytes)

# Records decoded at most (the _DECODED tags); 1,000,000 is the counters of a recording of about
# 37 minutes. Measured 2026-12-02 (load 4.7) on 198,000 COUNTERS records: 0.27 s here against
# 1.5 s for the columnar reader plus 0.4 s of imports, so the limit only bounds memory.
LIMIT_RECORDS = 1_000_000
# SITE_ALLOC + SITE_FREE records at most: the small blocks' live ranges (coverage_light) cost
# about 2.8 us a record in Python; measured 2026-12-02 (load 0.8) on 600,000 of them: 1.7 s
# here against 0.22 s for the columnar reader, its imports included. At 50,000, 0.14 s.
LIMIT_SITE_RECORDS = 50_000
LIMIT_UNMAP_STEPS = 2_000_000   # partial unmaps x live ranges scanned in Python at most
NEVER = (1 << 64) - 1


class Unsupported(Exception):
    """The recording needs the columnar reader (see the module docstring)."""


@dataclass
class LightFile:
    path: Path
    kind: int
    pid: int
    ppid: int
    start_mono_ns: int
    start_real_ns: int
    counts: dict[int, int] = field(default_factory=dict)       # tag -> records
    payloads: dict[int, list[tuple[bytes, int]]] = field(default_factory=dict)  # tag -> (data, n)
    variable: dict[int, list[bytes]] = field(default_factory=dict)

    def decoded(self, tag: int, layout: struct.Struct) -> list[tuple]:
        out: list[tuple] = []
        for data, count in self.payloads.get(tag, []):
            out.extend(layout.iter_unpack(data[:count * layout.size]))
        return out


_DECODED = (TAG_ALLOC, TAG_FREE, TAG_COUNTERS, TAG_ACCESS_COUNT, TAG_SITE_ALLOC, TAG_SITE_FREE,
            TAG_SITE_REGION)


def read_light(path: Path, budget: list[int]) -> LightFile:
    """One .otr file; budget[0] is what is left of LIMIT_RECORDS (decoded records)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise Unsupported
        data = path.read_bytes()
    except OSError:
        raise Unsupported from None
    if len(data) < FILE_HEADER.size:
        raise Unsupported
    (magic, major, minor, header_bytes, endianness, pointer_bytes, _arch, kind, pid, ppid,
     _page, start_mono, start_real) = FILE_HEADER.unpack_from(data)
    if (magic != MAGIC or major != VERSION_MAJOR or endianness != 1
            or pointer_bytes != 8 or header_bytes < FILE_HEADER.size):
        raise Unsupported
    out = LightFile(path, kind, pid, ppid, start_mono, start_real)
    offset, end = header_bytes, len(data)
    view = memoryview(data)
    while offset < end:
        if end - offset < BLOCK_HEADER.size:
            raise Unsupported  # a partial block: the columnar reader warns about it
        magic, tag, record_size, payload_bytes, count, crc, _ = BLOCK_HEADER.unpack_from(
            data, offset)
        start = offset + BLOCK_HEADER.size
        if magic != BLOCK_MAGIC or start + payload_bytes > end:
            raise Unsupported
        payload = view[start:start + payload_bytes]
        if zlib.crc32(payload) != crc:
            raise Unsupported
        if tag in FIXED_BYTES:
            if record_size != FIXED_BYTES[tag] or count * record_size > payload_bytes:
                raise Unsupported
            out.counts[tag] = out.counts.get(tag, 0) + count
            if tag in _DECODED:
                budget[0] -= count
                if budget[0] < 0:
                    raise Unsupported
                out.payloads.setdefault(tag, []).append((bytes(payload), count))
        elif tag in VARIABLE:
            bodies = out.variable.setdefault(tag, [])
            position, stop = start, start + payload_bytes
            for _ in range(count):
                if position + 4 > stop:
                    raise Unsupported
                (length,) = struct.unpack_from("<I", data, position)
                if position + 4 + length > stop:
                    raise Unsupported
                bodies.append(data[position + 4:position + 4 + length])
                position += 4 + ((length + 7) & ~7)
        else:
            raise Unsupported
        offset = start + payload_bytes
    for body in out.variable.get(TAG_CONTEXT, []):  # the columnar reader decodes these at open
        if len(body) < CONTEXT_HEAD.size or \
                CONTEXT_HEAD.size + CONTEXT_HEAD.unpack_from(body)[1] * 16 > len(body):
            raise Unsupported
    return out


def _string_at(body: bytes, position: int) -> tuple[str, int]:
    if position + 4 > len(body):
        raise Unsupported
    (length,) = struct.unpack_from("<I", body, position)
    if position + 4 + length > len(body):
        raise Unsupported
    text = body[position + 4:position + 4 + length].decode("utf-8", "replace")
    return text, position + 4 + length


@dataclass
class LightProcess:
    pid: int
    ppid: int
    exe: str
    config: dict[str, str]
    start_mono_ns: int


def _process(raw: LightFile) -> LightProcess:
    bodies = raw.variable.get(TAG_PROCESS, [])
    if not bodies:
        return LightProcess(raw.pid, raw.ppid, "", {}, raw.start_mono_ns)
    body = bodies[0]
    if len(body) < PROCESS_HEAD.size:
        raise Unsupported
    _, _, _, argc, config_len = PROCESS_HEAD.unpack_from(body)
    exe, position = _string_at(body, PROCESS_HEAD.size)
    if argc > (len(body) - position) // 4:
        raise Unsupported
    for _ in range(argc):
        _, position = _string_at(body, position)
    if position + config_len > len(body):
        raise Unsupported
    text = body[position:position + config_len].decode("utf-8", "replace")
    config = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return LightProcess(raw.pid, raw.ppid, exe, config, raw.start_mono_ns)


def counter_defs(raw: LightFile) -> dict[int, str]:
    """Counter id -> name of one file."""
    out = {}
    for body in raw.variable.get(TAG_COUNTER_DEF, []):
        if len(body) < COUNTER_DEF_HEAD.size:
            raise Unsupported
        counter_id, unit_len, name_len = COUNTER_DEF_HEAD.unpack_from(body)
        if COUNTER_DEF_HEAD.size + name_len + unit_len > len(body):
            raise Unsupported
        out[counter_id] = body[COUNTER_DEF_HEAD.size:COUNTER_DEF_HEAD.size + name_len].decode(
            "utf-8", "replace")
    return out


class LightTrace:
    """A recording directory read by read_light; the attributes mirror objtier.trace.Trace's
    where the record summary uses them (see objtier.commands.record.summarize)."""

    def __init__(self, path: Path):
        files = sorted(path.glob("*.otr")) if path.is_dir() else []
        if not files:
            raise Unsupported
        budget = [LIMIT_RECORDS]
        self.files = [read_light(f, budget) for f in files]
        if self.count(TAG_SITE_ALLOC) + self.count(TAG_SITE_FREE) > LIMIT_SITE_RECORDS:
            raise Unsupported
        self._process_files = sorted((f for f in self.files if f.kind == FILE_PROCESS),
                                     key=lambda f: (f.pid, f.start_mono_ns))
        self._perf_files = [f for f in self.files if f.kind == FILE_PERF]
        self.processes = [_process(f) for f in self._process_files]
        self.start_ns = min(f.start_mono_ns for f in self.files)
        self.warnings: list[str] = []
        self.allocations, self.frees, self.site_allocations, self.site_frees = self._objects()

    def count(self, tag: int, files: list[LightFile] | None = None) -> int:
        return sum(f.counts.get(tag, 0) for f in (self.files if files is None else files))

    @property
    def objects(self) -> int:
        return len(self.allocations)

    @property
    def samples(self) -> int:
        """perf's samples when the recording has perf files, else the runtime's (Trace.samples)."""
        return self.count(TAG_SAMPLE, self._perf_files or self._process_files)

    @property
    def counter_values(self) -> int:
        return self.count(TAG_COUNTERS)

    @property
    def has_sites(self) -> bool:
        return bool(self.site_allocations)

    def live_site_bytes(self, t_ns: int) -> int:
        """analysis.sites.live_site_bytes(trace, t_ns): sampled small blocks live at t_ns,
        each weighted by its sampling period (an estimate of all small blocks)."""
        periods = [a[5] for a in self.site_allocations]
        frees = [(f[0], f[1], f[2], f[3], 0) for f in self.site_frees]
        weights = [float(end - start) * float(periods[obj])
                   for pid, start, end, t_begin, t_end, obj
                   in live_ranges([a[:5] for a in self.site_allocations], frees)
                   if t_begin <= t_ns < t_end]
        return int(sum(weights))   # integers below 2**53: exact in any order

    def watched_site_bytes(self, t_ns: int) -> int | None:
        """analysis.coverage._watched_bytes: bytes of the watched sites' arena chunks made by
        t_ns (SITE_REGION records), None when the recording has none."""
        rows = [r for f in self._process_files for r in f.decoded(TAG_SITE_REGION, SITE_REGION)]
        if not rows:
            return None
        return sum(r[3] for r in rows if r[0] <= t_ns)

    def access_counts(self) -> tuple[int, int, int]:
        """(loads, stores, rows) of the ACCESS_COUNT records."""
        rows = [r for f in self._process_files for r in f.decoded(TAG_ACCESS_COUNT, ACCESS_COUNT)]
        return sum(r[3] for r in rows), sum(r[4] for r in rows), len(rows)

    def _objects(self) -> tuple[list[tuple], ...]:
        """ALLOC, FREE, SITE_ALLOC and SITE_FREE records as (pid, seq, time_ns, addr, size)
        (SITE_ALLOC: and period; SITE_FREE: size 0), each sorted by (pid, seq), the seq of a
        pid's later images shifted past the earlier ones' (Trace._number_images)."""
        out: tuple[list[tuple], ...] = ([], [], [], [])
        next_seq: dict[int, int] = {}
        for raw in self._process_files:
            shift = next_seq.get(raw.pid, 0)
            mine = ([(raw.pid, r[1] + shift, r[0], r[2], r[3])
                     for r in raw.decoded(TAG_ALLOC, ALLOC)],
                    [(raw.pid, r[1] + shift, r[0], r[2], r[3])
                     for r in raw.decoded(TAG_FREE, FREE)],
                    [(raw.pid, r[1] + shift, r[0], r[2], r[3], r[6])
                     for r in raw.decoded(TAG_SITE_ALLOC, SITE_ALLOC)],
                    [(raw.pid, r[1] + shift, r[0], r[2], 0)
                     for r in raw.decoded(TAG_SITE_FREE, SITE_FREE)])
            seqs = [r[1] - shift for r in mine[0] + mine[1]]
            next_seq[raw.pid] = shift + (max(seqs) + 1 if seqs else 0)
            if next_seq[raw.pid] >= 1 << 64 or any(r[1] >= 1 << 64 for part in mine for r in part):
                raise Unsupported
            for whole, part in zip(out, mine):
                whole.extend(part)
        for part in out:
            part.sort(key=lambda r: (r[0], r[1]))
        return out

    def counter_series(self, names: set[str]) -> dict[str, tuple[list[float], list[float]]]:
        """name -> (times [s since start_ns], values) for the named counters, time-sorted
        (a stable sort, as analysis.timeline.counter_series)."""
        points: dict[str, list[tuple[float, float]]] = {}
        for raw in self.files:
            defs = {i: n for i, n in counter_defs(raw).items() if n in names}
            if not defs:
                continue
            for time_ns, counter_id, _, value in raw.decoded(TAG_COUNTERS, COUNTER):
                name = defs.get(counter_id)
                if name is not None:
                    points.setdefault(name, []).append(
                        ((float(time_ns) - self.start_ns) / 1e9, float(value)))
        out = {}
        for name, series in points.items():
            series.sort(key=lambda p: p[0])
            out[name] = ([p[0] for p in series], [p[1] for p in series])
        return out


def live_ranges(allocs: list[tuple], frees: list[tuple]) -> list[list[int]]:
    """analysis.mapping.live_ranges in plain Python: [pid, start, end, t_begin, t_end, obj]
    of every live range (obj: index into allocs), after whole frees and partial unmaps."""
    n = len(allocs)
    end_time = [NEVER] * n
    end_seq = [NEVER] * n
    whole = [i for i, f in enumerate(frees) if f[4] == 0]
    if whole and n:
        # (pid, addr, seq), allocs before frees on ties (np.lexsort is stable)
        events = [(a[0], a[3], a[1], i) for i, a in enumerate(allocs)]
        events += [(frees[k][0], frees[k][3], frees[k][1], -1 - j) for j, k in enumerate(whole)]
        events.sort(key=lambda e: (e[0], e[1], e[2]))
        for prev, cur in zip(events, events[1:]):
            if cur[3] < 0 <= prev[3] and cur[0] == prev[0] and cur[1] == prev[1]:
                free = frees[whole[-1 - cur[3]]]
                end_time[prev[3]], end_seq[prev[3]] = free[2], free[1]
    ranges = []   # pid, start, end, t_begin, t_end, b_seq, e_seq, obj
    for i, (pid, seq, time_ns, addr, size) in enumerate(allocs):
        if size > 0:
            if addr + size >= 1 << 64:
                raise Unsupported  # wraps in uint64 in the columnar code
            ranges.append([pid, addr, addr + size, time_ns, end_time[i], seq, end_seq[i], i])
    partial = sorted((f for f in frees if f[4] != 0), key=lambda f: (f[0], f[1]))
    if len(partial) * (len(ranges) + len(partial)) > LIMIT_UNMAP_STEPS:
        raise Unsupported  # one scan of the ranges per unmap: the columnar code vectorizes it
    if partial and ranges:
        for pid, s, t, lo, size in partial:
            hi = lo + size
            if hi >= 1 << 64:
                raise Unsupported
            hit = [r for r in ranges
                   if r[0] == pid and r[1] < hi and r[2] > lo and r[5] < s and r[6] > s]
            if not hit:
                continue
            pieces = [[r[0], r[1], lo, r[3], r[4], s, r[6], r[7]] for r in hit if r[1] < lo]
            pieces += [[r[0], hi, r[2], r[3], r[4], s, r[6], r[7]] for r in hit if r[2] > hi]
            for r in hit:
                r[4] = min(r[4], t)
                r[6] = s
            ranges += pieces
    return [r[:5] + r[7:] for r in ranges]


def interp(x: float, xp: list[float], fp: list[float]) -> float:
    """numpy.interp for one point (xp ascending)."""
    import bisect

    if x < xp[0]:
        return fp[0]
    if x >= xp[-1]:
        return fp[-1]
    j = bisect.bisect_right(xp, x) - 1
    if xp[j] == x:
        return fp[j]
    slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
    return slope * (x - xp[j]) + fp[j]
