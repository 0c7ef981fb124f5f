"""The kernel model: what reclaim does with a given lock set, predicted from a profile.

Pure functions over numpy arrays (no trace, no files); objtier.analysis.reuse_curves builds the
curves from recordings, the planner and `compare` use the predictions.
"""

from objtier.model.lru import Curves, Prediction, predict

__all__ = ["Curves", "Prediction", "predict"]
