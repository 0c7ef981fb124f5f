"""The fault sampler leaves programs unchanged: each program here runs plain and under
`objtier record --sampler fault`, and both runs must end the same way (exit status or
signal) with the same output. Each program keeps working on its large buffers for long
enough that scan windows are armed over them while it does the hazardous thing (changes
protections, runs code it generated, blocks SIGSEGV, reads through FORTIFY entry points,
writes to a guard page)."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from objtier.record.launch import exit_code
from objtier.trace import open_trace

from .conftest import printed, samples_in

OBJTIER = [sys.executable, "-m", "objtier"]

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64" or not sys.platform.startswith("linux"),
                                reason="the fault sampler's tests need x86-64 Linux")


def run_both(exe_or_cmd, tmp_path: Path, *args, name: str = "rec", rate: int = 20000,
             stdin: bytes | None = None, timeout: float = 120):
    """Runs the program plain, then under record; returns (plain, recorded, trace dir)."""
    cmd = [str(c) for c in (exe_or_cmd if isinstance(exe_or_cmd, list) else [exe_or_cmd])]
    cmd += [str(a) for a in args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJTIER_")}
    plain = subprocess.run(cmd, capture_output=True, env=env, input=stdin, timeout=timeout)
    out = tmp_path / name
    rec = subprocess.run([*OBJTIER, "record", "--sampler", "fault", "--rate", str(rate),
                          "-o", str(out), "--", *cmd],
                         capture_output=True, env=env, input=stdin, timeout=timeout)
    return plain, rec, out


def same_outcome(plain, rec):
    """Same exit status (a signal as 128 + N), same standard output."""
    detail = f"\nplain rc={plain.returncode} stderr={plain.stderr[-800:]!r}" \
             f"\nrecord rc={rec.returncode} stderr={rec.stderr[-1500:]!r}"
    assert rec.returncode == exit_code(plain.returncode), detail
    assert hashlib.sha256(rec.stdout).hexdigest() == hashlib.sha256(plain.stdout).hexdigest(), \
        detail + f"\nplain out={plain.stdout[-400:]!r}\nrecord out={rec.stdout[-400:]!r}"


def windows_armed(out: Path) -> int:
    """Scan windows armed during the run (a run killed by a signal writes no sampler
    statistics: then the samples it flushed show that windows were armed)."""
    trace = open_trace(out)
    stats = trace.sampler_stats.to_pylist()
    return sum(s["windows"] for s in stats) if stats else trace.samples.num_rows


COMMON = r"""
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ULL; }
"""

# A reserve made PROT_NONE and committed piece by piece with mprotect (JIT heaps, arenas).
RESERVE_C = COMMON + r"""
int main(void) {
    size_t reserve = 64u << 20, piece = 1u << 20;
    unsigned char *r = mmap(0, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) return 2;
    uint64_t h = 1469598103934665603ULL;
    size_t committed = 0;
    double t0 = now();
    for (int round = 0; now() - t0 < 1.2; round++) {
        if (committed < reserve) {
            if (mprotect(r + committed, piece, PROT_READ | PROT_WRITE)) return 3;
            memset(r + committed, round & 0xff, piece);
            committed += piece;
        }
        for (size_t i = 0; i < committed; i += 4096) { r[i]++; h = mix(h, r[i]); }
    }
    /* the check must not depend on timing: a fixed final pass over all 64 pieces */
    while (committed < reserve) {
        if (mprotect(r + committed, piece, PROT_READ | PROT_WRITE)) return 3;
        committed += piece;
    }
    memset(r, 7, reserve);
    uint64_t final = 0;
    for (size_t i = 0; i < reserve; i += 512) final += r[i];
    printf("final %llu\n", (unsigned long long)final);
    fprintf(stderr, "reserve %p\n", (void *)r);   /* differs run to run: not on stdout */
    return 0;
}
"""


def test_prot_none_reserve_committed_by_mprotect(compile_c, tmp_path):
    exe = compile_c(RESERVE_C, name="reserve")
    plain, rec, out = run_both(exe, tmp_path)
    same_outcome(plain, rec)
    assert plain.returncode == 0
    assert windows_armed(out) > 0
    # the pieces committed read-write are sampled like any other memory
    reserve = printed(rec.stderr.decode())["reserve"]
    assert samples_in(open_trace(out), reserve, 64 << 20) > 0


# W^X: write code into a read-write mapping, make it read-exec, call it; again and again.
WX_C = COMMON + r"""
typedef int (*fn)(void);
int main(void) {
    size_t n = 4u << 20;
    unsigned char *code = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *data = malloc(n);
    if (code == MAP_FAILED || !data) return 2;
    long total = 0;
    double t0 = now();
    for (int round = 0; round < 6 || now() - t0 < 1.2; round++) {
        if (mprotect(code, n, PROT_READ | PROT_WRITE)) return 3;
        for (size_t off = 0; off < n; off += 4096) {      /* mov eax, imm32 ; ret */
            int v = (int)(off / 4096) + round;
            code[off] = 0xb8; memcpy(code + off + 1, &v, 4); code[off + 5] = 0xc3;
        }
        if (mprotect(code, n, PROT_READ | PROT_EXEC)) return 4;
        __builtin___clear_cache((char *)code, (char *)code + n);
        for (int rep = 0; rep < 20; rep++)
            for (size_t off = 0; off < n; off += 4096) {
                total += ((fn)(code + off))();
                data[off]++;
            }
    }
    /* a fixed final round decides the output */
    if (mprotect(code, n, PROT_READ | PROT_WRITE)) return 3;
    for (size_t off = 0; off < n; off += 4096) {
        int v = (int)(off / 4096);
        code[off] = 0xb8; memcpy(code + off + 1, &v, 4); code[off + 5] = 0xc3;
    }
    if (mprotect(code, n, PROT_READ | PROT_EXEC)) return 4;
    long last = 0;
    for (size_t off = 0; off < n; off += 4096) last += ((fn)(code + off))();
    printf("last %ld\n", last);
    return total > 0 ? 0 : 5;
}
"""


def test_wx_code_generator(compile_c, tmp_path):
    exe = compile_c(WX_C, name="wx")
    plain, rec, out = run_both(exe, tmp_path)
    same_outcome(plain, rec)
    assert plain.returncode == 0 and b"last 523776" in plain.stdout
    assert windows_armed(out) > 0


# A worker thread blocks every signal and touches large buffers the whole time.
BLOCKED_C = COMMON + r"""
#include <pthread.h>
static unsigned char *buf;
static size_t n = 32u << 20;
static uint64_t result;
static void *worker(void *arg) {
    sigset_t all; sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    uint64_t h = 1469598103934665603ULL;
    double t0 = now();
    for (int round = 0; round < 4 || now() - t0 < 1.2; round++)
        for (size_t i = 0; i < n; i += 4096) { buf[i] += 1; h = mix(h, buf[i] & 1); }
    memset(buf, 3, n);
    uint64_t s = 0;
    for (size_t i = 0; i < n; i += 64) s += buf[i];
    result = s;
    return NULL;
}
int main(void) {
    buf = malloc(n);
    unsigned char *mine = malloc(n);
    memset(buf, 0, n); memset(mine, 1, n);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    uint64_t s = 0;
    for (size_t i = 0; i < n; i += 4096) s += mine[i];
    printf("result %llu %llu\n", (unsigned long long)result, (unsigned long long)s);
    return 0;
}
"""


def test_thread_blocking_all_signals(compile_c, tmp_path):
    exe = compile_c(BLOCKED_C, name="blocked")
    plain, rec, out = run_both(exe, tmp_path)
    same_outcome(plain, rec)
    trace = open_trace(out)
    assert trace.allocations.num_rows >= 2  # the trace holds the objects


# Workers created while the main thread blocks every signal inherit the mask; main then
# unblocks and waits on them (a common server pattern); many idle threads beside them make
# reading every thread's mask slow, so the sampler arms between reads.
INHERITED_C = COMMON + r"""
#include <pthread.h>
static size_t n = 16u << 20;
static void *idle(void *a) { pause(); return a; }
static void *worker(void *arg) {
    unsigned char *b = arg;
    memset(b, 1, n);
    double t0 = now();
    for (int round = 0; round < 4 || now() - t0 < 1.2; round++)
        for (size_t i = 0; i < n; i += 4096) b[i]++;
    memset(b, 2, n);
    return NULL;
}
int main(void) {
    pthread_attr_t small;
    pthread_attr_init(&small);
    pthread_attr_setstacksize(&small, 65536);
    for (int i = 0; i < 200; i++) { pthread_t t; pthread_create(&t, &small, idle, NULL); }
    unsigned char *mine = malloc(n);
    memset(mine, 3, n);
    sigset_t all, old;
    sigfillset(&all);
    pthread_t w[3];
    unsigned char *bufs[3];
    for (int i = 0; i < 3; i++) {
        bufs[i] = malloc(n);
        pthread_sigmask(SIG_BLOCK, &all, &old);     /* the worker starts with all blocked */
        pthread_create(&w[i], NULL, worker, bufs[i]);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        double t0 = now();
        while (now() - t0 < 0.3)                    /* main keeps the sampler busy meanwhile */
            for (size_t j = 0; j < n; j += 4096) mine[j]++;
    }
    for (int i = 0; i < 3; i++) pthread_join(w[i], NULL);
    uint64_t s = 0;
    for (int i = 0; i < 3; i++) for (size_t j = 0; j < n; j += 64) s += bufs[i][j];
    printf("sum %llu\n", (unsigned long long)s);
    fflush(stdout);
    _exit(0);                                       /* idle threads need no join */
}
"""


def test_threads_inheriting_a_blocked_mask(compile_c, tmp_path):
    exe = compile_c(INHERITED_C, name="inherited")
    plain, rec, out = run_both(exe, tmp_path)
    same_outcome(plain, rec)
    assert plain.returncode == 0 and plain.stdout == b"sum 1572864\n"


# A handler for another signal with every signal in its sa_mask (SIGSEGV blocked while it
# runs) touches a large buffer, on a timer firing every millisecond.
HANDLER_MASK_C = COMMON + r"""
#include <sys/time.h>
static unsigned char *buf;
static size_t n = 16u << 20;
static volatile uint64_t ticks, acc;
static void on_alarm(int sig) {
    (void)sig;
    size_t at = (size_t)(ticks * 7919 * 4096) % n;
    for (size_t i = 0; i < (256u << 10); i += 4096) acc += buf[(at + i) % n]++;
    ticks++;
}
int main(void) {
    buf = malloc(n);
    memset(buf, 1, n);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct sigaction back;
    sigaction(SIGALRM, NULL, &back);        /* the program sees what it installed */
    int same = back.sa_handler == on_alarm && sigismember(&back.sa_mask, SIGSEGV) == 1;
    struct itimerval it = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    double t0 = now();
    while (ticks < 600 || now() - t0 < 1.0) {}
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("sigaction-reports-own %d\n", same);
    return acc > 0 ? 0 : 2;
}
"""


def test_handler_that_blocks_sigsegv(compile_c, tmp_path):
    exe = compile_c(HANDLER_MASK_C, name="handler_mask")
    plain, rec, out = run_both(exe, tmp_path)
    same_outcome(plain, rec)
    assert b"sigaction-reports-own 1" in plain.stdout
    assert windows_armed(out) > 0


# A guard page after a buffer: the buffer is worked on (windows come and go over it and
# over the guard), then a write to the guard page must still kill the process by SIGSEGV.
GUARD_C = COMMON + r"""
int main(int argc, char **argv) {
    size_t n = 8u << 20;
    unsigned char *b = mmap(0, n + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *h = malloc(n + 8192);      /* a guard inside a heap block as well */
    unsigned char *hg = (unsigned char *)(((uintptr_t)h + n / 2 + 4095) & ~(uintptr_t)4095);
    if (b == MAP_FAILED || !h) return 2;
    if (mprotect(b + n, 4096, PROT_NONE) || mprotect(hg, 4096, PROT_NONE)) return 3;
    uint64_t s = 0;
    double t0 = now();
    while (now() - t0 < 1.0)
        for (size_t i = 0; i < n; i += 4096) {
            b[i]++;
            if (h + i < hg || h + i >= hg + 4096) h[i]++;
        }
    for (size_t i = 0; i < n; i += 4096) s += b[i] > 0;
    printf("pages %llu\n", (unsigned long long)s);
    fflush(stdout);
    if (argv[1][0] == 'h') hg[100] = 1;       /* must fault */
    else b[n + 100] = 1;                      /* must fault */
    printf("guard page was writable\n");
    return 0;
}
"""


@pytest.mark.parametrize("where", ["mapping", "heap"])
def test_guard_page_still_faults(compile_c, tmp_path, where):
    exe = compile_c(GUARD_C, name="guard")
    plain, rec, out = run_both(exe, tmp_path, where)
    assert plain.returncode == -11
    same_outcome(plain, rec)
    assert b"writable" not in rec.stdout
    assert windows_armed(out) > 0
    trace = open_trace(out)
    assert trace.samples.num_rows > 0  # the buffer around the guard is still sampled


# A region made read-only: writes must still fault, and reach the program's own handler
# with the same address and code, as often as without the runtime.
READONLY_C = COMMON + r"""
static sigjmp_buf env;
static volatile uintptr_t fault_addr;
static volatile int fault_code;
static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig; (void)uc;
    fault_addr = (uintptr_t)si->si_addr;
    fault_code = si->si_code;
    siglongjmp(env, 1);
}
int main(int argc, char **argv) {
    size_t n = 8u << 20;
    unsigned char *r = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) return 2;
    memset(r, 5, n);
    if (mprotect(r + n / 4, n / 2, PROT_READ)) return 3;   /* the middle half read-only */
    int handled = argv[1][0] == 'h';
    if (handled) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
    }
    uint64_t s = 0;
    int caught = 0, wrong = 0;
    double t0 = now();
    for (int round = 0; round < 40 || now() - t0 < 1.0; round++) {
        for (size_t i = 0; i < n; i += 4096) {
            s += r[i];
            if (i < n / 4 || i >= 3 * n / 4) r[i]++;
        }
        if (handled) {                       /* a write into the read-only half each round */
            volatile unsigned char *p = r + n / 4 + (size_t)(round % 512) * 4096 + 8;
            if (sigsetjmp(env, 1) == 0) { *p = 1; }
            else { caught++; wrong += fault_addr != (uintptr_t)p || fault_code != SEGV_ACCERR; }
        }
    }
    if (handled) {
        printf("caught-all %d wrong %d\n", caught >= 40, wrong);
        return 0;
    }
    printf("reads ok\n");
    fflush(stdout);
    r[n / 2] = 1;                            /* must fault: SIGSEGV */
    printf("read-only page was writable\n");
    return 0;
}
"""


@pytest.mark.parametrize("mode", ["default", "handler"])
def test_read_only_region_still_faults(compile_c, tmp_path, mode):
    exe = compile_c(READONLY_C, name="readonly")
    plain, rec, out = run_both(exe, tmp_path, mode[0])
    same_outcome(plain, rec)
    if mode == "default":
        assert plain.returncode == -11 and b"writable" not in rec.stdout
    else:
        assert plain.returncode == 0 and b"caught-all 1 wrong 0" in plain.stdout
    assert windows_armed(out) > 0


# FORTIFY build: read(2)/pread/fread/fread_unlocked into big malloc'd buffers (the _chk
# entry points), fwrite_unlocked/fputs/fprintf of big strings, over and over.
FORTIFY_C = COMMON + r"""
#include <fcntl.h>
#include <sys/random.h>
#include <sys/uio.h>
int main(int argc, char **argv) {
    size_t n = 4u << 20;
    volatile size_t vn = n; /* lengths the compiler cannot check: the _chk entry points */
    char *src = malloc(n + 1), *a = malloc(n), *b = malloc(n), *c = malloc(n), *d = malloc(n);
    if (!src || !a || !b || !c || !d) return 2;
    for (size_t i = 0; i < n; i++) src[i] = 'a' + (char)(i * 7 % 26);
    src[n] = 0;
    uint64_t h = 1469598103934665603ULL;
    double t0 = now();
    for (int round = 0; round < 3 || now() - t0 < 1.5; round++) {
        FILE *f = fopen(argv[1], "w");
        if (!f) return 3;
        if (fwrite_unlocked(src, 1, n, f) != n) return 4;
        if (fputs(src, f) < 0) return 5;
        if (fprintf(f, "%s", src) != (int)n) return 6;
        if (fclose(f)) return 7;
        int fd = open(argv[1], O_RDONLY);
        if (fd < 0) return 8;
        ssize_t got = 0, r;
        while (got < (ssize_t)n && (r = read(fd, a + got, n - got)) > 0) got += r;
        if (got != (ssize_t)n) { fprintf(stderr, "read %zd\n", got); return 9; }
        if (pread(fd, b, vn, (off_t)n) != (ssize_t)n) return 10;
        struct iovec iov[2] = {{c, n / 2}, {c + n / 2, n - n / 2}};
        if (preadv(fd, iov, 2, 0) != (ssize_t)n || memcmp(c, src, n)) return 17;
        if (getrandom(d, 1u << 20, 0) != (ssize_t)(1u << 20)) return 18;
        close(fd);
        f = fopen(argv[1], "r");
        if (!f) return 11;
        if (fseek(f, 2 * (long)n, SEEK_SET)) return 12;
        if (fread(c, 1, vn, f) != n) return 13;
        if (fseek(f, 0, SEEK_SET)) return 14;
        if (fread_unlocked(d, 1, vn, f) != n) return 15;
        fclose(f);
        if (memcmp(a, src, n) || memcmp(b, src, n) || memcmp(c, src, n) || memcmp(d, src, n))
            return 16;
        for (size_t i = 0; i < n; i += 4096) h = mix(h, (unsigned char)a[i] + b[i] + c[i] + d[i]);
        src[round % 26] ^= 1;   /* keep the source changing, identically in every run */
        src[round % 26] ^= 1;
    }
    printf("ok %d\n", memcmp(a, src, n) == 0);
    return 0;
}
"""

FORTIFIED = ("__read_chk", "__pread_chk", "__fread_chk", "__fread_unlocked_chk")


def test_fortify_build_reads_and_writes_big_buffers(compile_c, tmp_path):
    exe = compile_c(FORTIFY_C, name="fortify", flags=("-O2", "-D_FORTIFY_SOURCE=3"))
    imports = subprocess.run(["nm", "-D", "--undefined-only", str(exe)], capture_output=True,
                             text=True, check=True).stdout
    for name in (*FORTIFIED, "fwrite_unlocked", "__fprintf_chk", "fputs"):
        assert name in imports, f"the FORTIFY build does not call {name}:\n{imports}"
    plain, rec, out = run_both(exe, tmp_path, tmp_path / "io.txt")
    same_outcome(plain, rec)
    assert plain.returncode == 0 and plain.stdout == b"ok 1\n"
    assert windows_armed(out) > 0


def _number_lines(path: Path, count: int) -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    values = rng.integers(-10**9, 10**9, size=count)
    path.write_text("\n".join(map(str, values.tolist())) + "\n")


SORT = shutil.which("sort")


@pytest.mark.skipif(SORT is None, reason="GNU sort is not installed")
def test_gnu_sort_numeric(tmp_path):
    numbers = tmp_path / "numbers.txt"
    _number_lines(numbers, 1_000_000)
    plain, rec, out = run_both([SORT, "-n"], tmp_path, numbers)
    same_outcome(plain, rec)
    assert plain.returncode == 0 and plain.stdout.count(b"\n") == 1_000_000
    assert open_trace(out).allocations.num_rows >= 1


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.skipif(SORT is None, reason="GNU sort is not installed")
@pytest.mark.skipif(os.environ.get("OBJTIER_SLOW_TESTS") != "1",
                    reason="set OBJTIER_SLOW_TESTS=1 for the 3-million-line sort (about a minute)")
def test_gnu_sort_numeric_three_million_lines(tmp_path):
    numbers = tmp_path / "numbers.txt"
    _number_lines(numbers, 3_000_000)
    plain, rec, out = run_both([SORT, "-n"], tmp_path, numbers, timeout=600)
    same_outcome(plain, rec)
    assert plain.returncode == 0
    assert open_trace(out).samples.num_rows > 0


def test_record_help_states_the_fault_sampler_hazards():
    text = subprocess.run([*OBJTIER, "record", "--help"], capture_output=True, text=True,
                          check=True).stdout
    flat = " ".join(text.split())
    for hazard in ("raw syscall()", "io_uring", "/proc/self/mem", "never while a thread blocks SIGSEGV",
                   "guard pages and read-only memory still fault"):
        assert hazard in flat, hazard
