"""A sweep's records and files: one RunRecord per run; DIR/sweep.json (the metric per series),
DIR/sweep.csv and DIR/sweep.parquet (every run); the terminal table.

sweep.json, sweep.parquet and the figure are written whole to a temporary name and renamed (a
Ctrl-C never leaves half a file); sweep.csv grows by one appended row per run. Files are mode
0600, the output directory 0700. sweep.json layout (format "objtier-sweep", version 1):

    knob, kind (real|emulated|simulated), command, config, tool_version, machine,
    fom {source, unit, higher_is_better},
    levels [{level, label, applied, kind, fom [...], failures [...], mean, median, ci, performance,
             ratio_ci, sides {"90": above|below|noise, ...}, repeats_needed {"90": N|null}}]
    thresholds {"90": level|null, "75": ..., "50": ...}   (null: not reached or not resolved)
    threshold_status {"90": {status, level, label, noise [levels], repeats_needed, reason}}
    non_monotonic [{dip, rise, percents, beyond_noise}], baseline, baseline_level, warnings
    series [{threads, levels, thresholds, threshold_status, non_monotonic, baseline,
             baseline_level, warnings}]
        one per --threads value; the top-level levels/thresholds are the first series'
    config.repeat   N, or "auto" with config.repeat_auto {start, max, runs, stopped}
    objects [...]   with --per-object (objtier.sweep.perobject)
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from objtier import __version__
from objtier.errors import UsageError
from objtier.sweep.metric import THRESHOLDS, Metric, Threshold, compute_metric

FORMAT = "objtier-sweep"
VERSION = 1


@dataclass
class RunRecord:
    """One run of the program at one level."""

    order: int                      # 1..N, the position in the sequence actually run
    threads: int | None             # the --threads value of this run's series, or None
    level: float                    # the knob's level as requested
    label: str                      # the level as shown
    repeat: int                     # 1..R within the level
    kind: str                       # real | emulated | simulated
    applied: str                    # what the machine applied (read back where possible)
    status: str                     # ok | exit N | killed by signal N | OOM-killed | timeout |
    #                                 no FoM
    returncode: int | None
    fom: float | None               # None: failed (see status and reason)
    unit: str | None
    wall_s: float | None
    reason: str | None = None       # why fom is None
    overhead_s: float | None = None  # the sweep's own time around the run: the knob's set-up
    #                                  and read-back, FoM parsing, the files rewritten [s]
    extra: dict[str, Any] = field(default_factory=dict)  # knob measurements (bandit GB/s, ...)


@dataclass
class SweepOutcome:
    """A finished sweep: its runs, the sweep.json document and the metric per thread count."""

    records: list[RunRecord]
    document: dict[str, Any]
    metrics: list[Metric]


@dataclass
class LevelInfo:
    level: float
    label: str
    kind: str
    applied: str


def series_metric(records: list[RunRecord], levels: list[LevelInfo], threads: int | None,
                  higher_is_better: bool) -> Metric:
    rows = [(info.level, info.label,
             [r.fom for r in records if r.level == info.level and r.threads == threads])
            for info in levels]
    # a simulated level is a prediction, not a run: one value has no noise to show
    deterministic = bool(levels) and all(info.kind == "simulated" for info in levels)
    return compute_metric(rows, higher_is_better, deterministic)


def _level_doc(metric: Metric, levels: list[LevelInfo], records: list[RunRecord],
               threads: int | None) -> list[dict[str, Any]]:
    out = []
    for info, s in zip(levels, metric.levels):
        mine = [r for r in records if r.level == info.level and r.threads == threads]
        applied = sorted({r.applied for r in mine}) or [info.applied]
        extras: dict[str, list] = {}
        for r in mine:
            for key, value in r.extra.items():
                extras.setdefault(key, []).append(value)
        out.append({
            "level": info.level, "label": info.label, "kind": info.kind,
            "applied": applied[0] if len(applied) == 1 else applied,
            "fom": s.foms, "failures": [r.status for r in mine if r.fom is None],
            "mean": s.mean, "median": _finite(s.median),
            "ci": [_finite(s.ci_low), _finite(s.ci_high)], "performance": _finite(s.performance),
            "ratio_ci": [_finite(s.ratio_low), _finite(s.ratio_high)],
            "sides": {str(p): side for p, side in s.sides.items()},
            "repeats_needed": {str(p): n for p, n in s.repeats_needed.items()},
            **({"measured": extras} if extras else {}),
        })
    return out


def _finite(value: float | None) -> float | str | None:
    """JSON has no infinity: an infinite median (lower is better, failed runs) is "inf"."""
    if value is not None and value == float("inf"):
        return "inf"
    return value


def _thresholds(metric: Metric) -> dict[str, float | None]:
    return {str(p): metric.thresholds[p] for p in THRESHOLDS}


def _status(detail: Threshold) -> dict[str, Any]:
    return {"status": detail.status, "level": detail.level, "label": detail.label,
            "noise": detail.noise, "repeats_needed": detail.repeats_needed,
            "reason": detail.reason}


def build_document(records: list[RunRecord], levels: list[LevelInfo],
                   threads: list[int | None], head: dict[str, Any],
                   higher_is_better: bool) -> tuple[dict[str, Any], list[Metric]]:
    """sweep.json's content and the metric of each series."""
    metrics, series = [], []
    for t in threads:
        metric = series_metric(records, levels, t, higher_is_better)
        metrics.append(metric)
        series.append({"threads": t, "levels": _level_doc(metric, levels, records, t),
                       "thresholds": _thresholds(metric),
                       "threshold_status": {str(p): _status(d)
                                            for p, d in metric.details.items()},
                       "non_monotonic": metric.non_monotonic, "baseline": metric.baseline,
                       "baseline_level": metric.baseline_level, "warnings": metric.warnings})
    first = series[0]
    doc = {"format": FORMAT, "version": VERSION, **head,
           "levels": first["levels"], "thresholds": first["thresholds"],
           "threshold_status": first["threshold_status"],
           "non_monotonic": first["non_monotonic"],
           "baseline": first["baseline"], "baseline_level": first["baseline_level"],
           "warnings": first["warnings"], "series": series}
    return doc, metrics


def machine_info() -> dict[str, Any]:
    from objtier.procfs import meminfo_bytes
    import datetime as _dt

    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    return {"cpu_model": model, "cpus": os.cpu_count(), "kernel": platform.release(),
            "memory_bytes": meminfo_bytes("MemTotal"),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def tool_version() -> str:
    return f"objtier {__version__}"


def prepare_output(path: Path, force: bool = False, resume: bool = False) -> None:
    """A new (or empty) output directory, mode 0700. An earlier sweep's directory is replaced
    only with force, or kept with resume; anything else is refused."""
    import shutil

    from objtier.outputs import refuse_symlink

    refuse_symlink(path, "sweep directory")   # never replaced or resumed through a link
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{path} exists and is not a directory")
        if any(path.iterdir()):
            is_sweep = any((path / name).exists() for name in
                           ("sweep.json", "sweep.csv", "suite.json")) or \
                any((sub / "sweep.csv").exists() for sub in path.iterdir() if sub.is_dir())
            if resume and is_sweep:
                os.chmod(path, 0o700)
                return
            if not force:
                raise UsageError(f"{path} is not empty; choose another -o, pass --force to "
                                 f"replace it or --resume to continue it")
            if not is_sweep:
                raise UsageError(f"{path} is not a sweep directory; refusing to replace it")
            try:
                shutil.rmtree(path)
            except OSError as error:
                raise UsageError(f"cannot replace {path}: {error.strerror or error}") from None
    if resume and not path.exists():
        raise UsageError(f"--resume: {path} does not exist")
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)


def write_private(path: Path, data: bytes) -> None:
    """Write a whole file atomically with mode 0600 (O_NOFOLLOW on the temporary name)."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


CSV_FIELDS = ("order", "threads", "level", "label", "repeat", "kind", "applied", "status",
              "returncode", "fom", "unit", "wall_s", "reason", "overhead_s", "extra")


def runs_table(records: list[RunRecord]) -> list[dict[str, Any]]:
    rows = []
    for r in records:
        row = asdict(r)
        row["extra"] = json.dumps(r.extra, sort_keys=True) if r.extra else ""
        rows.append(row)
    return rows


def append_record(out: Path, record: RunRecord) -> None:
    """Append one run to out/sweep.csv (the header first when the file is new): O(1) per run,
    so the sweep's own time per run does not grow with the runs already made."""
    path = out / "sweep.csv"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        if f.tell() == 0:
            writer.writeheader()
        writer.writerows(runs_table([record]))


def write_files(out: Path, doc: dict[str, Any], records: list[RunRecord],
                parquet: bool = True) -> list[Path]:
    """sweep.json, sweep.csv and (with parquet) sweep.parquet in out, each written whole."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    write_private(out / "sweep.json", (json.dumps(doc, indent=1) + "\n").encode())
    rows = runs_table(records)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=CSV_FIELDS)
    writer.writeheader()
    writer.writerows(rows)
    write_private(out / "sweep.csv", text.getvalue().encode())
    if not parquet:
        return [out / "sweep.json", out / "sweep.csv"]
    schema = pa.schema([("order", pa.int32()), ("threads", pa.int32()), ("level", pa.float64()),
                        ("label", pa.string()), ("repeat", pa.int32()), ("kind", pa.string()),
                        ("applied", pa.string()), ("status", pa.string()),
                        ("returncode", pa.int32()), ("fom", pa.float64()), ("unit", pa.string()),
                        ("wall_s", pa.float64()), ("reason", pa.string()),
                        ("overhead_s", pa.float64()), ("extra", pa.string())])
    table = pa.Table.from_pylist(rows, schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    write_private(out / "sweep.parquet", sink.getvalue().to_pybytes())
    return [out / "sweep.json", out / "sweep.csv", out / "sweep.parquet"]


def read_records(out: Path) -> list[RunRecord]:
    """The runs of an earlier sweep in out (for --resume)."""
    path = out / "sweep.csv"
    if not path.exists():
        return []
    records = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            def num(key, cast=float):
                return cast(row[key]) if row[key] not in ("", None) else None
            records.append(RunRecord(
                order=int(row["order"]), threads=num("threads", int), level=float(row["level"]),
                label=row["label"], repeat=int(row["repeat"]), kind=row["kind"],
                applied=row["applied"], status=row["status"], returncode=num("returncode", int),
                fom=num("fom"), unit=row["unit"] or None, wall_s=num("wall_s"),
                reason=row["reason"] or None, overhead_s=num("overhead_s"),
                extra=json.loads(row["extra"]) if row["extra"] else {}))
    return records


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value == float("inf"):
        return "inf"
    return f"{value:.4g}"


def threshold_text(series: dict[str, Any], percent: str) -> str:
    """A threshold of a sweep.json series as shown: the level's label, "not reached" or "not
    resolved (noise)" (documents without threshold_status: from thresholds alone)."""
    status = (series.get("threshold_status") or {}).get(percent)
    if status and status.get("label"):
        return status["label"]
    crossed = (series.get("thresholds") or {}).get(percent)
    return next((lv["label"] for lv in series.get("levels") or [] if lv.get("level") == crossed
                 and crossed is not None), "not reached")


def _ratio_ci(s) -> str:
    """The ratio's bootstrap interval in % of the baseline ("78..109")."""
    if s.ratio_low is None or s.ratio_high is None:
        return "-"
    return "..".join("inf" if v == float("inf") else f"{100 * v:.0f}"
                     for v in (s.ratio_low, s.ratio_high))


def level_marks(metric: Metric, s) -> str:
    """The "crosses" cell of a level: T90 where it is declared; T90? where this level's noise
    keeps it from being resolved, with the runs per level that would resolve it."""
    marks = []
    for p in THRESHOLDS:
        detail = metric.details.get(p)
        if metric.thresholds[p] == s.level:
            marks.append(f"T{p}")
        elif detail is not None and detail.status == "not resolved" and s.level in detail.noise:
            needed = s.repeats_needed.get(p)
            marks.append(f"T{p}? noise" + (f" (~{needed} runs)" if needed else ""))
    return ", ".join(marks)


def print_tables(console, doc: dict[str, Any], metrics: list[Metric]) -> None:
    """One table per series: level, kind, applied, runs, median [CI], mean, % of baseline, the
    ratio's 95 % interval, T; then the thresholds and the warnings."""
    from rich.table import Table

    unit = doc.get("fom", {}).get("unit") or ""
    for series, metric in zip(doc["series"], metrics):
        title = f"objtier sweep: {doc['knob']}" + (
            f", {series['threads']} threads" if series["threads"] is not None else "")
        table = Table(title=title)
        for name in ("level", "kind", "applied", "runs ok", f"median {unit}".strip(),
                     "95% CI", "mean", "% of baseline", "95% CI of %", "crosses"):
            table.add_column(name, justify="left" if name in ("level", "kind", "applied",
                                                             "crosses") else "right")
        for level, s in zip(series["levels"], metric.levels):
            applied = level["applied"]
            applied = ", ".join(applied) if isinstance(applied, list) else applied
            took = [v for v in level.get("measured", {}).get("bandit_gbps", []) if v is not None]
            if took:   # the bandwidth the co-runner took, median over the level's runs
                applied += f": took {sorted(took)[len(took) // 2]:.2f} GB/s"
            table.add_row(s.label, level["kind"], applied, f"{s.ok_runs}/{len(s.foms)}",
                          _fmt(s.median), f"{_fmt(s.ci_low)}..{_fmt(s.ci_high)}", _fmt(s.mean),
                          "-" if s.performance is None else f"{100 * s.performance:.1f}",
                          _ratio_ci(s), level_marks(metric, s),
                          style="bold" if s.level == metric.baseline_level else None)
        console.print(table)
        console.print("thresholds: " + ", ".join(
            f"T{p} = {metric.threshold_label(p)}" for p in THRESHOLDS)
            + f" (baseline {_fmt(metric.baseline)} {unit} at "
              f"{next((s.label for s in metric.levels if s.level == metric.baseline_level), '-')})")
        for warning in metric.warnings:
            console.print(f"[yellow]warning:[/yellow] {warning}")
    auto = (doc.get("config") or {}).get("repeat_auto")
    if auto:
        console.print(f"--repeat auto: {auto['stopped']}")
