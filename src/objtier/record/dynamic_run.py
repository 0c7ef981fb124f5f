"""Running a plan's dynamic schedule (plan version 2, objtier.plan.dynamic_file): the runtime's
settings (OBJTIER_DYNAMIC, OBJTIER_DYNAMIC_STATS, OBJTIER_ADVICE_RATE) and the counts it writes
at exit (native/runtime/place/dynamic.c): system calls per kind, steps applied, skipped and dropped
for the call budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from objtier.errors import UsageError

DEFAULT_ADVICE_RATE = 2000  # system calls per second (config.c OBJTIER_ADVICE_RATE)
CALLS = ("calls_mlock", "calls_munlock", "calls_pageout", "calls_cold", "calls_willneed")


def has_schedule(plan: dict[str, Any]) -> bool:
    return bool(plan.get("dynamic"))


def advice_rate(plan: dict[str, Any], given: int | None) -> int:
    """The call budget to run a schedule under: the one given, else the one the plan's
    schedule was chosen for (plan --dynamic --advice-rate), else the runtime's default."""
    recorded = (plan.get("dynamic") or {}).get("advice_rate")
    return int(given or recorded or DEFAULT_ADVICE_RATE)


def schedule_env(plan: dict[str, Any], directory: Path, advice_rate: int,
                 tier: str = "swap", mlock_limit: int | None = None
                 ) -> tuple[dict[str, str], Path]:
    """Write the schedule's text form into directory; (runtime settings, the counts' path).
    Schedule `online`: the settings of the runtime's online placement instead (the fault
    sampler, OBJTIER_ONLINE_MS, at most the section's lock_bytes locked, or mlock_limit when
    that is smaller, OBJTIER_ONLINE_PHASES from its phase_memory)."""
    from objtier.outputs import write_private
    from objtier.plan.dynamic_file import is_online, to_text
    from objtier.runtime_settings import runtime_env

    if tier != "swap":
        raise UsageError("a dynamic schedule runs on the swap tier only (mlock/madvise)")
    if is_online(plan["dynamic"]):
        section = plan["dynamic"]
        stats = directory / "online-stats.txt"
        stats.unlink(missing_ok=True)
        lock = int(section["lock_bytes"])
        if mlock_limit is not None:
            lock = min(lock, int(mlock_limit))
        env = runtime_env(sampler="fault", online_ms=int(section["period_ms"]),
                          online_stats=stats.resolve(), advice_rate=advice_rate,
                          mlock_limit=max(lock, 1),
                          online_phases=int(section.get("phase_memory", True)))
        return env, stats
    text = directory / "schedule.txt"
    stats = directory / "dynamic-stats.txt"
    write_private(text, to_text(plan["dynamic"]), "dynamic schedule")
    stats.unlink(missing_ok=True)
    env = runtime_env(dynamic=text.resolve(), dynamic_stats=stats.resolve(),
                      advice_rate=advice_rate)
    return env, stats


def read_stats(path: Path) -> dict[str, float] | None:
    """The runtime's counts ("name value" lines), None when it wrote none."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    out: dict[str, float] = {}
    for line in lines:
        name, _, value = line.partition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            continue
    return out


def _calls_text(stats: dict[str, float], kinds: tuple[str, ...]) -> str:
    """"N advice calls (mlock a, munlock b, …; f failed)" over the calls_* counts `kinds`."""
    calls = int(sum(stats.get(c, 0) for c in kinds))
    each = ", ".join(f"{c.removeprefix('calls_')} {int(stats.get(c, 0))}" for c in kinds)
    return f"{calls} advice calls ({each}; {int(stats.get('calls_failed', 0))} failed)"


def stats_line(stats: dict[str, float]) -> str:
    if "ticks" in stats:
        return online_stats_line(stats)
    return (f"dynamic schedule: {int(stats.get('steps_applied', 0))} of "
            f"{int(stats.get('steps', 0))} steps applied at {int(stats.get('switches', 0))} "
            f"phase switches, {_calls_text(stats, CALLS)}, "
            f"{int(stats.get('actions_dropped', 0))} actions dropped for the "
            f"{int(stats.get('advice_rate', 0))}/s budget, "
            f"{int(stats.get('actions_deferred', 0))} deferred until their object's allocation, "
            f"{int(stats.get('objects_matched', 0))} of {int(stats.get('objects', 0))} objects "
            f"matched, peak {stats.get('locked_peak_bytes', 0) / 2**20:.1f} MiB locked, "
            f"{stats.get('willneed_bytes', 0) / 2**20:.1f} MiB prefetched, "
            f"{stats.get('advice_ns', 0) / 1e6:.1f} ms in advice calls, "
            f"{stats.get('thread_cpu_ns', 0) / 1e6:.1f} ms CPU in the schedule's thread"
            + guard_text(stats))


ONLINE_CALLS = ("calls_mlock", "calls_munlock", "calls_cold", "calls_pageout", "calls_willneed")


def online_leads(stats_text: str) -> list[tuple[int, int, int]]:
    """The online placement's lead changes: (object seq, ms since start, phase switches so
    far) of each "lead" line of its counts."""
    out = []
    for line in stats_text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "lead" and all(p.isdigit() for p in parts[1:]):
            out.append((int(parts[1]), int(parts[2]), int(parts[3])))
    return out


def online_stats_line(stats: dict[str, float]) -> str:
    switches = (f" ({int(stats.get('switch_ticks', 0))} at phase switches, "
                f"{int(stats.get('recalls', 0))} into a phase seen before)"
                if stats.get("phase_memory") else "")
    return (f"online placement: {int(stats.get('ticks', 0))} ticks of "
            f"{int(stats.get('period_ms', 0))} ms{switches} over "
            f"{int(stats.get('windows', 0))} sampler windows, "
            f"{_calls_text(stats, ONLINE_CALLS)}, "
            f"{stats.get('bytes_locked', 0) / 2**20:.1f} MiB locked and "
            f"{stats.get('bytes_unlocked', 0) / 2**20:.1f} MiB unlocked in all, peak "
            f"{stats.get('locked_peak_bytes', 0) / 2**20:.1f} MiB of "
            f"{stats.get('lock_budget_bytes', 0) / 2**20:.1f} MiB, "
            f"{int(stats.get('lead_changes', 0))} changes of the most-locked object, "
            f"{int(stats.get('actions_dropped', 0))} actions dropped for the "
            f"{int(stats.get('advice_rate', 0))}/s budget, "
            f"{stats.get('advice_ns', 0) / 1e6:.1f} ms in advice calls, "
            f"{stats.get('thread_cpu_ns', 0) / 1e6:.1f} ms CPU in the placement's thread"
            + guard_text(stats))


def guard_text(stats: dict[str, float]) -> str:
    """", pressure guard X MiB advised cold in N passes" when the guard acted, else "" (a
    run's counts, or their medians over runs)."""
    if not stats.get("guard_passes"):
        return ""
    return (f", pressure guard {stats.get('guard_bytes', 0) / 2**20:.1f} MiB advised cold in "
            f"{int(stats['guard_passes'])} passes")
