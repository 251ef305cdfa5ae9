"""``engine="cell-bnb"`` through solve_exact: registered, usable at reg = 0, and equal to
the exhaustive optimum on tiny instances."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.algorithms.fit_plan import solve_exact
from rulemip.algorithms.solve.registry import ENGINES
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_oracles import enumerate_optimum
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem


def _tiny(seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(24, 2))
    y = np.sin(2 * X[:, 0]) + (X[:, 1] > 0.3) + 0.1 * rng.normal(size=24)
    return Dataset.from_arrays(X, y, loss="squared")


@pytest.mark.parametrize("seed", [0, 1])
def test_cell_bnb_engine_matches_enumeration(seed):
    ds = _tiny(seed)
    th = candidate_thresholds(ds.X, 2)
    res = solve_exact(KRuleProblem.of(ds, 2, reg=1e-3, thresholds=th), engine="cell-bnb",
                      budget=Budget.from_time_limit(60))
    assert "cell-bnb" in ENGINES
    assert res.is_optimal
    prob = BoxSelectionCIP(Language(2, th), reg=1e-3).build(ds)
    best = enumerate_optimum(prob.oracle, prob.n_boxes, 2)
    assert res.risk == pytest.approx(best[1], rel=1e-7, abs=1e-9)
    assert res.lower_bound <= best[1] + 1e-9


def test_cell_bnb_engine_accepts_zero_ridge_and_refuses_other_losses():
    ds = _tiny(2)
    th = candidate_thresholds(ds.X, 2)
    res = solve_exact(KRuleProblem.of(ds, 1, reg=0.0, thresholds=th), engine="cell-bnb",
                      budget=Budget.from_time_limit(60))
    assert res.ensemble is not None and 0.0 <= res.lower_bound <= res.risk
    yb = (ds.y > 0).astype(float)
    dsl = Dataset.from_arrays(ds.X, yb, loss="logistic")
    with pytest.raises(InvalidParameterError, match="cell-bnb"):
        solve_exact(KRuleProblem.of(dsl, 1, loss="logistic", reg=0.0, thresholds=th),
                    engine="cell-bnb")
