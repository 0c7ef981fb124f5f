"""Process-level behaviour: fork + exec with and without following forks, SIGKILL
leaving a readable prefix, exit codes."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from .conftest import runtime_env

from objtier.trace import open_trace

# the compiler must not elide allocations that are only freed
NOBUILTIN = ("-O1", "-g", "-fno-builtin")

FORK_EXEC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char *p = malloc(300000); memset(p, 1, 300000);
    if (argc > 1) { free(p); return 5; }          /* the exec'd child */
    pid_t c1 = fork();
    if (c1 == 0) { char *q = malloc(500000); memset(q, 2, 500000); free(q); exit(3); }   /* exit, not _exit: _exit skips the final flush */
    pid_t c2 = fork();
    if (c2 == 0) { execl(argv[0], argv[0], "child", (char *)NULL); _exit(99); }
    int s1, s2;
    waitpid(c1, &s1, 0); waitpid(c2, &s2, 0);
    free(p);
    printf("%d %d\n", WEXITSTATUS(s1), WEXITSTATUS(s2));
    return 0;
}
"""


def test_fork_exec_not_followed(compile_c, run_traced):
    exe = compile_c(FORK_EXEC, name="forker", flags=NOBUILTIN)
    run = run_traced(exe)
    assert run.returncode == 0 and run.stdout.strip() == "3 5", run.stderr
    files = sorted(run.out.glob("proc-*.otr"))
    assert len(files) == 1
    t = run.trace()
    assert [a["size"] for a in t.allocations.to_pylist()] == [300000]
    assert t.frees.num_rows == 1


def test_fork_exec_followed(compile_c, run_traced):
    exe = compile_c(FORK_EXEC, name="forker2", flags=NOBUILTIN)
    run = run_traced(exe, follow_forks=1)
    assert run.returncode == 0 and run.stdout.strip() == "3 5", run.stderr
    assert len(list(run.out.glob("proc-*.otr"))) == 3
    t = run.trace()
    procs = {p.pid: p for p in t.processes}
    assert len(procs) == 3
    sizes = {}
    for a in t.allocations.to_pylist():
        sizes.setdefault(a["pid"], []).append(a["size"])
    assert sorted(map(tuple, sizes.values())) == [(300000,), (300000,), (500000,)]
    assert sum(p.argv[1:] == ["child"] for p in procs.values()) == 1
    ends = {e["pid"]: e["exit_status"] for e in t.ends.to_pylist()}
    assert sorted(ends.values()) == [0, 3, 5]
    # every child's contexts resolve within its own file
    for pid in procs:
        ids = {c["context"] for c in t.contexts.to_pylist() if c["pid"] == pid}
        assert {a["context"] for a in t.allocations.to_pylist() if a["pid"] == pid} <= ids


SPIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    char *objs[10];
    for (int i = 0; i < 10; i++) { objs[i] = malloc(200000); memset(objs[i], i, 200000); }
    puts("ready");
    fflush(stdout);
    volatile long s = 0;
    for (;;)
        for (int i = 0; i < 10; i++)
            for (int k = 0; k < 200000; k += 4096) s += objs[i][k];
}
"""


def test_sigkill_leaves_readable_prefix(compile_c, tmp_path):
    exe = compile_c(SPIN, name="spin")
    out = tmp_path / "killed"
    proc = subprocess.Popen([str(exe)], env=runtime_env(out, flush_ms=20), stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        # wait (bounded) until the flusher wrote the ALLOC block, then kill
        for _ in range(600):
            if out.exists() and list(out.glob("*.otr")) and \
                    open_trace(out).allocations.num_rows == 10:
                break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    t = open_trace(out)
    assert t.allocations.num_rows == 10
    assert [p.complete for p in t.processes] == [False]
    assert t.ends.num_rows == 0
