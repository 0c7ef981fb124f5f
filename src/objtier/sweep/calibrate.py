"""`objtier sweep calibrate --knob K=LEVELS [--threads LIST]`: what each level does to memory
bandwidth and latency, measured with the project's STREAM and pointer-chase workloads.

For every thread count and level (the same knob machinery as a sweep, runs interleaved):
    stream    -t T: the best of copy/scale/add/triad [MB/s] -> bandwidth [GB/s] (1e9 B/s)
    ptrchase  -t T: dereferences per second, all threads -> latency [ns] = T / rate * 1e9
              (each thread chases one dependent chain: one load in flight per thread)
Output in DIR: stream/ and ptrchase/ (each an ordinary sweep directory), calibration.csv
(threads, level, label, kind, gbps, ns: medians over the runs) and calibration.json.
A sweep run with --calibration DIR/calibration.json states its thresholds in GB/s and ns too
(the calibration row of the same level, at the sweep's thread count or else the nearest).
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from objtier.errors import UsageError

STREAM_ARGS = ["-s", "4000000", "-n", "5"]          # 3 x 30.5 MiB arrays
PTRCHASE_ARGS = ["-s", "128M", "-n", "300000"]      # 128 MiB, 300k steps per thread


def workload_args(stream_elements: int | None = None, chase_size: str | None = None
                  ) -> tuple[list[str], list[str]]:
    """(stream args, ptrchase args): the defaults above, or STREAM's elements per array and
    ptrchase's buffer size (`--calibrate-stream N`, `--calibrate-chase SIZE`). On the `local`
    knob the sizes set the footprint the levels are fractions of."""
    stream = list(STREAM_ARGS)
    chase = list(PTRCHASE_ARGS)
    if stream_elements is not None:
        if not 1000 <= stream_elements <= 1 << 31:
            raise UsageError(f"--calibrate-stream must be between 1000 and 2^31 elements, got "
                             f"{stream_elements}")
        stream[1] = str(stream_elements)
    if chase_size is not None:
        from objtier.units import parse_size

        size = parse_size(chase_size, "--calibrate-chase size")
        if not 1 << 20 <= size <= 1 << 40:
            raise UsageError(f"--calibrate-chase must be between 1M and 1T, got {chase_size}")
        chase[1] = str(size)
    return stream, chase


def calibration_rows(stream_doc: dict[str, Any], chase_doc: dict[str, Any]
                     ) -> list[dict[str, Any]]:
    """One row per (threads, level): median GB/s of STREAM and ns per dependent load."""
    rows = []
    for s_series, c_series in zip(stream_doc["series"], chase_doc["series"]):
        threads = s_series["threads"] or 1
        for s_level, c_level in zip(s_series["levels"], c_series["levels"]):
            mbps, rate = s_level["median"], c_level["median"]
            rows.append({
                "threads": threads, "level": s_level["level"], "label": s_level["label"],
                "kind": s_level["kind"],
                "gbps": None if not isinstance(mbps, (int, float)) or not mbps
                else round(mbps * 1e6 / 1e9, 4),
                "ns": None if not isinstance(rate, (int, float)) or not rate
                else round(threads / rate * 1e9, 2)})
    return rows


def in_units(thresholds: dict[str, Any], rows: list[dict[str, Any]], threads: int | None
             ) -> dict[str, Any]:
    """Thresholds as {percent: {level, gbps, ns}} from calibration rows (None: no row)."""
    counts = sorted({r["threads"] for r in rows})
    if not counts:
        return {}
    want = threads or 1
    nearest = min(counts, key=lambda t: (abs(t - want), t))
    out = {}
    for percent, level in thresholds.items():
        row = next((r for r in rows if r["threads"] == nearest and level is not None
                    and r["level"] == level), None)
        out[percent] = {"level": level, "threads": nearest,
                        "gbps": row["gbps"] if row else None, "ns": row["ns"] if row else None}
    return out


def load_calibration(path: Path) -> list[dict[str, Any]]:
    try:
        doc = json.loads(Path(path).read_text())
        rows = doc["rows"]
        if not isinstance(rows, list):
            raise TypeError
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(f"{path} is not a calibration.json written by `objtier sweep "
                         f"--calibrate`") from None
    return rows


def run_calibration(make_knob: Callable[[], Any], settings, say, run_one,
                    args: tuple[list[str], list[str]] | None = None) -> dict[str, Any]:
    """Both sweeps (run_one(command, knob, settings) -> SweepOutcome) and the table; args:
    (stream args, ptrchase args), default workload_args()."""
    from objtier.native import binary
    from objtier.sweep.fom import FomSource
    from objtier.sweep.knobs import THREADS_PLACEHOLDER
    from objtier.sweep.output import prepare_output, write_private

    out = settings.output
    prepare_output(out, settings.force)
    threads = settings.threads or [1, os.cpu_count() or 1]
    docs = {}
    stream_args, chase_args = args or workload_args()
    for name, wargs in (("stream", stream_args), ("ptrchase", chase_args)):
        say(f"calibration: {name} over threads {threads}")
        command = [str(binary(name)), *wargs, "-t", THREADS_PLACEHOLDER]
        outcome = run_one(command, make_knob(), replace(
            settings, output=out / name, threads=threads, fom=FomSource("line"), force=False,
            resume=False))
        docs[name] = outcome.document
    rows = calibration_rows(docs["stream"], docs["ptrchase"])
    doc = {"format": "objtier-sweep-calibration", "version": 1,
           "knob": docs["stream"]["knob"], "kind": docs["stream"]["kind"],
           "stream": stream_args, "ptrchase": chase_args, "rows": rows,
           "config": {k: v for k, v in docs["stream"]["config"].items()
                      if k in ("repeat", "swap", "stat_flush_ms")},
           "footprints": {name: d["config"].get("footprint_bytes") for name, d in docs.items()},
           "machine": docs["stream"]["machine"], "tool_version": docs["stream"]["tool_version"]}
    write_private(out / "calibration.json", (json.dumps(doc, indent=1) + "\n").encode())
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=["threads", "level", "label", "kind", "gbps", "ns"])
    writer.writeheader()
    writer.writerows(rows)
    write_private(out / "calibration.csv", text.getvalue().encode())
    from objtier.sweep.page import write_sweep_page

    write_sweep_page(out, calibration=doc)   # the bandwidth and latency heatmaps
    return doc
