"""Measured per-object sensitivity as the planner's ranking input (`plan --sensitivity FILE`).

FILE is the `sensitivity.csv` that `objtier sweep per-object` writes: one row per measured
object, keyed like plan entries by (context_key, occurrence), with
    loss = 1 / median_ratio - 1     extra run time when that object alone is slow
                                    (0.5 = 50 % slower; "inf" = the program failed)

Every algorithm ranks by accesses per byte (rank, spill, reuse, exact) or accesses^a /
size^b (halving). weight_by_sensitivity() replaces, for the measured objects only, the sampled
accesses with a weight proportional to the measured loss, so that the ranking among them is
loss per byte: the order in which the per-object curve makes objects fast. In detail:

    measured, 0 < loss < inf   weight = loss * scale, where scale = (sampled accesses of
                               these objects) / (sum of their losses): together they keep
                               their summed sampled weight, so their place
                               among the unmeasured objects (sampled accesses, unchanged)
                               stays that of the sampled table as a whole
    measured, loss = inf       weight so that its density is twice the highest density of
                               any other object: fast first
    measured, loss <= 0        (no measurable cost when slow, or noise) weight so that its
                               density lies below every other object's with accesses, in
                               their sampled order: fast only if the budget has room left
    not measured               sampled accesses, unchanged (objects under sweep's 1 % share)

The weights are in the unit of the table's accesses; plan entries then carry these weights
as their accesses. Pure: no I/O but reading FILE.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from objtier.errors import UsageError
from objtier.plan.table import ObjectTable

REQUIRED = ("context_key", "occurrence", "loss")


@dataclass(frozen=True)
class Sensitivity:
    """Rows of a sensitivity table; row i of every array describes the same object."""

    context_key: np.ndarray   # object (str), 16 lowercase hex digits
    occurrence: np.ndarray    # int64
    loss: np.ndarray          # float64, may be +inf (failed when slow); never NaN
    label: np.ndarray         # object (str), "" when the file has no label column
    source: str = ""          # where it was read from, for messages

    def __len__(self) -> int:
        return len(self.loss)


def read_sensitivity(path: str | Path) -> Sensitivity:
    """Read and validate a sensitivity.csv; UsageError (one line) for anything else."""
    path = Path(path)
    try:
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise UsageError(f"cannot read {path}: {error}".splitlines()[0]) from None
    what = f"{path} (a sensitivity.csv from `objtier sweep per-object`)"
    if not rows:
        raise UsageError(f"{what}: no rows")
    missing = [name for name in REQUIRED if name not in rows[0]]
    if missing:
        raise UsageError(f"{what}: missing column(s) {', '.join(missing)}")
    keys, occurrences, losses = [], [], []
    seen = set()
    for number, row in enumerate(rows, 2):     # line 1 is the header
        key = (row["context_key"] or "").strip()
        if len(key) != 16 or key.strip("0123456789abcdef"):
            raise UsageError(f"{what}: line {number}: context_key must be 16 lowercase hex "
                             f"digits, got {key!r}")
        try:
            occurrence = int(row["occurrence"])
            loss = float(row["loss"])
        except (TypeError, ValueError):
            raise UsageError(f"{what}: line {number}: occurrence must be an integer and loss "
                             f"a number") from None
        if occurrence < 0 or math.isnan(loss) or loss == -math.inf:
            raise UsageError(f"{what}: line {number}: occurrence < 0 or loss not a number")
        if (key, occurrence) in seen:
            raise UsageError(f"{what}: line {number}: object {key}#{occurrence} twice")
        seen.add((key, occurrence))
        keys.append(key)
        occurrences.append(occurrence)
        losses.append(loss)
    labels = [str(row.get("label") or "") for row in rows]
    return Sensitivity(np.array(keys, dtype=object), np.array(occurrences, dtype=np.int64),
                       np.array(losses, dtype=np.float64), np.array(labels, dtype=object),
                       str(path))


def _density(weight: np.ndarray, size: np.ndarray) -> np.ndarray:
    return weight / np.maximum(size, 1)


def weight_by_sensitivity(objects: ObjectTable, table: Sensitivity
                          ) -> tuple[ObjectTable, list[str]]:
    """(objects with measured objects re-weighted, warnings); see the module docstring.
    UsageError when no row of the table names an object of `objects` (another program, or
    another build of it)."""
    index = {(str(k), int(o)): i for i, (k, o) in
             enumerate(zip(objects.context_key, objects.occurrence)) if k}
    rows = np.array([index.get((str(k), int(o)), -1)
                     for k, o in zip(table.context_key, table.occurrence)], dtype=np.int64)
    found = rows >= 0
    if not found.any():
        raise UsageError(f"{table.source}: none of its {len(table)} object(s) is in the planned "
                         f"table (a sensitivity table of another program or build?)")
    warnings = []
    if not found.all():
        warnings.append(f"{int((~found).sum())} of {len(table)} object(s) of {table.source} "
                        f"are not in the planned table and were ignored")
    rows, loss = rows[found], table.loss[found]
    weight = objects.accesses.astype(np.float64).copy()
    size = objects.size
    sensitive = rows[(loss > 0) & np.isfinite(loss)]
    failed = rows[np.isinf(loss)]
    insensitive = rows[loss <= 0]
    positive = loss[(loss > 0) & np.isfinite(loss)]
    if len(sensitive):
        scale = float(objects.accesses[sensitive].sum()) / float(positive.sum())
        weight[sensitive] = positive * (scale if scale > 0 else 1.0)
    others = ~np.isin(np.arange(len(objects)), np.concatenate([failed, insensitive]))
    if len(insensitive):
        ranked = others & (weight > 0)
        floor = float(_density(weight[ranked], size[ranked]).min()) if ranked.any() else 1.0
        own = _density(objects.accesses[insensitive], size[insensitive])
        top = float(own.max()) if len(own) else 0.0
        # below every other object's density, keeping their sampled order among themselves
        weight[insensitive] = (0.5 * floor * (own / top if top > 0 else 1.0)
                               * np.maximum(size[insensitive], 1))
        warnings.append(f"{len(insensitive)} measured object(s) showed no loss when slow: "
                        f"ranked after every other object")
    if len(failed):
        rest = np.ones(len(objects), dtype=bool)
        rest[failed] = False
        ceiling = float(_density(weight[rest], size[rest]).max()) if rest.any() else 1.0
        weight[failed] = 2.0 * max(ceiling, 1e-300) * np.maximum(size[failed], 1)
    return replace(objects, accesses=weight), warnings
