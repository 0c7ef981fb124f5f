/* The memory cgroup limit and usage of this process; see memcg.h. */
#define _GNU_SOURCE
#include "memcg.h"
#include "rt.h"

#include <stdio.h>
#include <string.h>

#define V1_ROOT   "/sys/fs/cgroup/memory"
#define V2_ROOT   "/sys/fs/cgroup"
#define UNLIMITED (1ull << 62) /* v1 reports "no limit" as about 2^63 */

/* Decimal digits at s; 0 when s does not start with one. */
static uint64_t dec_at(const char *s)
{
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (uint64_t)(*s - '0');
    return v;
}

/* From /proc/self/cgroup text: the v1 memory controller's path into v1 and the v2 path
 * (the "0::" line) into v2; flags say which were found. */
static void own_paths(char *text, char *v1, char *v2, size_t cap, int *have_v1, int *have_v2)
{
    *have_v1 = *have_v2 = 0;
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2) {
            *c2 = 0;
            const char *ctl = c1 + 1, *path = c2 + 1;
            if (!*ctl && strlen(path) < cap) {
                strcpy(v2, path);
                *have_v2 = 1;
            }
            for (const char *w = ctl; *w;) {
                const char *comma = strchr(w, ',');
                size_t n = comma ? (size_t)(comma - w) : strlen(w);
                if (n == 6 && memcmp(w, "memory", 6) == 0 && strlen(path) < cap) {
                    strcpy(v1, path);
                    *have_v1 = 1;
                }
                w += n + (comma ? 1 : 0);
            }
        }
        if (!end)
            break;
        line = end + 1;
    }
}

void rt_memcg_open(rt_memcg *m)
{
    char text[4096], v1[1024] = "", v2[1024] = "", path[1400], buf[8192];
    int have_v1, have_v2;
    m->limit = UINT64_MAX;
    m->usage_path[0] = m->stat_path[0] = 0;
    if (rt_sys_read_small("/proc/self/cgroup", text, sizeof text) <= 0)
        return;
    own_paths(text, v1, v2, sizeof v1, &have_v1, &have_v2);
    if (have_v1) {
        const char *dir = strcmp(v1, "/") ? v1 : "";
        snprintf(path, sizeof path, V1_ROOT "%s/memory.stat", dir);
        if (rt_sys_read_small(path, buf, sizeof buf) > 0) {
            char *h = strstr(buf, "hierarchical_memory_limit ");
            if (h)
                m->limit = dec_at(h + strlen("hierarchical_memory_limit "));
        }
        snprintf(m->usage_path, sizeof m->usage_path, V1_ROOT "%s/memory.usage_in_bytes", dir);
        snprintf(m->stat_path, sizeof m->stat_path, V1_ROOT "%s/memory.stat", dir);
    } else if (have_v2) {
        for (;;) { /* the cgroup and its ancestors: the smallest memory.max binds */
            const char *dir = strcmp(v2, "/") ? v2 : "";
            snprintf(path, sizeof path, V2_ROOT "%s/memory.max", dir);
            if (rt_sys_read_small(path, buf, sizeof buf) > 0 && buf[0] >= '0' && buf[0] <= '9') {
                uint64_t v = dec_at(buf);
                if (v < m->limit) {
                    m->limit = v;
                    snprintf(m->usage_path, sizeof m->usage_path, V2_ROOT "%s/memory.current", dir);
                    snprintf(m->stat_path, sizeof m->stat_path, V2_ROOT "%s/memory.stat", dir);
                }
            }
            char *slash = strrchr(v2, '/');
            if (!slash || slash == v2)
                break;
            *slash = 0;
        }
    }
    if (m->limit >= UNLIMITED) {
        m->limit = UINT64_MAX;
        m->usage_path[0] = m->stat_path[0] = 0;
    }
}

uint64_t rt_memcg_usage(const rt_memcg *m)
{
    char buf[64];
    if (!m->usage_path[0] || rt_sys_read_small(m->usage_path, buf, sizeof buf) <= 0 ||
        buf[0] < '0' || buf[0] > '9')
        return UINT64_MAX;
    return dec_at(buf);
}

uint64_t rt_memcg_stat(const rt_memcg *m, const char *key)
{
    char buf[8192];
    if (!m->stat_path[0] || rt_sys_read_small(m->stat_path, buf, sizeof buf) <= 0)
        return UINT64_MAX;
    /* the cgroup's own line, at the start of a line (v1 also has total_<key>) */
    size_t n = strlen(key);
    for (const char *p = buf; (p = strstr(p, key)) != NULL; p++)
        if ((p == buf || p[-1] == '\n') && p[n] == ' ')
            return dec_at(p + n + 1);
    return UINT64_MAX;
}

uint64_t rt_memcg_inactive_anon(const rt_memcg *m)
{
    return rt_memcg_stat(m, "inactive_anon");
}

#define MIN_HEADROOM (4ull << 20) /* near the limit: usage within max(limit / 32, this) of it */

int rt_memcg_near_limit(const rt_memcg *m)
{
    if (m->limit == UINT64_MAX)
        return 0;
    uint64_t use = rt_memcg_usage(m);
    uint64_t headroom = m->limit / 32 > MIN_HEADROOM ? m->limit / 32 : MIN_HEADROOM;
    return use != UINT64_MAX && use + headroom >= m->limit;
}

uint64_t rt_memcg_inactive_shortfall(const rt_memcg *m, int near, uint32_t inactive_pct)
{
    if (!near)
        return 0;
    uint64_t target = m->limit / 100 * inactive_pct;
    uint64_t inactive = rt_memcg_inactive_anon(m);
    if (inactive == UINT64_MAX)
        return target;
    return inactive < target ? target - inactive : 0;
}

#define MIN_MARGIN   (32ull << 20) /* without OBJTIER_MLOCK_LIMIT: max(10 %, 32 MiB) unlocked */
#define MIN_UNLOCKED (4ull << 20)  /* with OBJTIER_MLOCK_LIMIT: at least this stays unlocked */

const rt_memcg *rt_memcg_self(void)
{
    static rt_memcg self;
    static int opened;
    if (!opened) {
        rt_memcg_open(&self);
        opened = 1;
    }
    return &self;
}

uint64_t rt_memcg_lock_room(uint64_t cg, uint64_t mlock_limit)
{
    uint64_t limit = mlock_limit ? mlock_limit : UINT64_MAX;
    if (cg != UINT64_MAX) {
        uint64_t margin =
            mlock_limit ? MIN_UNLOCKED : (cg / 10 > MIN_MARGIN ? cg / 10 : MIN_MARGIN);
        uint64_t room = cg > margin ? cg - margin : 0;
        limit = room < limit ? room : limit;
    }
    return limit;
}
