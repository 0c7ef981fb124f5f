/*
 * bandit: a co-running memory load of adjustable intensity, for `objtier sweep --knob bandit`.
 *
 * Each of THREADS threads owns a buffer of SIZE bytes (larger than the last-level cache) and
 * repeats: WORK_US microseconds of memory traffic, then a pause, so that the fraction of time
 * it loads memory is DUTY percent (100: no pause). Traffic kinds (-m):
 *   stream  read-modify-write of consecutive 64-byte lines (bandwidth load; 2 x 64 B per line)
 *   chase   dependent loads along a random cycle of 64-byte lines (latency load; 64 B each)
 * Bytes moved are counted per completed line and summed over threads.
 *
 * Protocol with the parent (stdout, line buffered):
 *   "BANDIT ready threads=T size=S duty=D mode=M"   once every buffer is allocated and touched
 *   "BANDIT bytes=B seconds=S gbps=G"               at exit: bytes moved since "ready", the
 *                                                   seconds since "ready", B / S / 1e9
 * It stops on SIGTERM or SIGINT, and on its parent's death (PR_SET_PDEATHSIG), and exits 0.
 * Exit status 2: bad option; 4: out of memory.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "../common/wl.h"

#define LINE    64
#define WORK_US 2000.0 /* length of one burst of traffic [us] */

static volatile sig_atomic_t stop_flag;
static atomic_uint_fast64_t total_bytes;

struct job {
    char *buf;
    uint64_t size;
    double duty; /* (0, 1] */
    int chase;
    uint64_t sink;
};

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void sleep_us(double us)
{
    if (us <= 0)
        return;
    struct timespec ts = {(time_t)(us / 1e6), (long)(((uint64_t)us % 1000000) * 1000)};
    nanosleep(&ts, NULL);
}

static void *run(void *arg)
{
    struct job *job = arg;
    uint64_t lines = job->size / LINE, i = 0, sink = 0;
    uint64_t *p = (uint64_t *)job->buf; /* chase: the line index to go to next */
    uint64_t at = 0;
    while (!stop_flag) {
        double start = wl_now(), burst_end = start + WORK_US / 1e6;
        uint64_t done = 0;
        while (wl_now() < burst_end) {
            for (int k = 0; k < 4096; k++) {
                if (job->chase) {
                    at = p[at * (LINE / 8)];
                } else {
                    uint64_t *line = (uint64_t *)(job->buf + i * LINE);
                    line[0] += 1;
                    sink += line[4];
                    if (++i == lines)
                        i = 0;
                }
            }
            done += 4096;
        }
        atomic_fetch_add(&total_bytes, done * (job->chase ? LINE : 2 * LINE));
        double busy = wl_now() - start;
        sleep_us(busy * 1e6 * (1.0 - job->duty) / job->duty);
    }
    job->sink = sink + at;
    return NULL;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: bandit [-t THREADS] [-d DUTY] [-s SIZE] [-m stream|chase]\n"
                "A co-running memory load: THREADS threads moving memory DUTY %% of the time.\n"
                "  -t THREADS threads (default 1)\n"
                "  -d DUTY    percent of the time spent loading memory, 1..100 (default 100)\n"
                "  -s SIZE    buffer per thread, K/M/G suffix (default 64M)\n"
                "  -m MODE    stream (bandwidth, default) or chase (latency)\n");
}

int main(int argc, char **argv)
{
    wl_init("bandit");
    uint64_t threads = 1, size = 64ull << 20;
    double duty = 100;
    int chase = 0, opt;
    while ((opt = getopt(argc, argv, ":t:d:s:m:h")) != -1) {
        switch (opt) {
        case 't': threads = wl_parse_u64("-t", optarg, 1, 1024); break;
        case 'd': duty = wl_parse_double("-d", optarg, 1, 100); break;
        case 's': size = wl_parse_bytes("-s", optarg, 1 << 20, 1ull << 40); break;
        case 'm':
            if (strcmp(optarg, "stream") == 0)
                chase = 0;
            else if (strcmp(optarg, "chase") == 0)
                chase = 1;
            else
                wl_die(WL_EXIT_USAGE, "-m: expected stream or chase, got '%s'", optarg);
            break;
        case 'h': usage(stdout); return 0;
        default: wl_bad_option(optopt, argv[optind - 1]);
        }
    }
    if (optind < argc)
        wl_die(WL_EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (getppid() == 1)
        return 0; /* the parent died before PR_SET_PDEATHSIG was set */

    struct job *jobs = wl_calloc(threads, sizeof *jobs, "jobs");
    pthread_t *tids = wl_calloc(threads, sizeof *tids, "thread ids");
    uint64_t lines = size / LINE;
    for (uint64_t t = 0; t < threads; t++) {
        jobs[t] = (struct job){wl_aligned(4096, lines * LINE, "bandit buffer"), lines * LINE,
                               duty / 100.0, chase, 0};
        uint64_t *words = (uint64_t *)jobs[t].buf;
        memset(jobs[t].buf, 0, lines * LINE);
        if (chase) { /* Sattolo: one random cycle through all lines */
            wl_rng rng = {0x5eedULL + t};
            uint64_t *order = wl_malloc(lines * sizeof *order, "order");
            for (uint64_t i = 0; i < lines; i++)
                order[i] = i;
            for (uint64_t i = lines - 1; i > 0; i--) {
                uint64_t j = wl_rng_below(&rng, i), tmp = order[i];
                order[i] = order[j];
                order[j] = tmp;
            }
            for (uint64_t i = 0; i < lines; i++)
                words[order[i] * (LINE / 8)] = order[(i + 1) % lines];
            free(order);
        }
    }
    printf("BANDIT ready threads=%llu size=%llu duty=%g mode=%s\n", (unsigned long long)threads,
           (unsigned long long)(lines * LINE), duty, chase ? "chase" : "stream");
    fflush(stdout);
    double start = wl_now();
    for (uint64_t t = 0; t < threads; t++)
        if (pthread_create(&tids[t], NULL, run, &jobs[t]) != 0)
            wl_die(WL_EXIT_SYSTEM, "cannot start thread %llu", (unsigned long long)t);
    uint64_t sink = 0;
    for (uint64_t t = 0; t < threads; t++) {
        pthread_join(tids[t], NULL);
        sink += jobs[t].sink;
    }
    double seconds = wl_now() - start;
    uint64_t bytes = atomic_load(&total_bytes);
    /* sink keeps the loads from being optimized away; it is never 1 in practice */
    printf("BANDIT bytes=%llu seconds=%.6f gbps=%.4f%s\n", (unsigned long long)bytes, seconds,
           seconds > 0 ? bytes / seconds / 1e9 : 0.0, sink == 1 ? " " : "");
    fflush(stdout);
    return 0;
}
