/*
 * Static data objects. A program's global and static arrays live in .data/.bss, where no
 * allocator call names them. When main is about to run, every module loaded then (the
 * executable and its DT_NEEDED libraries) is read from its file, its writable data symbols of
 * at least OBJTIER_MIN_SIZE bytes (elfsyms.c) become objects like allocations: an ALLOC record
 * of kind STATIC whose context is one frame (module, symbol value + 1), so offline
 * symbolization (offset - 1) names the symbol and the stable context key survives ASLR.
 * They are tracked in the registry like heap blocks and never freed (the arrays of a library
 * unloaded later stay listed), covered by the samplers and placed by a plan like any object.
 * (In the map list, adjacent arrays sharing a page were skipped by the pageout scanner.)
 *
 * Not covered: libraries loaded later with dlopen, thread-local (.tbss/.tdata) data, and
 * symbols of stripped files without .dynsym entries. The runtime's own module is skipped.
 *
 * Thread memory (bottom of the file): no object either, but the exact sampler tells accesses
 * to a thread's stack and to static thread-local storage apart from the rest of the memory
 * outside every object (rt_threadmem_ranges), so views can say how much fell there.
 */
#define _GNU_SOURCE
#include "statics.h"
#include "elfsyms.h"
#include "modules.h"
#include "rt.h"

#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_STATICS 4096 /* per module; a program with more large arrays keeps the first ones */

typedef struct {
    uint64_t addr, size;
} span;

typedef struct {
    span *spans;
    int n;
    uint64_t bias;                   /* module load bias */
    const struct dl_phdr_info *info; /* its program headers: symbols must lie in a RW PT_LOAD */
} collect;

typedef struct {
    uint64_t min_size;
    uint64_t self; /* an address inside the runtime's own module */
    span *spans;   /* MAX_STATICS scratch entries */
    void (*track)(uint64_t addr, uint64_t size);
    int registered;
} scan_state;

/* [addr, addr + size) inside one writable PT_LOAD segment of the module in memory. */
static int in_writable_segment(const struct dl_phdr_info *info, uint64_t addr, uint64_t size)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
        if (addr >= s && addr <= e && size <= e - addr)
            return 1;
    }
    return 0;
}

static int on_symbol(uint64_t value, uint64_t size, const char *name, void *arg)
{
    (void)name;
    collect *c = arg;
    uint64_t addr = c->bias + value;
    if (!in_writable_segment(c->info, addr, size))
        return 0; /* the file on disk does not match the image in memory */
    if (c->n < MAX_STATICS)
        c->spans[c->n++] = (span){addr, size};
    return 0;
}

static int by_addr(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->size < y->size ? 1 : (x->size > y->size ? -1 : 0); /* larger first */
}

/* The module's file, opened read-only without following a final symlink (the path is
 * resolved first). -1 when it cannot be opened. */
static int open_module(const char *name)
{
    char link[PATH_MAX], real[PATH_MAX];
    if (!name || !*name) {
        ssize_t n = readlink("/proc/self/exe", link, sizeof link - 1);
        if (n <= 0)
            return -1;
        link[n] = 0;
        name = link;
    }
    if (!realpath(name, real))
        return -1;
    return (int)syscall(SYS_openat, AT_FDCWD, real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

static int scan_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    scan_state *st = arg;
    uint64_t lo, hi;
    rt_load_span(info, &lo, &hi);
    if (hi == 0 || (st->self >= lo && st->self < hi))
        return 0; /* no segments, or the runtime itself */
    if (info->dlpi_name && strncmp(info->dlpi_name, "linux-vdso", 10) == 0)
        return 0;
    int fd = open_module(info->dlpi_name);
    if (fd < 0)
        return 0;
    struct stat sb;
    void *image = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && sb.st_size > 0)
        image = (void *)syscall(SYS_mmap, NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    syscall(SYS_close, fd);
    if (image == MAP_FAILED)
        return 0;
    collect c = {st->spans, 0, info->dlpi_addr, info};
    rt_elf_data_symbols(image, (size_t)sb.st_size, st->min_size, on_symbol, &c);
    syscall(SYS_munmap, image, (size_t)sb.st_size);
    qsort(c.spans, (size_t)c.n, sizeof(span), by_addr);
    uint64_t end = 0;
    for (int i = 0; i < c.n; i++) {
        if (c.spans[i].addr < end)
            continue; /* an alias or a symbol inside the previous one */
        st->track(c.spans[i].addr, c.spans[i].size);
        end = c.spans[i].addr + c.spans[i].size;
        st->registered++;
    }
    return 0;
}

int rt_statics_register(uint64_t min_size, void (*track)(uint64_t addr, uint64_t size))
{
    scan_state st = {.min_size = min_size ? min_size : 1,
                     .track = track,
                     .self = (uint64_t)(uintptr_t)&rt_statics_register,
                     .spans = rt_sys_mmap(MAX_STATICS * sizeof(span))};
    if (!st.spans)
        return 0;
    rt_guard++;
    dl_iterate_phdr(scan_module, &st);
    rt_guard--;
    rt_sys_munmap(st.spans, MAX_STATICS * sizeof(span));
    return st.registered;
}

/* ---- thread memory: stacks and static thread-local storage ---------------------------- */

/* Bytes of static TLS: the PT_TLS segments of the modules loaded at start, each rounded up
 * to its alignment (glibc places them below the thread pointer on x86-64, above it after a
 * 16-byte TCB on aarch64). Modules dlopen'ed later get dynamic TLS (heap memory). */
static uint64_t static_tls_bytes;

static int add_tls(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_TLS)
            continue;
        uint64_t align = ph->p_align ? ph->p_align : 1;
        static_tls_bytes = (static_tls_bytes + ph->p_memsz + align - 1) / align * align;
    }
    return 0;
}

void rt_threadmem_init(void)
{
    static_tls_bytes = 0;
    dl_iterate_phdr(add_tls, NULL);
}

/* The mapping of /proc/self/maps holding addr: [*lo, *hi); *is_main when it is "[stack]".
 * Raw system calls, a stack buffer: callable on a thread's first instrumented access. */
static int mapping_of(uint64_t addr, uint64_t *lo, uint64_t *hi, int *is_main)
{
    int fd =
        (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    char buf[4096 + 512];
    size_t have = 0;
    int found = -1;
    for (;;) {
        long r = syscall(SYS_read, fd, buf + have, sizeof buf - 1 - have);
        if (r <= 0)
            break;
        have += (size_t)r;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = 0;
            char *dash;
            uint64_t s = strtoull(line, &dash, 16),
                     e = *dash == '-' ? strtoull(dash + 1, 0, 16) : 0;
            if (addr >= s && addr < e) {
                *lo = s;
                *hi = e;
                *is_main = strstr(line, "[stack]") != NULL;
                found = 0;
                break;
            }
            line = nl + 1;
        }
        if (found == 0)
            break;
        have = (size_t)(buf + have - line); /* a partial last line moves to the front */
        memmove(buf, line, have);
        if (have >= sizeof buf - 1)
            have = 0; /* a line longer than the buffer: drop it */
    }
    syscall(SYS_close, fd);
    return found;
}

void rt_threadmem_ranges(rt_thread_memory *m)
{
    memset(m, 0, sizeof *m);
    uint64_t tp = 0;
#if defined(__x86_64__)
    __asm__("mov %%fs:0, %0" : "=r"(tp));
    if (tp && static_tls_bytes) {
        m->tls_lo = tp - static_tls_bytes;
        m->tls_hi = tp;
    }
#elif defined(__aarch64__)
    __asm__("mrs %0, tpidr_el0" : "=r"(tp));
    if (tp && static_tls_bytes) {
        m->tls_lo = tp + 16;
        m->tls_hi = tp + 16 + static_tls_bytes;
    }
#endif
    uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0), lo, hi;
    int is_main = 0;
    if (mapping_of(here, &lo, &hi, &is_main) != 0)
        return;
    if (is_main) { /* the main stack grows down to its rlimit */
        struct rlimit rl;
        uint64_t max = 8ull << 20;
        if (syscall(SYS_getrlimit, RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            max = rl.rlim_cur;
        max = max < (1ull << 30) ? max : (1ull << 30);
        lo = hi - max < lo ? hi - max : lo;
    }
    m->stack_lo = lo;
    m->stack_hi = hi;
}
