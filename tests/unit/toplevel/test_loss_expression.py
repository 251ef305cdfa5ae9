"""``Loss.expression`` (the one symbolic copy of each loss formula, used by the SCIP
backend and the Pyomo exporter) equals ``Loss.value``."""

import math

import numpy as np
import pytest

from rulemip.losses import get_loss


@pytest.mark.parametrize("loss,ys", [("squared", [-1.5, 0.0, 2.0]),
                                     ("logistic", [-1.0, 1.0]),
                                     ("poisson", [0.0, 1.0, 3.5])])
def test_expression_matches_value(loss: str, ys: list[float]) -> None:
    lo = get_loss(loss)
    for y in ys:
        for f in (-2.0, -0.3, 0.0, 0.7, 2.5):
            sym = lo.expression(f, y, math.exp, math.log)
            num = float(lo.value(np.array([f]), np.array([y]))[0])
            assert sym == pytest.approx(num, rel=1e-12, abs=1e-12)
