"""The swap tier in the QEMU guest (objtier.testbed), and one measured run of one arm there.

The guest runs a cgroup v2 kernel with MGLRU; its swap tier is built from the guest's own
parts: a zram device (module loaded from the guest kernel's package) as swap, and one fresh
cgroup v2 memory cgroup per run with memory.max = the local size. Arms:

    kernel         MGLRU reclaim under memory.max alone
    damon-reclaim  + DAMON_RECLAIM's scheme (the kernel's DAMON-based proactive reclaim):
                   physical regions of the biggest System RAM range idle for min_age paged
                   out, oldest first, under its quotas and free-memory watermarks. Built
                   through the DAMON sysfs interface (paddr): the guest kernel's damon_reclaim
                   module drops its own scheme when it starts (see docs/compare.md), so its
                   kdamond monitors and never reclaims; the module is left untouched
    damos-pageout  + a DAMOS scheme through the DAMON sysfs interface on the program's address
                   space (vaddr): regions with no access for damos_min_age paged out (attached
                   once the program runs; removed when it exits)
    psi-reclaim    + a pressure-driven proactive reclaimer (TMO/senpai approach) writing to the
                   cgroup's memory.reclaim (native/guest/swaprun.c)
    objtier        the objtier runtime preloaded with a plan, under the same memory.max
    objtier-noguard  the same without the runtime's pressure guard (on request)

Every arm runs through swaprun (native/guest/swaprun.c): it moves the program into the run's
cgroup, measures wall time, and reads memory.stat every flush_ms meanwhile (compare's stat-flush
reader, the same in every arm). Per run the guest writes DIR/<stem>.{out,err,res,stat,events,
peak,vm0,vm1}: the program's output, swaprun's result, the cgroup's memory.stat, memory.events
and memory.peak at the end (the cgroup is new, so its counters are the run's), /proc/vmstat
before and after.

Everything GuestSwapTier changes in the guest is undone on exit, error and Ctrl-C: the zram
swap (swapoff, reset, the module unloaded when this loaded it), the memory controller in the
root's subtree_control, NUMA demotion (off meanwhile, so reclaim swaps instead of demoting to
the guest's second node), the DAMON sysfs kdamond of a DAMON arm, and any run cgroup left
behind.
DAMON arms refuse to start when a kdamond is busy in the guest (objtier.tiers.damon_free).

Wall times in the guest are emulated (TCG): the CPU is emulated for every arm alike, so ratios
between arms measured in one guest compare like with like, but absolute times are not a
machine's.
"""
from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from objtier.errors import EnvironmentProblem, ObjtierError, UsageError
from objtier.tiers.damon_free import PROBE_SCRIPT, busy_reason_from_text, require_free_damon

ARMS = ("kernel", "damon-reclaim", "damos-pageout", "psi-reclaim", "objtier", "objtier-noguard")
SWAPRUN_SOURCE = Path(__file__).resolve().parents[3] / "native" / "guest" / "swaprun.c"
DAMON_SYSFS = "/sys/kernel/mm/damon/admin/kdamonds"
DEMOTION = "/sys/kernel/mm/numa/demotion_enabled"
CGROUP_ROOT = "/sys/fs/cgroup"
STAT_KEYS = ("anon", "file", "workingset_refault_anon", "workingset_refault_file", "pswpin",
             "pswpout", "pgmajfault", "pgscan", "pgsteal", "zswpin", "zswpout")
VMSTAT_KEYS = ("pswpin", "pswpout", "pgmajfault", "pgscan_direct", "pgscan_kswapd",
               "pgsteal_direct", "pgsteal_kswapd")


@dataclass
class GuestSwapSettings:
    flush_ms: float = 10.0           # stat-flush reader period in every arm [ms]; 0 = none
    zram_mib: int = 1024             # zram swap size [MiB]
    # damon-reclaim: DAMON_RECLAIM's scheme and defaults except min_age (120 s would never act
    # on a run of tens of seconds) and the watermarks (its defaults act only when free memory
    # is below 40 % of the machine; a memory cgroup's limit is not seen by them)
    damon_min_age_us: int = 1_000_000
    damon_wmarks: tuple[int, int, int] = (1000, 999, 0)  # high, mid, low [per-thousand free]
    # and the quotas: its defaults (10 ms of CPU, 128 MiB per second) are spent, oldest
    # regions first, on the guest's free memory (idle since boot) and never reach a program's
    # pages within a run; with no quota at all the kdamond's paging starves the program
    damon_quota_ms: int = 100         # DAMON_RECLAIM's quota_ms (CPU time per second)
    damon_quota_bytes: int = 1 << 30  # DAMON_RECLAIM's quota_sz per second; 0 = none
    # damos-pageout: regions idle for this many aggregation intervals (100 ms: DAMON's default)
    damos_min_age_aggr: int = 10
    damos_update_us: int = 1_000_000  # how often the program's mappings are re-read
    damos_quota_ms: int = 10          # DAMON_RECLAIM's default quotas: 10 ms of CPU and
    damos_quota_bytes: int = 128 << 20  # 128 MiB per second
    # psi-reclaim (swaprun --reclaim): the senpai defaults scaled to 1 s intervals
    psi_interval_ms: int = 1000
    psi_target_pct: float = 0.1      # stall budget: % of each interval
    psi_max_probe: float = 0.01      # the largest step: this fraction of memory.current
    timeout_s: float = 1800.0

    def validate(self) -> None:
        if not 0 <= self.flush_ms <= 10_000:
            raise UsageError(f"stat-flush period must be 0..10000 ms, got {self.flush_ms:g}")
        if not 64 <= self.zram_mib <= 65536:
            raise UsageError(f"zram size must be 64..65536 MiB, got {self.zram_mib}")
        high, mid, low = self.damon_wmarks
        if not 0 <= low <= mid <= high <= 1000 or self.damon_min_age_us < 100_000:
            raise UsageError("damon-reclaim needs watermarks 0 <= low <= mid <= high <= 1000 "
                             "and min_age of at least one aggregation (100000 us)")
        if min(self.damon_quota_ms, self.damon_quota_bytes, self.damos_quota_ms,
               self.damos_quota_bytes) < 0:
            raise UsageError("DAMON quotas must not be negative")
        if not 0 < self.psi_max_probe <= 1 or self.psi_target_pct <= 0:
            raise UsageError("psi-reclaim needs 0 < max_probe <= 1 and target_pct > 0")


@dataclass
class GuestRun:
    """One measured run of one arm in the guest."""
    arm: str
    repeat: int
    order: int
    local_bytes: int                 # memory.max [bytes]; 0 = unlimited
    status: int                      # exit status; 128+N when killed by signal N
    timed_out: bool
    wall_s: float                    # emulated wall time (TCG) from fork to exit
    user_s: float
    sys_s: float
    oom_kills: int                   # the cgroup's memory.events oom_kill
    refault_anon: int | None         # the cgroup's workingset_refault_anon: swap-ins
    memcg_pswpin: int | None         # the cgroup's pswpin (memory.stat)
    memcg_pswpout: int | None
    peak_bytes: int | None           # the cgroup's memory.peak
    file_bytes: int | None           # file page cache still charged at the end
    vmstat: dict[str, int] = field(default_factory=dict)   # guest /proc/vmstat deltas
    sidecar: dict[str, Any] = field(default_factory=dict)  # swaprun's counters
    damon: dict[str, Any] = field(default_factory=dict)    # the DAMON scheme's counters

    @property
    def survived(self) -> bool:
        return self.status == 0 and self.oom_kills == 0 and not self.timed_out


def parse_kv(text: str, sep: str = " ") -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if sep in line:
            key, value = line.split(sep, 1)
            out[key.strip()] = value.strip()
    return out


def _ints(d: dict[str, str]) -> dict[str, int]:
    out = {}
    for k, v in d.items():
        try:
            out[k] = int(v)
        except ValueError:
            pass
    return out


def biggest_system_ram(iomem: str) -> tuple[int, int]:
    """[start, end) of the biggest top-level "System RAM" range of /proc/iomem: the region
    DAMON_RECLAIM monitors by default."""
    best = (0, 0)
    for line in iomem.splitlines():
        if line.startswith(" ") or not line.rstrip().endswith(": System RAM"):
            continue
        lo, _, hi = line.split(" :", 1)[0].partition("-")
        start, end = int(lo, 16), int(hi, 16) + 1
        if end - start > best[1] - best[0]:
            best = (start, end)
    if best[1] <= best[0]:
        raise EnvironmentProblem("no System RAM range in the guest's /proc/iomem")
    return best


def build_swaprun(dest_dir: Path) -> Path:
    """Compile native/guest/swaprun.c on the host into dest_dir (the guest runs host binaries)."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    out = dest_dir / "swaprun"
    done = subprocess.run(["gcc", "-O2", "-std=gnu11", "-pthread", "-o", str(out),
                           str(SWAPRUN_SOURCE)], capture_output=True, text=True)
    if done.returncode != 0:
        raise EnvironmentProblem(f"cannot build swaprun: {done.stderr.strip()[-300:]}")
    return out




class GuestSwapTier:
    """zram swap and the cgroup v2 memory controller in the guest; runs arms. See the module
    docstring. `workdir` must lie in the project tree (the guest writes there)."""

    def __init__(self, tb, workdir: Path, settings: GuestSwapSettings, arms: list[str],
                 say=lambda text: None):
        settings.validate()
        unknown = [a for a in arms if a not in ARMS]
        if unknown:
            raise UsageError(f"unknown arm {unknown[0]!r}; choose from {', '.join(ARMS)}")
        self.tb, self.workdir, self.settings, self.arms, self.say = tb, workdir, settings, arms, say
        self.undo: list[tuple[str, str]] = []   # (what, guest shell script), undone in reverse
        self.prefix = f"objtier-guest-{os.getpid()}"
        self.swaprun: Path | None = None
        self.zram: str | None = None
        self.ram_range: tuple[int, int] | None = None   # damon-reclaim's monitoring region

    # ---- set-up and undo -------------------------------------------------------------------

    def __enter__(self) -> "GuestSwapTier":
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        # a killed program may take seconds to die while its swapped pages are freed
        cleanup = (f"for d in {CGROUP_ROOT}/{self.prefix}-*; do [ -d \"$d\" ] || continue; "
                   f"echo 1 > \"$d/cgroup.kill\" 2>/dev/null; for i in $(seq 1 60); do "
                   f"rmdir \"$d\" 2>/dev/null && break; sleep 0.5; done; done; true")
        steps = [("run cgroups", cleanup)] + list(reversed(self.undo))
        self.undo = []
        for what, script in steps:
            try:
                rc, _, err = self.tb.run(script, timeout=120)
                if rc != 0:
                    self.say(f"guest clean-up of {what} failed: {err.strip()[-200:]}")
            except ObjtierError as error:   # the guest is gone: nothing left to undo there
                self.say(f"guest clean-up of {what} skipped: {error}")
                break

    def _setup(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.swaprun = build_swaprun(self.workdir / "bin")
        out = self.tb.run_checked(f"cat {CGROUP_ROOT}/cgroup.controllers; echo ---; "
                           f"cat {CGROUP_ROOT}/cgroup.subtree_control; echo ---; "
                           f"cat {DEMOTION} 2>/dev/null; echo ---; "
                           f"cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null; echo ---; "
                           f"ls /sys/class/zram-control 2>/dev/null; echo ---; uname -r")
        controllers, subtree, demotion, lru_gen, zram_control, kver = \
            [part.strip() for part in out.split("---")]
        if "memory" not in controllers.split():
            raise EnvironmentProblem("the guest has no cgroup v2 memory controller")
        self.lru_gen = lru_gen
        self.kernel = kver
        if "memory" not in subtree.split():
            self.tb.run_checked(f"echo +memory > {CGROUP_ROOT}/cgroup.subtree_control")
            self.undo.append(("memory controller",
                              f"echo -memory > {CGROUP_ROOT}/cgroup.subtree_control"))
        if demotion == "true":
            self.tb.run_checked(f"echo false > {DEMOTION}")
            self.undo.append(("demotion", f"echo true > {DEMOTION}"))
        if "damon-reclaim" in self.arms or "damos-pageout" in self.arms:
            require_free_damon(busy_reason_from_text(self.tb.run_checked(PROBE_SCRIPT)))
        if "damos-pageout" in self.arms or "damon-reclaim" in self.arms:
            if self.tb.run_checked(f"cat {DAMON_SYSFS}/nr_kdamonds").strip() != "0":
                raise EnvironmentProblem("the guest's DAMON sysfs interface has kdamonds set up "
                                         "(not running); refusing to replace them")
            self.undo.append(("DAMON kdamond", f"echo off > {DAMON_SYSFS}/0/state 2>/dev/null; "
                                               f"echo 0 > {DAMON_SYSFS}/nr_kdamonds"))
        if "damon-reclaim" in self.arms:
            self.ram_range = biggest_system_ram(self.tb.run_checked("cat /proc/iomem"))
        self._zram(bool(zram_control))
        self.clock_rate = self._clock_rate()

    def _clock_rate(self, host_s: float = 3.0) -> float:
        """Guest seconds per host second (TCG: set by the boot's TSC calibration, so it differs
        between boots; constant within one). Times of one guest compare; across guests, not."""
        import time

        def both() -> tuple[float, float]:
            t = time.monotonic()
            guest = float(self.tb.run_checked("cat /proc/uptime").split()[0])
            return (t + time.monotonic()) / 2, guest
        h0, g0 = both()
        time.sleep(host_s)
        h1, g1 = both()
        return round((g1 - g0) / (h1 - h0), 3)

    def _zram(self, loaded: bool) -> None:
        if loaded:
            dev = self.tb.run_checked("cat /sys/class/zram-control/hot_add").strip()
            self.zram = f"zram{dev}"
            self.undo.append(("zram device", f"echo {dev} > /sys/class/zram-control/hot_remove"))
        else:
            mods = self._insmod_files(("zram",))
            self.tb.run_checked("; ".join(f"busybox insmod {shlex.quote(str(m))} || exit 1"
                                   for m in mods) + "; true")
            rmmod = "; ".join(f"busybox rmmod {m.name.removesuffix('.ko')}"
                              for m in reversed(mods))
            self.undo.append(("zram module", rmmod))
            self.zram = "zram0"
        z = self.zram
        self.tb.run_checked(f"echo {self.settings.zram_mib}M > /sys/block/{z}/disksize && "
                     f"mkswap /dev/{z} >/dev/null && swapon /dev/{z}")
        self.undo.append(("zram swap", f"swapoff /dev/{z}; echo 1 > /sys/block/{z}/reset"))
        self.say(f"guest swap: /dev/{z} ({self.settings.zram_mib} MiB zram)")

    def _insmod_files(self, names: tuple[str, ...]) -> list[Path]:
        """The modules and their dependencies, uncompressed into workdir/modules (insmod in the
        guest's userland, busybox, takes plain .ko files), in load order."""
        from objtier.testbed.fetch import KernelImage
        from objtier.testbed.modules import unpack_modules

        image = KernelImage.load(self.tb.paths)
        if image is None:
            raise EnvironmentProblem("no guest kernel: run `objtier testbed fetch`")
        dest = self.workdir / "modules"
        dest.mkdir(exist_ok=True)
        return unpack_modules(Path(image.modules), names, dest)


    # ---- one run -----------------------------------------------------------------------------

    def run(self, arm: str, command: list[str], env: dict[str, str] | None, local_bytes: int,
            stem: Path, repeat: int = 1, order: int = 0) -> GuestRun:
        """One run of `arm` with memory.max = local_bytes (0: unlimited); files at stem.*"""
        s = self.settings
        cg = f"{CGROUP_ROOT}/{self.prefix}-{order}"
        q = {ext: shlex.quote(str(stem.with_suffix("." + ext))) for ext in
             ("out", "err", "res", "stat", "events", "peak", "vm0", "vm1", "damon")}
        side = ["--flush-ms", f"{s.flush_ms:g}", "--timeout-s", f"{s.timeout_s:g}"]
        if arm == "psi-reclaim":
            side += ["--reclaim", "--interval-ms", str(s.psi_interval_ms),
                     "--target-pct", f"{s.psi_target_pct:g}", "--max-probe", f"{s.psi_max_probe:g}"]
        program = shlex.join([str(self.swaprun), "--cgroup", cg, "--result",
                              str(stem.with_suffix(".res")), *side, "--", "env",
                              *(f"{k}={v}" for k, v in (env or {}).items()), *command])
        damon_on = damon_off = ""
        if arm == "damon-reclaim":
            damon_on, damon_off = self._reclaim_script(q)
        launch = f"{program} > {q['out']} 2> {q['err']}\nrc=$?"
        if arm == "damos-pageout":
            launch = self._damos_script(cg, program, q)
        limit = str(local_bytes) if local_bytes > 0 else "max"
        script = f"""
mkdir {cg} || exit 92
echo {limit} > {cg}/memory.max || exit 93
cat /proc/vmstat > {q['vm0']}
{damon_on}
{launch}
{damon_off}
cat {cg}/memory.stat > {q['stat']}; cat {cg}/memory.events > {q['events']}
cat {cg}/memory.peak > {q['peak']}; cat /proc/vmstat > {q['vm1']}
for i in 1 2 3 4 5 6 7 8 9 10; do rmdir {cg} 2>/dev/null && break; sleep 0.5; done
exit $rc
"""
        rc, _, err = self.tb.run(script, timeout=s.timeout_s + 300)
        if rc in (90, 91, 92, 93, 94):
            raise ObjtierError(f"guest run set-up failed ({rc}) for {arm}: {err.strip()[-300:]}")
        if rc != 0:
            raise ObjtierError(f"swaprun failed ({rc}) for {arm}: {err.strip()[-300:]}")
        return self._row(arm, repeat, order, local_bytes, stem)

    def _reclaim_script(self, q: dict[str, str]) -> tuple[str, str]:
        """Shell code before and after the program: DAMON_RECLAIM's scheme on one paddr kdamond
        (the module's pattern, quotas, prioritization and watermarks with this run's min_age
        and watermarks), and its stats and pid kept afterwards."""
        s = self.settings
        k = f"{DAMON_SYSFS}/0"
        c = f"{k}/contexts/0"
        sch = f"{c}/schemes/0"
        start, end = self.ram_range or (0, 0)
        high, mid, low = s.damon_wmarks
        writes = [("1", f"{DAMON_SYSFS}/nr_kdamonds"), ("1", f"{k}/contexts/nr_contexts"),
                  ("paddr", f"{c}/operations"), ("1", f"{c}/targets/nr_targets"),
                  ("1", f"{c}/targets/0/regions/nr_regions"),
                  (str(start), f"{c}/targets/0/regions/0/start"),
                  (str(end), f"{c}/targets/0/regions/0/end"),
                  ("1", f"{c}/schemes/nr_schemes"), ("pageout", f"{sch}/action"),
                  *self._pattern(sch, s.damon_min_age_us // 100_000),
                  ("free_mem_rate", f"{sch}/watermarks/metric"),
                  ("5000000", f"{sch}/watermarks/interval_us"),
                  (str(high), f"{sch}/watermarks/high"), (str(mid), f"{sch}/watermarks/mid"),
                  (str(low), f"{sch}/watermarks/low"),
                  *self._quotas(sch, s.damon_quota_ms, s.damon_quota_bytes),
                  ("1", f"{sch}/quotas/weights/age_permil"),
                  ("on", f"{k}/state")]
        on = (f"[ \"$(cat {DAMON_SYSFS}/nr_kdamonds)\" = 0 ] || exit 94\n" +
              " && ".join(f"echo {v} > {path}" for v, path in writes) + " || exit 90\n"
              f"[ \"$(cat {k}/pid)\" -gt 0 ] || exit 91\n")
        off = (f"echo update_schemes_stats > {k}/state 2>/dev/null\n"
               f"(echo \"kdamond_pid:$(cat {k}/pid)\"; cd {sch}/stats && grep . *) > {q['damon']}\n"
               f"echo off > {k}/state 2>/dev/null; echo 0 > {DAMON_SYSFS}/nr_kdamonds\n")
        return on, off

    @staticmethod
    def _pattern(sch: str, min_age_aggr: int) -> list[tuple[str, str]]:
        """Regions of at least a page, not accessed, idle for min_age_aggr aggregations (a new
        scheme's ranges are [0, 0]: sz and age need their maxima)."""
        return [("0", f"{sch}/access_pattern/nr_accesses/min"),
                ("0", f"{sch}/access_pattern/nr_accesses/max"),
                ("4096", f"{sch}/access_pattern/sz/min"),
                (str((1 << 64) - 1), f"{sch}/access_pattern/sz/max"),
                (str(min_age_aggr), f"{sch}/access_pattern/age/min"),
                (str((1 << 32) - 1), f"{sch}/access_pattern/age/max")]

    @staticmethod
    def _quotas(sch: str, ms: int, size: int) -> list[tuple[str, str]]:
        return [(str(ms), f"{sch}/quotas/ms"), (str(size), f"{sch}/quotas/bytes"),
                ("1000", f"{sch}/quotas/reset_interval_ms")]

    def _damos_script(self, cg: str, program: str, q: dict[str, str]) -> str:
        """Shell code: start the program, attach one vaddr kdamond with one pageout scheme to
        its pid, wait for it, and keep the scheme's stats (tried/applied regions and bytes)."""
        s = self.settings
        k = f"{DAMON_SYSFS}/0"
        c = f"{k}/contexts/0"
        sch = f"{c}/schemes/0"
        writes = [("1", f"{DAMON_SYSFS}/nr_kdamonds"), ("1", f"{k}/contexts/nr_contexts"),
                  ("vaddr", f"{c}/operations"),
                  # the address space is re-read every update_us (DAMON's default: 60 s): a
                  # mapping made after the attach would go unmonitored for the whole run
                  (str(s.damos_update_us), f"{c}/monitoring_attrs/intervals/update_us"),
                  ("1", f"{c}/targets/nr_targets"),
                  ("$pid", f"{c}/targets/0/pid_target"), ("1", f"{c}/schemes/nr_schemes"),
                  ("pageout", f"{sch}/action"), *self._pattern(sch, s.damos_min_age_aggr),
                  ("none", f"{sch}/watermarks/metric"),
                  *self._quotas(sch, s.damos_quota_ms, s.damos_quota_bytes), ("on", f"{k}/state")]
        setup = " && ".join(f"echo {v} > {path}" for v, path in writes)
        return f"""[ "$(cat {DAMON_SYSFS}/nr_kdamonds)" = 0 ] || exit 94
{program} > {q['out']} 2> {q['err']} &
runner=$!
pid=
for i in $(seq 1 400); do pid=$(head -n 1 {cg}/cgroup.procs 2>/dev/null); [ -n "$pid" ] && break; sleep 0.025; done
attached=0
[ -n "$pid" ] && {setup} && attached=1
echo "attached:$attached" > {q['damon']}
# the kdamond stops by itself once its target exits, and a stopped kdamond's stats can no
# longer be updated: take them every 0.2 s while the program runs
while [ "$attached" = 1 ] && kill -0 $runner 2>/dev/null; do
  echo update_schemes_stats > {k}/state 2>/dev/null && \
    (echo "attached:1"; cd {sch}/stats && grep . *) > {q['damon']}.new && \
    mv {q['damon']}.new {q['damon']}
  sleep 0.2
done
wait $runner
rc=$?
echo off > {k}/state 2>/dev/null; echo 0 > {DAMON_SYSFS}/nr_kdamonds"""

    def _row(self, arm: str, repeat: int, order: int, local_bytes: int, stem: Path) -> GuestRun:
        def read(ext: str) -> str:
            try:
                return stem.with_suffix("." + ext).read_text()
            except OSError:
                return ""
        res = _ints(parse_kv(read("res"), "="))
        stat = _ints(parse_kv(read("stat")))
        events = _ints(parse_kv(read("events")))
        vm0, vm1 = _ints(parse_kv(read("vm0"))), _ints(parse_kv(read("vm1")))
        peak = read("peak").strip()
        sidecar = {k: v for k, v in res.items() if k not in
                   ("status", "signal", "timed_out", "wall_ns", "user_us", "sys_us")}
        return GuestRun(
            arm=arm, repeat=repeat, order=order, local_bytes=local_bytes,
            status=res.get("status", 255), timed_out=bool(res.get("timed_out", 0)),
            wall_s=res.get("wall_ns", 0) / 1e9, user_s=res.get("user_us", 0) / 1e6,
            sys_s=res.get("sys_us", 0) / 1e6, oom_kills=events.get("oom_kill", 0),
            refault_anon=stat.get("workingset_refault_anon"), memcg_pswpin=stat.get("pswpin"),
            memcg_pswpout=stat.get("pswpout"), peak_bytes=int(peak) if peak.isdigit() else None,
            file_bytes=stat.get("file"),
            vmstat={k: vm1[k] - vm0[k] for k in VMSTAT_KEYS if k in vm0 and k in vm1},
            sidecar=sidecar, damon=_ints(parse_kv(read("damon"), ":")))
