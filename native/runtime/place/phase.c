/*
 * Phase markers exported by the runtime: objtier_phase(name) and objtier_phase_end()
 * (programs reach them through native/include/objtier/phase.h, which looks them up with
 * dlsym so that a program without the runtime still runs).
 *
 * Each call writes PHASE records (EXIT of the thread's previous phase, then ENTER of the
 * new one, one block) after the NAME record of a name's first use, and tells the plan
 * enforcement (placement.c) which phase is in force.
 *
 * Invariants
 *   - Name ids are dense from 1 in order of first use in this process's file; a NAME
 *     record reaches the file before any PHASE record naming it.
 *   - tls_phase is the calling thread's current phase id, 0 = none.
 */
#define _GNU_SOURCE
#include "phase.h"
#include "placement.h"
#include "region_pmu.h"
#include "rt.h"
#include "writer.h"
#include "sampler.h"

#include <pthread.h>
#include <string.h>

#define MAX_NAMES      4096
#define MAX_NAME_BYTES 1024 /* longer names are cut (at a byte boundary) */

typedef struct {
    uint64_t hash;
    uint32_t len;
    int emitted; /* NAME record written to the current file */
    char *text;  /* in the arena */
} name_slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static name_slot *names; /* names[id - 1] */
static uint32_t n_names;
static char *arena;
static size_t arena_used, arena_cap;
static int warned_full;
static RT_TLS uint32_t tls_phase;

static uint64_t hash_of(const char *s, size_t n)
{
    uint64_t h = OT_FNV64_OFFSET;
    return ot_fnv64_update(h, s, n);
}

/* The id of name[0..n) (1..MAX_NAMES), writing its NAME record first; 0 when full. */
static uint32_t intern(const char *s, size_t n)
{
    uint64_t h = hash_of(s, n);
    uint32_t id = 0;
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < n_names; i++)
        if (names[i].hash == h && names[i].len == n && memcmp(names[i].text, s, n) == 0) {
            id = i + 1;
            break;
        }
    if (!id) {
        if (!names)
            names = rt_sys_mmap(MAX_NAMES * sizeof *names);
        if (arena_used + n > arena_cap) {
            size_t cap = 1u << 20;
            char *a = rt_sys_mmap(cap);
            if (a) { /* old chunks stay mapped: slots point into them */
                arena = a;
                arena_used = 0;
                arena_cap = cap;
            }
        }
        if (names && n_names < MAX_NAMES && arena && arena_used + n <= arena_cap) {
            name_slot *d = &names[n_names++];
            d->hash = h;
            d->len = (uint32_t)n;
            d->text = arena + arena_used;
            d->emitted = 0;
            memcpy(d->text, s, n);
            arena_used += n;
            id = n_names;
        } else if (!warned_full) {
            warned_full = 1;
            rt_log(1, "more than %d phase names; later ones are not recorded", MAX_NAMES);
        }
    }
    if (id && !names[id - 1].emitted) {
        ot_name_record r = {.id = id, .len = (uint32_t)n};
        if (rt_write_var_record(&rt_w, OT_TAG_NAME, &r, sizeof r, names[id - 1].text, (uint32_t)n,
                                NULL, 0, NULL, 0) == 0)
            names[id - 1].emitted = 1;
    }
    pthread_mutex_unlock(&lock);
    return id;
}

/* One block: EXIT of the thread's phase (if any), then ENTER of `enter` (if nonzero). */
static void write_events(uint32_t enter)
{
    unsigned char blk[sizeof(ot_block_header) + 2 * sizeof(ot_phase_record)];
    uint32_t n = 0;
    uint64_t now = rt_now_ns();
    uint32_t tid = rt_tid();
    if (tls_phase) {
        ot_phase_record r = {.time_ns = now, .tid = tid, .name = tls_phase, .event = OT_PHASE_EXIT};
        memcpy(blk + sizeof(ot_block_header) + n++ * sizeof r, &r, sizeof r);
    }
    if (enter) {
        ot_phase_record r = {.time_ns = now, .tid = tid, .name = enter, .event = OT_PHASE_ENTER};
        memcpy(blk + sizeof(ot_block_header) + n++ * sizeof r, &r, sizeof r);
    }
    if (n)
        rt_write_block(&rt_w, blk, OT_TAG_PHASE, sizeof(ot_phase_record),
                       n * (uint32_t)sizeof(ot_phase_record), n);
    tls_phase = enter;
}

__attribute__((visibility("default"))) void objtier_phase_end(void)
{
    if (!rt_active() || rt_guard)
        return;
    rt_guard++;
    write_events(0);
    rt_region_pmu_boundary(0);
    rt_place_phase(NULL, 0);
    rt_guard--;
}

__attribute__((visibility("default"))) void objtier_phase(const char *name)
{
    if (!name) {
        objtier_phase_end();
        return;
    }
    if (!rt_active() || rt_guard)
        return;
    rt_guard++;
    size_t n = strnlen(name, MAX_NAME_BYTES);
    uint32_t id = intern(name, n);
    if (id && id != tls_phase) {
        write_events(id);
        rt_region_pmu_boundary(id);
        rt_fault_phase_changed();
    }
    rt_place_phase(name, n);
    rt_guard--;
}

uint32_t rt_phase_name_id(const char *name, size_t n)
{
    return intern(name, n);
}

uint32_t rt_phase_current(void)
{
    return tls_phase;
}

void rt_phase_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    tls_phase = 0;
    rt_region_pmu_fork_child();
    /* a child that writes its own file needs the NAME records again */
    for (uint32_t i = 0; i < n_names; i++)
        names[i].emitted = 0;
}
