"""Benchmark results files and the page rendered from them (docs/benchmarks.md).

One JSON file per benchmark result under bench/results/: which benchmark (a key of
objtier.benchmarks) made it and which question it answers, its kind, the machine, load, commit,
date, the command that reproduces it, the raw runs where they were kept, medians, ratios, and the
short texts the page shows (what was measured, the figures, the finding; 25 words at most each),
with an optional link to a docs/history/ page for set-up and discussion.

    write(make(...))            # a benchmark script records one result
    read(path), read_all(dir)   # validated; a bad file is a ResultsError with a one-line message
    render(read_all(dir))       # the text of docs/benchmarks.md

bench/render_benchmarks.py (`make bench-doc`) writes the page; tests/bench/ checks that the
committed page is what render() makes of bench/results/.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from objtier import benchmarks
from objtier.errors import ObjtierError

FORMAT = 1
REPO = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO / "bench" / "results"
PAGE = REPO / benchmarks.DOCS
#: where the page links the results files and history pages from (relative to docs/)
RESULTS_LINK = "../bench/results"
MAX_WORDS = 25

#: question key -> the page's section heading, in the page's order
QUESTIONS: dict[str, str] = {
    "placement": "What placement buys",
    "recording-cost": "What recording costs",
    "tool-speed": "How fast the tools are",
    "prediction": "How right the predictions are",
}
#: how a figure was obtained (one at least) and how precise it is (optional)
SOURCES = ("real", "emulated", "simulated")
PRECISIONS = ("exact", "estimated")
KINDS_TEXT = (
    "**real**: measured on the machine named; **emulated**: measured in the QEMU guest, whose "
    "CPU and memory speeds are emulated (mechanics, not speed); **simulated**: the simulator's "
    "or a model's figure. **exact**: counted or timed directly; **estimated**: predicted, "
    "sampled or derived. Ratios compare runs made in the same session, interleaved; figures are "
    "medians of the repeats unless the row says otherwise.")
MACHINE_KEYS = ("cpu", "vcpus", "kernel", "cgroup", "memory")
REQUIRED: dict[str, type | tuple[type, ...]] = {
    "format": int, "benchmark": (str, type(None)), "question": str, "title": str, "kind": str,
    "machine": dict, "load": (str, type(None)), "commit": (str, type(None)), "date": str,
    "command": str, "raw": (dict, list, type(None)), "medians": dict, "ratios": dict,
    "figure": str, "finding": str, "source": str,
}
OPTIONAL: dict[str, type | tuple[type, ...]] = {"details": str, "goal": str, "note": str}
SHORT = ("title", "figure", "finding", "command", "goal")


class ResultsError(ObjtierError):
    """A results file that is missing, not JSON, or not in the results format."""

    exit_code = 2


def words(text: str) -> int:
    return len(text.split())


def validate(data: Any, where: str) -> dict[str, Any]:
    """data itself when it is a results record; else ResultsError("WHERE: what is wrong")."""
    def bad(what: str) -> ResultsError:
        return ResultsError(f"{where}: {what}")

    if not isinstance(data, dict):
        raise bad("not a JSON object")
    for key, types in REQUIRED.items():
        if key not in data:
            raise bad(f"no '{key}'")
        if not isinstance(data[key], types):
            raise bad(f"'{key}' has the wrong type ({type(data[key]).__name__})")
    for key, types in OPTIONAL.items():
        if key in data and not isinstance(data[key], types):
            raise bad(f"'{key}' has the wrong type ({type(data[key]).__name__})")
    unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise bad(f"unknown field(s) {', '.join(unknown)}")
    if data["format"] != FORMAT:
        raise bad(f"format {data['format']}, this objtier reads {FORMAT}")
    if data["benchmark"] is not None and data["benchmark"] not in benchmarks.BY_NAME:
        raise bad(f"benchmark '{data['benchmark']}' is not in objtier.benchmarks")
    if data["benchmark"] is None and data["command"].startswith("bench/"):
        raise bad("a bench/ command needs its benchmark's name")
    if data["question"] not in QUESTIONS:
        raise bad(f"question '{data['question']}' is not one of {', '.join(QUESTIONS)}")
    if not any(re.search(rf"\b{s}\b", data["kind"]) for s in SOURCES):
        raise bad(f"kind '{data['kind']}' names none of {', '.join(SOURCES)}")
    missing = [k for k in MACHINE_KEYS if k not in data["machine"]]
    if missing:
        raise bad(f"machine without {', '.join(missing)}")
    if not re.fullmatch(r"\d{4}-\d\d-\d\d([ T]\d\d:\d\d.*)?", data["date"]):
        raise bad(f"date '{data['date']}' is not YYYY-MM-DD[THH:MM...]")
    for key in SHORT:
        text = data.get(key)
        if key != "command" and isinstance(text, str) and not text.strip():
            raise bad(f"'{key}' is empty")
        if isinstance(text, str) and words(text) > MAX_WORDS:
            raise bad(f"'{key}' has {words(text)} words (at most {MAX_WORDS})")
    if not data["command"].strip():
        raise bad("'command' is empty")
    if "|" in "".join(str(data.get(k, "")) for k in SHORT):
        raise bad("a page cell contains '|'")
    if "details" in data and not data["details"].startswith("history/"):
        raise bad(f"details '{data['details']}' is not a docs/history/ page")
    if not (data["source"] == "measured" or data["source"].startswith("transcribed from ")):
        raise bad("source is neither 'measured' nor 'transcribed from ...'")
    return data


# --- what a benchmark script records about where and when it ran ---------------------------


def machine() -> dict[str, Any]:
    """This machine: CPU model, vCPUs, kernel, memory cgroup version, memory."""
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text()
                   .splitlines() if line.startswith("MemTotal:"))
        memory = f"{kib / 2**20:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        memory = None
    v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    return {"cpu": cpu, "vcpus": os.cpu_count(), "kernel": platform.release(),
            "cgroup": "v2" if v2 else "v1", "memory": memory}


def load() -> str:
    return "load {:.1f}".format(os.getloadavg()[0])


def commit(repo: Path = REPO) -> str | None:
    """HEAD's short hash, with '+changes' when tracked files differ from it; None outside git."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "diff", "--quiet", "HEAD"],
                               capture_output=True, check=False).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if dirty else "")


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def make(benchmark: str | None, question: str, *, title: str, kind: str, command: str,
         figure: str, finding: str, medians: dict, ratios: dict | None = None,
         raw: dict | list | None = None, details: str | None = None, goal: str | None = None,
         date: str | None = None, load_: Any = ..., machine_: Any = ...,
         commit_: Any = ..., source: str = "measured",
         note: str | None = None) -> dict[str, Any]:
    """A validated results record. Left out (...), the machine, load and commit are this
    machine's, now's and HEAD's; None says they are not known. date defaults to now."""
    data: dict[str, Any] = {
        "format": FORMAT, "benchmark": benchmark, "question": question, "title": title,
        "kind": kind, "machine": machine() if machine_ is ... else machine_,
        "load": load() if load_ is ... else load_,
        "commit": commit() if commit_ is ... else commit_, "date": date or now(),
        "command": command, "raw": raw, "medians": medians, "ratios": ratios or {},
        "figure": figure, "finding": finding, "source": source}
    for key, value in (("details", details), ("goal", goal), ("note", note)):
        if value is not None:
            data[key] = value
    return validate(data, f"results of {benchmark or title}")


def file_name(data: dict[str, Any], tag: str = "") -> str:
    stem = data["benchmark"] or "objtier"
    slug = re.sub(r"[^a-z0-9]+", "-", tag.lower()).strip("-")
    return f"{stem}-{data['date'][:10]}" + (f"-{slug}" if slug else "") + ".json"


def write(data: dict[str, Any], directory: Path = RESULTS_DIR, tag: str = "") -> Path:
    """Write one results file (BENCHMARK-DATE[-TAG][-N].json, never over another); its path."""
    validate(data, f"results of {data.get('benchmark')}")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name(data, tag)
    n = 2
    while path.exists():
        path = directory / file_name(data, f"{tag}-{n}" if tag else str(n))
        n += 1
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as error:
        raise ResultsError(f"{path}: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise ResultsError(f"{path}: not JSON ({error.msg}, line {error.lineno})") from None
    return validate(data, str(path))


def read_all(directory: Path = RESULTS_DIR) -> dict[str, dict[str, Any]]:
    """file name -> record, for every *.json in directory (ResultsError on the first bad one)."""
    if not Path(directory).is_dir():
        raise ResultsError(f"{directory}: no such directory")
    return {p.name: read(p) for p in sorted(Path(directory).glob("*.json"))}


# --- the page -------------------------------------------------------------------------------


def machine_text(m: dict[str, Any]) -> str:
    parts = [m.get("name"), m.get("cpu"),
             f"{m['vcpus']} vCPU" if m.get("vcpus") else None,
             f"kernel {m['kernel']}" if m.get("kernel") else None,
             f"memory cgroup {m['cgroup']}" if m.get("cgroup") else None,
             f"{m['memory']} memory" if m.get("memory") else None]
    return ", ".join(p for p in parts if p)


def _cell(text: str) -> str:
    return " ".join(text.split())


def render(results: dict[str, dict[str, Any]], results_link: str = RESULTS_LINK,
           regenerate: str = "make bench-doc") -> str:
    """docs/benchmarks.md from name -> record (read_all): preamble, one section per question."""
    machines: list[str] = []
    for data in sorted(results.values(), key=lambda d: d["date"], reverse=True):
        text = machine_text(data["machine"])
        if text not in machines:
            machines.append(text)
    label = {text: f"M{i + 1}" for i, text in enumerate(machines)}
    out = ["# Benchmarks", "",
           f"Generated from the results files in bench/results/ by bench/render_benchmarks.py: "
           f"do not edit by hand. Regenerate with `{regenerate}` after a benchmark wrote its "
           f"results file (each bench/ script writes one; `objtier bench --benchmarks` lists "
           f"them). Each row links its results file (machine, commit, date, load, raw runs, "
           f"medians, ratios) and gives the command that reproduces it; set-up and discussion "
           f"are in docs/history/, as are the rows no longer current. The seeds' own programs "
           f"(GAPBS, Graph500, Rodinia K-means, ...) and their experiments are measured in "
           f"[seeds.md](seeds.md), each figure with its kind, load and command.", "",
           "Kinds: " + KINDS_TEXT, "", "Machines:", ""]
    out += [f"- {label[m]}: {m}" for m in machines]
    for key, heading in QUESTIONS.items():
        rows = sorted(((name, d) for name, d in results.items() if d["question"] == key),
                      key=lambda nd: (nd[1]["date"][:10], nd[1]["benchmark"] or "", nd[0]),
                      reverse=True)
        out += ["", f"## {heading}", ""]
        if not rows:
            out.append("No current result.")
            continue
        out += ["| measurement | figures | goal | finding | kind | date, machine, load "
                "| results | command |",
                "|---|---|---|---|---|---|---|---|"]
        for name, d in rows:
            where = ", ".join(x for x in (d["date"][:10], label[machine_text(d["machine"])],
                                          d["load"]) if x)
            transcribed = "" if d["source"] == "measured" else " (transcribed)"
            link = f"[{name}]({results_link}/{name}){transcribed}" + (
                f", [set-up]({d['details']})" if "details" in d else "")
            cells = [d["title"], d["figure"], d.get("goal", "–"), d["finding"], d["kind"], where,
                     link, f"`{d['command']}`"]
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    pending = [b for b in benchmarks.BENCHMARKS if b.pending]
    if pending:
        out += ["", "## Not measured", ""]
        out += [f"- `{b.script}` ({b.question}): {b.pending}" for b in pending]
    return "\n".join(out) + "\n"


# --- for the bench/ scripts -------------------------------------------------------------------


def add_arguments(parser) -> None:
    """--results-dir and --no-results on a benchmark script's argparse parser."""
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR,
                        help="where the results file goes (bench/results; docs/benchmarks.md "
                             "is rendered from it by make bench-doc)")
    parser.add_argument("--no-results", action="store_true", help="write no results file")


def save(args, build, tag: str = "") -> Path | None:
    """Write build() (a record) under args.results_dir unless --no-results; say where on
    stdout. A record that does not validate is one line on stderr: the run's own output
    stands."""
    if getattr(args, "no_results", False):
        return None
    try:
        path = write(build(), getattr(args, "results_dir", RESULTS_DIR), tag)
    except (ObjtierError, OSError, KeyError, ValueError, TypeError, ZeroDivisionError) as error:
        print(f"results file not written: {error}", file=sys.stderr, flush=True)
        return None
    print(f"results file: {path}", flush=True)
    return path


def script_command(argv: list[str], script: str) -> str:
    """The command line that reproduces this run, without the results-file options."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--results-dir":
            skip = True
            continue
        if arg.startswith("--results-dir=") or arg == "--no-results":
            continue
        kept.append(arg if re.fullmatch(r"[\w@%+=:,./-]+", arg) else f"'{arg}'")
    return " ".join([script, *kept])


def span(values: list[float], digits: int = 1) -> str:
    """'a–b' of the values (or 'a' when they are one), e.g. of the load at each run."""
    lo, hi = min(values), max(values)
    return f"{lo:.{digits}f}" if f"{lo:.{digits}f}" == f"{hi:.{digits}f}" else \
        f"{lo:.{digits}f}–{hi:.{digits}f}"


def fixed(value: float, places: int) -> str:
    """value with places decimals, halves rounded up as written (15.965 -> 15.97)."""
    from decimal import ROUND_HALF_UP, Decimal

    return str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP))


def anchor(heading: str) -> str:
    """The anchor a Markdown heading gets on GitHub: lower case, punctuation dropped, spaces
    to hyphens (details links name a history page's section by it)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {anchor(line.lstrip("#")) for line in Path(page).read_text().splitlines()
            if line.startswith("#")}
