"""The fault sampler: samples land only in memory the program touches; many threads;
coexistence with the program's SIGSEGV handler; real segfaults; read/fread into armed
buffers."""

from __future__ import annotations

import signal

import pyarrow.compute as pc
from .conftest import printed, samples_in, samples_in_table

TOUCH_B = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(void) {
    size_t n = 8u << 20;
    char *a = malloc(n), *b = malloc(n);
    memset(a, 1, n); memset(b, 1, n);
    double t0 = now();                         /* from here on only b is touched */
    printf("a %p\nb %p\nt0 0x%llx\n", (void *)a, (void *)b, (unsigned long long)(t0 * 1e9));
    fflush(stdout);
    volatile long s = 0;
    while (now() - t0 < 1.0)
        for (size_t i = 0; i < n; i += 4096) s += b[i]++;
    free(a); free(b);
    return 0;
}
"""


def test_samples_only_in_touched_array(compile_c, run_traced):
    exe = compile_c(TOUCH_B, name="touch_b")
    run = run_traced(exe, window_pages=256)
    assert run.returncode == 0, run.stderr
    where = printed(run.stdout)
    t = run.trace()
    n = 8 << 20
    later = t.samples.filter(pc.greater(t.samples.column("time_ns"), where["t0"] + 1000))
    in_a = samples_in_table(later, where["a"], n)
    in_b = samples_in_table(later, where["b"], n)
    assert in_b > 50
    assert in_a == 0
    # every sample at all (also during the initial memsets) lies inside a or b
    assert samples_in(t, where["a"], n) + samples_in(t, where["b"], n) == t.samples.num_rows
    s = t.samples.to_pylist()[0]
    assert s["source"] == 1 and s["weight"] == 1 and s["node"] == 0xFFFF
    stats = t.sampler_stats.to_pylist()[0]
    assert stats["samples"] == t.samples.num_rows and stats["windows"] > 0 and stats["pages_armed"] > 0


LATE_OBJECT = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(void) {
    size_t big = 96u << 20, small = 4u << 20;
    char *a = malloc(big);
    memset(a, 1, big);
    volatile long s = 0;
    double t0 = now();
    while (now() - t0 < 0.6)                   /* a's first 2 MiB only: its windows dwell */
        for (size_t i = 0; i < (2u << 20); i += 4096) s += a[i]++;
    char *b = malloc(small);                   /* the short phase: 0.1 s on a new object */
    double t1 = now();
    printf("b %p\nt1 0x%llx\n", (void *)b, (unsigned long long)(t1 * 1e9));
    fflush(stdout);
    while (now() - t1 < 0.1)
        for (size_t i = 0; i < small; i += 4096) s += b[i]++;
    free(b);
    free(a);
    return 0;
}
"""


def test_an_object_allocated_mid_pass_is_sampled_while_it_lives(compile_c, run_traced):
    """The scanner arms an object allocated during a pass next, before the rest of the pass:
    a new array touched for 0.1 s gets samples even though a pass over the 96 MiB array whose
    windows mostly dwell untouched takes longer than that (PASS_WINDOWS dwells)."""
    exe = compile_c(LATE_OBJECT, name="late_object")
    run = run_traced(exe, window_pages=1024, rate=20000)
    assert run.returncode == 0, run.stderr
    where = printed(run.stdout)
    t = run.trace()
    assert samples_in(t, where["b"], 4 << 20) > 0
    # the window that found them was armed on b after it was allocated
    seq = t.allocations.filter(pc.equal(t.allocations.column("addr"), where["b"])).column("seq")
    windows = t.windows.filter(pc.equal(t.windows.column("alloc_seq"), seq[0]))
    assert windows.num_rows > 0 and min(windows.column("arm_ns").to_pylist()) >= where["t1"] - 10**6


SHORT_PHASE = r"""
#include <objtier/phase.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(void) {
    size_t big = 96u << 20, small = 1u << 20;
    char *a = malloc(big), *s = malloc(small);
    memset(a, 1, big); memset(s, 1, small);
    volatile long sum = 0;
    objtier_phase("sweep");
    double t0 = now();
    while (now() - t0 < 0.6)                   /* a's first 2 MiB only: its windows dwell */
        for (size_t i = 0; i < (2u << 20); i += 4096) sum += a[i]++;
    objtier_phase("lookup");                   /* a short phase on an older, small array */
    double t1 = now();
    printf("s %p\nt1 0x%llx\n", (void *)s, (unsigned long long)(t1 * 1e9));
    fflush(stdout);
    while (now() - t1 < 0.1)
        for (size_t i = 0; i < small; i += 4096) sum += s[i]++;
    objtier_phase_end();
    free(s);
    free(a);
    return 0;
}
"""


def test_a_phase_change_starts_a_pass_with_the_small_objects(compile_c, run_traced):
    """A phase change starts a new pass, smallest object first: a 1 MiB array that only a
    0.1 s phase touches is sampled in it, though a pass over the 96 MiB array (whose windows
    mostly dwell untouched) takes longer than the phase."""
    from objtier import native

    exe = compile_c(SHORT_PHASE, name="short_phase",
                    flags=("-O1", "-g", f"-I{native.include_dir()}"))
    run = run_traced(exe, window_pages=1024, rate=20000)
    assert run.returncode == 0, run.stderr
    where = printed(run.stdout)
    t = run.trace()
    in_phase = t.samples.filter(pc.greater_equal(t.samples.column("time_ns"), where["t1"]))
    assert samples_in_table(in_phase, where["s"], 1 << 20) > 0


REMAPPED = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(void) {
    size_t n = 4u << 20;
    char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *r = mremap(m, n, 2 * n, MREMAP_MAYMOVE);
    if (m == MAP_FAILED || r == MAP_FAILED) return 1;
    printf("r %p\n", (void *)r);
    fflush(stdout);
    volatile long s = 0;
    double t0 = now();
    while (now() - t0 < 0.5)
        for (size_t i = 0; i < 2 * n; i += 4096) s += r[i]++;
    munmap(r, 2 * n);
    return 0;
}
"""


def test_a_remapped_mapping_is_sampled(compile_c, run_traced):
    """A mapping grown by mremap is tracked in the map list under its MREMAP allocation; the
    scanner arms it like any mapping."""
    exe = compile_c(REMAPPED, name="remapped")
    run = run_traced(exe, window_pages=256)
    assert run.returncode == 0, run.stderr
    assert samples_in(run.trace(), printed(run.stdout)["r"], 8 << 20) > 0


THREADS = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define T 32
static void *work(void *arg) {
    volatile long s = 0;
    for (int round = 0; round < 20; round++) {
        size_t n = (256u << 10) + 4096u * (size_t)(long)arg;
        char *p = malloc(n);
        for (int pass = 0; pass < 30; pass++)
            for (size_t i = 0; i < n; i += 512) s += p[i] = (char)(i + pass);
        char *q = realloc(p, n * 2);
        memset(q + n, 3, n);
        free(q);
    }
    return (void *)s;
}
int main(void) {
    pthread_t th[T];
    for (long i = 0; i < T; i++) pthread_create(&th[i], NULL, work, (void *)i);
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    puts("done");
    return 0;
}
"""


def test_many_threads(compile_c, run_traced):
    exe = compile_c(THREADS, name="threads", flags=("-O1", "-g", "-fno-builtin"))
    run = run_traced(exe, rate=20000, window_pages=64)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "done"
    t = run.trace()
    allocs, frees = t.allocations, t.frees
    assert allocs.num_rows == 32 * 20 * 2
    assert frees.num_rows == 32 * 20 * 2
    assert len(set(allocs.column("tid").to_pylist())) == 32
    seqs = allocs.column("seq").to_pylist() + frees.column("seq").to_pylist()
    assert len(set(seqs)) == len(seqs)
    # every sample falls inside an object live at that time
    a = allocs.to_pylist()
    free_seq_time = {}
    for f in frees.to_pylist():
        free_seq_time.setdefault(f["addr"], []).append(f["time_ns"])
    for s in t.samples.to_pylist():
        assert any(o["addr"] <= s["addr"] < o["addr"] + o["size"] and o["time_ns"] <= s["time_ns"]
                   for o in a)


OWN_HANDLER = r"""
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static sigjmp_buf jb;
static volatile int caught;
static void on_segv(int sig, siginfo_t *si, void *uc) { (void)sig; (void)si; (void)uc; caught++; siglongjmp(jb, 1); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    struct sigaction back;
    sigaction(SIGSEGV, NULL, &back);
    if (back.sa_sigaction != on_segv) return 20;
    size_t n = 4u << 20;
    char *b = malloc(n);
    memset(b, 0, n);
    volatile long s = 0;
    double t0 = now();
    while (now() - t0 < 0.5)
        for (size_t i = 0; i < n; i += 4096) s += b[i]++;
    for (int k = 0; k < 3; k++)
        if (sigsetjmp(jb, 1) == 0)
            *(volatile int *)16 = 1;           /* the program's own fault */
    free(b);
    printf("caught %d\n", caught);
    return 0;
}
"""


def test_program_segv_handler_is_chained(compile_c, run_traced):
    exe = compile_c(OWN_HANDLER, name="own_handler")
    run = run_traced(exe)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "caught 3"
    assert run.trace().samples.num_rows > 0


SEGFAULT = r"""
#include <stdlib.h>
#include <string.h>
int main(void) {
    char *b = malloc(1 << 20);
    memset(b, 1, 1 << 20);
    *(volatile int *)8 = b[5];
    return 0;
}
"""


def test_real_segfault_still_kills(compile_c, run_traced):
    exe = compile_c(SEGFAULT, name="segfault", flags=("-O1", "-g", "-fno-builtin"))
    run = run_traced(exe)
    assert run.returncode == -signal.SIGSEGV
    t = run.trace()
    assert t.allocations.num_rows == 1


READ_INTO = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    size_t n = 2u << 20;
    char *buf = malloc(n);
    memset(buf, 0, n);
    long rounds = 0, bad = 0;
    double t0 = now();
    while (now() - t0 < 1.0) {
        FILE *f = fopen(argv[1], "rb");
        size_t got = fread(buf, 1, n, f);
        fclose(f);
        int fd = open(argv[1], O_RDONLY);
        ssize_t r = read(fd, buf + 4096, n - 4096);
        close(fd);
        if (got != n || r != (ssize_t)(n - 4096) || buf[n - 1] != 'x') bad++;
        int out = open("/dev/null", O_WRONLY);
        if (write(out, buf, n) != (ssize_t)n) bad++;
        close(out);
        /* time outside system calls, so the scanner finds moments to arm the buffer */
        double t1 = now();
        while (now() - t1 < 0.002)
            for (size_t i = 0; i < n; i += 4096) buf[i] = 'x';
        rounds++;
    }
    free(buf);
    printf("rounds %ld bad %ld\n", rounds, bad);
    return bad != 0;
}
"""


def test_read_and_fread_into_tracked_buffer(compile_c, run_traced, tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(b"x" * (2 << 20))
    exe = compile_c(READ_INTO, name="read_into")
    run = run_traced(exe, data, rate=100000, window_pages=128)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.split()[3] == "0"
    assert run.trace().sampler_stats.to_pylist()[0]["windows"] > 0
