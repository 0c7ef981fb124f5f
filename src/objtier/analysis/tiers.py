"""Memory level and tier splits of the samples (seed Fig. 3, Tables 1-3).

Levels are ot_mem_level values; "outside caches" = fast (local DRAM, uncached) + slow (remote
DRAM, PMEM, CXL, swap). Latency is in the sampler's unit (PEBS/IBS: cycles). Each function
returns None when the samples carry no level (fault and trace samplers), so the page can say why.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from objtier.trace.columns import FAST_LEVELS, SLOW_LEVELS, column, level_mask

LEVEL_NAMES = {0: "unknown", 1: "L1", 2: "LFB", 3: "L2", 4: "L3", 5: "DRAM", 6: "remote DRAM",
               7: "PMEM", 8: "CXL", 9: "swap", 10: "uncached"}


def has_levels(samples: pa.Table) -> bool:
    return samples.num_rows > 0 and bool((column(samples, "level", np.uint8) > 0).any())


def level_shares(samples: pa.Table) -> pa.Table | None:
    """Fig. 3: samples per memory level and their share of all samples with a known level."""
    if not has_levels(samples):
        return None
    level = column(samples, "level", np.uint8)
    counts = np.bincount(level, minlength=11)[1:]
    known = int(counts.sum())
    return pa.table({"level": [LEVEL_NAMES[i] for i in range(1, 11)],
                     "samples": counts.astype(np.int64), "share": counts / known})


def tier_split(samples: pa.Table) -> pa.Table | None:
    """Table 1: share outside caches; of those, share served by fast and slow memory."""
    if not has_levels(samples):
        return None
    level = column(samples, "level", np.uint8)
    known = int((level > 0).sum())
    fast = int(level_mask(level, FAST_LEVELS).sum())
    slow = int(level_mask(level, SLOW_LEVELS).sum())
    outside = fast + slow
    return pa.table({"outside_cache": [outside / known], "fast": [fast / outside if outside else None],
                     "slow": [slow / outside if outside else None]})


def latency_split(samples: pa.Table) -> pa.Table | None:
    """Table 2: share of the total latency of outside-cache samples paid in fast vs slow."""
    if not has_levels(samples):
        return None
    level = column(samples, "level", np.uint8)
    latency = column(samples, "latency", np.float64)
    fast = float(latency[level_mask(level, FAST_LEVELS)].sum())
    slow = float(latency[level_mask(level, SLOW_LEVELS)].sum())
    total = fast + slow
    if total == 0:
        return None
    return pa.table({"fast_cost": [fast / total], "slow_cost": [slow / total]})


def cost_by_tlb(samples: pa.Table) -> pa.Table | None:
    """Table 3: mean latency of outside-cache samples by tier x TLB (hit, miss)."""
    if not has_levels(samples):
        return None
    level = column(samples, "level", np.uint8)
    tlb = column(samples, "tlb", np.uint8)
    latency = column(samples, "latency", np.float64)
    if not (tlb > 0).any():
        return None
    rows = {"tier": [], "tlb": [], "samples": [], "mean_latency": []}
    for tier, levels in (("fast", FAST_LEVELS), ("slow", SLOW_LEVELS)):
        for name, code in (("hit", 1), ("miss", 2)):
            sel = level_mask(level, levels) & (tlb == code) & (latency > 0)
            rows["tier"].append(tier)
            rows["tlb"].append(name)
            rows["samples"].append(int(sel.sum()))
            rows["mean_latency"].append(float(latency[sel].mean()) if sel.any() else None)
    return pa.table(rows)
