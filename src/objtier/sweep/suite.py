"""`objtier sweep suite FILE`: one sweep per program, then the seed's Table I — programs with
their baseline FoM and T50/T75/T90, sorted by sensitivity (most sensitive first: the level
where T90 is reached first, then T75, then T50; metric.sensitivity_key).

FILE: one command per line, split like a shell would (shlex); blank lines and lines starting
with # are skipped. An optional "NAME: " prefix names the row (default: the program's name and
its position). Each program's sweep goes to DIR/<NN>-<name>/ and the table to DIR/suite.json,
DIR/suite.csv and DIR/suite.md.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from objtier.errors import UsageError
from objtier.sweep.metric import THRESHOLDS, Metric, sensitivity_key
from objtier.sweep.output import prepare_output, write_private

_NAME = re.compile(r"^\s*([A-Za-z0-9_.+-]+):\s+(.*)$")


@dataclass
class SuiteEntry:
    name: str
    command: list[str]


@dataclass
class SuiteRow:
    name: str
    command: list[str]
    metric: Metric | None
    unit: str | None
    error: str | None = None


def parse_suite(text: str, where: str) -> list[SuiteEntry]:
    """The suite file's commands; UsageError (with the line number) for a malformed line."""
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _NAME.match(line)
        name, body = (match.group(1), match.group(2)) if match else (None, line)
        try:
            command = shlex.split(body)
        except ValueError as error:
            raise UsageError(f"{where}:{number}: {error}") from None
        if not command:
            raise UsageError(f"{where}:{number}: no command")
        entries.append(SuiteEntry(name or f"{Path(command[0]).name}", command))
    if not entries:
        raise UsageError(f"{where}: no command in the suite file")
    names = [e.name for e in entries]
    for i, entry in enumerate(entries):
        if names.count(entry.name) > 1:
            entry.name = f"{entry.name}.{i + 1}"
    return entries


def load_suite(path: Path) -> list[SuiteEntry]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read suite file {path}: "
                         f"{getattr(error, 'strerror', None) or error}") from None
    return parse_suite(text, str(path))


def rank(rows: list[SuiteRow]) -> list[SuiteRow]:
    """Most sensitive first; programs without a result last, in file order."""
    done = [r for r in rows if r.metric is not None and r.metric.baseline is not None]
    rest = [r for r in rows if r not in done]
    return sorted(done, key=lambda r: sensitivity_key(r.metric)) + rest


def table_rows(rows: list[SuiteRow]) -> list[dict[str, Any]]:
    out = []
    for r in rank(rows):
        m = r.metric
        row = {"program": r.name, "command": " ".join(r.command), "unit": r.unit,
               "baseline": m.baseline if m else None,
               "baseline_level": m.baseline_level if m else None, "error": r.error}
        for p in THRESHOLDS:
            row[f"T{p}"] = m.threshold_label(p) if m and m.baseline is not None else None
        row["warnings"] = len(m.warnings) if m else 0
        out.append(row)
    return out


def markdown(rows: list[dict[str, Any]], knob: str) -> str:
    lines = ["| program | max avg FoM | T50 | T75 | T90 | warnings |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if r["error"]:
            lines.append(f"| {r['program']} | failed: {r['error']} | | | | |")
            continue
        base = f"{r['baseline']:.4g} {r['unit'] or ''}".strip()
        lines.append(f"| {r['program']} | {base} | {r['T50']} | {r['T75']} | {r['T90']} | "
                     f"{r['warnings'] or ''} |")
    return f"Knob: {knob}; sorted most sensitive first.\n\n" + "\n".join(lines) + "\n"


def run_suite(entries: list[SuiteEntry], make_knob: Callable[[], Any], settings,
              say: Callable[[str], None], run_one) -> tuple[list[dict[str, Any]], Path]:
    """Sweep every entry (run_one(command, knob, settings) -> SweepOutcome) into its own
    directory and write the ranked table. A program that cannot be swept is a row with its
    error, not the end of the suite."""
    from objtier.errors import ObjtierError
    from objtier.record.launch import resolve_command

    out = settings.output
    prepare_output(out, settings.force, settings.resume)
    rows: list[SuiteRow] = []
    knob_name = ""
    for i, entry in enumerate(entries, 1):
        sub = out / f"{i:02d}-{re.sub(r'[^A-Za-z0-9_.+-]', '_', entry.name)}"
        knob = make_knob()
        knob_name = knob.name
        say(f"[{i}/{len(entries)}] {entry.name}: {' '.join(entry.command)}")
        try:
            outcome = run_one(resolve_command(entry.command), knob,
                              replace(settings, output=sub))
            rows.append(SuiteRow(entry.name, entry.command, outcome.metrics[0],
                                 outcome.document.get("fom", {}).get("unit")))
        except ObjtierError as error:
            say(f"{entry.name}: {error}")
            rows.append(SuiteRow(entry.name, entry.command, None, None, str(error)))
        table = table_rows(rows)
        write_private(out / "suite.json", (json.dumps(
            {"format": "objtier-sweep-suite", "version": 1, "knob": knob_name,
             "programs": table}, indent=1) + "\n").encode())
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
        write_private(out / "suite.csv", text.getvalue().encode())
        write_private(out / "suite.md", markdown(table, knob_name).encode())
    return table_rows(rows), out
