"""The C-AMAT timing model (native/camat, libobjtier_camat.so) through ctypes.

`simulate(accesses, config)` feeds an access stream (numpy array of ACCESS_DTYPE) to the model
and returns its counts per level, per object and per region as numpy structured arrays
(COUNTS_DTYPE, fields as in camat_counts of native/camat/camat.h).
"""

from __future__ import annotations

import ctypes
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

import numpy as np

from objtier.errors import UsageError
from objtier.native import NATIVE_DIR, _existing

LEVELS = ("L1", "L2", "LLC", "MEM", "FAR")
WRITE = 0x1

# struct camat_access (24 bytes)
ACCESS_DTYPE = np.dtype([("addr", "<u8"), ("core", "<u4"), ("object", "<u4"), ("region", "<u4"),
                         ("flags", "<u2"), ("dep", "<u2")])
# struct camat_counts
COUNTS_DTYPE = np.dtype([
    ("accesses", "<u8"), ("misses", "<u8"), ("pure_misses", "<u8"), ("hit_phase", "<u8"),
    ("miss_phase", "<u8"), ("pure_phase", "<u8"), ("hit_cycles", "<u8"), ("miss_cycles", "<u8"),
    ("pure_cycles", "<u8"), ("active_cycles", "<u8"), ("hit_share", "<f8"), ("miss_share", "<f8"),
    ("pure_share", "<f8"), ("coherence_misses", "<u8"), ("false_sharing", "<u8"),
    ("invalidations", "<u8"),
])


class _Cache(ctypes.Structure):
    _fields_ = [("size_bytes", ctypes.c_uint64), ("ways", ctypes.c_uint32),
                ("hit_cycles", ctypes.c_uint32), ("mshrs", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32)]


class _Config(ctypes.Structure):
    _fields_ = [("cache", _Cache * 3), ("line_bytes", ctypes.c_uint32), ("cores", ctypes.c_uint32),
                ("issue_width", ctypes.c_uint32), ("window", ctypes.c_uint32),
                ("lag", ctypes.c_uint32), ("reorder", ctypes.c_uint32),
                ("mem_cycles", ctypes.c_uint32),
                ("mem_mshrs", ctypes.c_uint32), ("far_cycles", ctypes.c_uint32),
                ("coherence_cycles", ctypes.c_uint32), ("page_shift", ctypes.c_uint32),
                ("local_pages", ctypes.c_uint64), ("objects", ctypes.c_uint32),
                ("regions", ctypes.c_uint32), ("pinned", ctypes.POINTER(ctypes.c_uint8)),
                ("pinned_pages", ctypes.c_uint64)]


@dataclass(frozen=True)
class Cache:
    size_bytes: int
    ways: int
    hit_cycles: int
    mshrs: int


@dataclass(frozen=True)
class Hierarchy:
    """Machine parameters of the model (cycles at the core clock)."""

    name: str
    l1: Cache
    l2: Cache
    llc: Cache
    line_bytes: int = 64
    issue_width: int = 2
    window: int = 192
    lag: int = 256
    reorder: int = 65536        # interleave threads by the model's clocks within this many
                                # stream positions (0: in recorded order, within `lag` cycles)
    mem_cycles: int = 250
    coherence_cycles: int = 70
    far_cycles: int = 9000      # far level behind the local buffer (3 us at 3 GHz, RDMA-like)
    far_mshrs: int = 1          # outstanding far fetches per core (a page fault blocks)
    page_bytes: int = 4096

    def to_dict(self) -> dict:
        return asdict(self)


# Presets: published geometry and load-to-use latencies of the named parts, rounded.
PRESETS = {
    "haswell": Hierarchy("haswell", Cache(32 << 10, 8, 4, 10), Cache(256 << 10, 8, 12, 16),
                         Cache(15 << 20, 20, 36, 32), window=192, mem_cycles=230),
    "skylake": Hierarchy("skylake", Cache(32 << 10, 8, 4, 12), Cache(1 << 20, 16, 14, 32),
                         Cache(22 << 20, 11, 50, 48), window=224, mem_cycles=250),
    "zen3": Hierarchy("zen3", Cache(32 << 10, 8, 4, 24), Cache(512 << 10, 8, 12, 32),
                      Cache(32 << 20, 16, 46, 64), window=256, mem_cycles=280),
    "small": Hierarchy("small", Cache(4 << 10, 4, 4, 8), Cache(32 << 10, 8, 12, 16),
                       Cache(256 << 10, 16, 40, 32), window=128, mem_cycles=200),
}
DEFAULT_PRESET = "skylake"


@dataclass(frozen=True)
class SimConfig:
    hierarchy: Hierarchy
    cores: int
    objects: int
    regions: int
    local_pages: int = 0                 # 0 = no far level
    pinned: np.ndarray | None = field(default=None, compare=False)  # uint8 per object
    pinned_pages: int = 0


SAMPLE_MAX = 100_000_000      # CAMAT_SAMPLE_MAX: largest unit and warm-up
PERIOD_MAX = 1 << 40          # CAMAT_PERIOD_MAX
DEFAULT_UNIT = 10_000


def default_warm(hier: Hierarchy) -> int:
    """Timed accesses before (and after) a unit: twice the out-of-order window, at least 500."""
    return max(500, 2 * hier.window)


@dataclass(frozen=True)
class Sampling:
    """Sampled timing: one unit of `unit` measured accesses every `period` accesses, with `warm`
    timed, uncounted accesses before and after it (native/camat/camat.h, camat_sample)."""

    period: int
    unit: int = DEFAULT_UNIT
    warm: int = 500

    def check(self) -> None:
        if not 1 <= self.unit <= SAMPLE_MAX:
            raise UsageError(f"--sample-unit must be in 1..{SAMPLE_MAX}, got {self.unit}")
        if not 0 <= self.warm <= SAMPLE_MAX:
            raise UsageError(f"--sample-warm must be in 0..{SAMPLE_MAX}, got {self.warm}")
        low = self.unit + 2 * self.warm
        if not low <= self.period <= PERIOD_MAX:
            raise UsageError(f"--sample PERIOD must be in {low}..{PERIOD_MAX} (at least the unit "
                             f"plus twice the warm-up), got {self.period}")


class _SampleInfo(ctypes.Structure):
    _fields_ = [("period", ctypes.c_uint64), ("accesses", ctypes.c_uint64),
                ("detailed", ctypes.c_uint64), ("measured", ctypes.c_uint64),
                ("units", ctypes.c_uint64), ("unit", ctypes.c_uint32), ("warm", ctypes.c_uint32),
                ("counted_active", ctypes.c_double * 5), ("shared_active", ctypes.c_double * 5)]


@dataclass
class SimCounts:
    totals: np.ndarray      # COUNTS_DTYPE[5]
    by_object: np.ndarray   # COUNTS_DTYPE[5, objects]
    by_region: np.ndarray   # COUNTS_DTYPE[5, regions]
    cycles: int
    levels: int             # 4, or 5 with the far level
    sample: dict | None = None        # sampled timing: period, unit, warm, accesses, detailed,
                                      # measured, units, counted_active, shared_active
    units: np.ndarray | None = None   # float64[units, 5, 2]: measured accesses, active share


@lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    path = _existing(NATIVE_DIR / "lib" / "libobjtier_camat.so", "the C-AMAT model")
    lib = ctypes.CDLL(str(path))
    lib.camat_create.restype = ctypes.c_void_p
    lib.camat_create.argtypes = [ctypes.POINTER(_Config), ctypes.POINTER(ctypes.c_char_p)]
    lib.camat_destroy.argtypes = [ctypes.c_void_p]
    lib.camat_feed.restype = ctypes.c_int
    lib.camat_feed.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.camat_finish.argtypes = [ctypes.c_void_p]
    for name in ("camat_totals", "camat_by_object", "camat_by_region"):
        getattr(lib, name).restype = ctypes.c_void_p
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    lib.camat_cycles.restype = ctypes.c_uint64
    lib.camat_cycles.argtypes = [ctypes.c_void_p]
    lib.camat_error.restype = ctypes.c_char_p
    lib.camat_error.argtypes = [ctypes.c_void_p]
    lib.camat_sample.restype = ctypes.c_char_p
    lib.camat_sample.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                                 ctypes.c_uint32]
    lib.camat_sample_info_of.restype = ctypes.POINTER(_SampleInfo)
    lib.camat_sample_info_of.argtypes = [ctypes.c_void_p]
    lib.camat_sample_units.restype = ctypes.POINTER(ctypes.c_double)
    lib.camat_sample_units.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    return lib


def _c_config(cfg: SimConfig) -> tuple[_Config, object]:
    h = cfg.hierarchy
    c = _Config()
    for i, k in enumerate((h.l1, h.l2, h.llc)):
        c.cache[i] = _Cache(k.size_bytes, k.ways, k.hit_cycles, k.mshrs, 0)
    if h.page_bytes & (h.page_bytes - 1) or h.page_bytes < 64:
        raise UsageError(f"page size {h.page_bytes} is not a power of two of at least 64")
    c.line_bytes, c.cores, c.issue_width, c.window = h.line_bytes, cfg.cores, h.issue_width, h.window
    c.lag, c.reorder, c.mem_cycles, c.mem_mshrs, c.far_cycles = h.lag, h.reorder, h.mem_cycles, h.far_mshrs, h.far_cycles
    c.coherence_cycles, c.page_shift = h.coherence_cycles, h.page_bytes.bit_length() - 1
    c.local_pages, c.objects, c.regions = cfg.local_pages, cfg.objects, cfg.regions
    keep = None
    if cfg.pinned is not None:
        keep = np.ascontiguousarray(cfg.pinned, dtype=np.uint8)
        if len(keep) != cfg.objects:
            raise ValueError("pinned must have one flag per object")
        c.pinned = keep.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
        c.pinned_pages = cfg.pinned_pages
    return c, keep


def simulate(accesses: np.ndarray, cfg: SimConfig, chunk: int = 1 << 20,
             sample: Sampling | None = None) -> SimCounts:
    """Run the model over `accesses` (ACCESS_DTYPE, in stream order); every access timed, or
    with `sample` only the sampled units (the counts of accesses and misses stay exact)."""
    if accesses.dtype != ACCESS_DTYPE:
        raise ValueError("accesses must be an ACCESS_DTYPE array")
    if sample is not None:
        sample.check()
    lib = _library()
    c, keep = _c_config(cfg)
    err = ctypes.c_char_p()
    model = lib.camat_create(ctypes.byref(c), ctypes.byref(err))
    if not model:
        what = err.value.decode() if err.value else "unknown"
        raise UsageError(f"C-AMAT model: bad parameter {what}")
    try:
        if sample is not None:
            bad = lib.camat_sample(model, sample.period, sample.unit, sample.warm)
            if bad:
                raise UsageError(f"C-AMAT model: bad sampling parameter {bad.decode()}")
        data = np.ascontiguousarray(accesses)
        if c.reorder:  # clock-ordered interleaving takes the whole stream at once
            chunk = max(len(data), 1)
        for start in range(0, len(data), chunk):
            part = data[start:start + chunk]
            if lib.camat_feed(model, part.ctypes.data, len(part)) != 0:
                raise UsageError(f"C-AMAT model: {lib.camat_error(model).decode()}")
        lib.camat_finish(model)

        def view(ptr: int, n: int) -> np.ndarray:
            buf = (ctypes.c_char * (n * COUNTS_DTYPE.itemsize)).from_address(ptr)
            return np.frombuffer(bytes(buf), dtype=COUNTS_DTYPE).copy()

        n_levels = len(LEVELS)
        totals = view(lib.camat_totals(model), n_levels)
        by_object = view(lib.camat_by_object(model), n_levels * cfg.objects).reshape(
            n_levels, cfg.objects)
        by_region = view(lib.camat_by_region(model), n_levels * cfg.regions).reshape(
            n_levels, cfg.regions)
        cycles = int(lib.camat_cycles(model))
        info, units = None, None
        if sample is not None:
            info, units = _sample_result(lib, model)
    finally:
        lib.camat_destroy(model)
        del keep
    return SimCounts(totals, by_object, by_region, cycles, 5 if cfg.local_pages else 4,
                     info, units)


def _sample_result(lib, model) -> tuple[dict, np.ndarray]:
    p = lib.camat_sample_info_of(model).contents
    info = {k: int(getattr(p, k)) for k in ("period", "unit", "warm", "accesses", "detailed",
                                             "measured", "units")}
    info["counted_active"] = list(p.counted_active)
    info["shared_active"] = list(p.shared_active)
    n = ctypes.c_size_t()
    ptr = lib.camat_sample_units(model, ctypes.byref(n))
    units = (np.ctypeslib.as_array(ptr, shape=(n.value * 10,)).copy().reshape(n.value, 5, 2)
             if n.value else np.zeros((0, 5, 2)))
    return info, units


def hierarchy(name: str, **overrides) -> Hierarchy:
    if name not in PRESETS:
        raise UsageError(f"unknown cache preset {name!r}; choose one of {', '.join(PRESETS)}")
    return replace(PRESETS[name], **overrides) if overrides else PRESETS[name]
