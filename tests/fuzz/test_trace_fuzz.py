"""Fuzzing the trace reader: every corrupt .otr file is a TraceError or a readable trace, never
another exception and never a hang.

Four families of inputs, each from the seed trace (tests/fuzz/seeds.py): truncations, byte
mutations with stale checksums, byte mutations with the checksums recomputed (so that they
reach the record decoders), and files of arbitrary blocks with valid checksums (arbitrary
tags, record sizes, record counts and variable-record bodies).
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from objtier.errors import TraceError
from objtier.trace import format as F
from objtier.trace import open_trace
from objtier.trace.reader import decode_context, decode_module, decode_named, decode_process

from .seeds import fuzz_settings, blocks, fix_checksums, write_counters_trace, write_process_trace

FUZZ = fuzz_settings(100)
TABLES = ("processes", "allocations", "frees", "samples", "phases", "sampler_stats",
          "access_counts", "cct_nodes", "residency", "placements", "windows", "ends",
          "modules", "contexts", "counters", "names", "start_ns")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    root = tmp_path_factory.mktemp("seeds")
    process = write_process_trace(root / "proc-4242.otr").read_bytes()
    counters = write_counters_trace(root / "counters.otr").read_bytes()
    return {"process": process, "counters": counters}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz") / "proc-1.otr"


def read_everything(path) -> str:
    """Open the trace and build every table the commands use. Returns "ok" or "TraceError";
    any other exception fails the test."""
    try:
        trace = open_trace(path)
        for name in TABLES:
            getattr(trace, name)
        for raw in trace.files:  # what `objtier dump` decodes record by record
            for tag, decode in ((F.TAG_PROCESS, decode_process), (F.TAG_MODULE, decode_module),
                                (F.TAG_CONTEXT, decode_context)):
                for body in raw.variable.get(tag, []):
                    decode(body)
            for body in raw.variable.get(F.TAG_COUNTER_DEF, []):
                decode_named(body, F.COUNTER_DEF_HEAD)
            for body in raw.variable.get(F.TAG_NAME, []):
                decode_named(body, F.NAME_HEAD)
    except TraceError as error:
        message = str(error)
        assert message and "\n" not in message, f"not one line: {message!r}"
        return "TraceError"
    return "ok"


def test_the_seeds_are_readable(seeds, scratch):
    for data in seeds.values():
        scratch.write_bytes(data)
        assert read_everything(scratch) == "ok"


@FUZZ
@given(kind=st.sampled_from(["process", "counters"]), data=st.data())
def test_truncated_files(seeds, scratch, kind, data):
    seed = seeds[kind]
    cut = data.draw(st.integers(0, len(seed) - 1))
    scratch.write_bytes(seed[:cut])
    outcome = read_everything(scratch)
    if cut < F.FILE_HEADER.itemsize:
        assert outcome == "TraceError"


@FUZZ
@given(kind=st.sampled_from(["process", "counters"]), data=st.data(),
       fix=st.booleans())
def test_mutated_bytes(seeds, scratch, kind, data, fix):
    seed = seeds[kind]
    mutated = bytearray(seed)
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(seed) - 1), st.integers(0, 255)),
                               min_size=1, max_size=8))
    for position, value in edits:
        mutated[position] = value
    if fix:
        fix_checksums(mutated, blocks(seed))
    scratch.write_bytes(bytes(mutated))
    read_everything(scratch)


@FUZZ
@given(data=st.data())
def test_mutated_fields_of_block_headers(seeds, scratch, data):
    """Block header fields set to extreme values: huge counts and sizes, unknown tags."""
    seed = seeds["process"]
    layout = blocks(seed)
    mutated = bytearray(seed)
    offset, _, _ = data.draw(st.sampled_from(layout))
    field = data.draw(st.sampled_from(["tag", "record_size", "payload_bytes", "record_count"]))
    fmt = {"tag": "<H", "record_size": "<H", "payload_bytes": "<I", "record_count": "<I"}[field]
    limit = (1 << 16) - 1 if fmt == "<H" else (1 << 32) - 1
    value = data.draw(st.one_of(st.integers(0, 64), st.integers(limit - 64, limit),
                                st.integers(0, limit)))
    struct.pack_into(fmt, mutated, offset + F.BLOCK_HEADER.fields[field][1], value)
    scratch.write_bytes(bytes(mutated))
    read_everything(scratch)


@FUZZ
@given(data=st.data())
def test_mutated_file_header(seeds, scratch, data):
    seed = seeds["process"]
    mutated = bytearray(seed)
    field = data.draw(st.sampled_from([n for n in F.FILE_HEADER.names if n != "reserved"]))
    dtype, offset = F.FILE_HEADER.fields[field][:2]
    raw = data.draw(st.binary(min_size=dtype.itemsize, max_size=dtype.itemsize))
    mutated[offset:offset + dtype.itemsize] = raw
    scratch.write_bytes(bytes(mutated))
    read_everything(scratch)


def _block(tag: int, record_size: int, count: int, payload: bytes) -> bytes:
    header = np.zeros(1, dtype=F.BLOCK_HEADER)
    header["magic"], header["tag"], header["record_size"] = F.BLOCK_MAGIC, tag, record_size
    header["payload_bytes"], header["record_count"] = len(payload), count
    header["crc32"] = zlib.crc32(payload)
    return header.tobytes() + payload


_TAGS = st.one_of(st.sampled_from(sorted(F.TAG_NAMES)), st.integers(0, (1 << 16) - 1))
_BODY = st.binary(max_size=96)


@st.composite
def _blocks(draw):
    """One block with a valid checksum: fixed records of any size and count, or variable
    records whose length prefixes may lie."""
    tag = draw(_TAGS)
    if tag in F.VARIABLE or draw(st.booleans()):
        bodies = draw(st.lists(st.tuples(_BODY, st.one_of(st.none(), st.integers(0, 1 << 32 - 1))),
                               max_size=4))
        payload = b"".join(struct.pack("<I", len(b) if claim is None else claim) + b
                           + b"\0" * (-len(b) % 8) for b, claim in bodies)
        count = draw(st.one_of(st.just(len(bodies)), st.integers(0, (1 << 32) - 1)))
        return _block(tag, 0, count, payload)
    dtype = F.FIXED.get(tag)
    size = draw(st.one_of(st.just(dtype.itemsize if dtype else 8), st.integers(0, 200)))
    count = draw(st.one_of(st.integers(0, 8), st.integers(0, (1 << 32) - 1)))
    payload = draw(st.binary(max_size=8 * max(size, 1)))
    return _block(tag, size, count, payload)


@FUZZ
@given(blocks_=st.lists(_blocks(), min_size=1, max_size=6),
       kind=st.sampled_from([F.FILE_PROCESS, F.FILE_COUNTERS, 7]),
       minor=st.sampled_from([0, F.VERSION_MINOR, F.VERSION_MINOR + 1]))
def test_arbitrary_blocks_with_valid_checksums(seeds, scratch, blocks_, kind, minor):
    header = bytearray(seeds["process"][:F.FILE_HEADER.itemsize])
    struct.pack_into("<H", header, F.FILE_HEADER.fields["kind"][1], kind)
    struct.pack_into("<H", header, F.FILE_HEADER.fields["version_minor"][1], minor)
    scratch.write_bytes(bytes(header) + b"".join(blocks_))
    read_everything(scratch)


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    import os

    fifo = tmp_path / "proc-1.otr"
    os.mkfifo(fifo)
    with pytest.raises(TraceError, match="not a regular file"):
        open_trace(fifo)
    with pytest.raises(TraceError, match="not a regular file"):
        open_trace(tmp_path)  # a recording directory holding it


def test_two_images_numbered_past_the_format_range_are_refused(tmp_path):
    """A pid whose first image claims the largest sequence number cannot have a second."""
    from objtier.trace.writer import TraceWriter

    for start, seq in ((1, (1 << 64) - 1), (2, 0)):
        with TraceWriter(tmp_path / f"proc-7.{start}.otr", pid=7, start_mono_ns=start) as w:
            w.alloc(start, seq, 0x1000, 4096)
    with pytest.raises(TraceError, match="beyond the format's range"):
        open_trace(tmp_path)
