"""Thread stacks and thread-local storage are said, not hidden: a program touching a 1 MiB
thread-local array and a 1 MiB stack array in two threads, next to a 4 MiB heap array, recorded
with the exact sampler, shows in `objtier objects` and in the report's summary how many of the
accesses outside every tracked object fell on stacks and in thread-local storage, with the
counts the program makes; recorded with a sampler that watches tracked objects only, the views
say that those accesses are not sampled."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from objtier.objects_view import objects_view
from objtier.exact.tree import outside_parts
from objtier.trace import open_trace

OBJTIER = [sys.executable, "-m", "objtier"]
LINES = (1 << 20) // 64   # one access per 64-byte line of a 1 MiB array
SOURCE = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define TLS_N (1 << 20)   /* bytes of the thread-local array */
#define STACK_N (1 << 20) /* bytes of the stack array */
#define HEAP_N (4 << 20)  /* bytes of the heap array */
static __thread unsigned char tls[TLS_N];
__attribute__((noinline)) long touch(unsigned char *p, size_t n, int v) {
    long s = 0;
    for (size_t i = 0; i < n; i += 64) { p[i] = (unsigned char)v; s += p[i]; }
    return s;
}
__attribute__((noinline)) long on_stack(void) {
    unsigned char a[STACK_N];
    return touch(a, STACK_N, 3) + touch(a, STACK_N, 4);
}
static void *worker(void *arg) {
    (void)arg;
    long s = touch(tls, TLS_N, 5) + on_stack();
    return (void *)s;
}
int main(void) {
    unsigned char *heap = malloc(HEAP_N);
    long s = touch(heap, HEAP_N, 1) + touch(tls, TLS_N, 2) + on_stack();
    pthread_t t;
    void *r;
    pthread_create(&t, 0, worker, 0);
    pthread_join(t, &r);
    printf("s %ld\n", s + (long)r);
    free(heap);
    return 0;
}
"""


def run(*args):
    proc = subprocess.run([*OBJTIER, *map(str, args)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.skipif(not (shutil.which("clang-16") or shutil.which("clang")),
                    reason="clang-16 is not installed")
def test_exact_views_say_what_fell_on_stacks_and_in_tls(tmp_path):
    src = tmp_path / "tlsstack.c"
    src.write_text(SOURCE)
    exe = tmp_path / "tlsstack"
    run("cc", "-O1", "-g", "-fno-vectorize", "-fno-unroll-loops", "-pthread", "-o", exe, src)
    out = tmp_path / "run.otr"
    run("record", "-q", "--sampler", "trace", "-o", out, "--", exe)
    trace = open_trace(out)
    parts = outside_parts(trace)
    # each thread writes every line of its own TLS array once: two threads
    assert parts["tls"] == 2 * LINES, parts
    # each thread's on_stack writes its stack array's lines twice (and spills a few words)
    assert 4 * LINES <= parts["stack"] < 4 * LINES + 256, parts
    view = objects_view(trace, labels=False)
    assert view.outside >= parts["tls"] + parts["stack"]
    assert f"{parts['stack']} on thread stacks, {parts['tls']} in thread-local storage" in \
        view.outside_line

    printed = run("objects", out, "--no-symbols").stdout
    assert "on thread stacks" in printed and f"{parts['tls']} in thread-local storage" in printed
    report = tmp_path / "report"
    run("report", out, "-o", report, "--no-symbols")
    page = (report / "index.html").read_text()
    summary = page[page.index('<p id="summary">'):]
    summary = summary[:summary.index("</p>")]
    assert f"{parts['stack']} on thread stacks" in summary, summary


def test_sampled_views_say_stacks_are_not_sampled(compile_c, tmp_path):
    exe = compile_c(SOURCE, name="tlsstack")
    out = tmp_path / "fault.otr"
    run("record", "-q", "--sampler", "fault", "--counters-interval", "0", "-o", out, "--", exe)
    line = objects_view(open_trace(out), labels=False).outside_line
    assert "thread stacks and thread-local storage are not sampled" in line, line
    assert "the fault sampler" in line
