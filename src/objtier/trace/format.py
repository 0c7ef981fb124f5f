"""numpy mirrors of native/include/objtier/trace_format.h (format version 1).

The C header is the definition; tests/trace/test_format_layout.py compiles a program that
prints sizeof/offsetof of every struct and checks these dtypes against it, so the two cannot
drift apart. All fields are little-endian.
"""

from __future__ import annotations

import numpy as np

MAGIC = b"OBJTIER\0"
VERSION_MAJOR = 1
VERSION_MINOR = 6
BLOCK_MAGIC = 0x4B42544F  # "OTBK"

FILE_PROCESS = 1
FILE_COUNTERS = 2
FILE_PERF = 3  # since 1.5: SAMPLE records of one process imported from perf (1.6: or DAMON)

# enum ot_tag — never renumbered
TAG_PROCESS = 1
TAG_MODULE = 2
TAG_CONTEXT = 3
TAG_ALLOC = 4
TAG_FREE = 5
TAG_SAMPLE = 6
TAG_COUNTER_DEF = 7
TAG_COUNTERS = 8
TAG_PHASE = 9
TAG_NAME = 10
TAG_SAMPLER_STATS = 11
TAG_END = 12
TAG_ACCESS_COUNT = 13
TAG_CCT_NODE = 14
TAG_RESIDENCY = 15
TAG_PLACEMENT = 16
TAG_WINDOW = 17  # since 1.1
TAG_ACCESS = 18  # since 1.2
TAG_REGION = 19  # since 1.3
TAG_SITE_ALLOC = 20  # since 1.4
TAG_SITE_FREE = 21  # since 1.4
TAG_SITE_REGION = 22  # since 1.6

TAG_NAMES = {
    TAG_PROCESS: "PROCESS", TAG_MODULE: "MODULE", TAG_CONTEXT: "CONTEXT", TAG_ALLOC: "ALLOC",
    TAG_FREE: "FREE", TAG_SAMPLE: "SAMPLE", TAG_COUNTER_DEF: "COUNTER_DEF",
    TAG_COUNTERS: "COUNTERS", TAG_PHASE: "PHASE", TAG_NAME: "NAME",
    TAG_SAMPLER_STATS: "SAMPLER_STATS", TAG_END: "END", TAG_ACCESS_COUNT: "ACCESS_COUNT",
    TAG_CCT_NODE: "CCT_NODE", TAG_RESIDENCY: "RESIDENCY", TAG_PLACEMENT: "PLACEMENT",
    TAG_WINDOW: "WINDOW", TAG_ACCESS: "ACCESS", TAG_REGION: "REGION",
    TAG_SITE_ALLOC: "SITE_ALLOC", TAG_SITE_FREE: "SITE_FREE", TAG_SITE_REGION: "SITE_REGION",
}

ALLOC_KINDS = {1: "malloc", 2: "calloc", 3: "realloc", 4: "posix_memalign", 5: "aligned_alloc",
               6: "memalign", 7: "valloc", 8: "pvalloc", 9: "mmap", 10: "mremap", 11: "new",
               12: "static"}
FREE_KINDS = {1: "free", 2: "realloc", 3: "munmap", 4: "mremap", 5: "exit"}
FREE_MUNMAP = 3
FREE_MREMAP = 4
SAMPLE_SOURCES = {1: "fault", 2: "perf-pebs", 3: "perf-ibs", 4: "perf-swfault", 5: "trace",
                  6: "pageout", 7: "wp", 8: "damon"}
SOURCE_FAULT = 1  # user-space hint fault: latency = protect -> touch [us]
SOURCE_TRACE = 5  # compiler instrumentation: every access (exact)
SOURCE_DAMON = 8  # since 1.6: a chunk of a DAMON region seen accessed (record --sampler damon)
MEM_LEVELS = {0: "unknown", 1: "L1", 2: "LFB", 3: "L2", 4: "L3", 5: "DRAM", 6: "remote DRAM",
              7: "PMEM", 8: "CXL", 9: "swap", 10: "uncached"}
SAMPLE_WRITE = 0x1
SAMPLE_RW_KNOWN = 0x2
SAMPLE_MAJOR = 0x4
SAMPLE_PERF = 0x8  # since 1.5: recorded by perf record (a FILE_PERF file)
TLB_NAMES = {0: "unknown", 1: "hit", 2: "miss"}
NODE_UNKNOWN = 0xFFFF

FILE_HEADER = np.dtype([
    ("magic", "S8"), ("version_major", "<u2"), ("version_minor", "<u2"),
    ("header_bytes", "<u2"), ("endianness", "u1"), ("pointer_bytes", "u1"), ("arch", "<u2"),
    ("kind", "<u2"), ("pid", "<u4"), ("ppid", "<u4"), ("page_bytes", "<u4"),
    ("start_mono_ns", "<u8"), ("start_real_ns", "<u8"), ("reserved", "<u8", (2,)),
])

BLOCK_HEADER = np.dtype([
    ("magic", "<u4"), ("tag", "<u2"), ("record_size", "<u2"), ("payload_bytes", "<u4"),
    ("record_count", "<u4"), ("crc32", "<u4"), ("reserved", "<u4"),
])

ALLOC = np.dtype([
    ("time_ns", "<u8"), ("seq", "<u8"), ("addr", "<u8"), ("size", "<u8"), ("tid", "<u4"),
    ("context", "<u4"), ("kind", "<u2"), ("flags", "<u2"), ("reserved", "<u4"),
])

FREE = np.dtype([
    ("time_ns", "<u8"), ("seq", "<u8"), ("addr", "<u8"), ("size", "<u8"), ("tid", "<u4"),
    ("kind", "<u2"), ("flags", "<u2"),
])

SAMPLE = np.dtype([
    ("time_ns", "<u8"), ("addr", "<u8"), ("tid", "<u4"), ("latency", "<u4"), ("source", "<u2"),
    ("level", "u1"), ("tlb", "u1"), ("flags", "<u2"), ("node", "<u2"), ("weight", "<u4"),
    ("reserved", "<u4"),
])

COUNTER = np.dtype([("time_ns", "<u8"), ("id", "<u4"), ("reserved", "<u4"), ("value", "<i8")])

PHASE = np.dtype([
    ("time_ns", "<u8"), ("tid", "<u4"), ("name", "<u4"), ("event", "<u2"),
    ("reserved0", "<u2"), ("reserved1", "<u4"),
])

SAMPLER_STATS = np.dtype([
    ("time_ns", "<u8"), ("source", "<u2"), ("reserved0", "<u2"), ("reserved1", "<u4"),
    ("samples", "<u8"), ("lost", "<u8"), ("pages_armed", "<u8"), ("windows", "<u8"),
])

END = np.dtype([("time_ns", "<u8"), ("records", "<u8"), ("exit_status", "<u4"),
                ("reserved", "<u4")])

ACCESS_COUNT = np.dtype([
    ("alloc_seq", "<u8"), ("cct_node", "<u4"), ("reserved", "<u4"), ("loads", "<u8"),
    ("stores", "<u8"), ("llc_misses", "<u8"),
])

CCT_NODE = np.dtype([
    ("id", "<u4"), ("parent", "<u4"), ("function", "<u4"), ("reserved", "<u4"),
    ("calls", "<u8"), ("inclusive_ns", "<u8"),
])

RESIDENCY = np.dtype([
    ("time_ns", "<u8"), ("alloc_seq", "<u8"), ("node", "<u4"), ("reserved", "<u4"),
    ("pages", "<u8"),
])

PLACEMENT = np.dtype([
    ("time_ns", "<u8"), ("alloc_seq", "<u8"), ("offset", "<u8"), ("length", "<u8"),
    ("action", "<u2"), ("reserved", "<u2"), ("result", "<i4"), ("nodemask", "<u8"),
])

WINDOW = np.dtype([
    ("arm_ns", "<u8"), ("alloc_seq", "<u8"), ("start", "<u8"), ("dwell_ns", "<u8"),
    ("touched_ns", "<u8"), ("pages", "<u4"), ("touched", "<u4"),
])

ACCESS_WRITE = 0x1  # ot_access_record.flags

ACCESS = np.dtype([
    ("order", "<u8"), ("time_ns", "<u8"), ("addr", "<u8"), ("tid", "<u4"), ("cct_node", "<u4"), ("size", "<u2"),
    ("flags", "<u2"), ("dep", "<u2"), ("reserved", "<u2"),
])

REGION_BEGIN, REGION_END = 1, 2  # ot_region_record.event

REGION = np.dtype([
    ("time_ns", "<u8"), ("order", "<u8"), ("tid", "<u4"), ("name", "<u4"), ("event", "<u2"),
    ("depth", "<u2"), ("reserved", "<u4"),
])

# Sampled small blocks (allocation sites), since 1.4; selection: site_hash / site_threshold
SITE_ALLOC = np.dtype([
    ("time_ns", "<u8"), ("seq", "<u8"), ("addr", "<u8"), ("size", "<u8"), ("tid", "<u4"),
    ("context", "<u4"), ("period", "<u4"), ("kind", "<u2"), ("flags", "<u2"),
])

SITE_FREE = np.dtype([
    ("time_ns", "<u8"), ("seq", "<u8"), ("addr", "<u8"), ("tid", "<u4"), ("kind", "<u2"),
    ("flags", "<u2"),
])
SITE_HASH_MUL = 0x9E3779B97F4A7C15

# A watched site's arena chunk (OBJTIER_ARENA_SITES), since 1.6; its WINDOW records'
# alloc_seq is `seq` = SITE_REGION_SEQ_BASE + site
SITE_REGION_SEQ_BASE = 1 << 39
SITE_REGION = np.dtype([
    ("time_ns", "<u8"), ("seq", "<u8"), ("addr", "<u8"), ("len", "<u8"), ("key", "<u8"),
    ("context", "<u4"), ("site", "<u4"),
])


def site_hash(addr: np.ndarray) -> np.ndarray:
    """ot_site_hash: (addr >> 4) * SITE_HASH_MUL mod 2**64 (uint64 arrays)."""
    with np.errstate(over="ignore"):
        return (np.asarray(addr, np.uint64) >> np.uint64(4)) * np.uint64(SITE_HASH_MUL)


def site_threshold(period: int) -> int:
    """ot_site_threshold: a block is sampled iff site_hash(addr) < this."""
    return (2**64 - 1) // period if period else 0


# Variable-size record heads (followed by their strings/arrays).
PROCESS_HEAD = np.dtype([("pid", "<u4"), ("ppid", "<u4"), ("time_ns", "<u8"), ("argc", "<u4"),
                         ("config_len", "<u4")])
MODULE_HEAD = np.dtype([("id", "<u4"), ("build_id_len", "<u2"), ("path_len", "<u2"),
                        ("base", "<u8"), ("start", "<u8"), ("end", "<u8")])
FRAME = np.dtype([("module", "<u4"), ("reserved", "<u4"), ("offset", "<u8")])
CONTEXT_HEAD = np.dtype([("id", "<u4"), ("depth", "<u4")])
COUNTER_DEF_HEAD = np.dtype([("id", "<u4"), ("unit_len", "<u2"), ("name_len", "<u2")])
NAME_HEAD = np.dtype([("id", "<u4"), ("len", "<u4")])

# Fixed-size tags and their record dtypes.
FIXED = {
    TAG_ALLOC: ALLOC, TAG_FREE: FREE, TAG_SAMPLE: SAMPLE, TAG_COUNTERS: COUNTER,
    TAG_PHASE: PHASE, TAG_SAMPLER_STATS: SAMPLER_STATS, TAG_END: END,
    TAG_ACCESS_COUNT: ACCESS_COUNT, TAG_CCT_NODE: CCT_NODE, TAG_RESIDENCY: RESIDENCY,
    TAG_PLACEMENT: PLACEMENT, TAG_WINDOW: WINDOW, TAG_ACCESS: ACCESS, TAG_REGION: REGION,
    TAG_SITE_ALLOC: SITE_ALLOC, TAG_SITE_FREE: SITE_FREE, TAG_SITE_REGION: SITE_REGION,
}
VARIABLE = {TAG_PROCESS, TAG_MODULE, TAG_CONTEXT, TAG_COUNTER_DEF, TAG_NAME}

# C struct name for each dtype, used by the layout test.
C_STRUCTS = {
    "ot_file_header": FILE_HEADER, "ot_block_header": BLOCK_HEADER, "ot_alloc_record": ALLOC,
    "ot_free_record": FREE, "ot_sample_record": SAMPLE, "ot_counter_record": COUNTER,
    "ot_phase_record": PHASE, "ot_sampler_stats_record": SAMPLER_STATS, "ot_end_record": END,
    "ot_access_count_record": ACCESS_COUNT, "ot_cct_node_record": CCT_NODE,
    "ot_residency_record": RESIDENCY, "ot_placement_record": PLACEMENT,
    "ot_window_record": WINDOW, "ot_access_record": ACCESS, "ot_region_record": REGION,
    "ot_site_alloc_record": SITE_ALLOC, "ot_site_free_record": SITE_FREE,
    "ot_site_region_record": SITE_REGION,
    "ot_process_record": PROCESS_HEAD, "ot_module_record": MODULE_HEAD, "ot_frame": FRAME,
    "ot_context_record": CONTEXT_HEAD, "ot_counter_def_record": COUNTER_DEF_HEAD,
    "ot_name_record": NAME_HEAD,
}
