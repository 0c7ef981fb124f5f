"""by_model.scaled: a kernel prediction still off after calibration carries its level (the
measured kernel run's) over to every candidate alike, so the choice stays and the plan arm's
prediction moves with the kernel arm's."""

from __future__ import annotations

import numpy as np

from objtier.model.lru import Prediction
from objtier.plan.by_model import SCALE_BAND, Choice, scaled


def prediction(swapins: float, per_object) -> Prediction:
    return Prediction(swapins, np.asarray(per_object, dtype=np.float64), 1e9, 100.0, 200.0)


def choice() -> Choice:
    return Choice(name="model", placement=None, limit_bytes=1 << 20,
                  predictions={"nothing": 1000.0, "spill": 800.0, "model": 500.0},
                  nothing=prediction(1000, [600, 400]), chosen=prediction(500, [100, 400]),
                  capacity_bytes=8 << 20, other_bytes=1 << 20)


def test_a_low_model_is_scaled_to_the_run_on_every_candidate():
    out, k = scaled(choice(), 2000.0)
    assert k == 2.0
    assert out.nothing.swapins == 2000 and out.chosen.swapins == 1000
    assert out.chosen.per_object.tolist() == [200, 800]
    assert out.predictions == {"nothing": 2000.0, "spill": 1600.0, "model": 1000.0}
    assert min(out.predictions, key=out.predictions.get) == out.name   # the choice stays


def test_a_model_within_the_band_is_left_alone():
    for measured in (1000 * SCALE_BAND[0], 1000.0, 1000 * SCALE_BAND[1]):
        out, k = scaled(choice(), measured)
        assert k == 1.0 and out.nothing.swapins == 1000 and out.chosen.swapins == 500
