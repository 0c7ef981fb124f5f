/* Set-associative LRU last-level-cache model; see cache_model.h. */
#define _GNU_SOURCE
#include "cache_model.h"
#include "rt.h"

#include <errno.h>
#include <string.h>

/* Reads a small sysfs file holding a decimal number with an optional K/M suffix
 * ("32768K"). Returns 0 when absent or malformed. */
static uint64_t read_sysfs_number(const char *path)
{
    char buf[64];
    if (rt_sys_read_small(path, buf, sizeof buf) <= 0)
        return 0;
    uint64_t v = 0;
    char *p = buf;
    if (*p < '0' || *p > '9')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    if (*p == 'K' || *p == 'k')
        v <<= 10;
    else if (*p == 'M' || *p == 'm')
        v <<= 20;
    return v;
}

void rt_llc_machine(uint64_t *size_bytes, uint32_t *ways, uint32_t *line_bytes)
{
    const char *dir = "/sys/devices/system/cpu/cpu0/cache/index3/";
    char path[128];
    uint64_t size, w, line;
    strcpy(path, dir);
    strcat(path, "size");
    size = read_sysfs_number(path);
    strcpy(path, dir);
    strcat(path, "ways_of_associativity");
    w = read_sysfs_number(path);
    strcpy(path, dir);
    strcat(path, "coherency_line_size");
    line = read_sysfs_number(path);
    if (size == 0 || w == 0 || w > 64 || line == 0 || (line & (line - 1))) {
        size = 32ULL << 20;
        w = 16;
        line = 64;
    }
    if (size_bytes)
        *size_bytes = size;
    if (ways)
        *ways = (uint32_t)w;
    if (line_bytes)
        *line_bytes = (uint32_t)line;
}

int rt_llc_init(rt_llc *c, uint64_t size_bytes, uint32_t ways, uint32_t line_bytes)
{
    memset(c, 0, sizeof *c);
    if (line_bytes == 0 || (line_bytes & (line_bytes - 1)) || ways == 0 || ways > 64 ||
        size_bytes < line_bytes)
        return -EINVAL;
    uint64_t sets = size_bytes / ((uint64_t)ways * line_bytes);
    if (sets == 0)
        sets = 1;
    c->map_bytes = sets * ways * sizeof(uint64_t);
    c->tags = rt_sys_mmap(c->map_bytes); /* zero-filled: every slot invalid */
    if (!c->tags)
        return -ENOMEM;
    c->sets = sets;
    c->set_mask = (sets & (sets - 1)) == 0 ? sets - 1 : 0;
    c->ways = ways;
    c->line_shift = (uint32_t)__builtin_ctz(line_bytes);
    c->last_line = UINT64_MAX;
    return 0;
}

void rt_llc_destroy(rt_llc *c)
{
    if (c->tags)
        rt_sys_munmap(c->tags, c->map_bytes);
    c->tags = NULL;
}

int rt_llc_access_slow(rt_llc *c, uint64_t line)
{
    c->last_line = line;
    c->accesses++;
    uint64_t set = c->set_mask || c->sets == 1 ? (line & c->set_mask) : line % c->sets;
    uint64_t *s = c->tags + set * c->ways;
    uint64_t want = line + 1;
    uint32_t w = c->ways;
    if (s[0] == want)
        return 0;
    uint32_t i = 1;
    while (i < w && s[i] != want)
        i++;
    int miss = i == w;
    if (miss)
        i = w - 1; /* evict the LRU slot */
    memmove(s + 1, s, (size_t)i * sizeof *s);
    s[0] = want;
    c->misses += (uint64_t)miss;
    return miss;
}
