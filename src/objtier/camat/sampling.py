"""Sampled timing of the C-AMAT model (`camat --sample PERIOD`): the spread of the C-AMAT of
the timed units and a confidence interval from it (as SMARTS does), and the comparison of a
sampled run with an exact one (pure functions over the model's counts).

In a sampled run the accesses and misses of every level, object and region are exact; the
cycle terms are estimates from the units' measured accesses. Per level, unit u has n_u measured
accesses and a_u active cycles (their hit and pure-miss shares); the sample's C-AMAT is the
ratio R = Σa_u / Σn_u, and its standard error the ratio estimator's,
sqrt(Σ(a_u - R n_u)² / (k - 1) / k) / mean(n_u) over k units.
"""

from __future__ import annotations

import math

import numpy as np

from objtier.camat.model import LEVELS, SimCounts
from objtier.camat.terms import level_terms

Z95 = 1.96
COMPARED = ("camat", "C_M", "pAMP")
MIN_SUPPORT = 200  # measured accesses (pure misses for C_M, pAMP) behind a compared term
# C_M and pAMP are compared where the pure-miss term pMR*pAMP/C_M is at least this share of the
# level's C-AMAT: elsewhere the term is small and its factors fragile (a pure miss is a miss
# with one pure-miss cycle or more, so the count behind pAMP moves with single cycles)
PURE_SIGNIFICANT = {"C_M": 0.10, "pAMP": 0.25}
# the tolerances the data support (docs/camat.md, "Sampled timing")
TOLERANCE = {"camat": 0.05, "C_M": 0.05, "pAMP": 0.10}


def unit_interval(units: np.ndarray, levels: int) -> list[dict]:
    """Per level: units with measured accesses there, the mean and standard deviation of their
    C-AMAT, and the 95 % confidence half-width of the sample's C-AMAT (cycles and relative)."""
    out = []
    for lv in range(levels):
        n = units[:, lv, 0] if len(units) else np.zeros(0)
        a = units[:, lv, 1] if len(units) else np.zeros(0)
        keep = n > 0
        k = int(keep.sum())
        row = {"level": LEVELS[lv], "units": k, "measured_accesses": int(n.sum()),
               "unit_camat_mean": None, "unit_camat_sd": None, "camat_ci95": None,
               "camat_ci95_relative": None}
        if k:
            n, a = n[keep], a[keep]
            ratio = float(a.sum() / n.sum())
            per = a / n
            row["unit_camat_mean"] = float(per.mean())
            if k >= 2:
                row["unit_camat_sd"] = float(per.std(ddof=1))
                resid = a - ratio * n
                se = math.sqrt(float((resid ** 2).sum()) / (k - 1) / k) / float(n.mean())
                row["camat_ci95"] = Z95 * se
                row["camat_ci95_relative"] = Z95 * se / ratio if ratio else None
        out.append(row)
    return out


def _rel(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not a:
        return None
    return abs(b - a) / abs(a)


def compare(exact: SimCounts, sampled: SimCounts) -> list[dict]:
    """Per level: are the accesses and misses equal, and the relative error of each compared
    term of the sampled run against the exact one, where the sample supports it (at least
    MIN_SUPPORT measured accesses at the level; for C_M and pAMP as many pure misses, and a
    pure-miss term of at least PURE_SIGNIFICANT[term] of the exact C-AMAT); None where it does
    not, or where either run leaves the term undefined."""
    measured = sampled.units[:, :, 0].sum(axis=0) if sampled.units is not None and len(
        sampled.units) else np.zeros(len(LEVELS))
    out = []
    for lv in range(exact.levels):
        e = level_terms(exact.totals[lv], totals=True)
        s = level_terms(sampled.totals[lv], totals=True)
        pure = (s["pMR"] or 0.0) * measured[lv]
        term = (e["pMR"] * e["pAMP"] / e["C_M"]) if e["pAMP"] and e["C_M"] else 0.0
        share = term / e["camat"] if e["camat"] else 0.0
        row = {"level": LEVELS[lv], "measured_accesses": int(measured[lv]),
               "accesses_equal": int(exact.totals[lv]["accesses"])
               == int(sampled.totals[lv]["accesses"]),
               "misses_equal": int(exact.totals[lv]["misses"])
               == int(sampled.totals[lv]["misses"]),
               "pure_term_share": share}
        for key in COMPARED:
            supported = measured[lv] >= MIN_SUPPORT and (
                key == "camat" or (pure >= MIN_SUPPORT and share >= PURE_SIGNIFICANT[key]))
            row[key] = _rel(e[key], s[key]) if supported else None
        out.append(row)
    return out


def max_error(rows: list[dict], key: str | None = None) -> float | None:
    """The largest relative error of the compared terms (or of one) over the levels (None: none
    compared)."""
    errs = [r[k] for r in rows for k in ([key] if key else COMPARED) if r[k] is not None]
    return max(errs) if errs else None


def within_tolerance(rows: list[dict]) -> bool:
    """Is every compared term within TOLERANCE?"""
    return all(r[k] is None or r[k] <= TOLERANCE[k] for r in rows for k in COMPARED)
