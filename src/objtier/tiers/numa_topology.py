"""Which NUMA nodes are fast memory and which are slow: pure functions over a sysfs tree.

Inputs (all under a sysfs root, normally /sys; tests pass fixture trees):
    devices/system/node/node<N>/cpulist        CPUs of the node ("0-3,8"; empty: CPU-less)
    devices/system/node/node<N>/distance       SLIT row: distances to the online nodes, in order
    devices/system/node/node<N>/meminfo        "Node N MemTotal:  <kB> kB" (0: memory-less)
    devices/system/node/node<N>/access0/initiators/{read,write}_{latency,bandwidth}
                                               HMAT performance from the best initiator:
                                               latency in ns, bandwidth in MB/s
    devices/virtual/memory_tiering/memory_tier<ID>/nodelist
                                               kernel memory tiers; smaller ID = faster
                                               (ID = abstract distance >> 7; DRAM is tier 4)

Decision, first rule that separates the memory nodes wins (each node gets a reason):
    1. explicit node -> tier map (always wins, per node);
    2. kernel memory tiers, when the memory nodes span two or more tiers: the fastest tier is
       fast, all others slow (HBM in flat mode, being in a faster tier than DRAM, is fast);
    3. HMAT: relative cost = (lat/lat_ref) * (bw_ref/bw), reference = mean of the CPU nodes;
       cost >= SLOWER (1.5) is slow; if some node has cost <= 1/SLOWER, those are fast and the
       rest slow;
    4. CPU presence: CPU-less memory nodes are slow (a CXL expander or KMEM-DAX node without
       performance data), nodes with CPUs fast;
    otherwise every node is fast and there is no slow tier (one node; sockets of equal DRAM).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from objtier.errors import UsageError

SLOWER = 1.5     # HMAT cost ratio at which a node counts as a different (slower/faster) tier
FAST, SLOW = "fast", "slow"


@dataclass(frozen=True)
class NodeInfo:
    node: int
    cpus: tuple[int, ...]
    distances: dict[int, int]                  # SLIT distance to every online node
    mem_total_kib: int
    read_latency_ns: int | None = None         # HMAT access0, best initiator
    write_latency_ns: int | None = None
    read_bandwidth_mbps: int | None = None
    write_bandwidth_mbps: int | None = None
    memory_tier: int | None = None             # memory_tier<ID> containing the node

    @property
    def has_cpus(self) -> bool:
        return bool(self.cpus)

    @property
    def has_hmat(self) -> bool:
        return self.read_latency_ns is not None and self.read_bandwidth_mbps is not None


@dataclass(frozen=True)
class TierDecision:
    fast: frozenset[int]
    slow: frozenset[int]
    reasons: dict[int, str]       # node -> why it is fast or slow
    source: str                   # override | memory_tiers | hmat | cpus | none
    message: str                  # one line for the user
    nodes: dict[int, NodeInfo] = field(default_factory=dict)

    @property
    def has_slow_tier(self) -> bool:
        return bool(self.slow)

    def tier_of(self, node: int) -> str:
        return FAST if node in self.fast else SLOW


def parse_cpulist(text: str) -> tuple[int, ...]:
    """"0-3,8,10-11" -> (0, 1, 2, 3, 8, 10, 11); empty text -> ()."""
    out: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
        except ValueError:
            raise UsageError(f"not a node/CPU list: {text.strip()!r}") from None
    return tuple(out)


def parse_tier_map(text: str) -> dict[int, str]:
    """"0=fast,1-2=slow" -> {0: "fast", 1: "slow", 2: "slow"}."""
    out: dict[int, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        nodes, sep, tier = part.rpartition("=")
        if not sep or tier.strip() not in (FAST, SLOW):
            raise UsageError(f"tier map entries look like 0=fast or 1-2=slow, got {part.strip()!r}")
        for node in parse_cpulist(nodes):
            out[node] = tier.strip()
    return out


def tier_map_from_sets(fast: str | None, slow: str | None) -> dict[int, str]:
    """--fast-nodes LIST --slow-nodes LIST as one node -> tier map."""
    out = {n: FAST for n in parse_cpulist(fast or "")}
    for n in parse_cpulist(slow or ""):
        if n in out:
            raise UsageError(f"node {n} is in both the fast and the slow node list")
        out[n] = SLOW
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def read_topology(sysfs: str | Path = "/sys") -> dict[int, NodeInfo]:
    """NodeInfo for every node directory under <sysfs>/devices/system/node."""
    root = Path(sysfs)
    node_dir = root / "devices" / "system" / "node"
    tiers: dict[int, int] = {}
    for tier_dir in (root / "devices" / "virtual" / "memory_tiering").glob("memory_tier*"):
        match = re.fullmatch(r"memory_tier(\d+)", tier_dir.name)
        nodelist = _read(tier_dir / "nodelist")
        if match and nodelist is not None:
            for node in parse_cpulist(nodelist):
                tiers[node] = int(match.group(1))
    ids = sorted(int(m.group(1)) for p in node_dir.glob("node*")
                 if (m := re.fullmatch(r"node(\d+)", p.name)))
    nodes: dict[int, NodeInfo] = {}
    for node in ids:
        d = node_dir / f"node{node}"
        row = [int(x) for x in (_read(d / "distance") or "").split()]
        distances = dict(zip(ids, row)) if len(row) == len(ids) else {}
        meminfo = _read(d / "meminfo") or ""
        total = re.search(r"MemTotal:\s*(\d+)\s*kB", meminfo)
        hmat = d / "access0" / "initiators"
        nodes[node] = NodeInfo(
            node=node, cpus=parse_cpulist(_read(d / "cpulist") or ""), distances=distances,
            mem_total_kib=int(total.group(1)) if total else 0,
            read_latency_ns=_read_int(hmat / "read_latency"),
            write_latency_ns=_read_int(hmat / "write_latency"),
            read_bandwidth_mbps=_read_int(hmat / "read_bandwidth"),
            write_bandwidth_mbps=_read_int(hmat / "write_bandwidth"),
            memory_tier=tiers.get(node))
    return nodes


def _hmat_cost(info: NodeInfo, ref_lat: float, ref_bw: float) -> float:
    """Relative cost like the kernel's abstract distance: (lat/lat_ref) * (bw_ref/bw)."""
    lat = (info.read_latency_ns or 0) + (info.write_latency_ns or info.read_latency_ns or 0)
    bw = (info.read_bandwidth_mbps or 0) + (info.write_bandwidth_mbps or info.read_bandwidth_mbps or 0)
    if lat <= 0 or bw <= 0:
        return 1.0
    return (lat / ref_lat) * (ref_bw / bw)


def _by_memory_tiers(mem: dict[int, NodeInfo]) -> tuple[set[int], dict[int, str]] | None:
    tiers = {i.memory_tier for i in mem.values()}
    if None in tiers or len(tiers) < 2:
        return None
    top = min(tiers)
    fast = {n for n, i in mem.items() if i.memory_tier == top}
    reasons = {}
    for n, i in mem.items():
        kind = "CPUs" if i.has_cpus else "no CPUs"
        if n in fast:
            reasons[n] = f"kernel memory_tier{i.memory_tier} ({kind}), the fastest tier"
        else:
            reasons[n] = f"kernel memory_tier{i.memory_tier} ({kind}), below memory_tier{top}"
    return fast, reasons


def _by_hmat(mem: dict[int, NodeInfo]) -> tuple[set[int], dict[int, str]] | None:
    cpu_nodes = [i for i in mem.values() if i.has_cpus and i.has_hmat]
    if not cpu_nodes or not all(i.has_hmat for i in mem.values()):
        return None
    ref_lat = sum((i.read_latency_ns or 0) + (i.write_latency_ns or i.read_latency_ns or 0)
                  for i in cpu_nodes) / len(cpu_nodes)
    ref_bw = sum((i.read_bandwidth_mbps or 0) + (i.write_bandwidth_mbps or i.read_bandwidth_mbps or 0)
                 for i in cpu_nodes) / len(cpu_nodes)
    if ref_lat <= 0 or ref_bw <= 0:
        return None
    cost = {n: _hmat_cost(i, ref_lat, ref_bw) for n, i in mem.items()}
    faster = {n for n, c in cost.items() if c <= 1 / SLOWER}
    slower = {n for n, c in cost.items() if c >= SLOWER}
    if faster:
        fast = faster
    elif slower:
        fast = set(mem) - slower
    else:
        return None
    reasons = {}
    for n, i in mem.items():
        perf = (f"HMAT {i.read_latency_ns} ns, {i.read_bandwidth_mbps} MB/s read: "
                f"{cost[n]:.2f}x the cost of CPU-node memory")
        reasons[n] = perf + (" (faster than DRAM)" if n in faster else "")
    return fast, reasons


def _by_cpus(mem: dict[int, NodeInfo]) -> tuple[set[int], dict[int, str]] | None:
    fast = {n for n, i in mem.items() if i.has_cpus}
    if not fast or fast == set(mem):
        return None
    reasons = {}
    for n, i in mem.items():
        if n in fast:
            reasons[n] = "has CPUs"
        else:
            near = min((d for m, d in i.distances.items() if m in fast), default=None)
            reasons[n] = ("no CPUs" + (f", SLIT distance {near} to the nearest CPU node" if near else "")
                          + "; no tier or HMAT data says otherwise")
    return fast, reasons


def classify(nodes: dict[int, NodeInfo], overrides: dict[int, str] | None = None) -> TierDecision:
    """Split the memory nodes into fast and slow sets (rules in the module docstring)."""
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(nodes))
    if unknown:
        raise UsageError(f"node {unknown[0]} does not exist (nodes: "
                         f"{','.join(map(str, sorted(nodes))) or 'none'})")
    mem = {n: i for n, i in nodes.items() if i.mem_total_kib > 0 or n in overrides}
    if not mem:
        raise UsageError("no NUMA node with memory found under the sysfs root")
    source, fast, reasons = "none", set(mem), {}
    for name, rule in (("memory_tiers", _by_memory_tiers), ("hmat", _by_hmat), ("cpus", _by_cpus)):
        found = rule(mem)
        if found is not None:
            source, (fast, reasons) = name, found
            break
    if source == "none":
        if len(mem) == 1:
            reasons = {n: "the only memory node" for n in mem}
        else:
            reasons = {n: ("has CPUs" if i.has_cpus else "no CPUs") + "; same tier as the others"
                       for n, i in mem.items()}
    for n, tier in overrides.items():
        reasons[n] = "explicit node->tier map"
        (fast.add if tier == FAST else fast.discard)(n)
    if overrides:
        source = "override" if set(overrides) >= set(mem) else f"override+{source}"
    slow = set(mem) - fast
    if not fast:
        raise UsageError("the node->tier map leaves no fast node")
    fmt = lambda s: ",".join(map(str, sorted(s)))
    if slow:
        message = f"fast nodes {fmt(fast)}, slow nodes {fmt(slow)} (from {source})"
    elif len(mem) == 1:
        message = (f"one memory node ({fmt(mem)}): no slow NUMA tier here; use the swap tier, "
                   "`objtier testbed`, or a machine with CXL/PMEM/HBM")
    else:
        message = (f"nodes {fmt(mem)} all look alike (no memory tiers, HMAT or CPU-less node "
                   "tell them apart): no slow NUMA tier; name one with --slow-nodes")
    return TierDecision(frozenset(fast), frozenset(slow), reasons, source, message, nodes)


def detect_tiers(sysfs: str | Path = "/sys", overrides: dict[int, str] | None = None) -> TierDecision:
    """classify(read_topology(sysfs), overrides)."""
    return classify(read_topology(sysfs), overrides)
