/*
 * objtier trace format, version 1 — the only definition.
 *
 * The runtime (C), the simulator (C) and the Python reader (objtier.trace.format,
 * which mirrors these structs as numpy dtypes and is checked against this header by
 * tests/trace/test_format_layout.py) all read and write exactly this layout.
 * Prose description: docs/trace-format.md.
 *
 * A recording is a directory `run.otr/` holding one file per traced process
 * (`proc-<pid>.otr`, written by the runtime) and one counters file (`counters.otr`,
 * written by the recorder). Every file has the same shape:
 *
 *   ot_file_header                      64 bytes, once
 *   { ot_block_header  payload }*       repeated until end of file
 *
 * Invariants
 *   - No struct has implicit padding (checked with -Wpadded by the tests).
 *   - All integers are little-endian (the header records the writer's endianness;
 *     readers reject anything else). All times are CLOCK_MONOTONIC nanoseconds.
 *   - A block holds records of exactly one tag. Fixed-size tags (record_size > 0)
 *     pack `record_count` records of `record_size` bytes back to back, so a reader
 *     can view a block as an array. Variable-size tags (record_size == 0) pack
 *     records each prefixed by a uint32 byte length (prefix excluded) and padded
 *     to 8 bytes.
 *   - payload_bytes is a multiple of 8; crc32 is zlib's CRC-32 of the payload.
 *   - Blocks are appended with one write(2) each to a file opened O_APPEND, so
 *     blocks from different threads never interleave. A process killed mid-run
 *     leaves at most one partial block at the end; readers drop it and keep the
 *     rest ("readable up to its last flushed block").
 *   - Tags are never renumbered; retired tags stay reserved. New tags are added at
 *     the end. A reader skips blocks whose tag it does not know only when the
 *     file's minor version is newer than its own.
 *   - Strings are UTF-8, not NUL-terminated, length given explicitly.
 */
#ifndef OBJTIER_TRACE_FORMAT_H
#define OBJTIER_TRACE_FORMAT_H

#include <stdint.h>

#define OT_MAGIC              "OBJTIER\0" /* 8 bytes, includes the NUL */
#define OT_VERSION_MAJOR      1           /* readers reject a different major version */
#define OT_VERSION_MINOR      6           /* additions only: new tags, new trailing fields */
#define OT_BLOCK_MAGIC        0x4B42544FU /* "OTBK" read as a little-endian uint32 */
#define OT_BLOCK_TARGET_BYTES (64 * 1024) /* writers flush a block at about this size */

/* ot_file_header.endianness */
#define OT_LITTLE_ENDIAN 1

/* ot_file_header.kind: who wrote the file */
enum ot_file_kind {
    OT_FILE_PROCESS = 1,  /* runtime inside a traced process */
    OT_FILE_COUNTERS = 2, /* recorder's system counters timeline */
    OT_FILE_PERF = 3,     /* since 1.5: SAMPLE records of one process imported from perf
                             (perf-<pid>.otr: record --with-perf, import-perf) or, since 1.6,
                             from DAMON (damon-<pid>.otr: record --sampler damon); they
                             replace the runtime's */
};

typedef struct ot_file_header {
    char magic[8];          /* OT_MAGIC */
    uint16_t version_major; /* OT_VERSION_MAJOR */
    uint16_t version_minor; /* OT_VERSION_MINOR */
    uint16_t header_bytes;  /* sizeof(ot_file_header) = 64 */
    uint8_t endianness;     /* OT_LITTLE_ENDIAN */
    uint8_t pointer_bytes;  /* 8 */
    uint16_t arch;          /* ELF e_machine of the writer: 62 = x86-64, 183 = aarch64 */
    uint16_t kind;          /* enum ot_file_kind */
    uint32_t pid;           /* traced process (0 for counters files) */
    uint32_t ppid;          /* its parent at start */
    uint32_t page_bytes;    /* sysconf(_SC_PAGESIZE) of the writer */
    uint64_t start_mono_ns; /* CLOCK_MONOTONIC at file creation */
    uint64_t start_real_ns; /* CLOCK_REALTIME at file creation (wall-clock anchor) */
    uint64_t reserved[2];   /* zero */
} ot_file_header;
_Static_assert(sizeof(ot_file_header) == 64, "ot_file_header is 64 bytes");

typedef struct ot_block_header {
    uint32_t magic;         /* OT_BLOCK_MAGIC */
    uint16_t tag;           /* enum ot_tag: every record in the block has this tag */
    uint16_t record_size;   /* bytes per record, or 0 for length-prefixed records */
    uint32_t payload_bytes; /* bytes after this header, multiple of 8 */
    uint32_t record_count;  /* records in the payload */
    uint32_t crc32;         /* zlib crc32 of the payload */
    uint32_t reserved;
} ot_block_header;
_Static_assert(sizeof(ot_block_header) == 24, "ot_block_header is 24 bytes");

/* Record tags. NEVER renumber; append only. */
enum ot_tag {
    OT_TAG_PROCESS = 1,        /* variable: ot_process_record + strings */
    OT_TAG_MODULE = 2,         /* variable: ot_module_record + build id + path */
    OT_TAG_CONTEXT = 3,        /* variable: ot_context_record + frames */
    OT_TAG_ALLOC = 4,          /* fixed: ot_alloc_record */
    OT_TAG_FREE = 5,           /* fixed: ot_free_record */
    OT_TAG_SAMPLE = 6,         /* fixed: ot_sample_record */
    OT_TAG_COUNTER_DEF = 7,    /* variable: ot_counter_def_record + name */
    OT_TAG_COUNTERS = 8,       /* fixed: ot_counter_record (one value of one counter) */
    OT_TAG_PHASE = 9,          /* fixed: ot_phase_record */
    OT_TAG_NAME = 10,          /* variable: ot_name_record + string (phase names etc.) */
    OT_TAG_SAMPLER_STATS = 11, /* fixed: ot_sampler_stats_record */
    OT_TAG_END = 12,           /* fixed: ot_end_record, last block of a cleanly closed file */
    OT_TAG_ACCESS_COUNT = 13,  /* fixed: ot_access_count_record (exact tracing) */
    OT_TAG_CCT_NODE = 14,      /* fixed: ot_cct_node_record (calling-context tree) */
    OT_TAG_RESIDENCY = 15,     /* fixed: ot_residency_record (pages per node) */
    OT_TAG_PLACEMENT = 16,     /* fixed: ot_placement_record (plan actions applied) */
    OT_TAG_WINDOW = 17,        /* fixed: ot_window_record (fault sampler exposure), since 1.1 */
    OT_TAG_ACCESS = 18,        /* fixed: ot_access_record (ordered access stream), since 1.2 */
    OT_TAG_REGION = 19,        /* fixed: ot_region_record (code region markers), since 1.3 */
    OT_TAG_SITE_ALLOC = 20,    /* fixed: ot_site_alloc_record (sampled small block), since 1.4 */
    OT_TAG_SITE_FREE = 21,     /* fixed: ot_site_free_record, since 1.4 */
    OT_TAG_SITE_REGION = 22,   /* fixed: ot_site_region_record (a watched site's arena chunk),
                                  since 1.6 */
    OT_TAG_COUNT_              /* one past the last tag */
};

/* ot_alloc_record.kind: which interface created the object */
enum ot_alloc_kind {
    OT_ALLOC_MALLOC = 1,
    OT_ALLOC_CALLOC = 2,
    OT_ALLOC_REALLOC = 3, /* the new object of a realloc; the old one gets a FREE */
    OT_ALLOC_POSIX_MEMALIGN = 4,
    OT_ALLOC_ALIGNED_ALLOC = 5,
    OT_ALLOC_MEMALIGN = 6,
    OT_ALLOC_VALLOC = 7,
    OT_ALLOC_PVALLOC = 8,
    OT_ALLOC_MMAP = 9,    /* anonymous mmap called by the program */
    OT_ALLOC_MREMAP = 10, /* the new range of an mremap; the old one gets a FREE */
    OT_ALLOC_NEW = 11,    /* C++ operator new / new[] */
    OT_ALLOC_STATIC = 12, /* a .data/.bss symbol of a loaded module, registered when main
                                   starts; its context is one frame: (module, symbol value + 1) */
};

/* ot_free_record.kind */
enum ot_free_kind {
    OT_FREE_FREE = 1,    /* free / operator delete: the whole object */
    OT_FREE_REALLOC = 2, /* the old object of a realloc */
    OT_FREE_MUNMAP = 3,  /* [addr, addr+size) unmapped; may be a part of an object */
    OT_FREE_MREMAP = 4,  /* the old range of an mremap */
    OT_FREE_EXIT = 5,    /* still live at process exit (written at clean exit) */
};

typedef struct ot_alloc_record {
    uint64_t time_ns; /* CLOCK_MONOTONIC */
    uint64_t seq;     /* per-process order of ALLOC and FREE events (ties in time_ns) */
    uint64_t addr;    /* first byte returned to the program */
    uint64_t size;    /* bytes requested */
    uint32_t tid;     /* gettid() of the allocating thread */
    uint32_t context; /* ot_context_record.id of the allocation call stack */
    uint16_t kind;    /* enum ot_alloc_kind */
    uint16_t flags;   /* reserved, 0 */
    uint32_t reserved;
} ot_alloc_record;
_Static_assert(sizeof(ot_alloc_record) == 48, "ot_alloc_record is 48 bytes");

typedef struct ot_free_record {
    uint64_t time_ns;
    uint64_t seq;  /* same counter as ot_alloc_record.seq */
    uint64_t addr; /* object start (FREE/REALLOC) or start of the unmapped range */
    uint64_t size; /* bytes unmapped (MUNMAP/MREMAP); 0 = the whole object */
    uint32_t tid;
    uint16_t kind;  /* enum ot_free_kind */
    uint16_t flags; /* reserved, 0 */
} ot_free_record;
_Static_assert(sizeof(ot_free_record) == 40, "ot_free_record is 40 bytes");

/* ot_sample_record.source: which sampler produced the sample */
enum ot_sample_source {
    OT_SRC_FAULT = 1,        /* user-space hint fault (PROT_NONE window) */
    OT_SRC_PERF_PEBS = 2,    /* Intel PEBS mem-loads / mem-stores */
    OT_SRC_PERF_IBS = 3,     /* AMD IBS op */
    OT_SRC_PERF_SWFAULT = 4, /* software page-fault event (minor or major) */
    OT_SRC_TRACE = 5,        /* compiler instrumentation (exact) */
    OT_SRC_PAGEOUT = 6,      /* major fault on a page the pageout sampler pushed to swap */
    OT_SRC_WP = 7,           /* first write to a userfaultfd write-protected page (wp sampler) */
    OT_SRC_DAMON = 8,        /* since 1.6: a chunk of a DAMON region seen accessed (record
                                --sampler damon; weight = nr_accesses x the chunk's pages) */
};

/* ot_sample_record.level: where the access was served (perf data source), or
 * OT_LVL_UNKNOWN when the sampler cannot tell (fault sampler). */
enum ot_mem_level {
    OT_LVL_UNKNOWN = 0,
    OT_LVL_L1 = 1,
    OT_LVL_LFB = 2,
    OT_LVL_L2 = 3,
    OT_LVL_L3 = 4,
    OT_LVL_DRAM_LOCAL = 5,
    OT_LVL_DRAM_REMOTE = 6,
    OT_LVL_PMEM = 7, /* Optane / KMEM-DAX */
    OT_LVL_CXL = 8,
    OT_LVL_SWAP = 9, /* major fault: the page came back from the swap tier */
    OT_LVL_UNCACHED = 10,
};

/* ot_sample_record.flags bits */
#define OT_SAMPLE_WRITE    0x1 /* store (else load, or unknown when OT_SAMPLE_RW_KNOWN clear) */
#define OT_SAMPLE_RW_KNOWN 0x2 /* the sampler knows load vs store */
#define OT_SAMPLE_MAJOR    0x4 /* a major page fault */
#define OT_SAMPLE_PERF     0x8 /* since 1.5: recorded by perf record (an OT_FILE_PERF file) */

/* ot_sample_record.tlb */
#define OT_TLB_UNKNOWN 0
#define OT_TLB_HIT     1
#define OT_TLB_MISS    2

typedef struct ot_sample_record {
    uint64_t time_ns; /* when the access was observed */
    uint64_t addr;    /* data virtual address */
    uint32_t tid;
    uint32_t latency; /* fault: hint-fault latency in microseconds (touch - protect),
                           saturating at UINT32_MAX; PEBS/IBS: load latency in cycles;
                           0 = unknown */
    uint16_t source;  /* enum ot_sample_source */
    uint8_t level;    /* enum ot_mem_level */
    uint8_t tlb;      /* OT_TLB_* */
    uint16_t flags;   /* OT_SAMPLE_* bits */
    uint16_t node;    /* NUMA node of the page when known, else 0xFFFF */
    uint32_t weight;  /* accesses this sample stands for (sampling period); 0 = unknown */
    uint32_t reserved;
} ot_sample_record;
_Static_assert(sizeof(ot_sample_record) == 40, "ot_sample_record is 40 bytes");

/* Variable records ---------------------------------------------------------- */

typedef struct ot_process_record {
    uint32_t pid;
    uint32_t ppid;
    uint64_t time_ns; /* when the runtime started in this process */
    uint32_t argc; /* followed by: exe (u32 len + bytes), then argc args, each u32 len + bytes, */
    uint32_t config_len; /* then config_len bytes: the runtime settings as "KEY=VALUE\n" lines */
} ot_process_record;
_Static_assert(sizeof(ot_process_record) == 24, "ot_process_record is 24 bytes");

typedef struct ot_module_record {
    uint32_t id; /* module id used in frames, unique within the file; 0 = unknown module */
    uint16_t build_id_len; /* bytes of GNU build id that follow (0..32) */
    uint16_t path_len;     /* bytes of path that follow the build id */
    uint64_t base;         /* load bias: frame offset = ip - base */
    uint64_t start;        /* lowest mapped address of the module */
    uint64_t end;          /* one past the highest */
    /* followed by build_id[build_id_len], path[path_len] */
} ot_module_record;
_Static_assert(sizeof(ot_module_record) == 32, "ot_module_record is 32 bytes");

/* One frame of a calling context: a return address as (module, offset), so the
 * same call site has the same identity across runs, PIE and ASLR. */
typedef struct ot_frame {
    uint32_t module; /* ot_module_record.id; 0 = address in no known module */
    uint32_t reserved;
    uint64_t offset; /* ip - module base (absolute ip when module == 0) */
} ot_frame;
_Static_assert(sizeof(ot_frame) == 16, "ot_frame is 16 bytes");

typedef struct ot_context_record {
    uint32_t id;    /* >= 1, unique within the file; 0 means "no context" */
    uint32_t depth; /* frames that follow, innermost (the allocator's caller) first */
    /* followed by ot_frame frames[depth] */
} ot_context_record;
_Static_assert(sizeof(ot_context_record) == 8, "ot_context_record is 8 bytes");

typedef struct ot_counter_def_record {
    uint32_t id;       /* counter id used by ot_counter_record */
    uint16_t unit_len; /* bytes of unit string after the name */
    uint16_t name_len; /* bytes of name that follow, e.g. "vmstat.pgpromote_success" */
    /* followed by name[name_len], unit[unit_len] */
} ot_counter_def_record;
_Static_assert(sizeof(ot_counter_def_record) == 8, "ot_counter_def_record is 8 bytes");

typedef struct ot_counter_record {
    uint64_t time_ns;
    uint32_t id; /* ot_counter_def_record.id */
    uint32_t reserved;
    int64_t value; /* raw value as read (cumulative counters stay cumulative) */
} ot_counter_record;
_Static_assert(sizeof(ot_counter_record) == 24, "ot_counter_record is 24 bytes");

typedef struct ot_name_record {
    uint32_t id;  /* name id (e.g. ot_phase_record.name) */
    uint32_t len; /* bytes that follow */
} ot_name_record;
_Static_assert(sizeof(ot_name_record) == 8, "ot_name_record is 8 bytes");

#define OT_PHASE_ENTER 1
#define OT_PHASE_EXIT  2

typedef struct ot_phase_record {
    uint64_t time_ns;
    uint32_t tid;
    uint32_t name;  /* ot_name_record.id */
    uint16_t event; /* OT_PHASE_ENTER / OT_PHASE_EXIT */
    uint16_t reserved0;
    uint32_t reserved1;
} ot_phase_record;
_Static_assert(sizeof(ot_phase_record) == 24, "ot_phase_record is 24 bytes");

typedef struct ot_sampler_stats_record {
    uint64_t time_ns;
    uint16_t source; /* enum ot_sample_source */
    uint16_t reserved0;
    uint32_t reserved1;
    uint64_t samples;     /* samples written */
    uint64_t lost;        /* samples dropped (ring overflow, buffer full) */
    uint64_t pages_armed; /* fault: pages made PROT_NONE; perf: 0 */
    uint64_t windows;     /* fault: scan windows armed */
} ot_sampler_stats_record;
_Static_assert(sizeof(ot_sampler_stats_record) == 48, "ot_sampler_stats_record is 48 bytes");

typedef struct ot_end_record {
    uint64_t time_ns;
    uint64_t records;     /* records written to this file before END */
    uint32_t exit_status; /* status passed to exit(), when known */
    uint32_t reserved;
} ot_end_record;
_Static_assert(sizeof(ot_end_record) == 24, "ot_end_record is 24 bytes");

/* Exact tracing: accesses to one object from one calling-context node. */
/* ot_access_count_record.alloc_seq of accesses outside every tracked object, by where they
 * fell (runtimes before these values did not count such accesses) */
#define OT_SEQ_OUTSIDE_STACK (UINT64_MAX - 1) /* the accessing thread's stack */
#define OT_SEQ_OUTSIDE_TLS   (UINT64_MAX - 2) /* its static thread-local storage */
#define OT_SEQ_OUTSIDE_OTHER (UINT64_MAX - 3) /* anything else (small objects, globals, ...) */

typedef struct ot_access_count_record {
    uint64_t alloc_seq; /* ot_alloc_record.seq of the object, or an OT_SEQ_OUTSIDE_* value */
    uint32_t cct_node;  /* ot_cct_node_record.id */
    uint32_t reserved;
    uint64_t loads;
    uint64_t stores;
    uint64_t llc_misses; /* accesses that missed the last-level-cache model */
} ot_access_count_record;
_Static_assert(sizeof(ot_access_count_record) == 40, "ot_access_count_record is 40 bytes");

typedef struct ot_cct_node_record {
    uint32_t id;       /* >= 1; 0 is the root */
    uint32_t parent;   /* parent node id */
    uint32_t function; /* ot_context_record.id naming (function, call site), depth 2 */
    uint32_t reserved;
    uint64_t calls;
    uint64_t inclusive_ns; /* time spent in the node and below */
} ot_cct_node_record;
_Static_assert(sizeof(ot_cct_node_record) == 32, "ot_cct_node_record is 32 bytes");

/* Pages of one object per NUMA node, from move_pages(2) queries. */
typedef struct ot_residency_record {
    uint64_t time_ns;
    uint64_t alloc_seq; /* the object */
    uint32_t node;      /* NUMA node, or 0xFFFFFFFF for "not present" */
    uint32_t reserved;
    uint64_t pages;
} ot_residency_record;
_Static_assert(sizeof(ot_residency_record) == 32, "ot_residency_record is 32 bytes");

/* ot_placement_record.action: MLOCK, MUNLOCK, COLD (MADV_COLD), PAGEOUT (MADV_PAGEOUT), MBIND,
 * HUGEPAGE (MADV_HUGEPAGE on a planned-slow run, so that it swaps as large folios). New values
 * may be added without a version change; a reader counts an unknown one as an action. */
enum ot_placement_action {
    OT_PLACE_MLOCK = 1,
    OT_PLACE_MUNLOCK = 2,
    OT_PLACE_COLD = 3,
    OT_PLACE_PAGEOUT = 4,
    OT_PLACE_MBIND = 5,
    OT_PLACE_HUGEPAGE = 6,
};

/* A plan action the runtime applied (or failed to apply) to a range of an object. */
typedef struct ot_placement_record {
    uint64_t time_ns;
    uint64_t alloc_seq;
    uint64_t offset; /* byte offset inside the object */
    uint64_t length; /* bytes */
    uint16_t action; /* enum ot_placement_action */
    uint16_t reserved;
    int32_t result;    /* 0 or -errno */
    uint64_t nodemask; /* MBIND: target nodes; else 0 */
} ot_placement_record;
_Static_assert(sizeof(ot_placement_record) == 48, "ot_placement_record is 48 bytes");

/* Fault sampler: one scan window, the exposure behind its SAMPLE records. A window lies
 * inside one object. Each armed page is watched from arm_ns until its first touch or the
 * disarm; with accesses to a page as a Poisson process of rate r [1/s], the touches per
 * second of watching, touched / (touched_ns + (pages - touched) * dwell_ns) * 1e9, estimate
 * r (the maximum-likelihood estimate for a censored exponential), where first-touch counts
 * alone saturate at one per armed page. Since version 1.1. */
typedef struct ot_window_record {
    uint64_t arm_ns;     /* when its pages became PROT_NONE */
    uint64_t alloc_seq;  /* ot_alloc_record.seq of the object */
    uint64_t start;      /* address of the first armed page */
    uint64_t dwell_ns;   /* disarm - arm [ns] */
    uint64_t touched_ns; /* sum over touched pages of (first touch - arm) [ns] */
    uint32_t pages;      /* armed pages */
    uint32_t touched;    /* armed pages touched (each one SAMPLE, unless it was lost) */
} ot_window_record;
_Static_assert(sizeof(ot_window_record) == 48, "ot_window_record is 48 bytes");

/* ot_access_record.flags bits */
#define OT_ACCESS_WRITE 0x1 /* a store (else a load) */

/* Exact tracing, OBJTIER_TRACE_STREAM=N: one record per load or store of the instrumented
 * code, in program order per thread, for the first N accesses of the process (tracked objects
 * or not: stack, globals and small heap blocks too), or for windows of accesses spread over
 * the run (OBJTIER_TRACE_STREAM_WINDOW; each window's opening is two COUNTERS records,
 * "trace.stream.window" and "trace.stream.window_order"). `order` is one process-wide counter taken
 * at each access, so sorting all threads' records by order gives one interleaving the program
 * really had (up to the few instructions between the callback and the access). `dep` names a
 * data dependence seen at run time, on one of this thread's last eight 4- or 8-byte loads: the
 * address lies within 4 KiB above the value it returned (a pointer), or, for a load, is
 * element v of the tracked object holding it for an element size of 1, 2, 4, ... 64 bytes, v
 * the value (an index: p = next[p]; older runtimes saw pointers only, in the same layout). A
 * block holds records of one thread, in order. Since version 1.2. */
typedef struct ot_access_record {
    uint64_t order;    /* process-wide access order, from 0 */
    uint64_t time_ns;  /* CLOCK_MONOTONIC at the access (maps it to the live object) */
    uint64_t addr;     /* data virtual address */
    uint32_t tid;      /* gettid() of the accessing thread */
    uint32_t cct_node; /* ot_cct_node_record.id of the innermost function; 0 = root */
    uint16_t size;     /* bytes accessed (1, 2, 4, 8 or 16) */
    uint16_t flags;    /* OT_ACCESS_* bits */
    uint16_t dep;      /* this thread's accesses back to the load whose value gave
                                 the address (1 = the previous one); 0 = none seen */
    uint16_t reserved;
} ot_access_record;
_Static_assert(sizeof(ot_access_record) == 40, "ot_access_record is 40 bytes");

#define OT_REGION_BEGIN 1
#define OT_REGION_END   2

/* A code region marker of the program (objtier_region_begin/end, <objtier/region.h>). Regions
 * nest per thread: `depth` is the number of the thread's regions open after the event (a
 * BEGIN of a top-level region has depth 1, its END depth 0). `order` is the ordered access
 * stream's counter when the marker ran: the thread's accesses with a smaller order came before
 * it, the others after (0 when the stream is off). The region's name is a NAME record, written
 * before the first REGION record that names it (ids shared with the phase names). Since 1.3. */
typedef struct ot_region_record {
    uint64_t time_ns; /* CLOCK_MONOTONIC at the marker */
    uint64_t order;   /* ot_access_record.order of the thread's next access */
    uint32_t tid;     /* gettid() of the marking thread */
    uint32_t name;    /* ot_name_record.id */
    uint16_t event;   /* OT_REGION_BEGIN / OT_REGION_END */
    uint16_t depth;
    uint32_t reserved;
} ot_region_record;
_Static_assert(sizeof(ot_region_record) == 32, "ot_region_record is 32 bytes");

/* Allocation sites: sampled small blocks ------------------------------------
 * Heap blocks below OBJTIER_MIN_SIZE are not objects. With OBJTIER_SITE_PERIOD = N > 0 the
 * runtime samples about 1 in N of them, by address: a block returned at address a is sampled
 * iff ot_site_hash(a) < ot_site_threshold(N), decided again at each allocation (so the choice
 * needs no index: free() recomputes it from the pointer alone and writes a SITE_FREE only for
 * addresses that hash below the threshold). A SITE_FREE closes the latest earlier SITE_ALLOC of
 * the same pid and address (by seq); one that matches none (a block allocated before recording
 * started, or by the runtime itself) is ignored. The runtime may raise N while recording (its
 * cost budget, native/runtime/sample/site_pace.h): the threshold only falls, free() keeps
 * testing against the first one, and each SITE_ALLOC carries the period in force. Estimates
 * per calling context (its "site"): blocks = sum of the sampled blocks' periods, bytes = sum of
 * size * period; they are estimates (address-based sampling: a site whose blocks keep reusing
 * one address is all or nothing). Since 1.4. */
#define OT_SITE_HASH_MUL 0x9E3779B97F4A7C15ULL /* 2^64 / golden ratio (Fibonacci hashing) */

static inline uint64_t ot_site_hash(uint64_t addr)
{
    return (addr >> 4) * OT_SITE_HASH_MUL; /* heap blocks are 16-byte aligned */
}

/* The threshold for 1 in `period` blocks; 0 (nothing sampled) when period is 0. */
static inline uint64_t ot_site_threshold(uint64_t period)
{
    return period ? UINT64_MAX / period : 0;
}

typedef struct ot_site_alloc_record {
    uint64_t time_ns; /* CLOCK_MONOTONIC, after the allocator returned */
    uint64_t seq;     /* per-process order of SITE_ALLOC and SITE_FREE records, from 1 (a
                         counter of its own: ot_alloc_record.seq stays dense) */
    uint64_t addr;    /* first byte returned to the program */
    uint64_t size;    /* bytes requested */
    uint32_t tid;
    uint32_t context; /* ot_context_record.id of the allocation call stack */
    uint32_t period;  /* the period in force: this block stands for `period` blocks */
    uint16_t kind;    /* enum ot_alloc_kind (MALLOC ... NEW) */
    uint16_t flags;   /* reserved, 0 */
} ot_site_alloc_record;
_Static_assert(sizeof(ot_site_alloc_record) == 48, "ot_site_alloc_record is 48 bytes");

typedef struct ot_site_free_record {
    uint64_t time_ns; /* before the allocator took the block back */
    uint64_t seq;     /* same counter as ot_site_alloc_record.seq */
    uint64_t addr;    /* the block's first byte */
    uint32_t tid;
    uint16_t kind;  /* enum ot_free_kind: FREE or REALLOC */
    uint16_t flags; /* reserved, 0 */
} ot_site_free_record;
_Static_assert(sizeof(ot_site_free_record) == 32, "ot_site_free_record is 32 bytes");

/* Watched allocation sites ---------------------------------------------------
 * With OBJTIER_ARENA_SITES (docs/watched-sites.md), the blocks of a few chosen sites
 * are served from segregated arena chunks while recording, and the window samplers that scan
 * pages (pageout) arm those chunks as they arm objects' pages. A SITE_REGION record is written
 * when a site gets a chunk; the chunk stays the site's to the end of the process (arena memory
 * is never returned). The site's chunks together are one object-like region: its WINDOW
 * records carry alloc_seq = seq below (OT_SITE_REGION_SEQ_BASE + the site's arena index, never
 * an ALLOC seq), and a SAMPLE whose address lies in a chunk is an access to the site. Since 1.6. */
#define OT_SITE_REGION_SEQ_BASE (1ULL << 39) /* above any ALLOC seq of a process */

typedef struct ot_site_region_record {
    uint64_t time_ns; /* CLOCK_MONOTONIC, when the chunk became the site's */
    uint64_t seq;     /* OT_SITE_REGION_SEQ_BASE + site: the WINDOW records' alloc_seq */
    uint64_t addr;    /* first byte of the chunk (page aligned) */
    uint64_t len;     /* bytes of the chunk */
    uint64_t key;     /* stable context key of the site (as a plan's `site` record) */
    uint32_t context; /* ot_context_record.id of a call of the site (0: not known) */
    uint32_t site;    /* the site's arena index in this process */
} ot_site_region_record;
_Static_assert(sizeof(ot_site_region_record) == 48, "ot_site_region_record is 48 bytes");

/* Stable context key --------------------------------------------------------
 * A calling context's identity across runs, PIE/ASLR and machines: FNV-1a 64 over,
 * for each frame from innermost outwards, the module's file name (basename of its
 * path, no directory) followed by one NUL byte, then the frame offset as 8 bytes
 * little-endian. Frames in no known module hash the empty name and their absolute ip.
 * Plans key objects by this value; Python computes the same (objtier.trace.contexts).
 * Printed as 16 lowercase hex digits. */
#define OT_FNV64_OFFSET 0xcbf29ce484222325ULL
#define OT_FNV64_PRIME  0x100000001b3ULL

static inline uint64_t ot_fnv64_update(uint64_t h, const void *data, uint64_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    for (uint64_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= OT_FNV64_PRIME;
    }
    return h;
}

/* Fold one frame into a context key; start from OT_FNV64_OFFSET. `name` is the
 * module basename (may be empty), `offset` as in ot_frame. Assumes a little-endian host. */
static inline uint64_t ot_context_key_frame(uint64_t h, const char *name, uint64_t name_len,
                                            uint64_t offset)
{
    static const unsigned char nul = 0;
    h = ot_fnv64_update(h, name, name_len);
    h = ot_fnv64_update(h, &nul, 1);
    return ot_fnv64_update(h, &offset, 8);
}

#endif /* OBJTIER_TRACE_FORMAT_H */
