"""Is DAMON free on this machine? A DAMON arm (DAMON_RECLAIM, a DAMOS scheme) may only start
where no kdamond runs: a running kdamond belongs to whoever started it, and objtier never stops
or reconfigures it. DAMON_RECLAIM and DAMON_LRU_SORT also start their contexts exclusively, so
the kernel itself refuses them (EBUSY) while any other context runs.

Three places say that a kdamond is busy, and all are read (never written):
  - the DAMON sysfs interface: /sys/kernel/mm/damon/admin/kdamonds/N/state == "on";
  - the DAMON modules' parameters: /sys/module/damon_{reclaim,lru_sort,stat}/parameters/enabled
    == "Y" (their kdamonds do not show in the sysfs interface);
  - kernel threads named kdamond.N in /proc (whoever started them, including a kernel module of
    someone else's).

`damon_busy_reason()` reads this machine; `busy_reason_from_text()` judges the output of
PROBE_SCRIPT run anywhere else (the guest), so both use one rule.
"""
from __future__ import annotations

from pathlib import Path

from objtier.errors import EnvironmentProblem

MODULES = ("damon_reclaim", "damon_lru_sort", "damon_stat")

# Prints one line per finding: "sysfs N STATE", "module NAME ENABLED", "thread PID COMM".
PROBE_SCRIPT = r"""
d=/sys/kernel/mm/damon/admin/kdamonds
n=$(cat $d/nr_kdamonds 2>/dev/null || echo 0); i=0
while [ "$i" -lt "$n" ]; do echo "sysfs $i $(cat $d/$i/state 2>/dev/null)"; i=$((i+1)); done
for m in damon_reclaim damon_lru_sort damon_stat; do
  f=/sys/module/$m/parameters/enabled; [ -r $f ] && echo "module $m $(cat $f)"
done
for c in /proc/[0-9]*/comm; do
  read -r name < "$c" 2>/dev/null || continue
  case $name in kdamond*) p=${c#/proc/}; echo "thread ${p%/comm} $name" ;; esac
done
true
"""


def busy_reason_from_text(text: str) -> str | None:
    """One line saying which kdamond is busy, from PROBE_SCRIPT's output; None when free."""
    busy: list[str] = []
    for line in text.splitlines():
        words = line.split()
        if len(words) < 3:
            continue
        kind, ident, value = words[0], words[1], words[2]
        if kind == "sysfs" and value == "on":
            busy.append(f"kdamond {ident} of the DAMON sysfs interface is on")
        elif kind == "module" and value in ("Y", "1"):
            busy.append(f"{ident} is enabled")
        elif kind == "thread":
            busy.append(f"thread {value} (pid {ident}) runs")
    if not busy:
        return None
    return ("DAMON is busy here (" + "; ".join(busy) + "): a DAMON arm would have to stop or "
            "reconfigure a kdamond that is not objtier's; refusing")


def probe_text(proc: Path = Path("/proc"), sysfs: Path = Path("/sys")) -> str:
    """PROBE_SCRIPT's output, read from this machine's files with Python."""
    lines: list[str] = []
    d = sysfs / "kernel/mm/damon/admin/kdamonds"
    try:
        n = int((d / "nr_kdamonds").read_text())
    except (OSError, ValueError):
        n = 0
    for i in range(n):
        lines.append(f"sysfs {i} {_read(d / str(i) / 'state')}")
    for m in MODULES:
        f = sysfs / "module" / m / "parameters" / "enabled"
        if f.exists():
            lines.append(f"module {m} {_read(f)}")
    for comm in proc.glob("[0-9]*/comm"):
        name = _read(comm)
        if name.startswith("kdamond"):
            lines.append(f"thread {comm.parent.name} {name}")
    return "".join(f"{line}\n" for line in lines)   # as the script prints: nothing for none


def damon_busy_reason(proc: Path = Path("/proc"), sysfs: Path = Path("/sys")) -> str | None:
    return busy_reason_from_text(probe_text(proc, sysfs))


def require_free_damon(reason: str | None) -> None:
    """Raise the one-line refusal when a kdamond is busy."""
    if reason is not None:
        raise EnvironmentProblem(reason)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""
