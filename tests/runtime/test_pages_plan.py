"""Hot pages scattered through one array: the fault sampler's samples per page find them, the
`pages` planner picks them, the runtime mlocks exactly those ranges."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from objtier.analysis.objects import object_table as trace_objects
from objtier.analysis.page_samples import page_samples
from objtier.plan import Budget, build_plan, object_table, pages, to_text

from .conftest import LOCKED_KB_C, runtime_env

MIB = 1 << 20
PG = 4096
MLOCK = 1
STRIDE = 8   # every 8th whole page of the array is hot

# argv: MiB of the array, seconds of the hot loop. Touches every page once, then one byte of
# every STRIDE-th whole page over and over; prints the array's Locked: kB (smaps); exits 3.
SCATTER = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
LOCKED_KB
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
    size_t n = strtoul(argv[1], 0, 0) << 20;
    double secs = atof(argv[2]);
    volatile char *a = malloc(n);
    memset((char *)a, 1, n);
    uintptr_t first = ((uintptr_t)a + 4095) & ~(uintptr_t)4095;   /* first whole page */
    volatile unsigned long sum = 0;
    double t0 = now();
    do
        for (uintptr_t p = first; p + 4096 <= (uintptr_t)a + n; p += STRIDE * 4096)
            sum += *(volatile char *)p;
    while (now() - t0 < secs);
    printf("locked_kb %ld\n", locked_kb((const void *)a, n));
    free((void *)a);
    return 3;
}
""".replace("STRIDE", str(STRIDE)).replace("LOCKED_KB\n", LOCKED_KB_C)


@pytest.fixture
def scatter(compile_c):
    return compile_c(SCATTER, name="scatter", flags=("-O1", "-g", "-fno-builtin"))


def test_fault_samples_find_scattered_hot_pages_and_the_plan_locks_them(scatter, run_traced,
                                                                       tmp_path):
    rec = run_traced(scatter, 16, 1.5, sampler="fault", rate=20000)
    assert rec.returncode == 3, rec.stderr
    trace = rec.trace()
    objects_arrow = trace_objects(trace, labels=False)
    array = int(np.argmax(objects_arrow.column("size").to_numpy()))
    per_page = page_samples(trace)
    obj = per_page.column("object").to_numpy()
    page = per_page.column("page").to_numpy()[obj == array]
    count = per_page.column("samples").to_numpy()[obj == array]
    hot = page % STRIDE == 0
    # the hot pages are touched in many armed windows, the cold ones at most once (memset)
    assert hot.sum() >= 0.9 * (16 * MIB // PG // STRIDE)
    assert count[hot].mean() >= 3 * max(count[~hot].mean() if (~hot).any() else 0, 1)

    objects = object_table(objects_arrow)
    budget = 16 * MIB // STRIDE
    placement = pages(objects, budget, PG, page_samples=per_page)
    ranges = placement.ranges[array]
    assert placement.tier[array] == "pages" and ranges is not None
    chosen = np.concatenate([np.arange(o // PG, (o + n) // PG) for o, n in ranges.tolist()])
    assert np.mean(chosen % STRIDE == 0) >= 0.9, ranges[:10]

    plan = build_plan(objects, placement, Budget(budget, "2M", None, 0), None)
    text_path = tmp_path / "plan.txt"
    text_path.write_text(to_text(plan))
    out = tmp_path / "enforced"
    env = runtime_env(out, plan=text_path, sampler="none")
    proc = subprocess.run([str(scatter), "16", "0.2"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 3, proc.stderr
    locked_kb = int(proc.stdout.split()[1])
    assert locked_kb * 1024 == int(placement.fast_bytes[array]), proc.stdout
    from objtier.trace import open_trace
    locks = [r for r in open_trace(out).placements.to_pylist() if r["action"] == MLOCK]
    assert all(r["result"] == 0 for r in locks) and len(locks) == len(ranges)
    base = locks[0]["offset"] - int(ranges[0][0])
    assert [(r["offset"] - base, r["length"]) for r in locks] == [tuple(r) for r in
                                                                  ranges.tolist()]


def test_merged_page_samples_add_a_second_recording_on_the_first_ones_objects(scatter,
                                                                              run_traced):
    from objtier.analysis.page_samples import merged_page_samples

    first = run_traced(scatter, 4, 0.3, sampler="fault", rate=20000)
    second = run_traced(scatter, 4, 0.3, sampler="fault", rate=20000)
    assert first.returncode == second.returncode == 3
    traces = [first.trace(), second.trace()]
    arrays = [int(np.argmax(t.allocations.column("size").to_numpy())) for t in traces]
    merged = merged_page_samples(traces)
    obj = merged.column("object").to_numpy()
    assert set(obj.tolist()) <= set(range(traces[0].allocations.num_rows))

    def per_page(table, array):
        rows = table.column("object").to_numpy() == array
        return dict(zip(table.column("page").to_numpy()[rows].tolist(),
                        table.column("samples").to_numpy()[rows].tolist()))

    one, two = (per_page(page_samples(t), a) for t, a in zip(traces, arrays))
    both = per_page(merged, arrays[0])
    assert both == {p: one.get(p, 0) + two.get(p, 0) for p in set(one) | set(two)}
    assert sum(both.values()) > sum(one.values())


def test_objtier_plan_sums_several_recordings_per_page(scatter, run_traced, compile_c,
                                                       tmp_path, capsys):
    """`objtier plan A B --algo pages` plans on A's objects with A's and B's samples summed,
    as merged_page_samples does; other algorithms, and a recording of another program, are
    refused in one line."""
    import json

    from objtier.analysis.page_samples import merged_page_samples
    from objtier.cli import main

    recs = [run_traced(scatter, 4, 0.3, sampler="fault", rate=20000) for _ in range(2)]
    assert all(r.returncode == 3 for r in recs)
    budget = 4 * MIB // STRIDE
    out = tmp_path / "plan.json"
    assert main(["plan", str(recs[0].out), str(recs[1].out), "--algo", "pages",
                 "--fast", str(budget), "-o", str(out)]) == 0
    traces = [r.trace() for r in recs]
    objects = object_table(trace_objects(traces[0], labels=False))
    expected = pages(objects, budget, PG, page_samples=merged_page_samples(traces))
    array = int(np.argmax(objects.size))
    assert expected.tier[array] == "pages"
    entry = next(e for e in json.loads(out.read_text())["entries"] if e["tier"] == "pages")
    assert entry["ranges"] == expected.ranges[array].tolist()

    capsys.readouterr()
    assert main(["plan", str(recs[0].out), str(recs[1].out), "--algo", "spill",
                 "--fast", str(budget), "-o", str(out)]) != 0
    err = capsys.readouterr().err.strip()
    assert "--algo spill takes one" in err and len(err.splitlines()) == 1, err

    other = compile_c("#include <stdlib.h>\n#include <string.h>\nint main(void) {"
                      " char *p = malloc(1 << 22); memset(p, 1, 1 << 22); free(p); return 0; }",
                      name="other")
    rec = run_traced(other, sampler="fault", rate=20000)
    assert rec.returncode == 0, rec.stderr
    assert main(["plan", str(recs[0].out), str(rec.out), "--algo", "pages",
                 "--fast", str(budget), "-o", str(out)]) != 0
    err = capsys.readouterr().err.strip()
    assert "must be of one program" in err and len(err.splitlines()) == 1, err
