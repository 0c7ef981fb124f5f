"""Placement planning: pure algorithms over an object table, and the plan file.

    from objtier.plan import rank, spill, halving, exact, plan_phases, build_plan, write_plan
    placement = halving(table, capacity_bytes=8 << 30)

Algorithms take an object table (pyarrow.Table, dict of columns or ObjectTable; see
objtier.plan.table) and a fast-tier capacity in bytes, and return a Placement.
"""

from __future__ import annotations

from typing import Callable

from objtier.errors import UsageError
from objtier.plan.backfill import without_backfill
from objtier.plan.binary import build_id, check_plan_binary, identity
from objtier.plan.budget import Budget, footprint, parse_budget, peak_live_bytes
from objtier.plan.exact import exact
from objtier.plan.greedy import rank, reuse, spill
from objtier.plan.halving import halving
from objtier.plan.pages import auto, pages
from objtier.plan.per_phase import (ROOT, PhaseMerge, PhasePlacement, merge_phases, phase_spans,
                                 plan_phases, unlocked_live_bytes)
from objtier.plan.placement import TIERS, Placement
from objtier.plan.planfile import build_plan, load_plan, validate_plan, write_plan
from objtier.plan.programs import ProgramSections, program_sections
from objtier.plan.table import ObjectTable, PhaseTable, object_table, phase_table
from objtier.plan.textexport import parse_text, to_text

ALGORITHMS: dict[str, Callable[..., Placement]] = {
    "rank": rank, "spill": spill, "reuse": reuse, "halving": halving, "exact": exact,
    "pages": pages, "auto": auto,
}
NEEDS_PAGE_SAMPLES = {"pages", "auto"}  # algorithms called with page_samples= (a recording's)


def algorithm(name: str) -> Callable[..., Placement]:
    """The planning function called `name`; UsageError for an unknown one."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise UsageError(f"unknown algorithm {name!r} (one of {', '.join(ALGORITHMS)})") from None


__all__ = [
    "ALGORITHMS", "Budget", "NEEDS_PAGE_SAMPLES", "ObjectTable", "PhaseMerge", "PhasePlacement",
    "PhaseTable", "Placement", "ProgramSections", "program_sections", "ROOT", "TIERS", "algorithm", "build_id", "build_plan",
    "check_plan_binary", "exact", "footprint", "halving", "identity", "load_plan", "merge_phases",
    "object_table", "pages", "parse_budget", "parse_text", "peak_live_bytes",
    "phase_spans", "phase_table", "plan_phases", "rank", "reuse", "spill", "to_text", "unlocked_live_bytes",
    "validate_plan",
    "without_backfill", "write_plan",
]
