"""Watched sites (docs/watched-sites.md): `objtier record --sites N --sites-from RUN`
serves the N largest small-block sites of an earlier recording (without RUN: learned from the
first small blocks) from arenas of their own while recording, and the pageout sampler arms those arenas' pages as one region per site. A program
with a hot and a cold site of the same bytes must come out with the hot one ranked first by
sampled access (the bytes alone cannot tell them apart), `plan --sites` must choose it, and the
program's output and exit status must not change. Needs root: the pageout sampler adds a
temporary zram swap device when the machine has no swap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from objtier.analysis.site_watch import has_watched_sites, rank_by_access
from objtier.analysis.sites import site_table
from objtier.trace import open_trace

from .conftest import runtime_env

HERE = Path(__file__).parent
ROWS = "60000"            # per site: 60000 rows of 400 B, about 23 MiB each
PARTS = ("mixed", "aligned", "usable", "calloc", "threads", "fork", "sites", "3000")

pytestmark = pytest.mark.root


def objtier(*args, timeout: int = 300, **settings) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    env.update({f"OBJTIER_{k.upper()}": str(v) for k, v in settings.items()})
    return subprocess.run([sys.executable, "-m", "objtier", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def plain(cmd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    return subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def hot_cold(compile_c) -> Path:
    return compile_c((HERE / "watch_program.c").read_text(), name="watch_program",
                     flags=("-O1", "-g"))


def watched_recording(tmp_path: Path, cmd: list, n: int) -> tuple[Path, subprocess.CompletedProcess]:
    """A first recording (the sites' bytes), then one watching its n largest sites."""
    first = objtier("record", "--sampler", "none", "-q", "-o", tmp_path / "first.otr", "--", *cmd)
    assert first.returncode == 0, first.stderr[-1500:]
    out = tmp_path / "watched.otr"
    run = objtier("record", "--sampler", "pageout", "--overhead", "0", "--sites", n,
                  "--sites-from", tmp_path / "first.otr", "-o", out, "--", *cmd)
    return out, run


def test_hot_site_ranked_above_cold_site_of_the_same_bytes(hot_cold, tmp_path):
    # the hot rows are read 1500 times over (a few seconds), the cold rows once at the end
    cmd = [hot_cold, ROWS, "1500"]
    base = plain(cmd)
    assert base.returncode == 0 and base.stdout.startswith(f"rows={ROWS}")
    out, run = watched_recording(tmp_path, cmd, 2)
    assert run.returncode == 0, run.stderr[-1500:]
    assert run.stdout == base.stdout
    assert "watched sites: 2 with arenas" in run.stderr, run.stderr[-1500:]
    assert "watched sites' arenas only" in run.stderr   # the coverage line counts them

    trace = open_trace(out)
    assert has_watched_sites(trace)
    sites = {("hot" if "hot_row" in r["label"] else "cold" if "cold_row" in r["label"]
              else r["label"]): r for r in site_table(trace).to_pylist()}
    hot, cold = sites["hot"], sites["cold"]
    # by bytes they are alike (estimates from 1 in 64 blocks)
    assert 0.8 < hot["est_peak_bytes"] / cold["est_peak_bytes"] < 1.25
    for site in (hot, cold):
        assert site["watched"] and site["arena_share"] > 0.95   # all its blocks in its arena
        assert site["arena_bytes"] >= site["est_peak_bytes"] * 0.8
        assert 0 < site["armed_share"] <= 1 and site["watched_s"] > 0
    # by access they are not: the cold rows are touched once, at the end
    assert hot["est_touches"] > 20 * cold["est_touches"], (hot, cold)
    ranked = rank_by_access(site_table(trace)).to_pylist()
    assert "hot_row" in ranked[0]["label"] and "cold_row" in ranked[1]["label"]

    objects = objtier("objects", out)
    assert objects.returncode == 0, objects.stderr[-800:]
    assert "watched sites first" in objects.stdout
    # windows of no object: the report's window views must take them
    report = objtier("report", out, "-o", tmp_path / "report")
    assert report.returncode == 0, report.stderr[-800:]

    plan = objtier("plan", out, "--fast", "8M", "--sites", "1", "--cold-sites", "1",
                   "-o", tmp_path / "plan.json")
    assert plan.returncode == 0, plan.stderr[-1500:]
    chosen = json.loads((tmp_path / "plan.json").read_text())["sites"]
    by_tier = {s["tier"]: s for s in chosen}
    assert "hot_row" in by_tier["fast"]["label"] and "cold_row" in by_tier["slow"]["label"]
    assert by_tier["fast"]["access"].endswith("(estimated)")
    assert by_tier["fast"]["est_touches"] > by_tier["slow"]["est_touches"]


def test_learned_sites_rank_hot_above_cold(hot_cold, tmp_path):
    """Without --sites-from the runtime learns the largest sites from the first 4 MiB of small
    blocks (about a tenth of this program's): those blocks stay outside, the rest is watched."""
    cmd = [hot_cold, ROWS, "1500"]
    base = plain(cmd)
    out = tmp_path / "learned.otr"
    run = objtier("record", "--sampler", "pageout", "--overhead", "0", "--sites", "2",
                  "-o", out, "--", *cmd)
    assert run.returncode == 0 and run.stdout == base.stdout, run.stderr[-1500:]
    ranked = rank_by_access(site_table(open_trace(out))).to_pylist()
    hot, cold = ranked[0], ranked[1]
    assert "hot_row" in hot["label"] and "cold_row" in cold["label"]
    for site in (hot, cold):
        assert site["watched"] and 0.5 < site["arena_share"] < 1.0   # the first blocks: outside
    assert hot["est_touches"] > 20 * cold["est_touches"], (hot, cold)


@pytest.mark.parametrize("how", ["from-run", "learned"])
def test_program_unchanged_with_its_sites_watched(compile_c, tmp_path, how):
    """Every allocation call, threads, fork and realloc across sizes, with its 8 largest sites
    (of a first recording, or learned while threads allocate) served from watched arenas: the
    same output and exit status as without objtier. Learned sites may belong to a part of the
    program that is over by the time they are chosen (this program runs in parts): then the
    runtime watched in vain, which its counts line says (mode=watch)."""
    program = compile_c((HERE / "arena_program.c").read_text(), name="arena_program",
                        flags=("-O1", "-g", "-fno-builtin"))
    cmd = [program, *PARTS]
    base = plain(cmd)
    assert base.returncode == 0 and "bad=0" in base.stdout
    if how == "from-run":
        out, run = watched_recording(tmp_path, cmd, 8)
    else:
        out = tmp_path / "learned.otr"
        run = objtier("record", "--sampler", "pageout", "--overhead", "0", "--sites", "8",
                      "-o", out, "--", *cmd, arena_stats=tmp_path / "stats")
    assert run.returncode == base.returncode, run.stderr[-1500:]
    assert run.stdout == base.stdout
    if how == "from-run":
        assert has_watched_sites(open_trace(out)), run.stderr[-1500:]
    else:
        assert "mode=watch" in (tmp_path / "stats").read_text()


def test_sites_file_errors(hot_cold, tmp_path):
    """Bad input: one line and a non-zero exit from record; a malformed sites file given to the
    runtime directly is refused with a logged line, and the program runs as it would."""
    no_n = objtier("record", "--sites-from", tmp_path, "-o", tmp_path / "x.otr", "--", hot_cold,
                   "10", "1")
    assert no_n.returncode != 0 and "--sites-from needs --sites N" in no_n.stderr
    assert "Traceback" not in no_n.stderr
    missing = objtier("record", "--sites", "2", "--sites-from", tmp_path / "none.otr",
                      "-o", tmp_path / "y.otr", "--", hot_cold, "10", "1")
    last = missing.stderr.strip().splitlines()[-1]
    assert missing.returncode != 0 and "--sites-from: no such trace" in last
    assert "Traceback" not in missing.stderr

    bad = tmp_path / "sites.txt"
    bad.write_text("not a site\n")
    env = runtime_env(tmp_path / "z.otr", sampler="none", arena_sites=bad, arena_stats="")
    run = subprocess.run([str(hot_cold), "1000", "2"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0 and run.stdout == plain([hot_cold, "1000", "2"]).stdout
    assert "is not `KEY FRAME0`" in run.stderr
    assert not has_watched_sites(open_trace(tmp_path / "z.otr"))


def test_watched_sites_under_a_sampler_that_arms_nothing(hot_cold, tmp_path):
    """Watched with a sampler that arms no page (none): the sites are in arenas (watched) but
    unarmed (no touch rate), and the plan's --sites, with no access to rank by, chooses no fast
    site, as from any recording without samples of small blocks."""
    out = tmp_path / "unarmed.otr"
    run = objtier("record", "--sampler", "none", "--sites", "2", "-q", "-o", out, "--",
                  hot_cold, ROWS, "2")
    assert run.returncode == 0, run.stderr[-800:]
    rows = site_table(open_trace(out)).to_pylist()
    assert any(r["watched"] and r["touch_rate"] is None for r in rows)
    plan = objtier("plan", out, "--fast", "8M", "--sites", "1", "-o", tmp_path / "plan.json")
    assert plan.returncode == 0, plan.stderr[-800:]
    assert not [s for s in json.loads((tmp_path / "plan.json").read_text()).get("sites") or []
                if s["tier"] == "fast"]
