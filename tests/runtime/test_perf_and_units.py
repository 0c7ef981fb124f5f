"""The perf sampler's software page-fault path (the PMU paths need hardware), and the
runtime's C unit tests under AddressSanitizer and ThreadSanitizer."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import printed, samples_in

REPO = Path(__file__).resolve().parents[2]

FRESH_PAGES = r"""
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
int main(void) {
    size_t n = 64u << 20;
    char *a = malloc(1u << 20), *b = malloc(n);
    printf("a %p\nb %p\n", (void *)a, (void *)b);
    /* 8 passes of first touches: one minor fault per page each, the pages dropped between
     * passes; frequency mode needs a run long enough to settle its period even when the
     * machine is loaded */
    uintptr_t lo = ((uintptr_t)b + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)b + n) & ~(uintptr_t)4095;
    for (int pass = 0; pass < 8; pass++) {
        for (size_t i = 0; i < n; i += 4096) b[i] = 1;
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
    }
    free(b); free(a);
    return 0;
}
"""


def test_perf_software_faults(compile_c, run_traced):
    exe = compile_c(FRESH_PAGES, name="fresh", flags=("-O1", "-g", "-fno-builtin"))
    run = run_traced(exe, sampler="perf", rate=4000)
    assert run.returncode == 0, run.stderr
    if "perf_event_open failed" in run.stderr:
        pytest.skip(run.stderr.strip())
    where = printed(run.stdout)
    t = run.trace()
    in_b = samples_in(t, where["b"], 64 << 20)
    assert in_b > 10
    s = t.samples.to_pylist()[0]
    assert s["source"] == 4 and s["weight"] >= 1
    times = t.samples.column("time_ns").to_numpy()
    alloc_time = t.allocations.to_pylist()[1]["time_ns"]
    assert (times[:in_b] > alloc_time - 10**9).all()   # same clock as ALLOC records
    assert t.sampler_stats.to_pylist()[0]["source"] == 4


@pytest.mark.parametrize("sanitizer", ["address", "thread"])
def test_unit_tests_under_sanitizer(sanitizer, tmp_path):
    if not shutil.which("cmake") or not shutil.which("ninja"):
        pytest.skip("cmake/ninja not installed")
    build = tmp_path / f"build-{sanitizer}"
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(build), "-G", "Ninja",
                    "-DOBJTIER_PARTS=native/runtime", f"-DOBJTIER_SANITIZE={sanitizer}",
                    "-DCMAKE_BUILD_TYPE=Debug"], check=True, capture_output=True)
    targets = ["test_writer", "test_registry", "test_maps", "test_ctxtab", "test_config", "test_cct",
               "test_cache_model", "test_elfsyms", "test_prottab", "test_trace_file",
               "test_range_array"]
    subprocess.run(["cmake", "--build", str(build), "--target", *targets], check=True,
                   capture_output=True)
    run = subprocess.run(["ctest", "--output-on-failure"], cwd=build / "native" / "runtime",
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "100% tests passed" in run.stdout
