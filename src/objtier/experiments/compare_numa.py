"""`objtier compare --tier numa`: the kernel's NUMA-balancing tiering vs an objtier plan, in the
two-node guest (objtier.testbed). Runs on the host and drives the guest.

    1. guest:    attach to the guest started by `objtier testbed up`, else boot one for the
                 duration (it dies with this process); save kernel.numa_balancing,
                 /sys/kernel/mm/numa/demotion_enabled and the fast nodes' hugetlb pools
    2. tiers:    the guest's node sysfs files are copied to DIR/guest-sysfs/ and classified on
                 the host (objtier.tiers.numa_topology); --fast-nodes/--slow-nodes win
    3. shrink:   optionally (--fast-reserve SIZE) hugetlb pages are reserved on the fast nodes
                 so that a small program overflows them (fast capacity is what is left free)
    4. profile:  one recording in the guest (runtime preloaded, fault sampler, balancing off);
                 the plan is made on the host for budget = --local PCT of the fast nodes' free
                 memory (or a SIZE)
    5. A/B:      kernel and objtier alternately, `repeat` times each:
                   kernel:  numa_balancing=2, demotion on, program unbound; the runtime runs with
                            no plan (OBJTIER_SAMPLER=none) only to write RESIDENCY records
                   objtier: numa_balancing=0, demotion off; the plan enforced with
                            OBJTIER_TIER=numa (mbind at allocation), RESIDENCY records
                 per run: wall time, FoM, vmstat deltas (hint faults, promotions, demotions,
                 migrations), and per object the share of its present pages on the slow nodes
                 from the last residency pass (at exit)
    6. results:  DIR/compare.csv (one row per run), DIR/objects.csv (one row per object per
                 run), DIR/summary.json, DIR/plan.json + plan.txt, DIR/profile.otr/,
                 DIR/runs/ (each run's output, vmstat before/after and trace)

DIR must lie inside the project tree: the guest writes there (the only read-write share).
Guest state (the two knobs, hugetlb pools) is restored on exit, error and Ctrl-C.

In the emulated guest both nodes have the same speed: wall time and FoM say nothing about tiers
there; the guest shows mechanics (placement, promotions, demotions). On a real tiered machine
the same measurements mean what they say (see docs/numa.md).
"""

from __future__ import annotations

import contextlib
import csv
import json
import shlex
import shutil
import signal
import statistics
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from objtier.errors import ObjtierError, UsageError
from objtier.runtime_settings import runtime_env

BALANCING = "/proc/sys/kernel/numa_balancing"
DEMOTION = "/sys/kernel/mm/numa/demotion_enabled"
HUGEPAGES = "/sys/devices/system/node/node{n}/hugepages/hugepages-2048kB/nr_hugepages"
HUGEPAGE_BYTES = 2 << 20
NOT_PRESENT = 0xFFFFFFFF
VMSTAT_KEYS = ("numa_hint_faults", "numa_hint_faults_local", "numa_pages_migrated",
               "pgpromote_success", "pgpromote_candidate", "pgdemote_kswapd", "pgdemote_direct",
               "pgdemote_khugepaged", "pgmigrate_success", "pgmigrate_fail")
CONFIGS = ("kernel", "objtier")
#: kernel knobs per arm: (kernel.numa_balancing, demotion_enabled)
KNOBS = {"kernel": ("2", "1"), "objtier": ("0", "0"), "profile": ("0", "0")}


@dataclass
class NumaCompareSettings:
    local: str = "50%"              # fast budget: PCT of the fast nodes' free memory, or SIZE
    repeat: int = 3                 # runs per configuration
    algo: str = "rank"
    sampler: str = "fault"          # profile sampler in the guest (fault; perf has no PMU there)
    rate: int = 2000
    min_size: int = 128 << 10
    stack_depth: int = 8
    fast_nodes: str | None = None   # explicit node lists win over detection
    slow_nodes: str | None = None
    fast_reserve: int = 0           # bytes of hugetlb pages held on the fast nodes meanwhile
    timeout_s: float = 900.0        # per guest run
    output: Path = Path("compare-numa")
    force: bool = False


@dataclass
class NumaRunRow:
    config: str
    repeat: int
    order: int
    returncode: int
    wall_s: float | None
    fom_name: str | None = None
    fom_value: float | None = None
    fom_unit: str | None = None
    fom_seconds: float | None = None
    numa_hint_faults: int | None = None
    numa_hint_faults_local: int | None = None
    numa_pages_migrated: int | None = None
    pgpromote_success: int | None = None
    pgpromote_candidate: int | None = None
    pgdemote: int | None = None               # pgdemote_kswapd + _direct + _khugepaged
    pgdemote_kswapd: int | None = None
    pgdemote_direct: int | None = None
    pgmigrate_success: int | None = None
    objects: int | None = None                # objects with residency at exit
    slow_share: float | None = None           # slow-node pages / present pages, all objects
    placement_actions: int | None = None
    failed_actions: int | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass
class NumaCompareResult:
    rows: list[NumaRunRow]
    objects: list[dict[str, Any]]
    summary: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


# ---- pure parts ---------------------------------------------------------------------------


def parse_vmstat(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[name] = int(value)
    return out


def vmstat_deltas(before: dict[str, int], after: dict[str, int]) -> dict[str, int | None]:
    out: dict[str, int | None] = {k: (after[k] - before[k]) if k in before and k in after
                                  else None for k in VMSTAT_KEYS}
    parts = [out[k] for k in ("pgdemote_kswapd", "pgdemote_direct", "pgdemote_khugepaged")
             if out[k] is not None]
    out["pgdemote"] = sum(parts) if parts else None
    return out


def last_residency(residency: list[dict[str, Any]]) -> dict[int, dict[int, int]]:
    """RESIDENCY rows -> {alloc_seq: {node: pages}} from each object's latest pass."""
    latest: dict[int, int] = {}
    for r in residency:
        seq = r["alloc_seq"]
        latest[seq] = max(latest.get(seq, 0), r["time_ns"])
    out: dict[int, dict[int, int]] = {}
    for r in residency:
        if r["time_ns"] == latest[r["alloc_seq"]]:
            out.setdefault(r["alloc_seq"], {})[r["node"]] = r["pages"]
    return out


def object_shares(by_object: dict[int, dict[int, int]], slow: frozenset[int] | set[int]
                  ) -> dict[int, dict[str, Any]]:
    """{alloc_seq: {node: pages}} -> pages on fast/slow nodes, absent, slow share of present."""
    out = {}
    for seq, nodes in by_object.items():
        absent = nodes.get(NOT_PRESENT, 0)
        slow_pages = sum(p for n, p in nodes.items() if n != NOT_PRESENT and n in slow)
        fast_pages = sum(p for n, p in nodes.items() if n != NOT_PRESENT and n not in slow)
        present = slow_pages + fast_pages
        out[seq] = {"pages_fast": fast_pages, "pages_slow": slow_pages, "pages_absent": absent,
                    "slow_share": round(slow_pages / present, 6) if present else None}
    return out


def fast_budget(text: str, capacity: int) -> int:
    """--local: PCT of the fast nodes' free memory or a SIZE -> bytes (> 0)."""
    from objtier.enforcement import parse_local

    return parse_local(text, capacity)


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize_rows(rows: list[NumaRunRow], objects: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians per configuration over successful runs, and per object (by context key)."""
    medians: dict[str, Any] = {}
    numeric = [f.name for f in fields(NumaRunRow)
               if f.name not in ("config", "repeat", "order", "returncode", "fom_name",
                                 "fom_unit")]
    for config in CONFIGS:
        runs = [r for r in rows if r.config == config]
        ok = [r for r in runs if r.ok]
        medians[config] = {"runs": len(runs), "failed": len(runs) - len(ok),
                           **{k: _median([getattr(r, k) for r in ok]) for k in numeric}}
    per_object: dict[str, dict[str, Any]] = {}
    for o in objects:
        entry = per_object.setdefault(o["context_key"], {
            "label": o["label"], "size": o["size"], "planned": o["planned"]})
        entry.setdefault(o["config"], []).append(o["slow_share"])
    for entry in per_object.values():
        for config in CONFIGS:
            if config in entry:
                entry[f"{config}_slow_share"] = _median(entry.pop(config))
    kernel, objtier = medians["kernel"], medians["objtier"]
    ratios = {"speedup": (kernel["wall_s"] / objtier["wall_s"]
                          if kernel["wall_s"] and objtier["wall_s"] else None),
              "fom_ratio": (objtier["fom_value"] / kernel["fom_value"]
                            if kernel["fom_value"] and objtier["fom_value"] else None)}
    return {"medians": medians, "objects": per_object, "ratios": ratios}


def arm_tiered(rows: list[NumaRunRow], config: str) -> bool | None:
    """Whether the arm `config` used the slow nodes in its successful runs: True when in any
    of them a tracked object had pages on the slow nodes at exit, or a page was promoted or
    demoted (pgpromote_success, pgdemote); False when in every one the tracked objects' present
    pages were all on the fast nodes and nothing was promoted or demoted; None when the runs
    cannot tell (no successful run, no residency of any object, a counter missing)."""
    ok = [r for r in rows if r.config == config and r.ok]
    evidence = [(r.slow_share, r.pgpromote_success, r.pgdemote) for r in ok]
    if any(v is not None and v > 0 for values in evidence for v in values):
        return True
    if ok and all(v == 0 for values in evidence for v in values):   # None is not 0
        return False
    return None


def suggested_reserve(free_bytes: int, footprint_bytes: int) -> int:
    """Bytes of hugetlb pages to hold on the fast nodes (whole 2 MiB pages) so that about half
    of a footprint of `footprint_bytes` fits in what stays free there: the kernel arm then has
    to place or demote the rest on the slow nodes. 0 when it already does not fit."""
    hold = free_bytes - footprint_bytes // 2
    return max(-(-hold // HUGEPAGE_BYTES) * HUGEPAGE_BYTES, 0)


def tiering_warning(tiered: dict[str, bool | None], footprint_bytes: int, capacity: int
                    ) -> str | None:
    """One line when the comparison compared nothing: no arm used the slow nodes (both
    False), or the kernel arm never needed to while objtier's plan put objects there."""
    if tiered.get("kernel") is not False:
        return None
    fits = (f"the profile's tracked objects peak at {footprint_bytes / 2**20:.1f} MiB and the "
            f"fast nodes had {capacity / 2**20:.0f} MiB free")
    advice = f"rerun with --fast-reserve {suggested_reserve(capacity, footprint_bytes) >> 20}M"
    if tiered.get("objtier") is False:
        return (f"nothing was tiered: in every run of both arms the tracked objects stayed on "
                f"the fast nodes and no page was promoted or demoted ({fits}), so the two arms "
                f"compare nothing; {advice} (half the footprint left free)")
    return (f"the kernel arm never used the slow nodes ({fits}): objtier's arm is compared "
            f"with a kernel that had no reason to tier; {advice} (half the footprint left "
            f"free)")


def tiering_summary(rows: list[NumaRunRow], footprint_bytes: int, capacity: int
                    ) -> tuple[dict[str, Any], str | None]:
    """summary.json's tiering fields: per arm whether it used the slow nodes (arm_tiered),
    nothing_tiered (no arm did: the comparison compared nothing), the profile's footprint
    [bytes]; and the warning line, if any (tiering_warning)."""
    tiered = {config: arm_tiered(rows, config) for config in CONFIGS}
    return ({"tiered": tiered, "nothing_tiered": all(v is False for v in tiered.values()),
             "profile_footprint_bytes": footprint_bytes},
            tiering_warning(tiered, footprint_bytes, capacity))


# ---- the guest ------------------------------------------------------------------------------


@contextlib.contextmanager
def guest(testbed=None, say: Callable[[str], None] = lambda text: None) -> Iterator[Any]:
    """The given Testbed; else the running one (left running); else a new one (stopped)."""
    from objtier.testbed import Testbed

    if testbed is not None:
        yield testbed
        return
    tb = Testbed(log=say)
    if tb.is_running():
        say("using the running guest (objtier testbed up)")
        yield tb.attach()
        return
    tb.start()
    try:
        yield tb
    finally:
        tb.stop()




class GuestState:
    """Saves and restores the guest's tiering knobs and the fast nodes' hugetlb pools."""

    def __init__(self, tb, fast_nodes: list[int]):
        self.tb = tb
        self.saved: dict[str, str] = {}
        for path in (BALANCING, DEMOTION, *(HUGEPAGES.format(n=n) for n in fast_nodes)):
            rc, out, _ = tb.run(["cat", path])
            if rc == 0:
                self.saved[path] = out.strip()

    def knobs(self, balancing: str, demotion: str) -> None:
        self.tb.run_checked(f"echo {balancing} > {BALANCING} && echo {demotion} > {DEMOTION}")

    def reserve(self, nodes: list[int], nbytes: int) -> int:
        """Hold about nbytes of 2 MiB hugetlb pages on `nodes` (split evenly); bytes held."""
        if nbytes <= 0 or not nodes:
            return 0
        each = -(-nbytes // HUGEPAGE_BYTES // len(nodes))
        held = 0
        for n in nodes:
            path = HUGEPAGES.format(n=n)
            base = int(self.saved.get(path, "0") or 0)
            out = self.tb.run_checked(f"echo {base + each} > {path}; cat {path}")
            held += (int(out.split()[-1]) - base) * HUGEPAGE_BYTES
        return held

    def restore(self) -> None:
        script = "; ".join(f"echo {shlex.quote(v)} > {p}" for p, v in self.saved.items()
                           if v in ("0", "1", "2", "3", "true", "false") or v.isdigit())
        if script:
            self.tb.run(script, timeout=120)


def guest_sysfs(tb, dest: Path) -> Path:
    """Copy the guest's node and memory-tier sysfs files to dest (a sysfs-shaped tree)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    d = shlex.quote(str(dest))
    tb.run_checked(f"""cd /sys && for f in devices/system/node/node*/cpulist \
devices/system/node/node*/distance devices/system/node/node*/meminfo \
devices/system/node/node*/access0/initiators/* \
devices/virtual/memory_tiering/memory_tier*/nodelist; do
  [ -f "$f" ] || continue; mkdir -p {d}/$(dirname "$f"); cat "$f" > {d}/"$f" 2>/dev/null
done; true""")
    return dest


def node_free_bytes(tb, nodes: list[int]) -> int:
    out = tb.run_checked(" ".join(["cat"] + [f"/sys/devices/system/node/node{n}/meminfo"
                                      for n in nodes]))
    return sum(int(line.split()[-2]) * 1024 for line in out.splitlines() if " MemFree:" in line)


def run_in_guest(tb, command: list[str], env: dict[str, str], stem: Path,
                 timeout: float) -> tuple[int, float | None, dict[str, int], dict[str, int]]:
    """Run command in the guest with env set for it alone; its output goes to stem.out/.err.
    Returns (exit status, wall seconds, vmstat before, vmstat after)."""
    q = {k: shlex.quote(str(stem.with_suffix(s))) for k, s in
         (("out", ".out"), ("err", ".err"), ("v0", ".vmstat0"), ("v1", ".vmstat1"))}
    program = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), *command])
    script = (f"cat /proc/vmstat > {q['v0']}; t0=$(date +%s%N); "
              f"{program} > {q['out']} 2> {q['err']}; rc=$?; t1=$(date +%s%N); "
              f"cat /proc/vmstat > {q['v1']}; echo \"rc=$rc ns=$((t1 - t0))\"")
    out = tb.run_checked(script, timeout=timeout)
    words = dict(w.split("=", 1) for w in out.split() if "=" in w)
    rc = int(words.get("rc", 255))
    rc = -(rc - 128) if rc > 128 else rc
    wall = int(words["ns"]) / 1e9 if "ns" in words else None

    def vm(path: Path) -> dict[str, int]:
        try:
            return parse_vmstat(path.read_text())
        except OSError:
            return {}
    return rc, wall, vm(stem.with_suffix(".vmstat0")), vm(stem.with_suffix(".vmstat1"))


# ---- the experiment -------------------------------------------------------------------------


def _prepare_output(output: Path, force: bool) -> Path:
    """The comparison's directory (results.prepare_output), which must lie inside the project
    tree: the guest writes there."""
    from objtier.experiments.results import prepare_output
    from objtier.testbed.paths import repo_root

    output = output.resolve()
    root = repo_root()
    if root != output and root not in output.parents:
        raise UsageError(f"{output} is outside the project tree {root}: the guest can only "
                         f"write there; choose -o inside it")
    return prepare_output(output, force)


def _plan(profile: Path, settings: NumaCompareSettings, budget_bytes: int, capacity: int,
          command: list[str], output: Path) -> dict[str, Any]:
    """The plan of the profile (objtier.plan.pipeline) for budget_bytes of the fast nodes'
    capacity [bytes]; writes plan.json/plan.txt."""
    from objtier import plan as planner
    from objtier.plan.pipeline import make_plan, read_recordings, write_plan_files

    budget = planner.Budget(budget_bytes, settings.local,
                            round(100.0 * budget_bytes / capacity, 2), capacity)
    plan = make_plan(read_recordings([profile], exe=command[0]), settings.algo, budget).plan
    write_plan_files(plan, output / "plan.json", output / "plan.txt")
    return plan


def _profile_footprint(profile: Path, command: list[str]) -> int:
    """Peak live bytes of the profile's tracked objects (the footprint a PCT refers to)."""
    from objtier.plan.pipeline import read_recordings

    return read_recordings([profile], exe=command[0]).footprint_bytes()


def _objects_of_run(trace_dir: Path, slow: frozenset[int], planned: dict[str, str]
                    ) -> tuple[list[dict[str, Any]], tuple[int, int]]:
    """Per-object residency at exit, and (placement actions, failed actions)."""
    from objtier.analysis.objects import object_table
    from objtier.errors import TraceError
    from objtier.trace import open_trace

    try:
        trace = open_trace(trace_dir)
        table = object_table(trace).to_pylist()
        seqs = trace.allocations.column("seq").to_pylist()
        residency = trace.residency.to_pylist()
        placements = trace.placements.to_pylist()
    except (TraceError, OSError):
        return [], (0, 0)
    shares = object_shares(last_residency(residency), slow)
    rows = []
    for obj in table:
        seq = seqs[obj["object"]]
        share = shares.get(seq)
        if share is None:
            continue
        rows.append({"alloc_seq": seq, "context_key": obj["context_key"],
                     "label": obj.get("label") or "", "size": obj["size"],
                     "planned": planned.get(obj["context_key"], "unplanned"), **share})
    return rows, (len(placements), sum(p["result"] < 0 for p in placements))


def run_numa_compare(command: list[str], settings: NumaCompareSettings, testbed=None,
                     say: Callable[[str], None] = lambda text: None,
                     on_row: Callable[[NumaRunRow], None] = lambda row: None
                     ) -> NumaCompareResult:
    """The whole experiment; see the module docstring. Writes into settings.output."""
    from objtier.experiments.compare_swap import _last_line
    from objtier.enforcement import NO_SAMPLING, check_nodes, plan_min_size, plan_warnings
    from objtier.experiments.measure import Measurement, _attach_fom
    from objtier.native import runtime_library
    from objtier.tiers.numa_topology import detect_tiers, tier_map_from_sets

    if settings.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {settings.repeat}")
    fast_text = check_nodes(settings.fast_nodes, "--fast-nodes")
    slow_text = check_nodes(settings.slow_nodes, "--slow-nodes")
    from objtier.testbed.paths import repo_root
    from objtier.testbed.visible import check_guest_command

    # before boot: one line when the guest could not run the command
    command = check_guest_command(command, getattr(testbed, "repo", None) or repo_root())
    output = _prepare_output(settings.output, settings.force)
    lib = str(runtime_library())
    warnings = ["emulated guest: both nodes have the same speed, so wall time and FoM do not "
                "measure tiering; promotions, demotions and slow shares do"]
    rows: list[NumaRunRow] = []
    objects: list[dict[str, Any]] = []
    with guest(testbed, say) as tb:
        overrides = tier_map_from_sets(fast_text, slow_text) if (fast_text or slow_text) else None
        decision = detect_tiers(guest_sysfs(tb, output / "guest-sysfs"), overrides)
        if not decision.has_slow_tier:
            raise ObjtierError(f"the guest has no slow memory tier: {decision.message}")
        fast, slow = sorted(decision.fast), sorted(decision.slow)
        fast_list = ",".join(map(str, fast))
        slow_list = ",".join(map(str, slow))
        say(f"tiers: fast nodes {fast_list}, slow nodes {slow_list} ({decision.source})")
        kernel = tb.run_checked("uname -r").strip()
        state = GuestState(tb, fast)
        try:
            held = state.reserve(fast, settings.fast_reserve)
            if held:
                say(f"holding {held >> 20} MiB of hugetlb pages on node(s) {fast_list}")
            capacity = node_free_bytes(tb, fast)
            budget = fast_budget(settings.local, capacity)
            say(f"fast nodes free: {capacity >> 20} MiB; plan budget {budget >> 20} MiB")

            state.knobs(*KNOBS["profile"])
            say(f"recording a profile in the guest (sampler {settings.sampler})")
            profile = output / "profile.otr"
            profile.mkdir()
            rc, _, _, _ = run_in_guest(tb, command, {
                "LD_PRELOAD": lib, **runtime_env(
                    output=profile, sampler=settings.sampler, rate=settings.rate,
                    min_size=settings.min_size, stack_depth=settings.stack_depth)},
                output / "profile", settings.timeout_s)
            if rc != 0:
                err = (output / "profile.err").read_text(errors="replace")
                raise ObjtierError(f"the program failed while being recorded in the guest "
                                   f"(exit status {rc}): {_last_line(err)}")
            plan = _plan(profile, settings, budget, capacity, command, output)
            footprint = _profile_footprint(profile, command)
            if footprint <= capacity:
                say(f"the profile's tracked objects peak at {footprint >> 20} MiB, which fits "
                    f"in the fast nodes' {capacity >> 20} MiB free: the kernel arm may never "
                    f"use the slow nodes (--fast-reserve "
                    f"{suggested_reserve(capacity, footprint) >> 20}M would leave half of it)")
            warnings += plan.get("warnings", []) + plan_warnings(plan, command[0])
            planned = {e["context_key"]: e["tier"] for e in plan.get("entries", [])}
            min_size = min(plan_min_size(plan), settings.min_size)

            runs_dir = output / "runs"
            runs_dir.mkdir()
            for i in range(1, settings.repeat + 1):
                for config in CONFIGS:
                    order = len(rows) + 1
                    say(f"run {order}/{2 * settings.repeat}: {config} #{i}")
                    stem = runs_dir / f"{order:02d}-{config}-{i}"
                    trace_dir = stem.with_suffix(".otr")
                    trace_dir.mkdir()
                    env = {"LD_PRELOAD": lib, **runtime_env(
                        **NO_SAMPLING, output=trace_dir, tier="numa", fast_nodes=fast_list,
                        slow_nodes=slow_list, min_size=min_size,
                        stack_depth=settings.stack_depth,
                        plan=output / "plan.txt" if config == "objtier" else None)}
                    state.knobs(*KNOBS[config])
                    rc, wall, v0, v1 = run_in_guest(tb, command, env, stem, settings.timeout_s)
                    if rc == -signal.SIGINT:
                        raise KeyboardInterrupt
                    m = Measurement(config, rc, wall or 0.0, 0, 0, 0, 0,
                                    stem.with_suffix(".out").read_text(errors="replace"), "")
                    _attach_fom(m)
                    found, (actions, failed) = _objects_of_run(trace_dir, decision.slow, planned)
                    present = sum(o["pages_fast"] + o["pages_slow"] for o in found)
                    deltas = vmstat_deltas(v0, v1)
                    row = NumaRunRow(
                        config=config, repeat=i, order=order, returncode=rc,
                        wall_s=round(wall, 6) if wall is not None else None,
                        fom_name=m.fom_name, fom_value=m.fom_value, fom_unit=m.fom_unit,
                        fom_seconds=m.fom_seconds,
                        **{k: deltas[k] for k in ("numa_hint_faults", "numa_hint_faults_local",
                                                  "numa_pages_migrated", "pgpromote_success",
                                                  "pgpromote_candidate", "pgdemote",
                                                  "pgdemote_kswapd", "pgdemote_direct",
                                                  "pgmigrate_success")},
                        objects=len(found),
                        slow_share=(round(sum(o["pages_slow"] for o in found) / present, 6)
                                    if present else None),
                        placement_actions=actions, failed_actions=failed)
                    for o in found:
                        objects.append({"config": config, "repeat": i, "order": order, **o})
                    rows.append(row)
                    on_row(row)
        finally:
            state.restore()
    summary = summarize_rows(rows, objects)
    tiering, warning = tiering_summary(rows, footprint, capacity)
    if warning is not None:
        warnings.insert(0, warning)
    summary.update({
        **tiering,
        "command": command, "tier": "numa",
        "guest": {"kernel": kernel, "emulated": True,
                  "fast_reserve_bytes": settings.fast_reserve},
        "tiers": {"fast": fast, "slow": slow, "source": decision.source,
                  "message": decision.message},
        "fast_capacity_bytes": capacity, "budget": {"given": settings.local, "bytes": budget},
        "knobs": {c: {"numa_balancing": KNOBS[c][0], "demotion_enabled": KNOBS[c][1]}
                  for c in CONFIGS},
        "plan": {"algorithm": settings.algo, "path": str(output / "plan.json"),
                 **(plan.get("summary") or [{}])[0]},
        "repeat": settings.repeat, "warnings": warnings,
    })
    write_outputs(rows, objects, summary, output)
    return NumaCompareResult(rows, objects, summary, warnings)


OBJECT_COLUMNS = ("config", "repeat", "order", "alloc_seq", "context_key", "label", "size",
                  "planned", "pages_fast", "pages_slow", "pages_absent", "slow_share")


def write_outputs(rows: list[NumaRunRow], objects: list[dict[str, Any]],
                  summary: dict[str, Any], output: Path) -> None:
    with open(output / "compare.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[x.name for x in fields(NumaRunRow)])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in asdict(row).items()})
    with open(output / "objects.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=OBJECT_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for o in objects:
            writer.writerow({k: ("" if o.get(k) is None else o.get(k)) for k in OBJECT_COLUMNS})
    (output / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
