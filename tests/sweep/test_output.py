"""sweep.json/csv/parquet from hand-made records: layout, modes, labels, resume read-back."""

from __future__ import annotations

import json
import stat

import pyarrow.parquet as pq
import pytest

from objtier.errors import UsageError
from objtier.sweep.levels import parse_int_list, parse_knob, parse_levels
from objtier.sweep.output import (LevelInfo, RunRecord, build_document, prepare_output,
                                  read_records, write_files)


def record(order, level, fom, kind="real", threads=None, status="ok"):
    return RunRecord(order=order, threads=threads, level=level, label=f"{level:g}%",
                     repeat=1, kind=kind, applied=f"{level:g}% = {int(level)} MiB",
                     status=status, returncode=0 if fom is not None else 137, fom=fom,
                     unit="MB/s", wall_s=1.0, reason=None if fom else "OOM-killed",
                     extra={"stat_flush_reads": 12})


def test_files_have_the_documented_layout_and_private_modes(tmp_path):
    out = tmp_path / "sw"
    prepare_output(out)
    levels = [LevelInfo(100, "100%", "real", "100%"), LevelInfo(50, "50%", "real", "50%")]
    records = [record(1, 100, 10.0), record(2, 50, 4.0), record(3, 100, 10.0),
               record(4, 50, None, status="OOM-killed")]
    doc, metrics = build_document(records, levels, [None], {"knob": "local", "kind": "real",
                                                            "fom": {"unit": "MB/s"}}, True)
    paths = write_files(out, doc, records)
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    for path in paths:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    saved = json.loads((out / "sweep.json").read_text())
    assert saved["knob"] == "local"
    assert [lv["level"] for lv in saved["levels"]] == [100, 50]
    assert saved["levels"][1]["fom"] == [4.0, None]
    assert saved["levels"][1]["failures"] == ["OOM-killed"]
    assert saved["levels"][1]["kind"] == "real"
    assert saved["thresholds"] == {"90": 50, "75": 50, "50": 50}
    assert saved["levels"][0]["measured"] == {"stat_flush_reads": [12, 12]}
    table = pq.read_table(out / "sweep.parquet")
    assert table.num_rows == 4 and set(table.column("kind").to_pylist()) == {"real"}
    back = read_records(out)
    assert [r.fom for r in back] == [10.0, 4.0, 10.0, None]
    assert back[0].extra == {"stat_flush_reads": 12}


def test_threads_series_each_get_a_metric(tmp_path):
    levels = [LevelInfo(100, "100%", "emulated", "-"), LevelInfo(10, "10%", "emulated", "-")]
    # two runs per level: one run shows no noise, and no threshold is declared on it
    records = [record(i + 1, level, fom, "emulated", threads) for i, (level, fom, threads) in
               enumerate([(100, 10.0, 1), (10, 9.5, 1), (100, 20.0, 2), (10, 5.0, 2)] * 2)]
    doc, metrics = build_document(records, levels, [1, 2], {"knob": "mba"}, True)
    assert [s["threads"] for s in doc["series"]] == [1, 2]
    assert doc["series"][0]["thresholds"]["90"] is None
    assert doc["series"][0]["threshold_status"]["90"]["status"] == "not reached"
    assert doc["series"][1]["thresholds"]["90"] == 10
    assert doc["series"][1]["threshold_status"]["90"] == {
        "status": "reached", "level": 10, "label": "10%", "noise": [], "repeats_needed": None,
        "reason": ""}
    assert doc["series"][1]["levels"][1]["ratio_ci"] == [0.25, 0.25]
    assert doc["series"][1]["levels"][1]["sides"] == {"90": "below", "75": "below",
                                                      "50": "below"}
    assert doc["thresholds"] == doc["series"][0]["thresholds"]
    assert doc["threshold_status"] == doc["series"][0]["threshold_status"]
    # one run per level: nothing is resolved, and sweep.json says so with the reason
    one, _ = build_document(records[:4], levels, [1, 2], {"knob": "mba"}, True)
    status = one["series"][1]["threshold_status"]["90"]
    assert status["status"] == "not resolved" and status["level"] is None
    assert status["label"] == "not resolved (noise)" and "no noise" in status["reason"]
    assert one["series"][1]["levels"][1]["sides"]["90"] == "noise"


def test_output_directory_rules(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    with pytest.raises(UsageError, match="not empty"):
        prepare_output(other)
    with pytest.raises(UsageError, match="not a sweep directory"):
        prepare_output(other, force=True)
    with pytest.raises(UsageError, match="does not exist"):
        prepare_output(tmp_path / "new", resume=True)


def test_level_lists():
    assert parse_levels("100,90,80", "local") == [100, 90, 80]
    assert parse_levels("100%:60%:-20", "local") == [100, 80, 60]
    assert parse_levels("1:4:1", "t") == [1, 2, 3, 4]
    assert parse_levels("100,70:50:-10", "x") == [100, 70, 60, 50]
    for bad in ("", "a,b", "100,,90", "1:2", "10:1:1", "5,5", "1:2:0"):
        with pytest.raises(UsageError):
            parse_levels(bad, "local")
    assert parse_knob("local=1,2") == ("local", "1,2")
    with pytest.raises(UsageError, match="KNOB=LEVELS"):
        parse_knob("local")
    assert parse_int_list("1,2", "--threads") == [1, 2]
    with pytest.raises(UsageError):
        parse_int_list("0,1.5", "--threads")


def test_a_link_to_a_sweep_directory_is_refused_in_one_line(tmp_path):
    real = tmp_path / "real"
    prepare_output(real)
    (real / "sweep.json").write_text("{}")
    link = tmp_path / "link"
    link.symlink_to(real)
    for kwargs in ({}, {"force": True}, {"resume": True}):
        with pytest.raises(UsageError, match="symbolic link"):
            prepare_output(link, **kwargs)
    assert (real / "sweep.json").exists()   # nothing behind the link was touched
