"""Logistic/Poisson models whose predictions may leave ±EXP_LOSS_SAFE_RANGE are not
trusted to a backend's native nonlinear handling: SCIP returned OPTIMAL with a dual bound
5e-6 (relative) above the optimum on this instance (weight box 3 090 at reg = 1e-6). They
go through the tangent-cut driver, whose bound is that of a MILP."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from rulemip import ExactRuleEnsembleClassifier
from rulemip.model import MIPModel
from rulemip.solvers.base import EXP_LOSS_SAFE_RANGE, Capability, required_capabilities

X = np.array([[-0.05, -0.37], [-1.22, 0.68], [-0.44, -1.49], [-1.18, -0.78], [-0.81, -0.5],
              [-1.26, 1.1], [-1.19, 0.71], [-1.67, 0.01], [-2.6, -0.96], [0.63, -1.12],
              [-1.08, -0.79], [0.24, 0.23], [0.18, 0.17], [-1.4, -0.7], [0.34, 0.5]])
Y = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0])
PARAMS = dict(n_rules=3, reg=1e-6, fit_intercept=True, preset=None, time_limit=60,
              thresholds=[[-1.19, -1.18], [-1.49, 0.01]])


def _model(loss: str, box: float) -> MIPModel:
    m = MIPModel()
    f = m.add_variables("f", 3, lb=-box, ub=box)
    m.add_loss(loss, f.ids, np.array([1.0, 0.0, 1.0]))
    return m


@pytest.mark.parametrize("loss", ["logistic", "poisson"])
def test_wide_prediction_box_of_an_exp_loss_needs_the_capability(loss):
    narrow = required_capabilities(_model(loss, EXP_LOSS_SAFE_RANGE).to_standard_form())
    wide = required_capabilities(_model(loss, 2 * EXP_LOSS_SAFE_RANGE).to_standard_form())
    assert Capability.WIDE_EXP_LOSS not in narrow
    assert Capability.WIDE_EXP_LOSS in wide
    squared = required_capabilities(_model("squared", 1e6).to_standard_form())
    assert Capability.WIDE_EXP_LOSS not in squared


def test_scip_logistic_with_a_weak_ridge_meets_the_enumerated_optimum():
    pytest.importorskip("pyscipopt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ExactRuleEnsembleClassifier(engine="cip", solver="highs", **PARAMS).fit(X, Y)
        scip = ExactRuleEnsembleClassifier(engine="mip", solver="scip", **PARAMS).fit(X, Y)
    opt = ref.result_.risk
    assert ref.result_.is_optimal and opt == pytest.approx(0.5667610884, rel=1e-8)
    res = scip.result_
    assert res.lower_bound <= opt * (1 + 1e-7)  # a valid bound never exceeds the optimum
    if res.is_optimal:
        assert res.risk <= opt * (1 + 1e-6)
    assert any("tangent-cut" in n for n in res.notes)
