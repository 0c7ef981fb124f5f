"""Medians and ratios of the comparison, and the chart, on synthetic rows (no root needed)."""

from __future__ import annotations

import csv
import math

import pytest

from objtier.experiments.chart import normalized_times, plot_comparison
from objtier.experiments.results import RunRow, summarize, survival_text, write_csv


def row(config, repeat, wall, pswpout, returncode=0, fom=None):
    return RunRow(config=config, repeat=repeat, order=0, returncode=returncode, timed_out=False,
                  wall_s=wall, user_s=wall / 4, system_s=wall / 2,
                  fom_name="x" if fom else None, fom_value=fom,
                  fom_unit="MB/s" if fom else None, fom_seconds=wall - 0.5 if fom else None,
                  pswpin=pswpout // 2, pswpout=pswpout, major_faults=pswpout // 2,
                  max_rss_bytes=100 << 20, memcg_peak_bytes=None, memcg_pgmajfault=None,
                  memcg_refault_anon=None, memcg_pswpout=None, memcg_oom_kills=0,
                  objects_matched=None, placement_actions=None, locked_bytes=None)


def test_medians_skip_failed_runs_and_ratios_are_baseline_over_objtier():
    rows = [row("baseline", 1, 10.0, 900, fom=1.0), row("objtier", 1, 4.0, 300, fom=2.5),
            row("baseline", 2, 12.0, 1000, fom=0.8), row("objtier", 2, 5.0, 200, fom=2.0),
            row("baseline", 3, 11.0, 1100, fom=0.9), row("objtier", 3, 4.5, 250, fom=2.25)]
    summary = summarize(rows)
    base, obj = summary["medians"]["baseline"], summary["medians"]["objtier"]
    assert base["wall_s"] == 11.0 and base["failed"] == 0 and base["runs"] == 3
    assert obj["wall_s"] == 4.5 and obj["finished"] == 3
    assert (base["user_s"], base["system_s"]) == (11.0 / 4, 11.0 / 2)
    assert summary["ratios_withheld"] is None
    assert summary["ratios"]["speedup"] == pytest.approx(11.0 / 4.5)
    assert summary["ratios"]["swapout_reduction"] == pytest.approx(1000 / 250)
    assert summary["ratios"]["fom_ratio"] == pytest.approx(2.25 / 0.9)
    assert summary["ratios"]["timed_speedup"] == pytest.approx(10.5 / 4.0)
    assert summary["arm_ratios"]["objtier"]["speedup"] == summary["ratios"]["speedup"]

    # one objtier run failed: its medians are of the survivors, and it gets no ratio at all
    rows[-1] = row("objtier", 3, 99.0, 0, returncode=-9)
    summary = summarize(rows)
    obj = summary["medians"]["objtier"]
    assert obj["wall_s"] == 4.5 and obj["failed"] == 1 and obj["finished"] == 2
    assert set(summary["ratios"].values()) == {None}
    assert summary["ratios_withheld"] == ("objtier: 2/3 finished (1 failed otherwise) — an arm "
                                          "that died gets no ratio")


def test_a_dead_baseline_withholds_every_ratio_and_kernel_raw_never_gets_one():
    killed = row("baseline", 2, 3.0, 50, returncode=-9)
    killed.memcg_oom_kills = 1
    raw_dead = row("kernel-raw", 1, 2.0, 40, returncode=-9)
    raw_dead.memcg_oom_kills = 2
    rows = [row("baseline", 1, 10.0, 900), row("objtier", 1, 4.0, 300),
            row("objtier-noguard", 1, 3.0, 300), raw_dead, killed, row("objtier", 2, 5.0, 200),
            row("objtier-noguard", 2, 3.5, 300), row("kernel-raw", 2, 20.0, 900)]
    summary = summarize(rows)
    assert list(summary["medians"]) == ["baseline", "objtier", "objtier-noguard", "kernel-raw"]
    raw = summary["medians"]["kernel-raw"]
    assert (raw["runs"], raw["finished"], raw["oom_killed"], raw["wall_s"]) == (2, 1, 1, 20.0)
    assert set(summary["arm_ratios"]) == {"objtier", "objtier-noguard"}
    for arm in ("objtier", "objtier-noguard"):
        assert summary["arm_ratios"][arm]["speedup"] is None
        assert summary["arm_ratios"][arm]["withheld"].startswith(
            "baseline: 1/2 finished (1 OOM-killed)")
    assert summary["ratios"]["speedup"] is None
    assert survival_text(summary["medians"]["baseline"]) == "1/2 finished (1 OOM-killed)"


def test_status_names_how_a_run_ended_and_the_csv_carries_it(tmp_path):
    timed_out = row("baseline", 1, 30.0, 9, returncode=-9)
    timed_out.timed_out = True
    unknown = row("baseline", 2, 3.0, 9, returncode=-9)
    unknown.memcg_oom_kills = None      # a kernel without the oom_kill counter
    other = row("objtier", 1, 3.0, 9, returncode=-11)
    failing = row("objtier", 2, 3.0, 9, returncode=2)
    sigkill = row("objtier", 3, 3.0, 9, returncode=-9)   # counter 0: not the OOM killer
    rows = [row("baseline", 3, 3.0, 9), timed_out, unknown, other, failing, sigkill]
    assert [r.status for r in rows] == ["ok", "timeout", "OOM-killed", "killed by signal 11",
                                        "exit 2", "killed by signal 9"]
    rows[0].stat_flush_ms, rows[0].stat_flush_reads = 10.0, 321
    write_csv(rows, tmp_path / "c.csv")
    with open(tmp_path / "c.csv") as f:
        back = list(csv.DictReader(f))
    assert [r["status"] for r in back] == [r.status for r in rows]
    assert (back[0]["stat_flush_ms"], back[0]["stat_flush_reads"]) == ("10.0", "321")


def test_oom_kills_are_counted_as_failed_runs_of_their_configuration():
    killed = row("baseline", 2, 3.0, 50, returncode=-9)
    killed.memcg_oom_kills = 1
    rows = [row("baseline", 1, 10.0, 900), row("objtier", 1, 4.0, 300), killed,
            row("objtier", 2, 5.0, 200, returncode=-9)]
    summary = summarize(rows)
    base, obj = summary["medians"]["baseline"], summary["medians"]["objtier"]
    assert killed.oom_killed and not rows[0].oom_killed and not rows[3].oom_killed
    assert (base["failed"], base["oom_killed"], base["wall_s"]) == (1, 1, 10.0)
    assert (obj["failed"], obj["oom_killed"]) == (1, 0)


def test_no_swap_outs_with_objtier_is_an_infinite_cut():
    summary = summarize([row("baseline", 1, 2.0, 10), row("objtier", 1, 1.0, 0)])
    assert math.isinf(summary["ratios"]["swapout_reduction"])
    assert summarize([row("baseline", 1, 2.0, 0), row("objtier", 1, 1.0, 0)])[
        "ratios"]["swapout_reduction"] == 1.0


def test_chart_and_csv(tmp_path):
    rows = [row("baseline", 1, 10.0, 900), row("objtier", 1, 5.0, 300),
            row("baseline", 2, 12.0, 900), row("objtier", 2, 6.0, 300)]
    write_csv(rows, tmp_path / "c.csv")
    with open(tmp_path / "c.csv") as f:
        dict_rows = list(csv.DictReader(f))
    assert len(dict_rows) == 4
    summary = summarize(rows)
    summary["unlimited"] = {"wall_s": 2.2}
    times = normalized_times(summary, dict_rows)
    assert times["baseline"][0] == 1.0
    assert times["objtier"] == pytest.approx((5.5 / 11, 5 / 11, 6 / 11))
    assert times["all local"][0] == pytest.approx(0.2)
    plot_comparison([("w", summary, dict_rows)], tmp_path / "c.png", "title")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_chart_when_every_baseline_run_failed(tmp_path, recwarn):
    rows = [row("baseline", 1, 3.0, 50, returncode=-9), row("objtier", 1, 5.0, 300),
            row("baseline", 2, 2.0, 40, returncode=-9), row("objtier", 2, 6.0, 300)]
    write_csv(rows, tmp_path / "c.csv")
    with open(tmp_path / "c.csv") as f:
        dict_rows = list(csv.DictReader(f))
    summary = summarize(rows)
    summary["unlimited"] = {"wall_s": 2.2}
    # no baseline median to divide by
    assert set(normalized_times(summary, dict_rows).values()) == {None}
    plot_comparison([("w", summary, dict_rows)], tmp_path / "c.png", "title")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    assert not [w for w in recwarn if "legend" in str(w.message)]


def test_a_comparison_directory_is_new_empty_or_an_earlier_comparison(tmp_path):
    import stat

    from objtier.errors import UsageError
    from objtier.experiments.results import prepare_output

    new = prepare_output(tmp_path / "a" / "out", force=False)
    assert stat.S_IMODE(new.stat().st_mode) == 0o700
    assert prepare_output(new, force=False) == new            # empty: used as it is
    (new / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="pass --force"):
        prepare_output(new, force=False)
    with pytest.raises(UsageError, match="refusing to replace it"):
        prepare_output(new, force=True)                        # not a comparison's
    assert (new / "notes.txt").read_text() == "mine"
    (new / "summary.json").write_text("{}")
    prepare_output(new, force=True)                            # an earlier comparison
    assert not any(new.iterdir())
    link = tmp_path / "link"
    link.symlink_to(new)
    with pytest.raises(UsageError, match="symbolic link"):
        prepare_output(link, force=True)
