"""The knobs of `objtier sweep`: one class per way of making memory slower, behind one interface.

    knob = make_knob("local", [100, 75, 50], options)   # levels checked, ordered least ->
    with knob:                                           # most throttled; machine state made
        knob.prepare(command, say)                       # one-time measurement (footprint)
        with knob.level(75, command, env) as setup:      # per run: what the program runs with
            run(setup.command, setup.env, setup.preexec)
        setup.applied, setup.extra                       # what was applied / measured

Every knob labels its levels real (the program meets a real slower memory), emulated (a
mechanism that imitates one: bandwidth throttling, a co-running load) or simulated (a model's
prediction, no run). Everything a knob changes on the machine is registered with a Restorer
and undone on exit, error, Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from objtier.errors import EnvironmentProblem, UsageError
from objtier.restore import Restorer

REAL, EMULATED, SIMULATED = "real", "emulated", "simulated"
THREADS_PLACEHOLDER = "{threads}"


@dataclass
class LevelSetup:
    """How one run is made at one level, and what the knob found (filled after the run)."""

    command: list[str]
    env: dict[str, str]
    preexec: Callable[[], None] | None = None
    applied: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    oom_kills: int = 0              # memory cgroup OOM kills during the run


@dataclass
class KnobOptions:
    swap: str = "zram"                     # local: swap behind the cgroup
    stat_flush_ms: float = 10.0            # local: StatFlushReader period
    bandit_threads: int = 1                # bandit: co-runner threads
    bandit_mode: str = "stream"            # bandit: stream | chase
    bandit_size: str = "64M"               # bandit: buffer per thread
    resctrl_root: Path = Path("/sys/fs/resctrl")   # mba: the resctrl mount
    sysfs_root: Path = Path("/sys")        # slow-share: the NUMA topology's sysfs
    recording: Path | None = None          # sim: the recording to simulate
    sim_preset: str = "cxl"                # sim: the cost preset whose slow tier is scaled
    sim_fast: str = "50%"                  # sim: fast-tier capacity


def with_threads(command: list[str], env: dict[str, str], threads: int | None
                 ) -> tuple[list[str], dict[str, str]]:
    """The command and environment for a thread count: every `{threads}` in the command's
    arguments is replaced by it, and OMP_NUM_THREADS is set to it. None: unchanged."""
    if threads is None:
        return list(command), dict(env)
    return ([a.replace(THREADS_PLACEHOLDER, str(threads)) for a in command],
            {**env, "OMP_NUM_THREADS": str(threads)})


class Knob:
    """The interface; subclasses set name, kind, unit and implement check/level."""

    name = ""
    kind = REAL
    #: True: larger values throttle less (local 100 % > 50 %); False: larger throttle more
    descending = True

    def __init__(self, levels: list[float], options: KnobOptions):
        for value in levels:
            problem = self.check(value)
            if problem:
                raise UsageError(f"--knob {self.name}={self.label(value)}: {problem}")
        self.levels = sorted(levels, reverse=self.descending)
        self.options = options
        self.restorer = Restorer()

    def check(self, value: float) -> str | None:
        """Why value is not a valid level, or None."""
        return None

    def label(self, value: float) -> str:
        return f"{value:g}"

    def __enter__(self) -> "Knob":
        self.restorer.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.restorer.__exit__(*exc)

    def prepare(self, command: list[str], say: Callable[[str], None]) -> None:
        """One-time set-up before the first run (measurements, devices). Default: none."""

    def describe(self) -> dict[str, Any]:
        """The knob's settings for sweep.json."""
        return {}

    @contextlib.contextmanager
    def level(self, value: float, command: list[str], env: dict[str, str]
              ) -> Iterator[LevelSetup]:
        yield LevelSetup(command, env, applied=self.label(value))


# ---------------------------------------------------------------------------------------------
class ThreadsKnob(Knob):
    """Thread count: OMP_NUM_THREADS and every `{threads}` in the command. Real. Levels are run
    in the order given (more threads is not "more throttled")."""

    name = "threads"
    descending = False

    def __init__(self, levels: list[float], options: KnobOptions):
        super().__init__(levels, options)
        self.levels = list(levels)   # keep the user's order

    def check(self, value: float) -> str | None:
        if value != int(value) or not 1 <= value <= 4096:
            return "a thread count is a whole number from 1 to 4096"
        return None

    def label(self, value: float) -> str:
        return f"{int(value)} threads"

    @contextlib.contextmanager
    def level(self, value, command, env):
        cmd, environment = with_threads(command, env, int(value))
        yield LevelSetup(cmd, environment, applied=f"OMP_NUM_THREADS={int(value)}")


# ---------------------------------------------------------------------------------------------
#: added to every local level's limit: a limit of exactly the measured peak leaves the kernel
#: reclaiming at the edge (per-CPU charge batches of 64 pages, pages a previous run left in
#: the cgroup): STREAM at "100 %" ran 40x slower in 3 of 5 runs with no swap-in at all
HEADROOM_BYTES = 4 << 20


class LocalKnob(Knob):
    """The swap tier: the program's memory cgroup limited to a percentage of its peak footprint
    (measured once, unlimited) plus HEADROOM_BYTES, a zram device (or --swap DEVICE) behind
    it, and the cgroup's memory.stat read every 10 ms by StatFlushReader during every run, at
    every level. Real."""

    name = "local"
    kind = REAL

    def __init__(self, levels, options):
        super().__init__(levels, options)
        self.footprint = 0
        self.tier = None

    def check(self, value):
        if not 0 < value <= 100:
            return "a local fraction must be in (0, 100] % of the peak footprint"
        return None

    def label(self, value):
        return f"{value:g}%"

    def prepare(self, command, say):
        from objtier.experiments.compare_swap import measure_footprint, preflight
        from objtier.tiers.swap import SwapTier

        preflight(self.options.swap)
        unlimited, self.footprint, cache = measure_footprint(command, say)
        self.footprint_run_s = round(unlimited.wall_s, 6)
        say(f"footprint {self.footprint >> 20} MiB (+ {cache >> 20} MiB of file page cache, "
            f"not counted)")
        self.tier = SwapTier(self.footprint + HEADROOM_BYTES, swap=self.options.swap,
                             name=f"objtier-sweep-{os.getpid()}")
        self.tier.__enter__()
        self.restorer.push("the swap tier", lambda: self.tier.__exit__(None, None, None))

    def describe(self):
        return {"footprint_bytes": self.footprint, "headroom_bytes": HEADROOM_BYTES,
                "footprint_run_s": getattr(self, "footprint_run_s", None),
                "swap": self.options.swap,
                "stat_flush_ms": self.options.stat_flush_ms}

    def limit_bytes(self, value: float) -> int:
        """value % of the footprint plus HEADROOM_BYTES [bytes]."""
        return int(self.footprint * value / 100.0) + HEADROOM_BYTES

    def _set_limit(self, limit: int) -> int:
        """Write the cgroup's limit; returns what the kernel reports back (page-rounded)."""
        cgroup = self.tier.cgroup
        name = "memory.limit_in_bytes" if cgroup.version == 1 else "memory.max"
        try:
            (cgroup.path / name).write_text(f"{limit}\n")
        except OSError as error:
            raise EnvironmentProblem(f"cannot set {cgroup.path / name} to {limit}: "
                                     f"{error.strerror}") from None
        return cgroup.limit_bytes

    def _oom_kills(self) -> int:
        cgroup = self.tier.cgroup
        name = "memory.oom_control" if cgroup.version == 1 else "memory.events"
        try:
            for line in cgroup.read(name).splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def _empty(self) -> int:
        """Reclaim what earlier runs left charged to the empty cgroup (swap cache, page
        cache), so every run starts with the whole limit free; returns the usage left
        [bytes]."""
        cgroup = self.tier.cgroup
        try:
            if cgroup.version == 1:
                (cgroup.path / "memory.force_empty").write_text("0\n")
                return int(cgroup.read("memory.usage_in_bytes"))
            usage = int(cgroup.read("memory.current"))
            if usage:
                (cgroup.path / "memory.reclaim").write_text(f"{usage}\n")
            return int(cgroup.read("memory.current"))
        except (OSError, ValueError):
            return -1

    @contextlib.contextmanager
    def level(self, value, command, env):
        with self.at_bytes(self.limit_bytes(value), command, env) as setup:
            yield setup

    @contextlib.contextmanager
    def at_bytes(self, limit: int, command: list[str], env: dict[str, str]
                 ) -> Iterator[LevelSetup]:
        """One run with the cgroup limited to `limit` bytes (the cgroup emptied first, the
        stat-flush reader running throughout)."""
        from objtier.tiers.statflush import StatFlushReader

        left = self._empty()
        applied = self._set_limit(limit)
        self.tier.cgroup.reset_peak()
        stat_before = self.tier.cgroup.stat()
        oom_before = self._oom_kills()
        setup = LevelSetup(command, env, preexec=self.tier.preexec,
                           applied=f"{applied >> 20} MiB of {self.footprint >> 20} MiB")
        with StatFlushReader(self.tier.cgroup.path, self.options.stat_flush_ms) as reader:
            yield setup
        stat_after = self.tier.cgroup.stat()
        setup.oom_kills = self._oom_kills() - oom_before
        refaults = "workingset_refault_anon"
        setup.extra = {"limit_bytes": applied, "start_usage_bytes": left,
                       "memcg_peak_bytes": self.tier.cgroup.peak_bytes(),
                       "stat_flush_reads": reader.stats.reads,
                       "stat_flush_max_gap_ms": round(reader.stats.max_gap_ms, 3)}
        if refaults in stat_before and refaults in stat_after:
            setup.extra["swap_ins"] = stat_after[refaults] - stat_before[refaults]


# ---------------------------------------------------------------------------------------------
class BanditKnob(Knob):
    """A co-running memory load (workloads/bandit): level = percent of the time each bandit
    thread moves memory (0 = no bandit). The bandit starts before each run (its buffers
    touched), stops after it, and reports the bandwidth it took while the program ran.
    Emulated: contention, not a slower device; on a machine with few cores the bandit also
    takes CPU time from the program."""

    name = "bandit"
    kind = EMULATED
    descending = False

    def __init__(self, levels, options):
        super().__init__(levels, options)
        from objtier.units import parse_size

        if options.bandit_mode not in ("stream", "chase"):
            raise UsageError(f"--bandit-mode {options.bandit_mode!r}: stream or chase")
        if not 1 <= options.bandit_threads <= 1024:
            raise UsageError(f"--bandit-threads must be 1..1024, got {options.bandit_threads}")
        parse_size(options.bandit_size, "--bandit-size")
        self.processes: list[subprocess.Popen] = []

    def check(self, value):
        if not 0 <= value <= 100:
            return "a bandit intensity is a percentage of time from 0 to 100"
        return None

    def label(self, value):
        return f"{value:g}%"

    def describe(self):
        return {"bandit_threads": self.options.bandit_threads,
                "bandit_mode": self.options.bandit_mode, "bandit_size": self.options.bandit_size}

    def prepare(self, command, say):
        from objtier import native

        self.binary = native.binary("bandit")
        self.restorer.push("bandit co-runners", self._kill_all)

    def _kill_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        self.processes.clear()

    def start(self, value: float) -> subprocess.Popen:
        o = self.options
        process = subprocess.Popen(
            [str(self.binary), "-t", str(o.bandit_threads), "-d", f"{value:g}",
             "-s", o.bandit_size, "-m", o.bandit_mode],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.processes.append(process)
        line = process.stdout.readline()
        if not line.startswith("BANDIT ready"):
            process.kill()
            process.wait()
            raise EnvironmentProblem(f"the bandit did not start: "
                                     f"{(process.stderr.read() or line).strip()[:160]}")
        return process

    @staticmethod
    def stop(process: subprocess.Popen) -> dict[str, float]:
        """SIGTERM, wait, and parse the bandit's last line (bytes, seconds, GB/s)."""
        process.terminate()
        try:
            out, _ = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
        return parse_bandit_report(out)

    @contextlib.contextmanager
    def level(self, value, command, env):
        if value == 0:
            yield LevelSetup(command, env, applied="no bandit")
            return
        process = self.start(value)
        setup = LevelSetup(command, env)
        try:
            yield setup
        finally:
            report = self.stop(process)
            self.processes.remove(process)
        setup.extra = {"bandit_gbps": report.get("gbps")}
        setup.applied = f"{self.options.bandit_threads} x {self.options.bandit_mode} at {value:g}%"


def parse_bandit_report(text: str) -> dict[str, float]:
    """{bytes, seconds, gbps} from the bandit's "BANDIT bytes=... seconds=... gbps=..." line."""
    for line in reversed(text.splitlines()):
        if line.startswith("BANDIT bytes="):
            fields = dict(item.split("=", 1) for item in line.split()[1:] if "=" in item)
            try:
                return {k: float(fields[k]) for k in ("bytes", "seconds", "gbps")}
            except (KeyError, ValueError):
                break
    return {}


# ---------------------------------------------------------------------------------------------
RESCTRL_MAGIC = 0x7655821   # RDTGROUP_SUPER_MAGIC: statfs f_type of a resctrl mount


class MbaKnob(Knob):
    """resctrl memory bandwidth allocation: a resctrl group objtier-sweep-<pid>, its `MB:`
    schemata line written per level for every domain, the program moved into it (its `tasks`)
    before exec, the schemata read back (vendors round: Intel applies 10 % steps, AMD uses
    another scale), the group removed after. Emulated (bandwidth throttling of all memory).

    The resctrl root is a parameter: on a real mount the kernel creates the group's files and
    removes them with the group; on a plain directory (a test fixture tree: info/MB/..., a
    root schemata) this class creates the files it writes and deletes them before rmdir."""

    name = "mba"
    kind = EMULATED

    def __init__(self, levels, options):
        self.root = Path(options.resctrl_root)
        self.info = self._read_info(self.root)
        super().__init__(levels, options)
        self.group: Path | None = None
        self.domains: list[str] = []

    @staticmethod
    def _read_info(root: Path) -> dict[str, int]:
        info = root / "info" / "MB"
        if not info.is_dir():
            if not root.exists():
                raise EnvironmentProblem(
                    f"no resctrl at {root}: memory bandwidth allocation needs Intel RDT MBA or "
                    f"AMD PQoS and `mount -t resctrl resctrl {root}`")
            raise EnvironmentProblem(f"resctrl at {root} offers no memory bandwidth allocation "
                                     f"({info} missing)")
        out = {}
        for name in ("min_bandwidth", "bandwidth_gran", "delay_linear", "num_closids"):
            try:
                out[name] = int((info / name).read_text().strip())
            except (OSError, ValueError):
                pass
        return out

    @property
    def max_level(self) -> int:
        # a linear (Intel) MBA takes percent; AMD's non-linear scale runs to 2048 (seed §III-B)
        return 100 if self.info.get("delay_linear", 1) else 2048

    def check(self, value):
        low = max(1, self.info.get("min_bandwidth", 1))
        if value != int(value) or not low <= value <= self.max_level:
            return (f"an MBA level is a whole number from {low} to {self.max_level} "
                    f"(info/MB/min_bandwidth = {self.info.get('min_bandwidth', '?')})")
        return None

    def label(self, value):
        return f"{value:g}%" if self.max_level == 100 else f"{value:g}"

    def describe(self):
        return {"resctrl_root": str(self.root), **self.info}

    def is_real_mount(self) -> bool:
        try:
            return _statfs_type(self.root) == RESCTRL_MAGIC
        except OSError:
            return False

    def prepare(self, command, say):
        self.domains = mb_domains((self.root / "schemata").read_text())
        if not self.domains:
            raise EnvironmentProblem(f"{self.root / 'schemata'} has no MB line")
        group = self.root / f"objtier-sweep-{os.getpid()}"
        try:
            group.mkdir()
        except FileExistsError:
            raise EnvironmentProblem(f"resctrl group {group} exists already") from None
        except OSError as error:
            raise EnvironmentProblem(f"cannot create resctrl group {group}: "
                                     f"{error.strerror}") from None
        self.group = group
        self.restorer.push(f"resctrl group {group}", self.remove_group)

    def _write(self, name: str, text: str) -> None:
        path = self.group / name
        try:
            with open(path, "w") as f:
                f.write(text)
        except OSError as error:
            raise EnvironmentProblem(f"resctrl rejected {text.strip()!r} in {path}: "
                                     f"{error.strerror}") from None

    def write_level(self, value: float) -> None:
        self._write("schemata", "MB:" + ";".join(f"{d}={int(value)}" for d in self.domains)
                    + "\n")

    def applied(self) -> dict[str, int]:
        """domain -> the MB value the group's schemata reports now."""
        return mb_values((self.group / "schemata").read_text())

    def remove_group(self) -> None:
        if self.group is None or not self.group.exists():
            return
        if not self.is_real_mount():
            # a plain directory (fixture tree): the files in the group are the ones this class
            # (or a child's preexec hook) wrote; a real mount removes them with the group
            for path in self.group.iterdir():
                if path.is_file() and not path.is_symlink():
                    path.unlink()
        self.group.rmdir()   # a real mount moves the group's tasks back to the root group
        self.group = None

    @contextlib.contextmanager
    def level(self, value, command, env):
        self.write_level(value)
        values = self.applied()
        shown = sorted(set(values.values()))
        applied = ",".join(str(v) for v in shown)
        note = "" if shown == [int(value)] else f" (requested {int(value)})"
        group = self.group

        def join() -> None:   # in the child, before exec: the program starts throttled
            with open(group / "tasks", "w") as f:
                f.write(f"{os.getpid()}\n")

        setup = LevelSetup(command, env, preexec=join, applied=f"MB {applied}{note}")
        setup.extra = {"requested": int(value), "applied": values}
        yield setup


def _statfs_type(path: Path) -> int:
    """f_type of statfs(path) (Linux x86-64 struct statfs: f_type is the first long)."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    buf = ctypes.create_string_buffer(256)
    if libc.statfs(os.fsencode(str(path)), buf) != 0:
        raise OSError(ctypes.get_errno(), "statfs failed")
    return ctypes.c_long.from_buffer(buf).value


def mb_values(schemata: str) -> dict[str, int]:
    """{domain: value} of the `MB:` line of a resctrl schemata ("    MB:0=70;1=100")."""
    for line in schemata.splitlines():
        kind, _, rest = line.strip().partition(":")
        if kind.strip() == "MB":
            out = {}
            for item in rest.split(";"):
                domain, _, value = item.partition("=")
                if domain.strip() and value.strip().isdigit():
                    out[domain.strip()] = int(value)
            return out
    return {}


def mb_domains(schemata: str) -> list[str]:
    return list(mb_values(schemata))


# ---------------------------------------------------------------------------------------------
MPOL_BIND = 2
MPOL_WEIGHTED_INTERLEAVE = 6
WEIGHTS = Path("kernel/mm/mempolicy/weighted_interleave")
MAX_WEIGHT = 255


def interleave_weights(share_percent: float, max_weight: int = 100) -> tuple[int, int]:
    """(fast weight, slow weight), each 1..max_weight, whose slow share slow/(fast+slow) is
    nearest share_percent % (0 < share < 100). Pure."""
    best = None
    for total in range(2, 2 * max_weight + 1):
        slow = round(total * share_percent / 100.0)
        fast = total - slow
        if not (1 <= slow <= max_weight and 1 <= fast <= max_weight):
            continue
        error = abs(100.0 * slow / total - share_percent)
        if best is None or error < best[0] - 1e-12:
            best = (error, fast, slow)
        if error == 0:
            break
    return best[1], best[2]


def nodemask(nodes) -> int:
    mask = 0
    for node in nodes:
        mask |= 1 << node
    return mask


SYS_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237}


def set_mempolicy(mode: int, nodes) -> None:
    """set_mempolicy(2) for the calling thread (inherited across fork and exec)."""
    import ctypes

    number = SYS_SET_MEMPOLICY.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"set_mempolicy: unknown syscall number on {os.uname().machine}")
    libc = ctypes.CDLL(None, use_errno=True)
    mask = (ctypes.c_ulong * 16)()
    for node in nodes:
        mask[node // 64] |= 1 << (node % 64)
    if libc.syscall(number, ctypes.c_int(mode), mask, ctypes.c_ulong(16 * 64 + 1)) != 0:  # x86-64
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


class SlowShareKnob(Knob):
    """The share of the program's pages on the slow NUMA node(s): weighted interleave
    (MPOL_WEIGHTED_INTERLEAVE over fast + slow nodes, node weights set in
    /sys/kernel/mm/mempolicy/weighted_interleave and restored after); 0 % binds to the fast
    nodes, 100 % to the slow ones. Real on a machine with a slow NUMA node; refused where there
    is none."""

    name = "slow-share"
    kind = REAL
    descending = False

    def __init__(self, levels, options):
        from objtier.tiers.numa_topology import detect_tiers

        super().__init__(levels, options)
        self.sysfs = Path(options.sysfs_root)
        self.tiers = detect_tiers(self.sysfs)
        if not self.tiers.has_slow_tier:
            raise EnvironmentProblem(f"--knob slow-share needs a slow NUMA node: "
                                     f"{self.tiers.message}")
        self.saved: dict[Path, str] = {}

    def check(self, value):
        if not 0 <= value <= 100:
            return "a slow share is a percentage from 0 to 100"
        return None

    def label(self, value):
        return f"{value:g}%"

    def describe(self):
        return {"fast_nodes": sorted(self.tiers.fast), "slow_nodes": sorted(self.tiers.slow)}

    def _weight_files(self) -> Path:
        path = self.sysfs / WEIGHTS
        if not path.is_dir():
            raise EnvironmentProblem(f"this kernel has no weighted interleave ({path} missing; "
                                     f"Linux 6.9 or later)")
        return path

    def set_weights(self, fast: int, slow: int) -> None:
        """Write the node weights, remembering the first values seen so they are restored."""
        base = self._weight_files()
        for node, weight in [(n, fast) for n in self.tiers.fast] + \
                [(n, slow) for n in self.tiers.slow]:
            path = base / f"node{node}"
            if path not in self.saved:
                self.saved[path] = path.read_text().strip()
                auto = base / "auto"
                if auto.exists() and auto not in self.saved:
                    self.saved[auto] = auto.read_text().strip()
            path.write_text(f"{weight}\n")

    def restore_weights(self) -> None:
        # node weights first: writing a node weight turns "auto" off; "auto" last turns it on
        for path, text in sorted(self.saved.items(), key=lambda kv: kv[0].name == "auto"):
            try:
                path.write_text(f"{text}\n")
            except OSError:
                pass
        self.saved.clear()

    def prepare(self, command, say):
        self.restorer.push("weighted-interleave node weights", self.restore_weights)

    def policy(self, value: float) -> tuple[int, list[int], str]:
        """(mode, nodes, description) for a slow share."""
        fast, slow = sorted(self.tiers.fast), sorted(self.tiers.slow)
        if value == 0:
            return MPOL_BIND, fast, f"bound to fast node(s) {fast}"
        if value == 100:
            return MPOL_BIND, slow, f"bound to slow node(s) {slow}"
        wf, ws = interleave_weights(value)
        return MPOL_WEIGHTED_INTERLEAVE, fast + slow, f"weights fast {wf} : slow {ws}"

    @contextlib.contextmanager
    def level(self, value, command, env):
        mode, nodes, text = self.policy(value)
        if mode == MPOL_WEIGHTED_INTERLEAVE:
            self.set_weights(*interleave_weights(value))

        def apply() -> None:
            set_mempolicy(mode, nodes)

        yield LevelSetup(command, env, preexec=apply, applied=text)


SIM_POLICY = "first-touch"     # the simulated knob's placement policy


class SimKnob(Knob):
    """A slow tier m times slower than the fast one, predicted by the simulator from a
    recording (the prediction: sweep/simknob.py)."""

    name = "sim"
    kind = SIMULATED
    descending = False

    def __init__(self, levels, options):
        super().__init__(levels, options)
        if options.recording is None:
            raise UsageError("--knob sim needs --recording RUN.otr (a recording to simulate)")

    def check(self, value):
        if not 1 <= value <= 1000:
            return "a slow-tier multiplier is from 1 (as fast as the fast tier) to 1000"
        return None

    def label(self, value):
        return f"x{value:g}"

    def describe(self):
        return {"recording": str(self.options.recording), "preset": self.options.sim_preset,
                "fast": self.options.sim_fast, "policy": SIM_POLICY}


# ---------------------------------------------------------------------------------------------
KNOBS: dict[str, type[Knob]] = {k.name: k for k in (LocalKnob, ThreadsKnob, BanditKnob, MbaKnob,
                                                    SlowShareKnob, SimKnob)}


def make_knob(name: str, levels: list[float], options: KnobOptions) -> Knob:
    """The knob called name with its levels checked; UsageError for an unknown knob."""
    try:
        cls = KNOBS[name]
    except KeyError:
        known = sorted(KNOBS)
        raise UsageError(f"unknown knob {name!r} (one of {', '.join(known)})") from None
    return cls(levels, options)
