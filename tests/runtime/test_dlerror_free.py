"""A program whose dlopen fails while it holds a tracked object: glibc frees the dlerror
string through free(), and the runtime's free must not resolve anything lazily there (a lazy
dlsym sets a new error string and frees the old one: free -> dlsym -> free -> ..., a stack
overflow that killed every OpenMP program built with `objtier cc`, whose libomp dlopens at
start-up)."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void)
{
    char *big = malloc(4 << 20); /* tracked: above the default minimum size */
    memset(big, 1, 4 << 20);
    for (int i = 0; i < 3; i++) {
        void *h = dlopen("libobjtier-test-missing.so", RTLD_NOW);
        const char *e = dlerror();
        printf("dlopen %d: %s\n", i, h ? "found" : (e ? "failed" : "no error"));
    }
    long sum = 0;
    for (int i = 0; i < (4 << 20); i += 4096)
        sum += big[i];
    free(big);
    printf("sum %ld\n", sum);
    return 0;
}
"""


def test_failed_dlopen_under_the_runtime(compile_c, tmp_path):
    exe = compile_c(PROGRAM, name="dlerror_prog", flags=("-O1", "-g", "-ldl"))
    plain = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0, plain.stderr
    out = tmp_path / "run.otr"
    run = subprocess.run([sys.executable, "-m", "objtier", "record", "-q", "--sampler", "none",
                          "-o", str(out), "--", str(exe)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == plain.stdout
    assert "sum 1024" in run.stdout
