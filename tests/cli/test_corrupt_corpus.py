"""The corrupt inputs of tests/fixtures/corrupt/ through the command line: each trace and each
plan is refused with its one-line message (or, for a trace cut inside its last block, read
with a warning), never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import assert_one_line_error, assert_one_line_refusal, call, objtier

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corrupt"

TRACES = {
    "empty.otr": "not an objtier trace",
    "short-header.otr": "cut short inside its header",
    "bad-magic.otr": "bad magic",
    "version-9.otr": "format version 9",
    "big-endian.otr": "big-endian or 32-bit",
    "header-bytes-0.otr": "header size 0",
    "bad-block-magic.otr": "bad block magic",
    "bad-checksum.otr": "fails its checksum",
    "huge-count.otr": "claims 4294967295 records",
    "short-record-size.otr": "ALLOC records of 8 bytes",
    "lying-process-length.otr": "PROCESS record is shorter than its fields say",
    "lying-context-depth.otr": "context record is shorter than its depth",
    "unknown-tag.otr": "unknown record tag 999",
}
PLANS = {
    "not-json.json": "bad JSON",
    "not-utf8.json": "not UTF-8",
    "not-a-plan.json": "not an objtier plan",
    "size-max-1e30.json": "size_max must be an integer from 0 to",
    "size-max-10e30.json": "size_max must be an integer from 0 to",
    "budget-negative.json": "budget bytes must be from 1",
    "budget-zero.json": "budget bytes must be from 1",
    "budget-string.json": "no valid budget",
    "occurrence-negative.json": "occurrence must be null or an integer from 0",
    "tier-unknown.json": "tier must be one of",
    "phase-unhashable.json": "unknown phase",
    "ranges-overlap.json": "sorted disjoint",
    "version-2.json": "schedules were removed",
    "key-with-newline.json": "context_key must be 16 lowercase hex digits",
    "lone-surrogate-phase.json": "not valid Unicode",
}


def test_the_corpus_is_complete():
    on_disk = {p.name for p in CORPUS.iterdir() if p.suffix in (".otr", ".json")}
    assert on_disk == set(TRACES) | set(PLANS) | {"truncated-mid-block.otr"}


@pytest.mark.parametrize("name", sorted(TRACES))
@pytest.mark.parametrize("command", ["objects", "dump"])
def test_corrupt_traces_are_one_line_errors(capsys, command, name):
    # `objects` reads the whole trace into tables, `dump` record by record
    code, stderr = call(capsys, command, "--no-symbols", CORPUS / name)
    assert_one_line_refusal(code, stderr, TRACES[name])
    assert code == 3  # TraceError


def test_the_installed_entry_point_gives_the_same_one_line_errors():
    run = objtier("objects", CORPUS / "lying-process-length.otr")
    assert_one_line_error(run, TRACES["lying-process-length.otr"])
    run = objtier("run", "--plan", CORPUS / "size-max-10e30.json", "--", "true")
    assert_one_line_error(run, PLANS["size-max-10e30.json"])


def test_a_trace_cut_inside_its_last_block_is_read_with_a_warning(capsys):
    from objtier.cli import main

    assert main(["dump", "--no-symbols", str(CORPUS / "truncated-mid-block.otr")]) == 0
    out = capsys.readouterr()
    assert "ALLOC" in out.out and "is cut short" in out.err


@pytest.mark.parametrize("name", sorted(PLANS))
def test_corrupt_plans_are_one_line_errors(capsys, name):
    # `run` reads the plan before it starts the program; `simulate --plan` reads it too
    code, stderr = call(capsys, "run", "--plan", CORPUS / name, "--", "true")
    assert_one_line_refusal(code, stderr, PLANS[name])
    code, stderr = call(capsys, "simulate", CORPUS / "truncated-mid-block.otr", "--fast",
                        "50%", "--policy", "object", "--plan", CORPUS / name)
    assert_one_line_refusal(code, stderr, PLANS[name])
