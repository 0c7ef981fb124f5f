"""The tiered-memory simulator: replay a recorded trace against page-level kernel policies and
object-level plans (C core in native/sim, loaded with ctypes). Guide: docs/simulator.md.

    from objtier.sim import simulate, load_preset
    sim = simulate(open_trace("run.otr"), ["first-touch", "numab2", "object"], "50%",
                   load_preset("cxl"))
    sim.rows()
"""

from objtier.sim.cost import PRESETS, CostModel, load_preset
from objtier.sim.replay import run_policy
from objtier.sim.run import POLICIES, PolicyResult, Simulation, simulate

__all__ = ["simulate", "run_policy", "load_preset", "CostModel", "PRESETS", "POLICIES",
           "Simulation", "PolicyResult"]
