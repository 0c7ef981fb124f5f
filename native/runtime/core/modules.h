/*
 * Loaded modules (main executable, shared objects, vdso) from dl_iterate_phdr.
 * Ids are dense from 1 in discovery order and never reused within a file; a module
 * gets its MODULE record the first time a context frame falls into it.
 * Not thread-safe by itself: context.c serializes all calls under its mutex.
 */
#ifndef OBJTIER_MODULES_H
#define OBJTIER_MODULES_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "writer.h"

/* [*lo, *hi) spanned by a module's PT_LOAD segments (absolute addresses); *hi == 0 when it
 * has none. Shared by every dl_iterate_phdr callback of the runtime. */
static inline void rt_load_span(const struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
        if (s < *lo)
            *lo = s;
        if (e > *hi)
            *hi = e;
    }
}

/* Re-reads the module list (new modules get new ids). 0 or -ENOMEM. */
int rt_modules_refresh(void);

/* Module id containing ip (refreshing once when unknown) and its load bias in *base;
 * 0 when ip is in no module. Emits the MODULE record on first use. */
uint32_t rt_modules_map(rt_writer *w, uint64_t ip, uint64_t *base);

/* [start, end) of the module holding addr (the runtime's own code range at init). */
int rt_modules_range_of(uint64_t addr, uint64_t *start, uint64_t *end);

/* The path of module id (1..), as in its MODULE record; NULL when unknown. */
const char *rt_modules_path(uint32_t id, size_t *len);

/* A forked child writes a new file: every module needs its record again. */
void rt_modules_forget_emitted(void);

/* The GNU build id of a loaded module (its first NT_GNU_BUILD_ID note of at most max_len
 * bytes, in the module's own memory): the bytes, *len set; NULL when it has none. */
const unsigned char *rt_module_build_id(const struct dl_phdr_info *info, uint32_t max_len,
                                        uint32_t *len);

#endif
