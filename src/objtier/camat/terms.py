"""The C-AMAT terms from the model's counts (pure functions).

For one level and one set of accesses (all of them, one object, one region), with N accesses:
  H     = hit-phase cycles / N                     (hit time, queueing for a miss register included)
  C_H   = hit-phase cycles / hit cycles            (hit concurrency)
  MR    = misses / N
  pMR   = pure misses / N                          (a pure miss has a cycle with no hit beside it)
  pAMP  = pure-miss cycles summed over misses / pure misses
  C_M   = that sum / pure-miss cycles              (pure-miss concurrency)
  kappa = pure-miss cycles / miss cycles           (share of miss cycles not hidden by hits)
  C-AMAT = H / C_H + pMR * pAMP / C_M ;  APC = N / active cycles = 1 / C-AMAT
  AMAT  = H + MR * AMP, AMP = miss-phase cycles / misses (every access serial)
For an object or region the "cycles" are its shares of the level's cycles (each cycle split
evenly among the accesses present in it), so N * C-AMAT summed over objects is the level's
active cycles. Undefined terms (no misses, no accesses) are None.
"""

from __future__ import annotations

import numpy as np

TERM_KEYS = ("H", "C_H", "MR", "pMR", "pAMP", "C_M", "kappa", "camat", "amat")


def _div(a: float, b: float) -> float | None:
    return float(a) / float(b) if b else None


def level_terms(c: np.void, totals: bool) -> dict:
    """Terms of one counts record (COUNTS_DTYPE). totals: use the level's cycle counts, else
    the access set's shares of them."""
    n = int(c["accesses"])
    hit_cycles = float(c["hit_cycles"] if totals else c["hit_share"])
    pure_cycles = float(c["pure_cycles"] if totals else c["pure_share"])
    miss_cycles = float(c["miss_cycles"] if totals else c["miss_share"])
    h = _div(c["hit_phase"], n)
    ch = _div(c["hit_phase"], hit_cycles)
    mr = _div(c["misses"], n)
    pmr = _div(c["pure_misses"], n)
    pamp = _div(c["pure_phase"], c["pure_misses"])
    cm = _div(c["pure_phase"], pure_cycles)
    kappa = _div(pure_cycles, miss_cycles)
    amp = _div(c["miss_phase"], c["misses"])
    camat = None
    if h is not None and ch:
        camat = h / ch + (pmr * pamp / cm if pamp is not None and cm else 0.0)
    amat = None if h is None else h + (mr * amp if amp is not None else 0.0)
    active = float(c["active_cycles"]) if totals else hit_cycles + pure_cycles
    return {"H": h, "C_H": ch, "MR": mr, "pMR": pmr, "pAMP": pamp, "C_M": cm, "kappa": kappa,
            "camat": camat, "amat": amat, "accesses": n, "apc": _div(n, active),
            "active_cycles": active}


def schema_level(name: str, terms: dict) -> dict:
    """One entry of camat.json's "levels": exactly the published keys."""
    return {"level": name, **{k: terms[k] for k in TERM_KEYS}}


def apc_identity_error(terms: dict) -> float | None:
    """|APC x C-AMAT - 1|: 0 when the terms reproduce the directly counted APC."""
    if terms["apc"] is None or terms["camat"] is None:
        return None
    return abs(terms["apc"] * terms["camat"] - 1.0)


def recursive_camat(levels: list[dict]) -> list[float | None]:
    """C-AMAT_i = H_i/C_H,i + MR_i * kappa_i * C-AMAT_{i+1}, from the deepest level up (the
    seed's Eq. 4); compare with each level's own C-AMAT."""
    out: list[float | None] = [None] * len(levels)
    below = None
    for i in range(len(levels) - 1, -1, -1):
        t = levels[i]
        if t["H"] is None or not t["C_H"]:
            out[i] = None
        elif below is None or t["MR"] is None or t["kappa"] is None:
            out[i] = t["H"] / t["C_H"]
        else:
            out[i] = t["H"] / t["C_H"] + t["MR"] * t["kappa"] * below
        below = levels[i]["camat"]
    return out
