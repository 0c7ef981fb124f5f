"""Cost model: turn the simulator's per-bin access and migration counts into memory stall time.

Per bin (width bin_ns of trace time) and tier t:
  demand_t  = (loads_t + stores_t) * access_bytes + migrated_pages * page_bytes   (bytes)
              migrations are charged to both tiers (read on one, write on the other)
  rho_t     = min(demand_t / (bandwidth_t * bin_s), rho_max)                        (utilization)
  latency_t = idle_t * (1 + queue_k * rho_t / (1 - rho_t))                          (ns)
              queue_k = 0.03 reproduces the MLC loaded-latency curve of the reference (§4:
              82 ns idle -> ~130 ns near the 135 GB/s peak, rho ~ 0.95)
  stall     = sum_t loads_t * load_latency_t + stores_t * store_latency_t
            + migrated_pages * (page_bytes / min(slow bandwidths) + migrate_page_ns)
              (migrated pages include swap-outs; a swap-in by fault is one slow access)
            + hint_faults * hint_fault_ns
Accesses are the sample-weighted counts (see docs/simulator.md for the scaling and its error);
stall time is summed over threads, not divided by memory-level parallelism, so speedups compare
memory stall time under the same trace, not wall-clock time.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from objtier.errors import UsageError

PRESETS = ("optane", "cxl", "remote-numa", "hbm", "zram", "nvme", "rdma")


@dataclass
class Tier:
    load_ns: float
    store_ns: float
    read_gbps: float       # GB/s (1e9 bytes/s)
    write_gbps: float


@dataclass
class CostModel:
    name: str
    fast: Tier
    slow: Tier
    migrate_page_ns: float = 1000.0
    hint_fault_ns: float = 1000.0
    access_bytes: float = 64.0
    queue_k: float = 0.03
    rho_max: float = 0.95
    description: str = ""
    sources: dict = field(default_factory=dict)
    swap: bool = False     # the slow tier is swap: swap-in on access ([tier] kind = "swap")


def _tier(doc: dict, where: str) -> Tier:
    try:
        load = float(doc["load_ns"])
        store = float(doc.get("store_ns", load))
        read = float(doc["bandwidth_gbps"])
        write = float(doc.get("write_bandwidth_gbps", read))
    except (KeyError, TypeError, ValueError) as error:
        raise UsageError(f"preset {where}: needs load_ns and bandwidth_gbps numbers ({error})") \
            from None
    if min(load, store, read, write) <= 0:
        raise UsageError(f"preset {where}: latencies and bandwidths must be positive")
    return Tier(load, store, read, write)


def parse_preset(doc: dict, name: str) -> CostModel:
    if "fast" not in doc or "slow" not in doc:
        raise UsageError(f"preset {name}: needs [fast] and [slow] tables")
    other = doc.get("migration", {})
    kernel = doc.get("kernel", {})
    queue = doc.get("queue", {})
    kind = str(doc.get("tier", {}).get("kind", "numa"))
    if kind not in ("numa", "swap"):
        raise UsageError(f"preset {name}: [tier] kind must be \"numa\" or \"swap\"")
    try:
        return CostModel(
            name=str(doc.get("name", name)), fast=_tier(doc["fast"], f"{name} [fast]"),
            slow=_tier(doc["slow"], f"{name} [slow]"),
            migrate_page_ns=float(other.get("page_ns", 1000.0)),
            hint_fault_ns=float(kernel.get("hint_fault_ns", 1000.0)),
            access_bytes=float(queue.get("access_bytes", 64.0)),
            queue_k=float(queue.get("k", 0.03)), rho_max=float(queue.get("rho_max", 0.95)),
            description=str(doc.get("description", "")), swap=kind == "swap",
            sources={k: v.get("source", "") for k, v in doc.items() if isinstance(v, dict)})
    except (TypeError, ValueError) as error:
        raise UsageError(f"preset {name}: {error}") from None


def load_preset(name_or_path: str) -> CostModel:
    """A built-in preset by name, or a user preset from a TOML file."""
    path = Path(name_or_path)
    if name_or_path.endswith(".toml") or path.exists():
        try:
            doc = tomllib.loads(path.read_text())
        except OSError as error:
            raise UsageError(f"cannot read preset {path}: {error.strerror}") from None
        except tomllib.TOMLDecodeError as error:
            raise UsageError(f"preset {path} is not valid TOML: {error}") from None
        return parse_preset(doc, path.stem)
    if name_or_path not in PRESETS:
        raise UsageError(f"unknown preset {name_or_path!r} (built in: {', '.join(PRESETS)}; "
                         "or give a .toml file)")
    text = resources.files("objtier.presets").joinpath(f"{name_or_path}.toml").read_text()
    return parse_preset(tomllib.loads(text), name_or_path)


def _latency(idle: float, rho: np.ndarray, k: float) -> np.ndarray:
    return idle * (1.0 + k * rho / (1.0 - rho))


def stall_ns(bins: np.ndarray, model: CostModel, bin_ns: int, page_bytes: int) -> dict:
    """Stall time (ns) and its parts from the simulator's bins (engine.BIN)."""
    f = {name: bins[name].astype(np.float64) for name in bins.dtype.names}
    seconds = bin_ns / 1e9
    # swap-outs cost a page copy (compression, device write) like a demotion; swap-ins by fault
    # are already charged as one slow access each (bins count them in slow_loads/stores)
    migrated = f["promoted"] + f["demoted"] + f.get("swap_out", 0.0)
    mig_bytes = migrated * page_bytes
    parts = {}
    total = 0.0
    for tier, cfg, loads, stores in (("fast", model.fast, f["fast_loads"] + f["other"],
                                      f["fast_stores"]),
                                     ("slow", model.slow, f["slow_loads"], f["slow_stores"])):
        demand = (loads + stores) * model.access_bytes + mig_bytes
        bw = (cfg.read_gbps + cfg.write_gbps) / 2 * 1e9
        rho = np.minimum(demand / (bw * seconds), model.rho_max)
        t = float((loads * _latency(cfg.load_ns, rho, model.queue_k)).sum()
                  + (stores * _latency(cfg.store_ns, rho, model.queue_k)).sum())
        parts[f"{tier}_ns"] = t
        total += t
    copy_bw = min(model.slow.read_gbps, model.slow.write_gbps, model.fast.write_gbps) * 1e9
    mig = float(migrated.sum()) * (page_bytes / copy_bw * 1e9 + model.migrate_page_ns)
    hint = float(f["hint_faults"].sum()) * model.hint_fault_ns
    parts["migration_ns"] = mig
    parts["hint_fault_ns"] = hint
    parts["total_ns"] = total + mig + hint
    return parts
