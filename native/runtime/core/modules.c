/* Module table; see modules.h. */
#define _GNU_SOURCE
#include "modules.h"
#include "rt.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_MODULES 4096
#define PATH_BYTES  4096

typedef struct {
    uint64_t base, start, end;
    uint32_t id;
    uint16_t build_id_len, path_len;
    int emitted;
    unsigned char build_id[32];
    char *path; /* in the string arena */
} module;

static module mods[MAX_MODULES];
static uint32_t n_mods;
static char *strings; /* arena for paths */
static size_t strings_used, strings_cap;

static char *keep_string(const char *s, size_t len)
{
    if (strings_used + len + 1 > strings_cap) {
        size_t cap = 1u << 20;
        char *a = rt_sys_mmap(cap);
        if (!a)
            return NULL;
        strings = a;
        strings_used = 0;
        strings_cap = cap;
    }
    char *d = strings + strings_used;
    memcpy(d, s, len);
    d[len] = 0;
    strings_used += len + 1;
    return d;
}

const unsigned char *rt_module_build_id(const struct dl_phdr_info *info, uint32_t max_len,
                                        uint32_t *len)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        const unsigned char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const unsigned char *name = p + sizeof *n;
            const unsigned char *desc = name + ((n->n_namesz + 3) & ~3u);
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                desc + n->n_descsz <= end && n->n_descsz <= max_len) {
                *len = n->n_descsz;
                return desc;
            }
            p = desc + ((n->n_descsz + 3) & ~3u);
        }
    }
    return NULL;
}

static void read_build_id(struct dl_phdr_info *info, module *m)
{
    uint32_t len;
    const unsigned char *id = rt_module_build_id(info, UINT32_MAX, &len);
    if (!id)
        return;
    m->build_id_len = (uint16_t)(len < 32 ? len : 32);
    memcpy(m->build_id, id, m->build_id_len);
}

static int on_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    uint64_t lo, hi;
    rt_load_span(info, &lo, &hi);
    if (hi == 0)
        return 0;
    for (uint32_t i = 0; i < n_mods; i++)
        if (mods[i].start == lo && mods[i].base == info->dlpi_addr)
            return 0; /* known */
    if (n_mods == MAX_MODULES)
        return 1;
    module *m = &mods[n_mods];
    memset(m, 0, sizeof *m);
    m->base = info->dlpi_addr;
    m->start = lo;
    m->end = hi;
    char exe[PATH_BYTES];
    const char *path = info->dlpi_name;
    if (!path || !*path) {
        /* the main executable: its real path */
        long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        path = exe;
    }
    size_t len = strlen(path);
    if (len > 65535)
        len = 65535;
    m->path = keep_string(path, len);
    if (!m->path)
        return 1;
    m->path_len = (uint16_t)len;
    read_build_id(info, m);
    m->id = ++n_mods;
    return 0;
}

int rt_modules_refresh(void)
{
    dl_iterate_phdr(on_module, NULL);
    return 0;
}

static module *find(uint64_t ip)
{
    for (uint32_t i = 0; i < n_mods; i++)
        if (ip >= mods[i].start && ip < mods[i].end)
            return &mods[i];
    return NULL;
}

uint32_t rt_modules_map(rt_writer *w, uint64_t ip, uint64_t *base)
{
    module *m = find(ip);
    if (!m) {
        rt_modules_refresh();
        m = find(ip);
    }
    if (!m) {
        *base = 0;
        return 0;
    }
    if (!m->emitted && w) {
        ot_module_record r = {.id = m->id,
                              .build_id_len = m->build_id_len,
                              .path_len = m->path_len,
                              .base = m->base,
                              .start = m->start,
                              .end = m->end};
        if (rt_write_var_record(w, OT_TAG_MODULE, &r, sizeof r, m->build_id, m->build_id_len,
                                m->path, m->path_len, NULL, 0) == 0)
            m->emitted = 1;
    }
    *base = m->base;
    return m->id;
}

int rt_modules_range_of(uint64_t addr, uint64_t *start, uint64_t *end)
{
    module *m = find(addr);
    if (!m) {
        rt_modules_refresh();
        m = find(addr);
    }
    if (!m)
        return -1;
    *start = m->start;
    *end = m->end;
    return 0;
}

const char *rt_modules_path(uint32_t id, size_t *len)
{
    if (id == 0 || id > n_mods)
        return NULL;
    *len = mods[id - 1].path_len;
    return mods[id - 1].path;
}

void rt_modules_forget_emitted(void)
{
    for (uint32_t i = 0; i < n_mods; i++)
        mods[i].emitted = 0;
}
