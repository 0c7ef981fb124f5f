/*
 * Prefetch replayed from a recorded fault sequence: can swap-ins be taken off the program's
 * path by bringing in, from another CPU, the pages a recording says it will fault on next?
 * Built by bench/replay_prefetch.py with the runtime's ring reader
 * (native/runtime/core/perf_ring.c) and run by it.
 *
 *     replay_prefetch plain  PROG_CPU -- CMD [ARGS...]
 *     replay_prefetch record PROG_CPU OUT -- CMD [ARGS...]
 *     replay_prefetch replay PROG_CPU SEQ [LEAD+]AHEAD OWN_CPU willneed|read -- CMD [ARGS...]
 *     replay_prefetch reclaim PROG_CPU OWN_CPU -- CMD [ARGS...]
 *
 * Every mode runs CMD as a child kept to PROG_CPU (-1: any) with address-space randomisation
 * off (so that its arrays lie at the same addresses in every run), in the cgroup directory
 * named by REPLAY_CGROUP when set (the launcher itself stays out of it), and exits with its
 * status; it prints the child's CPU time and context switches to stderr (`replay_prefetch:
 * child ...`).
 *
 * `record` samples every user-mode page fault of the child (perf software events major and
 * minor faults, period 1, the faulting address; no PMU needed) and writes the sequence to
 * OUT (0600): one uint64 per fault, page address | 1 for a major fault.
 *
 * `replay` follows the child's faults the same way from OWN_CPU (spinning on the ring; woken
 * every 32 faults when OWN_CPU is the program's) and keeps a position in SEQ: each fault is
 * matched to the entry on its page nearest to the position (at most BACK entries before it or
 * FWD after), and the position is the median of the last RECENT matches, never moving back
 * (two runs' faults agree as sets over a few hundred entries, not in order). After each batch
 * of faults it brings in the recorded major faults among entries [pos + LEAD, pos + LEAD +
 * AHEAD) not brought in yet: `willneed` advises MADV_WILLNEED (process_madvise on the child,
 * up to 64 ranges a call; a page in time costs the child a minor fault from the swap cache
 * instead of a synchronous swap-in), `read` reads one byte of each (process_vm_readv, up to
 * 64 pages a call: swapped in and mapped, no fault left for the child; the cgroup's
 * memory.stat is read before each call). At exit: `replay_prefetch: faults F matched M
 * unmatched U advised A calls C advice_ms T lost L pos P of N`.
 *
 * `reclaim` (REPLAY_CGROUP and REPLAY_HEADROOM_KB = H set) keeps the cgroup H below its limit
 * from OWN_CPU: whenever the charge comes within H/2 of the limit it writes the limit less H
 * and then the limit again (memory cgroup v1 reclaims in the writer until the charge fits,
 * so the kernel's own victims are reclaimed on OWN_CPU; the limit is set back when the write
 * returns). `replay` does the same from a second thread when REPLAY_HEADROOM_KB is set. At
 * exit: `replay_prefetch: reclaims R reclaim_ms T`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_ring.h"

size_t rt_page_bytes = 4096; /* what perf_ring.c reads rings in (the runtime sets it) */

#define RING_PAGES 512 /* data pages of a ring (power of two) */
#define PAGE       4096ull
#define VEC        64
#define NONE       UINT64_MAX

typedef struct {
    int fd;
    struct perf_event_mmap_page *meta; /* the mmap: metadata page, then RING_PAGES data pages */
} ring;

typedef struct {
    uint64_t time, addr;
} fault;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void keep_to(int cpu) /* cpu < 0: any */
{
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("replay_prefetch: sched_setaffinity");
        exit(2);
    }
}

static int open_ring(ring *r, pid_t pid, uint64_t config, uint32_t wakeup)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = config;
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
    a.disabled = 1;
    a.enable_on_exec = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.wakeup_events = wakeup;
    r->fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (r->fd < 0)
        return -1;
    void *m = mmap(NULL, (RING_PAGES + 1) * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (m == MAP_FAILED)
        return -1;
    r->meta = m;
    return 0;
}

/* Where a drain puts the ring's samples (at most cap) and counts the records lost. */
typedef struct {
    fault *out;
    size_t *n, cap;
    uint64_t lost;
} sink;

static void on_record(void *ctx, const struct perf_event_header *h, const unsigned char *rec)
{
    sink *k = ctx;
    const unsigned char *body = rec + sizeof *h;
    size_t len = h->size - sizeof *h;
    if (h->type == PERF_RECORD_SAMPLE && len >= 16 && *k->n < k->cap) {
        memcpy(&k->out[*k->n], body, 16); /* PERF_SAMPLE_TIME, then PERF_SAMPLE_ADDR */
        (*k->n)++;
    } else if (h->type == PERF_RECORD_LOST && len >= 16) {
        uint64_t l; /* id, then the count */
        memcpy(&l, body + 8, 8);
        k->lost += l;
    }
}

/* Appends the ring's samples to out (at most cap); returns the records lost. */
static uint64_t drain(ring *r, fault *out, size_t *n, size_t cap)
{
    sink k = {.out = out, .n = n, .cap = cap, .lost = 0};
    rt_perf_ring_drain(r->meta, RING_PAGES, on_record, &k);
    return k.lost;
}

static int by_time(const void *a, const void *b)
{
    const fault *x = a, *y = b;
    return (x->time > y->time) - (x->time < y->time);
}

/* The sequence and its index: occ holds the entries grouped by page, ascending within a page;
 * the open-addressing table maps a page to its group (first entry in occ, count). */
static uint64_t *seq, *occ, n_seq;
static uint64_t *tab_page, *tab_first, *tab_count, tab_mask;

static uint64_t slot(uint64_t page)
{
    uint64_t h = (page * 0x9E3779B97F4A7C15ull) & tab_mask;
    while (tab_page[h] != NONE && tab_page[h] != page)
        h = (h + 1) & tab_mask;
    return h;
}

static int by_page(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    uint64_t pa = seq[a] & ~(PAGE - 1), pb = seq[b] & ~(PAGE - 1);
    if (pa != pb)
        return pa < pb ? -1 : 1;
    return (a > b) - (a < b);
}

static void index_sequence(void)
{
    uint64_t cap = 1;
    while (cap < 2 * n_seq + 2)
        cap <<= 1;
    tab_mask = cap - 1;
    tab_page = malloc(cap * 8);
    tab_first = malloc(cap * 8);
    tab_count = calloc(cap, 8);
    occ = malloc((n_seq + 1) * 8);
    if (!tab_page || !tab_first || !tab_count || !occ) {
        fputs("replay_prefetch: out of memory\n", stderr);
        exit(2);
    }
    memset(tab_page, 0xff, cap * 8);
    for (uint64_t k = 0; k < n_seq; k++)
        occ[k] = k;
    qsort(occ, n_seq, 8, by_page);
    for (uint64_t i = 0; i < n_seq; i++) {
        uint64_t h = slot(seq[occ[i]] & ~(PAGE - 1));
        if (tab_page[h] == NONE) {
            tab_page[h] = seq[occ[i]] & ~(PAGE - 1);
            tab_first[h] = i;
        }
        tab_count[h]++;
    }
}

/* The entry on page nearest to pos within [pos - BACK, pos + FWD], NONE if there is none. */
#define BACK 256
#define FWD  1024
static uint64_t pos;

static uint64_t nearest(uint64_t page)
{
    uint64_t h = slot(page);
    if (tab_page[h] == NONE)
        return NONE;
    const uint64_t *g = occ + tab_first[h];
    uint64_t lo = 0, hi = tab_count[h]; /* first entry >= pos */
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (g[mid] < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t best = NONE, dist = NONE;
    if (lo < tab_count[h] && g[lo] - pos <= FWD)
        best = g[lo], dist = g[lo] - pos;
    if (lo > 0 && pos - g[lo - 1] <= BACK && pos - g[lo - 1] < dist)
        best = g[lo - 1];
    return best;
}

static uint64_t advised_upto, n_faults, n_matched, n_unmatched, n_advised, n_calls, advice_ns;

static int read_pages; /* 1: read one byte of each page (process_vm_readv), 0: WILLNEED */
static pid_t child;
static int shared; /* the replayer runs on the program's CPU */

static int stat_fd = -1; /* the cgroup's memory.stat: read before each read call */

static void advise(int pidfd, struct iovec *v, int nv)
{
    uint64_t t0 = now_ns();
    if (read_pages && stat_fd >= 0) { /* flushes the cgroup's statistics reclaim works from */
        static char buf[8192];
        if (pread(stat_fd, buf, sizeof buf, 0) < 0)
            stat_fd = -1;
    }
    if (read_pages) {
        static char sink[VEC];
        struct iovec local = {.iov_base = sink, .iov_len = (size_t)nv};
        for (int i = 0; i < nv; i++)
            v[i].iov_len = 1;
        syscall(SYS_process_vm_readv, child, &local, 1, v, nv, 0);
    } else {
        syscall(SYS_process_madvise, pidfd, v, nv, MADV_WILLNEED, 0);
    }
    advice_ns += now_ns() - t0;
    n_calls++;
}

/* Reclaim ahead (REPLAY_HEADROOM_KB > 0): when the cgroup's charge comes within half the
 * headroom of its limit, the limit is lowered by the headroom and put back, so that the
 * kernel's reclaim runs in this process, on its CPU, and frees that much below the limit
 * (memory cgroup v1 has no memory.reclaim). Bytes. */
static uint64_t headroom, limit;
static int usage_fd = -1, limit_fd = -1;
static uint64_t n_reclaims, reclaim_ns;

static uint64_t read_u64(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    return strtoull(buf, NULL, 10);
}

static void write_u64(int fd, uint64_t v)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    if (pwrite(fd, buf, (size_t)n, 0) != n)
        return; /* the kernel could not reclaim that much: the limit stays where it was */
}

static void reclaim_ahead(void)
{
    if (!headroom || usage_fd < 0 || limit_fd < 0)
        return;
    if (read_u64(usage_fd) + headroom / 2 < limit)
        return;
    uint64_t t0 = now_ns();
    write_u64(limit_fd, limit - headroom);
    write_u64(limit_fd, limit);
    reclaim_ns += now_ns() - t0;
    n_reclaims++;
}

/* Opens the cgroup's usage and limit files and reads the limit; keeps to own_cpu when given.
 * 0, or -1 without a cgroup or a headroom. */
static int open_limits(const char *cg, const char *own_cpu)
{
    const char *h = getenv("REPLAY_HEADROOM_KB");
    headroom = h ? strtoull(h, NULL, 10) << 10 : 0;
    if (!cg || !*cg || !headroom)
        return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/memory.usage_in_bytes", cg);
    usage_fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "%s/memory.limit_in_bytes", cg);
    limit_fd = open(path, O_RDWR | O_CLOEXEC);
    limit = limit_fd >= 0 ? read_u64(limit_fd) : 0;
    if (usage_fd < 0 || !limit)
        return -1;
    if (own_cpu)
        keep_to(atoi(own_cpu));
    return 0;
}

/* The replay's reclaimer thread: reclaims ahead until stopped, checking every 50 us. */
static volatile int stopping;

static void *reclaimer(void *arg)
{
    (void)arg;
    while (!stopping) {
        reclaim_ahead();
        struct timespec t = {0, 50000};
        nanosleep(&t, NULL);
    }
    return NULL;
}

static uint64_t lead; /* entries after the position not prefetched (the program's own) */

static void prefetch(int pidfd, uint64_t ahead)
{
    if (advised_upto < pos + lead)
        advised_upto = pos + lead;
    uint64_t end = pos + lead + ahead < n_seq ? pos + lead + ahead : n_seq;
    struct iovec v[VEC];
    int nv = 0;
    for (uint64_t k = advised_upto; k < end; k++) {
        if (!(seq[k] & 1))
            continue;
        uint64_t page = seq[k] & ~(PAGE - 1);
        if (!read_pages && nv && (uint64_t)v[nv - 1].iov_base + v[nv - 1].iov_len == page)
            v[nv - 1].iov_len += PAGE;
        else
            v[nv++] = (struct iovec){.iov_base = (void *)page, .iov_len = PAGE};
        n_advised++;
        if (nv == VEC) {
            advise(pidfd, v, nv);
            nv = 0;
        }
    }
    if (nv)
        advise(pidfd, v, nv);
    advised_upto = end;
}

/* The position: the median of the last RECENT matched entries, never moving back. A fault
 * matches the entry on its page nearest to the position (within BACK/FWD). */
#define RECENT 16
static uint64_t recent[RECENT], n_recent;

static int by_value(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static void on_fault(uint64_t addr)
{
    n_faults++;
    uint64_t m = nearest(addr & ~(PAGE - 1));
    if (m == NONE) {
        n_unmatched++;
        return;
    }
    n_matched++;
    recent[n_recent++ % RECENT] = m;
    uint64_t k = n_recent < RECENT ? n_recent : RECENT, sorted[RECENT];
    memcpy(sorted, recent, k * 8);
    qsort(sorted, k, 8, by_value);
    if (sorted[k / 2] > pos)
        pos = sorted[k / 2];
}

static pid_t spawn(int prog_cpu, char **argv, int *go)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        perror("replay_prefetch: pipe");
        exit(2);
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("replay_prefetch: fork");
        exit(2);
    }
    if (pid == 0) {
        close(p[1]);
        keep_to(prog_cpu);
        const char *cg = getenv("REPLAY_CGROUP"); /* join this cgroup; the launcher stays out */
        if (cg && *cg) {
            char path[4096];
            snprintf(path, sizeof path, "%s/cgroup.procs", cg);
            FILE *f = fopen(path, "w");
            if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0) {
                perror("replay_prefetch: cgroup");
                _exit(127);
            }
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* no program left in the cgroup if we die */
        personality(ADDR_NO_RANDOMIZE);
        char c;
        if (read(p[0], &c, 1) != 1)
            _exit(127);
        execvp(argv[0], argv);
        perror("replay_prefetch: exec");
        _exit(127);
    }
    close(p[0]);
    *go = p[1];
    return pid;
}

static struct rusage ru; /* the child's, from wait4 */

/* One line: the child's CPU time and context switches (a wait for a page in flight is a
 * voluntary one). */
static void report_usage(void)
{
    fprintf(stderr, "replay_prefetch: child user_s %.3f sys_s %.3f voluntary %ld involuntary %ld\n",
            ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
            ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_nvcsw, ru.ru_nivcsw);
}

static int status_of(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
    int dd = 0;
    while (dd < argc && strcmp(argv[dd], "--") != 0)
        dd++;
    if (argc < 3 || dd >= argc - 1) {
        fputs("usage: replay_prefetch plain|record|replay PROG_CPU [...] -- CMD [ARGS...]\n",
              stderr);
        return 2;
    }
    const char *mode = argv[1];
    int prog_cpu = atoi(argv[2]);
    int go;
    if (strcmp(mode, "plain") == 0 || strcmp(mode, "reclaim") == 0) {
        int bg = mode[0] == 'r';
        if (bg && (dd != 4 || open_limits(getenv("REPLAY_CGROUP"), argv[3]) != 0)) {
            fputs("replay_prefetch: reclaim PROG_CPU OWN_CPU -- CMD (REPLAY_CGROUP, "
                  "REPLAY_HEADROOM_KB set)\n",
                  stderr);
            return 2;
        }
        pid_t pid = spawn(prog_cpu, argv + dd + 1, &go);
        if (write(go, "g", 1) != 1)
            return 2;
        int st;
        if (bg) { /* reclaim ahead until the child exits, checking every 50 us */
            while (wait4(pid, &st, WNOHANG, &ru) != pid) {
                reclaim_ahead();
                struct timespec t = {0, 50000};
                nanosleep(&t, NULL);
            }
            fprintf(stderr, "replay_prefetch: reclaims %llu reclaim_ms %.1f\n",
                    (unsigned long long)n_reclaims, reclaim_ns / 1e6);
        } else {
            wait4(pid, &st, 0, &ru);
        }
        report_usage();
        return status_of(st);
    }
    int rec = strcmp(mode, "record") == 0;
    if (!rec && (strcmp(mode, "replay") != 0 || dd != 7)) {
        fputs("replay_prefetch: replay PROG_CPU SEQ [LEAD+]AHEAD OWN_CPU willneed|read -- CMD\n",
              stderr);
        return 2;
    }
    uint64_t ahead = 0;
    int pidfd = -1, reclaiming = 0;
    pthread_t reclaim_thread;
    if (!rec) {
        FILE *f = fopen(argv[3], "rb");
        struct stat sb;
        if (!f || fstat(fileno(f), &sb) != 0) {
            perror("replay_prefetch: sequence");
            return 2;
        }
        n_seq = (uint64_t)sb.st_size / 8;
        seq = malloc((n_seq + 1) * 8);
        if (!seq || fread(seq, 8, n_seq, f) != n_seq) {
            fputs("replay_prefetch: cannot read the sequence\n", stderr);
            return 2;
        }
        fclose(f);
        index_sequence();
        char *plus;
        lead = strtoull(argv[4], &plus, 10); /* AHEAD or LEAD+AHEAD */
        if (*plus == '+')
            ahead = strtoull(plus + 1, NULL, 10);
        else
            ahead = lead, lead = 0;
        keep_to(atoi(argv[5]));
        shared = atoi(argv[5]) == prog_cpu;
        read_pages = strcmp(argv[6], "read") == 0;
        const char *cg = getenv("REPLAY_CGROUP");
        if (cg && *cg) {
            char path[4096];
            snprintf(path, sizeof path, "%s/memory.stat", cg);
            stat_fd = open(path, O_RDONLY | O_CLOEXEC);
            if (getenv("REPLAY_HEADROOM_KB") && open_limits(cg, NULL) == 0)
                reclaiming = pthread_create(&reclaim_thread, NULL, reclaimer, NULL) == 0;
        }
    }
    pid_t pid = spawn(prog_cpu, argv + dd + 1, &go);
    child = pid;
    ring rings[2];
    int nr = rec ? 2 : 1;
    uint64_t cfg[2] = {rec ? PERF_COUNT_SW_PAGE_FAULTS_MAJ : PERF_COUNT_SW_PAGE_FAULTS,
                       PERF_COUNT_SW_PAGE_FAULTS_MIN};
    for (int i = 0; i < nr; i++)
        if (open_ring(&rings[i], pid, cfg[i], rec ? 64 : shared ? 32 : 1u << 30) != 0) {
            perror("replay_prefetch: perf_event_open");
            kill(pid, SIGKILL);
            return 2;
        }
    if (!rec) {
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
            perror("replay_prefetch: pidfd_open");
            kill(pid, SIGKILL);
            return 2;
        }
    }
    FILE *out = NULL;
    if (rec) {
        int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        out = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (!out) {
            perror("replay_prefetch: output");
            kill(pid, SIGKILL);
            return 2;
        }
    }
    if (write(go, "g", 1) != 1)
        return 2;
    close(go);
    size_t cap = 1 << 16, n = 0;
    fault *batch = malloc(cap * sizeof *batch);
    uint64_t lost = 0;
    int st = 0, done = 0;
    struct pollfd p[2] = {{.fd = rings[0].fd, .events = POLLIN},
                          {.fd = nr > 1 ? rings[1].fd : -1, .events = POLLIN}};
    uint64_t last_wait = 0;
    while (!done) {
        if (rec || shared) { /* sharing the program's CPU: sleep until 32 faults are in */
            poll(p, 2, 1);
            done = wait4(pid, &st, WNOHANG, &ru) == pid;
        } else { /* poll the ring: a wake-up per fault would interrupt the program's CPU */
            if (reclaiming) { /* share this CPU with the reclaimer */
                struct timespec t = {0, 20000};
                nanosleep(&t, NULL);
            }
            uint64_t t = now_ns();
            if (t - last_wait > 1000000) {
                done = wait4(pid, &st, WNOHANG, &ru) == pid;
                last_wait = t;
            }
        }
        for (int pass = 0; pass < (done ? 2 : 1); pass++) {
            n = 0;
            size_t majors = 0;
            lost += drain(&rings[0], batch, &n, cap);
            majors = n;
            if (nr > 1)
                lost += drain(&rings[1], batch, &n, cap);
            for (size_t i = 0; i < majors; i++)
                batch[i].addr = (batch[i].addr & ~(PAGE - 1)) | 1;
            for (size_t i = majors; i < n; i++)
                batch[i].addr &= ~(PAGE - 1);
            qsort(batch, n, sizeof *batch, by_time);
            for (size_t i = 0; i < n; i++)
                if (rec)
                    fwrite(&batch[i].addr, 8, 1, out);
                else
                    on_fault(batch[i].addr);
            if (!rec && n && !done)
                prefetch(pidfd, ahead);
        }
    }
    stopping = 1;
    if (reclaiming)
        pthread_join(reclaim_thread, NULL);
    report_usage();
    if (rec) {
        fclose(out);
        fprintf(stderr, "replay_prefetch: recorded lost %llu\n", (unsigned long long)lost);
    } else {
        fprintf(stderr,
                "replay_prefetch: faults %llu matched %llu unmatched %llu "
                "advised %llu calls %llu advice_ms %.1f reclaims %llu reclaim_ms %.1f lost %llu "
                "pos %llu of %llu\n",
                (unsigned long long)n_faults, (unsigned long long)n_matched,
                (unsigned long long)n_unmatched, (unsigned long long)n_advised,
                (unsigned long long)n_calls, advice_ns / 1e6, (unsigned long long)n_reclaims,
                reclaim_ns / 1e6, (unsigned long long)lost, (unsigned long long)pos,
                (unsigned long long)n_seq);
    }
    return status_of(st);
}
