/* Sampler selection: the ops table of each kind, and what OBJTIER_SAMPLER=auto (the default)
 * resolves to. */
#define _GNU_SOURCE
#include "sampler.h"
#include "rt.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const rt_sampler_ops *rt_sampler_for(int kind)
{
    switch (kind) {
    case RT_SAMPLER_FAULT: return &rt_sampler_fault_ops;
    case RT_SAMPLER_PERF: return &rt_sampler_perf_ops;
    case RT_SAMPLER_TRACE: return &rt_sampler_trace_ops;
    case RT_SAMPLER_PAGEOUT: return &rt_sampler_pageout_ops;
    case RT_SAMPLER_WP: return &rt_sampler_wp_ops;
    default: return NULL;
    }
}

int rt_swap_available(void)
{
    char text[4096];
    if (rt_sys_read_small("/proc/swaps", text, sizeof text) <= 0)
        return 0;
    char *save = NULL;
    int line = 0;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (line++ == 0)
            continue; /* header */
        char name[256], type[32];
        unsigned long long size = 0, used = 0;
        if (sscanf(l, "%255s %31s %llu %llu", name, type, &size, &used) == 4 && size > used)
            return 1;
    }
    return 0;
}

/* "pebs" or "ibs" when the CPU offers precise memory sampling, else NULL (as
 * objtier.record.sampler_choice.hardware_memory_sampling decides). */
static const char *hardware_memory_sampling(void)
{
    if (access("/sys/bus/event_source/devices/ibs_op", F_OK) == 0)
        return "IBS";
    if (access("/sys/bus/event_source/devices/cpu/events/mem-loads", F_OK) == 0)
        return "PEBS";
    return NULL;
}

/* 1 when perf_event_open may watch this process's own events; else 0 and why in why. */
static int perf_permitted(char *why, size_t cap)
{
    char text[32];
    if (rt_sys_read_small("/proc/sys/kernel/perf_event_paranoid", text, sizeof text) <= 0) {
        snprintf(why, cap, "this kernel has no perf_event_open");
        return 0;
    }
    int level = 2;
    if (sscanf(text, "%d", &level) != 1)
        level = 2;
    if (geteuid() != 0 && level > 2) {
        snprintf(why, cap, "perf_event_paranoid is %d", level);
        return 0;
    }
    return 1;
}

int rt_sampler_auto(char *reason, size_t cap)
{
    char why[64] = "";
    int permitted = perf_permitted(why, sizeof why);
    const char *hardware = hardware_memory_sampling();
    int kind;
    if (hardware && permitted) {
        kind = RT_SAMPLER_PERF;
        snprintf(reason, cap, "%s memory sampling through perf_event_open (the runtime's default)",
                 hardware);
    } else if (!permitted) {
        kind = RT_SAMPLER_NONE;
        snprintf(reason, cap,
                 "no sampler that leaves the program unchanged is available (%s): allocations "
                 "only (the runtime's default; OBJTIER_SAMPLER=fault samples with PROT_NONE "
                 "windows)",
                 why);
    } else if (rt_swap_available()) {
        kind = RT_SAMPLER_PAGEOUT;
        snprintf(reason, cap,
                 "no PEBS/IBS on this CPU; sampled pages pushed to swap and their next touch "
                 "seen as a major fault (the runtime's default)");
    } else {
        kind = RT_SAMPLER_PERF;
        snprintf(reason, cap,
                 "no PEBS/IBS and no active swap for the pageout sampler (the runtime adds none; "
                 "objtier record adds a temporary zram device as root): software page-fault "
                 "events, first touches only (the runtime's default)");
    }
    return kind;
}
