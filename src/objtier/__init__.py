"""objtier: object-level tiered memory — record, report, plan, run, compare, simulate."""

__version__ = "0.1.0"
