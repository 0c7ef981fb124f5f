/* Calling contexts via libunwind; see context.h.
 * Invariant: a CONTEXT record reaches the file (one write) before any ALLOC naming it
 * can be flushed, and its MODULE records before it, so every prefix of a trace is
 * self-consistent. */
#define _GNU_SOURCE
#include "context.h"
#include "ctxtab.h"
#include "modules.h"
#include "rt.h"
#include "config.h"

#include <pthread.h>
#include <libunwind.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static rt_ctxtab table;
static uint32_t max_depth;
static uint64_t self_start, self_end; /* the runtime's own code: frames skipped */

int rt_context_init(uint32_t depth)
{
    max_depth = depth;
    int r = rt_ctxtab_init(&table);
    if (r)
        return r;
    rt_modules_refresh();
    if (rt_modules_range_of((uint64_t)(uintptr_t)&rt_context_init, &self_start, &self_end) != 0)
        self_start = self_end = 0;
    return 0;
}

__attribute__((noinline)) uint32_t rt_context_capture(rt_writer *w)
{
    /* a few extra slots for the runtime's own frames, which are dropped */
    void *ips[RT_MAX_STACK_DEPTH + 8];
    int n = unw_backtrace(ips, (int)max_depth + 8);
    if (n <= 0)
        return 0;
    int first = 0;
    while (first < n && (uint64_t)(uintptr_t)ips[first] >= self_start &&
           (uint64_t)(uintptr_t)ips[first] < self_end)
        first++;
    int depth = n - first;
    if (depth > (int)max_depth)
        depth = (int)max_depth;
    ot_frame frames[RT_MAX_STACK_DEPTH];
    pthread_mutex_lock(&lock);
    for (int i = 0; i < depth; i++) {
        uint64_t ip = (uint64_t)(uintptr_t)ips[first + i], base;
        frames[i].module = rt_modules_map(w, ip, &base);
        frames[i].reserved = 0;
        frames[i].offset = ip - base;
    }
    int is_new;
    uint32_t id = rt_ctxtab_intern(&table, frames, (uint32_t)depth, &is_new);
    if (is_new) {
        ot_context_record r = {.id = id, .depth = (uint32_t)depth};
        rt_write_var_record(w, OT_TAG_CONTEXT, &r, sizeof r, frames,
                            (uint32_t)depth * (uint32_t)sizeof(ot_frame), NULL, 0, NULL, 0);
    }
    pthread_mutex_unlock(&lock);
    return id;
}

uint32_t rt_context_of_address(rt_writer *w, uint64_t addr)
{
    ot_frame frame;
    uint64_t base = 0;
    pthread_mutex_lock(&lock);
    frame.module = rt_modules_map(w, addr, &base);
    frame.reserved = 0;
    frame.offset = addr - base + 1;
    int is_new;
    uint32_t id = rt_ctxtab_intern(&table, &frame, 1, &is_new);
    if (is_new && id) {
        ot_context_record r = {.id = id, .depth = 1};
        rt_write_var_record(w, OT_TAG_CONTEXT, &r, sizeof r, &frame, (uint32_t)sizeof frame, NULL,
                            0, NULL, 0);
    }
    pthread_mutex_unlock(&lock);
    return id;
}

/* The file name part of path[0..len). */
static const char *base_name(const char *path, size_t len, size_t *name_len)
{
    size_t start = len;
    while (start > 0 && path[start - 1] != '/')
        start--;
    *name_len = len - start;
    return path + start;
}

uint64_t rt_context_key(uint32_t id)
{
    return rt_context_key_depth(id, UINT32_MAX);
}

uint64_t rt_context_key_depth(uint32_t id, uint32_t max_depth)
{
    const ot_frame *frames;
    uint32_t depth;
    uint64_t h = 0;
    pthread_mutex_lock(&lock);
    if (rt_ctxtab_frames(&table, id, &frames, &depth) == 0) {
        if (depth > max_depth)
            depth = max_depth;
        h = OT_FNV64_OFFSET;
        for (uint32_t i = 0; i < depth; i++) {
            size_t len = 0, name_len = 0;
            const char *path = rt_modules_path(frames[i].module, &len);
            const char *name = path ? base_name(path, len, &name_len) : "";
            h = ot_context_key_frame(h, name, name_len, frames[i].offset);
        }
    }
    pthread_mutex_unlock(&lock);
    return h;
}

void rt_context_lock(void)
{
    pthread_mutex_lock(&lock);
}
void rt_context_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

void rt_context_after_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    /* the new file has no CONTEXT or MODULE records yet: start the tables over */
    rt_ctxtab_init(&table);
    rt_modules_forget_emitted();
}
