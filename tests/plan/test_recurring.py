"""An object a later recording did not make again (same context key, occurrence and size) is
left out of the plan: the runtime finds objects by those three, so a lock the planner counted
on would never be made in the run (pipeline.recurring). Two real recordings of one program
whose second array changes size between the runs; the first array recurs."""

from __future__ import annotations

import json
import subprocess

import pytest

from objtier.plan.pipeline import read_recordings
from tests.cli.helpers import objtier

# A: 8 MiB from one call site, every run; B: argv[1] MiB from another; both swept 40 times
PROG = r"""
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
static char *make(size_t mib) { char *p = malloc(mib << 20); memset(p, 1, mib << 20); return p; }
__attribute__((noinline)) static char *make_a(void) { return make(8); }
__attribute__((noinline)) static char *make_b(size_t mib) { return make(mib); }
int main(int argc, char **argv) {
    size_t b_mib = argc > 1 ? strtoul(argv[1], 0, 10) : 4;
    char *a = make_a(), *b = make_b(b_mib);
    unsigned long sum = 0;
    for (int it = 0; it < 40; it++) {
        for (size_t i = 0; i < (8u << 20); i += 4096) sum += a[i]++;
        for (size_t i = 0; i < (b_mib << 20); i += 4096) sum += b[i]++;
    }
    printf("sum %lu\n", sum);
    return 0;
}
"""


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("recurring")
    exe = scratch / "prog"
    src = scratch / "prog.c"
    src.write_text(PROG)
    subprocess.run(["gcc", "-O1", "-g", "-o", str(exe), str(src)], check=True)
    out = []
    for i, b_mib in enumerate(("6", "5")):
        path = scratch / f"run-{i}.otr"
        done = objtier("record", "--sampler", "fault", "-o", str(path), "--", str(exe), b_mib)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("sum ")
        out.append(path)
    return out


def _sizes(table) -> list[int]:
    return table.column("size").to_pylist()


def test_an_object_of_another_size_in_the_second_recording_does_not_recur(recordings):
    alone = read_recordings(recordings[:1])
    assert "recurs" not in alone.table.column_names          # one recording: nothing to say
    both = read_recordings(recordings)
    recurs = dict(zip(_sizes(both.table), both.table.column("recurs").to_pylist()))
    assert recurs[8 << 20] is True and recurs[6 << 20] is False
    objects = both.objects
    assert not objects.plannable[_sizes(both.table).index(6 << 20)]
    assert objects.plannable[_sizes(both.table).index(8 << 20)]
    assert "not made again" in objects.unplannable_reasons()[_sizes(both.table).index(6 << 20)]


def test_the_plan_names_only_the_object_every_recording_made(recordings, tmp_path):
    plan_path = tmp_path / "plan.json"
    done = objtier("plan", *map(str, recordings), "--algo", "pages", "--fast", "100%",
                   "-o", str(plan_path))
    assert done.returncode == 0, done.stderr
    plan = json.loads(plan_path.read_text())
    sizes = {e["size_min"] for e in plan["entries"]}
    assert 8 << 20 in sizes and 6 << 20 not in sizes, plan["entries"]
    assert any("not made again in every recording" in w for w in plan.get("warnings", [])), \
        plan.get("warnings")
    # the first recording alone names both
    done = objtier("plan", str(recordings[0]), "--algo", "pages", "--fast", "100%",
                   "-o", str(tmp_path / "one.json"))
    assert done.returncode == 0, done.stderr
    one = json.loads((tmp_path / "one.json").read_text())
    assert {8 << 20, 6 << 20} <= {e["size_min"] for e in one["entries"]}
