"""The interval-cover MIP does not depend on the units of y (issue 38, item 10).

The model is built on y/s with s the root of y's second moment (``interval_cover`` module
docstring, "Units"); risk, weights and bounds come back in the units of the data. Before,
y × 1e-6 stopped at once, feasible, 94 % from the optimum, under the same budget that
proves y optimal (the proved weight box and ``BIGM_LIMIT`` were absolute).
"""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.algorithms.solve.driver import solve
from rulemip.budget import Budget
from rulemip.data import Dataset, load_bundled
from rulemip.formulations.interval_cover import IntervalCoverMIP, response_scale
from rulemip.rules import Condition, Rule, RuleEnsemble
from rulemip.rules.language import Language
from rulemip.solvers.result import TerminationReason

SCALES = (1e-6, 1.0, 1e5)


def _skip_missing(backend: str) -> None:
    from rulemip.solvers.base import get_backend

    try:
        get_backend(backend)
    except (ImportError, ValueError) as exc:
        pytest.skip(f"backend {backend!r} unavailable: {exc}")


def _bundled(n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_bundled()
    return np.asarray(X, dtype=float)[:n], np.asarray(y, dtype=float)[:n]


@pytest.mark.solver
@pytest.mark.parametrize("backend", ["scip", "highs"])
def test_same_status_and_risk_at_every_scale_of_y(backend: str) -> None:
    _skip_missing(backend)
    X, y = _bundled()
    out = []
    for s in SCALES:
        res = solve(IntervalCoverMIP(Language(1, fit_intercept=True), reg=1.0, max_thresholds=2),
                    Dataset.from_arrays(X, y * s), solver=backend,
                    budget=Budget.from_time_limit(None, work_limit=400))
        out.append((res.termination, res.risk / s**2, res.lower_bound / s**2))
    statuses = {t for t, _, _ in out}
    assert statuses == {TerminationReason.OPTIMAL}, out
    risks = np.array([r for _, r, _ in out])
    np.testing.assert_allclose(risks, risks[1], rtol=1e-6)
    for _, risk, bound in out:  # the bound came back in the units of the data
        assert bound <= risk * (1 + 1e-9) and bound >= risk * (1 - 1e-5)


def test_model_is_the_same_in_the_units_of_y_over_s() -> None:
    X, y = _bundled(30)
    mip = IntervalCoverMIP(Language(2, fit_intercept=True), reg=0.5, max_thresholds=3)
    ref = mip.build(Dataset.from_arrays(X, y), linearization="bigm")
    assert ref.response_scale == pytest.approx(np.sqrt(np.mean(y**2)), rel=1e-12)
    for s in (1e-6, 1e5):
        built = mip.build(Dataset.from_arrays(X, y * s), linearization="bigm")
        assert built.response_scale == pytest.approx(s * ref.response_scale, rel=1e-12)
        assert built.objective_scale == pytest.approx(built.response_scale**2, rel=1e-12)
        np.testing.assert_allclose(built.weight_bound, ref.weight_bound, rtol=1e-9)
        np.testing.assert_allclose(built.reduction.y, ref.reduction.y, rtol=1e-12)
        assert built.safe_bound / s**2 == pytest.approx(ref.safe_bound, rel=1e-12)
        # a warm start in the units of the data comes back unchanged through the model
        rule = Rule([Condition(0, -np.inf, float(np.median(X[:, 0])))])
        ens = RuleEnsemble([rule.with_weight(-30.0 * s)], 150.0 * s, "squared")
        x = mip.encode(built, ens, refit=False)
        back, risk, _ = mip.decode(built, x, refit=False)
        assert back.weights[0] == pytest.approx(-30.0 * s, rel=1e-12)
        assert back.intercept == pytest.approx(150.0 * s, rel=1e-12)
        assert risk == pytest.approx(ens.risk(X, y * s, reg=0.5), rel=1e-9)


def test_scale_is_one_for_classes_and_counts_and_a_zero_response() -> None:
    X, _ = _bundled(10)
    assert response_scale(Dataset.from_arrays(X, np.zeros(10)), "squared") == 1.0
    assert response_scale(Dataset.from_arrays(X, np.arange(10.0) * 1e5, loss="poisson"),
                          "poisson") == 1.0
    w = np.r_[np.full(5, 3.0), np.ones(5)]
    yy = np.r_[np.full(5, 2.0), np.zeros(5)]
    ds = Dataset.from_arrays(X, yy, sample_weight=w)
    assert response_scale(ds, "squared") == pytest.approx(np.sqrt(60.0 / 20.0))


@pytest.mark.solver
def test_certificate_records_the_problem_in_the_units_of_the_data() -> None:
    _skip_missing("scip")
    from rulemip import ExactRuleEnsembleRegressor
    from rulemip.certify import verify

    X, y = _bundled()
    est = ExactRuleEnsembleRegressor(n_rules=1, reg=1.0, engine="mip", solver="scip",
                                     max_thresholds=2, work_limit=400).fit(X, y * 1e5)
    cert = est.certificate_
    assert est.result_.termination is TerminationReason.OPTIMAL
    assert cert.risk == pytest.approx(est.result_.risk)
    assert cert.risk / 1e10 == pytest.approx(3256.279986702128, rel=1e-6)
    assert cert.lower_bound <= cert.risk
    assert verify(cert, X, y * 1e5).ok
