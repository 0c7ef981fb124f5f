/*
 * The text form of a placement plan (docs/planning.md, "The text form"), parsed with no
 * JSON library and no malloc: the file is read with raw system calls into runtime-owned
 * mappings (rt_sys_mmap). Reference parser: objtier.plan.parse_text.
 *
 * Invariants
 *   - entries are sorted by key (then file order), so all entries of one context key are
 *     adjacent and found by binary search.
 *   - phases[0] is the root phase "*" (added when the file names no phase); every entry's
 *     phase and every phase's target is an index into phases.
 *   - occurrence RT_PLAN_ANY matches every occurrence; sizes and fast_bytes are bytes.
 */
#ifndef OBJTIER_PLAN_H
#define OBJTIER_PLAN_H

#include <stddef.h>
#include <stdint.h>

#define RT_PLAN_ANY        UINT64_MAX /* rt_plan_entry.occurrence for "*" */
#define RT_PLAN_MAX_PHASES 256
#define RT_PLAN_MAX_NAME   255        /* bytes of a decoded phase name */
#define RT_PLAN_NONE       UINT32_MAX /* no entry / no phase */

/* RT_PLAN_APART: `site` records only (an arena of its own, no tier action) */
enum rt_plan_tier {
    RT_PLAN_FAST = 0,
    RT_PLAN_SLOW = 1,
    RT_PLAN_SPLIT = 2,
    RT_PLAN_PAGES = 3,
    RT_PLAN_APART = 4
};

/* A fast range of a "pages" entry: bytes [off, off + len) counted from the object's first
 * whole page (its first byte rounded up to a page); page multiples. */
typedef struct rt_plan_range {
    uint64_t off, len;
} rt_plan_range;

typedef struct rt_plan_entry {
    uint64_t key;        /* stable context key (trace_format.h) */
    uint64_t occurrence; /* 0-based count among this key's tracked objects, or RT_PLAN_ANY */
    uint64_t size_min;   /* inclusive, bytes */
    uint64_t size_max;   /* inclusive, bytes */
    uint64_t fast_bytes; /* [0, fast_bytes) of the object is fast, the rest slow; for
                           * RT_PLAN_PAGES the sum of the ranges' lengths */
    uint64_t range0;     /* RT_PLAN_PAGES: index of the first range in rt_plan.ranges */
    uint64_t n_ranges;   /* RT_PLAN_PAGES: ranges (sorted, disjoint); 0 otherwise */
    uint32_t phase;      /* index into rt_plan.phases: the entry applies while it is in force */
    uint32_t line;       /* line number in the file: among equal matches the first wins */
    uint32_t tier;       /* enum rt_plan_tier (informative for fast/slow/split: fast_bytes
                           * says it all; RT_PLAN_PAGES: the ranges do) */
} rt_plan_entry;

/* A `folio` record: objects matching it fault their planned-slow pages in as large folios
 * (swap tier; placement.c). Matching as for entries, with no phase. */
typedef struct rt_plan_folio {
    uint64_t key, occurrence, size_min, size_max;
} rt_plan_folio;

/* A `site` record: small blocks whose calling context has stable key `key` are served from a
 * segregated arena (arena.h) that the tier keeps fast or slow. frame0 is the key of the
 * context's innermost frame alone (a one-frame context), so that an allocator call from any
 * other return address is known not to be of the site without unwinding.
 * Text: `site KEY FRAME0 fast|slow|apart [LOCK_BYTES]` (LOCK_BYTES on fast only). */
typedef struct rt_plan_site {
    uint64_t key, frame0;
    uint64_t lock_bytes; /* fast on the swap tier: most bytes of its chunks locked, in chunk
                          * order (the 5th field; 0 = no cap but the mlock limit) */
    uint32_t tier;       /* RT_PLAN_FAST, RT_PLAN_SLOW or RT_PLAN_APART */
    uint32_t line;
} rt_plan_site;

typedef struct rt_plan_phase {
    const char *name; /* decoded, NUL-terminated, in the plan's string arena */
    uint32_t len;     /* bytes of name */
    uint32_t target;  /* index of the phase whose entries apply while this one runs */
} rt_plan_phase;

typedef struct rt_plan {
    rt_plan_entry *entries;
    uint64_t n_entries;
    rt_plan_range *ranges; /* of all "pages" entries, each entry's ranges contiguous */
    uint64_t n_ranges;
    rt_plan_folio *folios; /* in file order; few, searched linearly */
    uint64_t n_folios;
    rt_plan_site *sites; /* `site` records in file order */
    uint64_t n_sites;
    rt_plan_phase phases[RT_PLAN_MAX_PHASES];
    uint32_t n_phases;
    uint64_t budget_bytes; /* `budget` record, 0 when absent */
    uint64_t page_bytes;   /* planning page size, 0 when absent */
    char binary_path[256]; /* `binary` record's path (truncated), "" when absent */
    int binary_mine;       /* the `binary` record names this process's binary */
    uint32_t n_programs;   /* `program` records (sections); 0: every entry applies */
    uint32_t program_mine; /* index of the first section that applies to this process, or
                            * RT_PLAN_NONE; entries and folios of other sections are dropped */
    /* private: mappings to release */
    void *map_entries;
    size_t map_entries_bytes;
    void *map_ranges;
    size_t map_ranges_bytes;
    void *map_folios;
    size_t map_folios_bytes;
    void *map_sites;
    size_t map_sites_bytes;
    char *strings;
    size_t strings_used, strings_cap;
} rt_plan;

/* Who this process is, for choosing its sections of a multi-program plan (`program`
 * records, docs/planning.md): the main executable's GNU build id as lowercase hex ("" when it
 * has none), the executable's base name, and the MPI-style rank (RT_PLAN_NO_RANK when no
 * OMPI_COMM_WORLD_RANK / PMI_RANK / SLURM_PROCID is set). A section applies when its build id
 * equals this one (or, when either is unknown, its path's base name equals this one) and its
 * rank is "-" or this rank. */
#define RT_PLAN_NO_RANK UINT64_MAX
typedef struct rt_plan_self {
    char build_id[65];
    char exe_base[256];
    uint64_t rank;
} rt_plan_self;

/* Fills *self from /proc/self/exe, the main executable's notes and the environment. */
void rt_plan_self_read(rt_plan_self *self);

/* The identity rt_plan_load and rt_plan_parse choose sections with (copied; before loading).
 * Without one, no section applies. */
void rt_plan_set_self(const rt_plan_self *self);

/* Reads and checks the file. 0, or -1 with a one-line reason in err (nothing kept). */
int rt_plan_load(rt_plan *p, const char *path, char *err, size_t err_len);

/* Parses text[0..len) (the file's bytes); same contract as rt_plan_load. */
int rt_plan_parse(rt_plan *p, const char *text, size_t len, char *err, size_t err_len);

void rt_plan_free(rt_plan *p);

/* Index of the phase named name[0..len), or RT_PLAN_NONE. */
uint32_t rt_plan_phase_index(const rt_plan *p, const char *name, size_t len);

/* Index of the entry of `phase` matching (key, occurrence, size), or RT_PLAN_NONE. An entry
 * with an explicit occurrence wins over a "*" one. */
uint64_t rt_plan_match(const rt_plan *p, uint64_t key, uint64_t occurrence, uint64_t size,
                       uint32_t phase);

/* 1 if a `folio` record matches (key, occurrence, size). */
int rt_plan_large_folio(const rt_plan *p, uint64_t key, uint64_t occurrence, uint64_t size);

/* 1 if any entry has this key (any phase, any size). */
int rt_plan_has_key(const rt_plan *p, uint64_t key);

#endif
