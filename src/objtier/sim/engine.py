"""ctypes binding of libobjtier_sim.so (native/sim/sim.h). Structs are mirrored as numpy dtypes;
tests/sim/test_engine.py checks their sizes against the library's expectations."""

from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np

from objtier.errors import EnvironmentProblem, UsageError
from objtier.native import NATIVE_DIR

# sim_event.type
EV_ALLOC, EV_ACCESS, EV_FREE, EV_PHASE = 1, 2, 3, 4
NO_OBJ = 0xFFFFFFFF

EVENT = np.dtype([("time_ns", "<u8"), ("addr", "<u8"), ("size", "<u8"), ("obj", "<u4"),
                  ("space", "<u4"), ("type", "<u2"), ("flags", "<u2"), ("next", "<u4")])
BIN_FIELDS = ("fast_loads", "fast_stores", "slow_loads", "slow_stores", "other", "promoted",
              "demoted", "hint_faults", "fast_pages", "slow_pages", "swap_in", "swap_out")
BIN = np.dtype([(name, "<u8") for name in BIN_FIELDS])
assert EVENT.itemsize == 40 and BIN.itemsize == 96


class _Config(ctypes.Structure):
    _fields_ = [("fast_bytes", ctypes.c_uint64), ("start_ns", ctypes.c_uint64),
                ("bin_ns", ctypes.c_uint64), ("page_shift", ctypes.c_uint32),
                ("objects", ctypes.c_uint32), ("swap", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32)]


@lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    path = NATIVE_DIR / "lib" / "libobjtier_sim.so"
    if not path.exists():
        raise EnvironmentProblem(f"the simulator library is not built ({path} missing); "
                                 "run `make build`")
    lib = ctypes.CDLL(str(path))
    vp, u64p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)
    lib.sim_create.restype = vp
    lib.sim_create.argtypes = [ctypes.POINTER(_Config), ctypes.c_char_p]
    lib.sim_destroy.argtypes = [vp]
    lib.sim_policy_names.restype = ctypes.c_char_p
    lib.sim_policy_params.restype = ctypes.c_char_p
    lib.sim_policy_params.argtypes = [ctypes.c_char_p]
    lib.sim_set_param.argtypes = [vp, ctypes.c_char_p, ctypes.c_double]
    lib.sim_set_placement.argtypes = [vp, vp, vp, vp]
    lib.sim_set_phase_placement.argtypes = [vp, ctypes.c_uint32, vp, vp, vp]
    lib.sim_feed.argtypes = [vp, vp, ctypes.c_size_t]
    lib.sim_finish.argtypes = [vp, ctypes.c_uint64]
    lib.sim_error.restype = ctypes.c_char_p
    lib.sim_error.argtypes = [vp]
    lib.sim_counter_count.restype = ctypes.c_size_t
    lib.sim_counter_name.restype = ctypes.c_char_p
    lib.sim_counter_name.argtypes = [ctypes.c_size_t]
    lib.sim_counters.argtypes = [vp, u64p]
    lib.sim_object_swap_ins.argtypes = [vp, u64p]
    lib.sim_bins.restype = ctypes.c_size_t
    lib.sim_bins.argtypes = [vp, ctypes.POINTER(vp)]
    return lib


def native_policies() -> list[str]:
    return library().sim_policy_names().decode().split(",")


def policy_params(policy: str) -> dict[str, float]:
    raw = library().sim_policy_params(policy.encode())
    if raw is None:
        raise UsageError(f"unknown simulator policy {policy!r}")
    out = {}
    for item in filter(None, raw.decode().split(",")):
        key, value = item.split("=")
        out[key] = float(value)
    return out


class Simulator:
    """One simulation of one policy. Feed EVENT arrays in time order, then finish()."""

    def __init__(self, policy: str, fast_bytes: int, start_ns: int, bin_ns: int,
                 page_shift: int, objects: int, params: dict[str, float] | None = None,
                 swap: bool = False):
        """swap: the slow tier is swap (swap-in on access, sim.h "Swap mode")."""
        self._lib = library()
        config = _Config(fast_bytes, start_ns, bin_ns, page_shift, objects, int(bool(swap)), 0)
        self._sim = self._lib.sim_create(ctypes.byref(config), policy.encode())
        if not self._sim:
            raise UsageError(f"cannot create a simulator for policy {policy!r} "
                             f"(known: {', '.join(native_policies())})")
        self.policy = policy
        self._keep: list[np.ndarray] = []
        for key, value in (params or {}).items():
            if self._lib.sim_set_param(self._sim, key.encode(), float(value)) != 0:
                known = ", ".join(policy_params(policy)) or "none"
                raise UsageError(f"policy {policy} has no parameter {key!r} (known: {known})")

    def set_placement(self, fast_bytes: np.ndarray | None, page_bits: np.ndarray | None = None,
                      page_base: np.ndarray | None = None) -> None:
        arrays = []
        for array, dtype in ((fast_bytes, np.uint64), (page_bits, np.uint8),
                             (page_base, np.uint64)):
            arrays.append(None if array is None else np.ascontiguousarray(array, dtype=dtype))
        self._keep = [a for a in arrays if a is not None]  # the C side borrows them
        ptr = [None if a is None else a.ctypes.data for a in arrays]
        self._lib.sim_set_placement(self._sim, *ptr)

    def set_phase_placement(self, offsets: np.ndarray, objs: np.ndarray,
                            fast_bytes: np.ndarray) -> None:
        """Per-phase placements (sim.h sim_set_phase_placement): phase p's entries are
        objs/fast_bytes[offsets[p]:offsets[p + 1]]."""
        arrays = [np.ascontiguousarray(offsets, dtype=np.uint64),
                  np.ascontiguousarray(objs, dtype=np.uint32),
                  np.ascontiguousarray(fast_bytes, dtype=np.uint64)]
        self._keep_phases = arrays  # the C side borrows them
        self._lib.sim_set_phase_placement(self._sim, len(arrays[0]) - 1,
                                          *[a.ctypes.data for a in arrays])

    def feed(self, events: np.ndarray) -> None:
        events = np.ascontiguousarray(events, dtype=EVENT)
        if len(events) and self._lib.sim_feed(self._sim, events.ctypes.data, len(events)) != 0:
            raise UsageError(f"simulation failed: {self._lib.sim_error(self._sim).decode()}")

    def finish(self, end_ns: int) -> None:
        self._lib.sim_finish(self._sim, end_ns)

    def counters(self) -> dict[str, int]:
        n = self._lib.sim_counter_count()
        values = (ctypes.c_uint64 * n)()
        self._lib.sim_counters(self._sim, values)
        return {self._lib.sim_counter_name(i).decode(): int(values[i]) for i in range(n)}

    def object_swap_ins(self, objects: int) -> np.ndarray:
        """Swap mode: swap-ins per object (index < objects given at creation)."""
        out = np.zeros(max(objects, 1), dtype=np.uint64)
        self._lib.sim_object_swap_ins(self._sim,
                                      out.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)))
        return out[:objects]

    def bins(self) -> np.ndarray:
        ptr = ctypes.c_void_p()
        n = self._lib.sim_bins(self._sim, ctypes.byref(ptr))
        if not n:
            return np.zeros(0, dtype=BIN)
        raw = (ctypes.c_char * (n * BIN.itemsize)).from_address(ptr.value)
        return np.frombuffer(bytes(raw), dtype=BIN).copy()

    def close(self) -> None:
        if self._sim:
            self._lib.sim_destroy(self._sim)
            self._sim = None

    def __enter__(self) -> "Simulator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()
