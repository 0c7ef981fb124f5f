/* The sampler's cost budget; see overhead.h. */
#define _GNU_SOURCE
#include "overhead.h"
#include "rt.h"
#include "site_pace.h"
#include "writer.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define CAL_PAGES  8
#define PM_SWAPPED (1ULL << 62)
#define PM_PRESENT (1ULL << 63)
#define N_COUNTERS 8

static const char *const counter_names[N_COUNTERS] = {
    "recorder.cost_ns",       "recorder.sampler_cpu_ns", "recorder.sampled_faults",
    "recorder.fault_cost_ns", "recorder.program_cpu_ns", "recorder.rate",
    "recorder.rate_max",      "recorder.overhead_bp"};
static const char *const counter_units[N_COUNTERS] = {
    "ns", "ns", "events", "ns", "ns", "per_second", "per_second", "basis_points"};

void rt_overhead_init(rt_overhead *o, const rt_config *cfg)
{
    memset(o, 0, sizeof *o);
    o->bp = cfg->overhead_bp;
    o->max_rate = (double)(cfg->rate ? cfg->rate : 1);
    o->rate = o->max_rate;
    o->fault_ns = RT_OVERHEAD_FAULT_GUESS;
    o->step_ns = o->start_ns = rt_now_ns();
    o->cpu0_ns = rt_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

void rt_overhead_calibrate(rt_overhead *o, int pagemap_fd)
{
    size_t pb = (size_t)rt_page_bytes, bytes = CAL_PAGES * pb;
    uint64_t t[CAL_PAGES];
    int n = 0;
    unsigned char *p = pagemap_fd >= 0 ? rt_sys_mmap(bytes) : NULL;
    if (p) {
        /* half of each byte pair random: compresses about as well as typical data */
        uint64_t x = rt_now_ns() | 1;
        for (size_t i = 0; i + 8 <= bytes; i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint64_t v = x & 0x00ff00ff00ff00ffULL;
            memcpy(p + i, &v, 8);
        }
        syscall(SYS_madvise, p, bytes, MADV_PAGEOUT);
        for (int i = 0; i < CAL_PAGES; i++) {
            uint64_t e = 0;
            off_t off = (off_t)((uintptr_t)(p + (size_t)i * pb) / pb * 8);
            if (pread(pagemap_fd, &e, 8, off) != 8 || !(e & PM_SWAPPED) || (e & PM_PRESENT))
                continue;
            uint64_t a = rt_now_ns();
            (void)*(volatile unsigned char *)(p + (size_t)i * pb);
            t[n++] = rt_now_ns() - a;
        }
        rt_sys_munmap(p, bytes);
    }
    for (int i = 1; i < n; i++) /* insertion sort: n <= CAL_PAGES */
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            uint64_t s = t[j];
            t[j] = t[j - 1];
            t[j - 1] = s;
        }
    o->fault_ns = n ? t[n / 2] : RT_OVERHEAD_FAULT_GUESS;
    o->cpu0_ns = rt_clock_ns(CLOCK_THREAD_CPUTIME_ID); /* calibration is not the program's cost */
    o->step_ns = o->start_ns = rt_now_ns();
}

static void write_counters(rt_overhead *o)
{
    int64_t values[N_COUNTERS] = {
        (int64_t)o->cost_ns, (int64_t)o->sampler_ns,   (int64_t)o->faults,   (int64_t)o->fault_ns,
        (int64_t)o->prog_ns, (int64_t)(o->rate + 0.5), (int64_t)o->max_rate, (int64_t)o->bp};
    rt_write_counters(&rt_w, RT_OVERHEAD_COUNTER_ID, counter_names, counter_units, values,
                      N_COUNTERS, !o->defined);
    o->defined = 1;
}

double rt_overhead_step(rt_overhead *o, int force)
{
    uint64_t now = rt_now_ns();
    uint64_t period =
        now - o->start_ns < 1000000000ULL ? RT_OVERHEAD_EARLY_NS : RT_OVERHEAD_STEP_NS;
    if (!force && now - o->step_ns < period)
        return o->rate;
    double wall_s = (double)(now - o->step_ns) / 1e9;
    o->step_ns = now;
    uint64_t thread = rt_clock_ns(CLOCK_THREAD_CPUTIME_ID),
             proc = rt_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    uint64_t faults_ns = o->faults * o->fault_ns;
    o->sampler_ns = thread > o->cpu0_ns ? thread - o->cpu0_ns : 0;
    o->cost_ns = o->sampler_ns + faults_ns;
    uint64_t sites_ns = rt_site_pace_cost_ns(); /* the small blocks' captures (site_pace.h) */
    uint64_t others = thread + faults_ns + sites_ns;
    o->prog_ns = proc > others ? proc - others : 0;
    if (o->bp && o->pages && wall_s > 0) {
        double share = (double)o->bp / 1e4;
        /* the captures' part of the budget is theirs: the sampler keeps to the rest, at least
         * its own half */
        double sites = o->prog_ns ? (double)sites_ns / (double)o->prog_ns : 0.0;
        share -= sites < share * RT_SITE_PACE_SHARE ? sites : share * RT_SITE_PACE_SHARE;
        double prog_rate = (double)(o->prog_ns > o->last_prog ? o->prog_ns - o->last_prog : 0) /
                           wall_s; /* program CPU ns per second */
        double per_page = (double)o->cost_ns / (double)o->pages;
        double target = per_page > 0 ? share * prog_rate / per_page : o->max_rate;
        double spent = o->prog_ns ? (double)o->cost_ns / (double)o->prog_ns : 1.0;
        if (spent > share)
            target *= share / spent;
        if (target > o->rate * 2)
            target = o->rate * 2;
        if (target < o->rate / 4)
            target = o->rate / 4;
        if (target > o->max_rate)
            target = o->max_rate;
        if (target < RT_OVERHEAD_MIN_RATE)
            target = RT_OVERHEAD_MIN_RATE < o->max_rate ? RT_OVERHEAD_MIN_RATE : o->max_rate;
        o->rate = target;
    }
    o->last_prog = o->prog_ns;
    write_counters(o);
    return o->rate;
}
