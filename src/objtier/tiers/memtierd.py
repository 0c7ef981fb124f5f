"""A plan as memtierd commands and cgroup v2 settings: objtier's object knowledge for users of
memtierd (github.com/intel/memtierd), without the preload.

memtierd's policies (age, heat, ratio) classify memory by what their trackers see; none takes a
list of address ranges. Its command mode does (`memtierd -prompt`, commands read from stdin):

    swap -pid=PID -in  -ranges=R[,R...]     read the ranges back into RAM
    swap -pid=PID -out -ranges=R[,R...]     process_madvise(MADV_PAGEOUT) on the ranges
    pages -pid=PID -ranges=R[,R...]         select the present pages of the ranges,
    mover -pages-to=NODE                    then move them to a NUMA node,
    mover -wait                             and wait until the mover is done

where a range R is START-END, both hexadecimal without a 0x prefix, END exclusive (memtierd's
NewAddrRangeFromString). So the export is a command script for the process's live ranges
(objtier.tiers.damos.plan_ranges: the objects a plan covers, alive at a moment of a trace,
page-aligned, planned-fast ranges outward, planned-slow inward):

    swap tier  planned fast -> swap -in; planned slow -> swap -out; then swap -status
    numa tier  planned fast -> pages + mover to the fast node; planned slow -> the slow node

The cgroup v2 settings a plan implies sit beside it: memory.low = the planned-fast bytes alive
(protected from reclaim as a whole, not per object), memory.high = the plan's fast budget (the
local memory it was made for), memory.swap.max = max (the planned-slow bytes need swap).

memtierd's prompt runs the right side of a `|` in a shell, and splits words at spaces and
quotes; every line written here is made only of command words, `=`, `,`, `-` and hexadecimal
digits, and the provenance line (`nop ...`, a command that does nothing) has every other
character replaced by `?`: a path in a plan's name can never reach a shell.

Units: addresses and sizes in bytes; nodes are NUMA node numbers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from objtier.errors import UsageError
from objtier.tiers.damos import Range

TIERS = ("swap", "numa")
#: characters a provenance word may keep; everything else becomes "?"
_SAFE = re.compile(r"[^A-Za-z0-9_./:=,+@%-]")
_RANGE = re.compile(r"^([0-9a-f]+)-([0-9a-f]+)$")
_LINE = re.compile(r"^(swap|pages) -pid=(\d+)( -in| -out| -status)? -ranges=(\S+)$")
PAGE = 4096      # memtierd's constUPagesize: ranges count whole pages


@dataclass(frozen=True)
class Settings:
    """What an export says: the memtierd command lines and the cgroup v2 settings."""
    lines: list[str]
    cgroup_v2: dict[str, int | str]
    hot_bytes: int
    cold_bytes: int


def _ranges_arg(ranges: list[Range]) -> str:
    return ",".join(f"{r.start:x}-{r.end:x}" for r in ranges)


def _safe(text: str) -> str:
    return _SAFE.sub("?", text)


def command_script(ranges: list[Range], pid: int, tier: str = "swap",
                   fast_node: int | None = None, slow_node: int | None = None,
                   source: dict[str, Any] | None = None) -> list[str]:
    """The memtierd prompt lines that apply ranges to process pid (see the module doc)."""
    if tier not in TIERS:
        raise UsageError(f"--tier must be one of {', '.join(TIERS)}, got {tier!r}")
    if not isinstance(pid, int) or pid <= 0:
        raise UsageError(f"the target must be a process id, got {pid}")
    if not ranges:
        raise UsageError("no object the plan covers is alive in the trace at that time: "
                         "nothing to export")
    if tier == "numa":
        for name, node in (("--fast-node", fast_node), ("--slow-node", slow_node)):
            if node is None:
                raise UsageError(f"--tier numa needs {name}")
            if not 0 <= node < 1024:
                raise UsageError(f"{name} must be a NUMA node from 0 to 1023, got {node}")
        if fast_node == slow_node:
            raise UsageError(f"--fast-node and --slow-node must differ, both are {fast_node}")
    elif fast_node is not None or slow_node is not None:
        raise UsageError("--fast-node and --slow-node apply to --tier numa only")
    hot = [r for r in ranges if r.hot]
    cold = [r for r in ranges if not r.hot]
    lines = ["nop " + " ".join(_safe(f"{k}={v}") for k, v in
                               {"objtier-export": tier, **(source or {})}.items())]
    if tier == "swap":
        if hot:
            lines.append(f"swap -pid={pid} -in -ranges={_ranges_arg(hot)}")
        if cold:
            lines.append(f"swap -pid={pid} -out -ranges={_ranges_arg(cold)}")
            lines.append(f"swap -pid={pid} -status -ranges={_ranges_arg(cold)}")
    else:
        for part, node in ((hot, fast_node), (cold, slow_node)):
            if part:
                lines += [f"pages -pid={pid} -ranges={_ranges_arg(part)}",
                          f"mover -pages-to={node}", "mover -wait"]
    return lines


def cgroup_settings(plan: dict[str, Any], ranges: list[Range]) -> dict[str, int | str]:
    """cgroup v2 settings of the program's cgroup that match the plan (see the module doc)."""
    hot = sum(r.size for r in ranges if r.hot)
    return {"memory.low": hot, "memory.high": int(plan["budget"]["bytes"]),
            "memory.swap.max": "max"}


def export(plan: dict[str, Any], ranges: list[Range], pid: int, tier: str = "swap",
           fast_node: int | None = None, slow_node: int | None = None,
           source: dict[str, Any] | None = None) -> Settings:
    lines = command_script(ranges, pid, tier, fast_node, slow_node, source)
    return Settings(lines, cgroup_settings(plan, ranges),
                    sum(r.size for r in ranges if r.hot),
                    sum(r.size for r in ranges if not r.hot))


@dataclass(frozen=True)
class ParsedScript:
    """A command script read back: per action, the [start, end) ranges it names."""
    pid: int | None
    ranges: dict[str, list[tuple[int, int]]]   # "in", "out", "status", "pages-N" -> ranges
    problems: list[str]


def parse_script(lines: list[str]) -> ParsedScript:
    """Read a script back as memtierd would parse it, and check it: every line a known command,
    no shell pipe, one pid, ranges hexadecimal START-END, page-aligned, non-empty, disjoint
    within a line, and no byte both swapped in (or sent to the fast node) and swapped out."""
    problems: list[str] = []
    pids: set[int] = set()
    found: dict[str, list[tuple[int, int]]] = {}
    selected: list[tuple[int, int]] | None = None
    for no, line in enumerate(lines, 1):
        if "|" in line:
            problems.append(f"line {no}: a '|' would run a shell command")
            continue
        if line.startswith("nop ") or line == "mover -wait":
            continue
        moved = re.fullmatch(r"mover -pages-to=(\d+)", line)
        if moved:
            if selected is None:
                problems.append(f"line {no}: mover without selected pages")
            else:
                found.setdefault(f"node-{moved.group(1)}", []).extend(selected)
                selected = None
            continue
        m = _LINE.match(line)
        if not m:
            problems.append(f"line {no}: not a command this export writes: {line[:60]!r}")
            continue
        pids.add(int(m.group(2)))
        spans = []
        for text in m.group(4).split(","):
            r = _RANGE.match(text)
            if not r:
                problems.append(f"line {no}: range {text!r} is not START-END in hexadecimal")
                continue
            start, end = int(r.group(1), 16), int(r.group(2), 16)
            if end <= start:
                problems.append(f"line {no}: range {text} is empty")
            elif start % PAGE or end % PAGE:
                problems.append(f"line {no}: range {text} is not page-aligned")
            else:
                spans.append((start, end))
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            if start < end:
                problems.append(f"line {no}: ranges overlap at {start:x}")
        if m.group(1) == "pages":
            selected = spans
        else:
            found.setdefault(m.group(3).strip(" -"), []).extend(spans)
    if len(pids) > 1:
        problems.append(f"the script names {len(pids)} processes: {sorted(pids)}")
    nodes = [k for k in found if k.startswith("node-")]
    for a, b in (("in", "out"), *((x, y) for x in nodes for y in nodes if x < y)):
        for s1, e1 in found.get(a, []):
            for s2, e2 in found.get(b, []):
                if s1 < e2 and s2 < e1:
                    problems.append(f"bytes {max(s1, s2):x}-{min(e1, e2):x} are both {a} "
                                    f"and {b}")
    return ParsedScript(next(iter(pids)) if len(pids) == 1 else None, found, problems)
