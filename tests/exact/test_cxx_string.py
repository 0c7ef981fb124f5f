"""`objtier c++` builds C++ that uses std::string (libstdc++ 12 with clang 16: its always-inline
basic_string helpers must not be referenced by the function-entry instrumentation), and the
build runs under the exact sampler with the plain build's output."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

SOURCE = r"""
#include <cstdio>
#include <map>
#include <string>
int main() {
    std::map<std::string, int> counts;
    for (int i = 0; i < 5000; i++)
        counts["key-" + std::to_string(i % 97)] += i;
    long sum = 0;
    for (const auto &kv : counts)
        sum += kv.second + (long)kv.first.size();
    std::printf("%zu keys, sum %ld\n", counts.size(), sum);
    return 0;
}
"""


@pytest.mark.skipif(not (shutil.which("clang++-16") or shutil.which("clang++")),
                    reason="needs clang++")
def test_cxx_string_program_builds_and_runs_traced(tmp_path):
    src = tmp_path / "strings.cpp"
    src.write_text(SOURCE)
    exe = tmp_path / "strings"
    built = subprocess.run([sys.executable, "-m", "objtier", "c++", "-O2", "-o", str(exe),
                            str(src)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    plain = subprocess.run(["g++", "-O2", "-o", str(tmp_path / "plain"), str(src)],
                           capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    expected = subprocess.run([str(tmp_path / "plain")], capture_output=True, text=True)
    traced = subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "--sampler",
                             "trace", "-o", str(tmp_path / "run.otr"), "--", str(exe)],
                            capture_output=True, text=True, timeout=300)
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == expected.stdout
    assert "97 keys" in traced.stdout
