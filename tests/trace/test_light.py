"""The plain-Python reader of `record`'s summary (objtier.trace.light) against the columnar one:
the same layouts, the same bytes for the counters file, and the same summary facts for real
recordings (objects freed whole, unmapped in part, a forked child, a cut-short trace)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from objtier.commands import record as R
from objtier.trace import format as F
from objtier.trace import light as L
from objtier.trace.writer import TraceWriter

LAYOUTS = {"FILE_HEADER": "FILE_HEADER", "BLOCK_HEADER": "BLOCK_HEADER", "ALLOC": "ALLOC",
           "FREE": "FREE", "COUNTER": "COUNTER", "END": "END", "ACCESS_COUNT": "ACCESS_COUNT",
           "SITE_ALLOC": "SITE_ALLOC", "SITE_FREE": "SITE_FREE", "SITE_REGION": "SITE_REGION",
           "PROCESS_HEAD": "PROCESS_HEAD", "COUNTER_DEF_HEAD": "COUNTER_DEF_HEAD",
           "CONTEXT_HEAD": "CONTEXT_HEAD"}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_struct_layouts_are_the_dtypes(name):
    """Each struct decodes a record the same as its numpy dtype (fields in order; the header's
    reserved array is padding)."""
    layout, dtype = getattr(L, name), getattr(F, LAYOUTS[name])
    assert layout.size == dtype.itemsize
    record = bytes((7 * i + 3) % 251 for i in range(dtype.itemsize))
    fields = [n for n in dtype.names if not dtype[n].shape]
    decoded = list(layout.unpack(record))
    value = np.frombuffer(record, dtype=dtype)[0]
    expected = [bytes(value[n]) if dtype[n].kind == "S" else int(value[n]) for n in fields]
    if name == "FILE_HEADER":
        expected[0] = expected[0].ljust(8, b"\0")
    assert decoded == expected


def test_constants_and_record_sizes_match_the_format():
    assert (L.MAGIC, L.VERSION_MAJOR, L.BLOCK_MAGIC) == (F.MAGIC, F.VERSION_MAJOR, F.BLOCK_MAGIC)
    assert L.VERSION_MINOR <= F.VERSION_MINOR
    for tag, size in L.FIXED_BYTES.items():
        assert F.FIXED[tag].itemsize == size, F.TAG_NAMES[tag]
    assert L.VARIABLE == F.VARIABLE
    for name in ("PROCESS", "MODULE", "CONTEXT", "ALLOC", "FREE", "SAMPLE", "COUNTER_DEF",
                 "COUNTERS", "END", "ACCESS_COUNT", "SITE_ALLOC", "SITE_FREE", "SITE_REGION"):
        assert getattr(L, f"TAG_{name}") == getattr(F, f"TAG_{name}")
    assert (L.FILE_PROCESS, L.FILE_COUNTERS, L.FILE_PERF) == (
        F.FILE_PROCESS, F.FILE_COUNTERS, F.FILE_PERF)


def test_counters_file_writes_what_trace_writer_writes(tmp_path):
    """record.counters.CountersFile and TraceWriter(kind="counters"): the same blocks for the
    same calls (several COUNTERS blocks, a flush in between, the END record)."""
    from objtier.record.counters import CountersFile

    ours = CountersFile(tmp_path / "ours.otr")
    theirs = TraceWriter(tmp_path / "theirs.otr", kind="counters", pid=0)

    names = [f"c{i}" for i in range(40)]
    for i, name in enumerate(names, 1):
        ours.counter_def(i, name, "bytes" if i % 2 else "events")
        theirs.counter_def(i, name, "bytes" if i % 2 else "events")
    for step in range(150):  # 6000 records: more than one 64 KiB block
        values = [step * 1000 + i - 7 for i in range(40)]
        ours.counters(10_000 + step, list(range(1, 41)), values)
        records = np.zeros(40, dtype=F.COUNTER)
        records["time_ns"], records["id"], records["value"] = 10_000 + step, range(1, 41), values
        theirs.fixed(F.TAG_COUNTERS, records)
        if step == 70:
            ours.flush()
            theirs.flush()
    ours.close()
    theirs.close()
    a, b = (tmp_path / "ours.otr").read_bytes(), (tmp_path / "theirs.otr").read_bytes()
    header = F.FILE_HEADER
    ha, hb = np.frombuffer(a, header, 1)[0], np.frombuffer(b, header, 1)[0]
    for field in header.names:
        if field not in ("start_mono_ns", "start_real_ns", "version_minor"):
            assert np.array_equal(ha[field], hb[field]), field
    end = F.BLOCK_HEADER.itemsize + F.END.itemsize
    assert a[header.itemsize:-end] == b[header.itemsize:-end]    # every block but END
    from objtier.trace.reader import read_file

    raw = read_file(tmp_path / "ours.otr")
    assert int(raw.records(F.TAG_END)["records"][0]) == 40 + 6000
    assert raw.records(F.TAG_COUNTERS)["value"].tolist()[-1] == 149 * 1000 + 39 - 7


PROGRAM = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char *kept = malloc(3 << 20), *freed = malloc(1 << 20);
    memset(kept, 1, 3 << 20); memset(freed, 2, 1 << 20);
    free(freed);
    size_t len = 16 * 4096;
    char *map = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(map, 3, len);
    munmap(map + 4 * 4096, 4 * 4096);          /* a hole: two pieces remain */
    char *map2 = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(map2, 4, len);
    munmap(map2, len);                          /* a whole unmap */
    if (argc > 1) {
        pid_t child = fork();
        if (child == 0) {
            char *c = malloc(2 << 20); memset(c, 5, 2 << 20);
            usleep(150000);
            _exit(0);
        }
        waitpid(child, 0, 0);
    }
    usleep(250000);                             /* a few counters samples */
    printf("%d\n", kept[5] + map[0]);
    return 0;
}
"""


def _record(out: Path, *args: str, min_size: str = "4096", env: dict | None = None) -> None:
    run = subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "-f",
                          "--min-size", min_size, "--counters-interval", "20", "-o", str(out),
                          *args], capture_output=True, text=True,
                         env={**os.environ, **(env or {})})
    assert run.returncode == 0, run.stderr


def _both(out: Path, children: dict[int, str] | None = None):
    light = R._facts_light(out, children or {}, False, True)
    full = R._facts(out, children or {}, False, True, lambda text: None)
    assert light is not None and full is not None
    return light, full


@pytest.mark.parametrize("variant", [["--sampler", "none"], ["--sampler", "fault"],
                                     ["--sampler", "fault", "--follow-forks"]])
def test_light_facts_are_the_columnar_facts(compile_c, tmp_path, variant):
    exe = compile_c(PROGRAM, "objects")
    out = tmp_path / "run.otr"
    forks = "--follow-forks" in variant
    _record(out, *variant, "--", str(exe), *(["fork"] if forks else []))
    light, full = _both(out)
    assert light == full
    assert light.objects >= 4 and light.coverage.footprint_bytes
    assert light.coverage.objects_bytes >= 3 << 20        # the kept block at the peak at least
    assert light.processes == (2 if forks else 1)
    from objtier.trace import open_trace

    sizes = open_trace(out).frees.column("size").to_pylist()
    assert any(s not in (0, 16 * 4096) for s in sizes)   # the hole was a partial unmap


def test_a_launcher_hint_is_the_same(compile_c, tmp_path):
    exe = compile_c(PROGRAM, "objects")
    out = tmp_path / "run.otr"
    _record(out, "--sampler", "none", "--", "/bin/sh", "-c", f"{exe} fork; true",
            min_size="128K")
    children = {12345: "objects"}
    light, full = _both(out, children)
    assert light == full and light.hint and "--follow-forks" in light.hint


def test_sampled_small_blocks_are_the_same(compile_c, tmp_path):
    """A shell's small blocks, every one sampled (SITE_ALLOC records, OBJTIER_SITE_PERIOD=1)
    and some freed, estimated at the peak."""
    exe = compile_c(PROGRAM, "objects")
    out = tmp_path / "run.otr"
    _record(out, "--sampler", "none", "--", "/bin/sh", "-c", f"{exe} fork; true",
            env={"OBJTIER_SITE_PERIOD": "1"})
    light, full = _both(out)
    assert light == full and light.coverage.sites_bytes is not None


def test_many_small_blocks_go_to_the_columnar_reader(compile_c, tmp_path, monkeypatch):
    """Past LIMIT_SITE_RECORDS small-block records the plain reader declines (its live ranges
    in Python would cost more than the columnar reader's imports); the summary comes from the
    columnar reader, whole."""
    exe = compile_c(PROGRAM, "objects")
    out = tmp_path / "run.otr"
    _record(out, "--sampler", "none", "--overhead", "0", "--", "/bin/sh", "-c",
            f"{exe} fork; true", env={"OBJTIER_SITE_PERIOD": "1"})
    records = sum(len(f.decoded(L.TAG_SITE_ALLOC, L.SITE_ALLOC)) +
                  len(f.decoded(L.TAG_SITE_FREE, L.SITE_FREE)) for f in L.LightTrace(out).files)
    assert records > 10
    monkeypatch.setattr(L, "LIMIT_SITE_RECORDS", records - 1)
    with pytest.raises(L.Unsupported):
        L.LightTrace(out)
    assert R._facts_light(out, {}, False, True) is None
    full = R._facts(out, {}, False, True, lambda text: None)
    assert full is not None and full.coverage.sites_bytes is not None


@pytest.mark.root
def test_watched_sites_arenas_are_the_same(compile_c, tmp_path):
    """A recording that watched two sites (SITE_REGION records of their arena chunks, read by
    the pageout sampler): the plain reader reads it, and says what the columnar one says."""
    from objtier.record.sampler_choice import perf_permitted

    if not perf_permitted()[0]:
        pytest.skip("perf_event_open is not permitted")
    source = Path(__file__).resolve().parent.parent / "runtime" / "watch_program.c"
    exe = compile_c(source.read_text(), "watch_program")
    out = tmp_path / "run.otr"
    _record(out, "--sampler", "pageout", "--overhead", "0", "--sites", "2", "--", str(exe),
            "20000", "50")
    light, full = _both(out)
    assert light == full
    assert light.coverage.watched_sites_bytes and light.coverage.watched_sites_bytes >= 4 << 20


def test_a_cut_short_trace_goes_to_the_columnar_reader(compile_c, tmp_path):
    exe = compile_c(PROGRAM, "objects")
    out = tmp_path / "run.otr"
    _record(out, "--sampler", "none", "--", str(exe))
    (proc,) = out.glob("proc-*.otr")
    data = proc.read_bytes()
    proc.write_bytes(data[:-10])              # the END block cut short
    assert R._facts_light(out, {}, False, True) is None
    said: list[str] = []
    R.summarize(out, 1.0, 0, said.append)
    assert any("warning:" in line and "cut short" in line for line in said)


def test_the_record_path_imports_neither_numpy_nor_pyarrow(tmp_path):
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "objtier", "record", "-q",
                          "--sampler", "none", "-o", str(tmp_path / "t.otr"), "--", "true"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    modules = {line.split("|")[-1].strip() for line in run.stderr.splitlines()
               if line.startswith("import time:")}
    assert "objtier.trace.light" in modules          # the summary was read, by this reader
    assert not {"numpy", "pyarrow"} & modules
