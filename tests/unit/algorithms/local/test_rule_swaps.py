"""Rule swaps and 1-swap optimality (rulemip.algorithms.local.rule_swaps) against brute force:
every box of the language tried in every slot, the other rules' weights fixed, the
intercept and the new weight re-optimized by least squares."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rulemip.algorithms.local.rule_swaps import check_one_swap, refit_ensemble, swap_descent
from rulemip.data import Dataset, candidate_thresholds
from rulemip.exceptions import InvalidParameterError
from rulemip.rules.ensemble import RuleEnsemble, conditions_from_box
from rulemip.rules.rule import Rule
from rulemip.testing.brute_force import distinct_boxes


def _best_swap_risk(ds: Dataset, ens: RuleEnsemble, n_rules: int, reg: float,
                    fit_intercept: bool, Q_all: np.ndarray) -> float:
    """Lowest risk over all one-rule replacements (empty slots: additions), the others'
    weights fixed, (intercept, new weight) optimal — by trying every box."""
    y = np.asarray(ds.y, dtype=float)
    W = float(len(y))
    Q = ens.query_matrix(ds.X) if ens.rules else np.zeros((len(y), 0))
    beta = ens.weights
    best = math.inf
    for slot in range(n_rules):
        others = [j for j in range(len(ens.rules)) if j != slot]
        r = y - Q[:, others] @ beta[others]
        pen_others = reg * float(beta[others] @ beta[others])
        for b in range(Q_all.shape[1]):
            q = Q_all[:, b]
            A = np.column_stack([np.ones(len(y)), q]) if fit_intercept else q[:, None]
            pen = np.diag([0.0, reg] if fit_intercept else [reg])
            coef = np.linalg.lstsq(A.T @ A + pen, A.T @ r, rcond=None)[0]
            res = r - A @ coef
            risk = (float(res @ res) + pen_others + reg * float(coef[-1] ** 2)) / W
            best = min(best, risk)
    return best


def _instance(seed: int, n: int = 12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] > 0.3, 2.0, 0.0) + np.where(X[:, 1] < -0.2, -1.5, 0.0) \
        + 0.3 * rng.normal(size=n)
    ds = Dataset.from_arrays(X, y, loss="squared")
    return ds, candidate_thresholds(ds.X, 4, None)


def _random_model(ds: Dataset, th, k: int, seed: int, reg: float, fit_intercept: bool
                  ) -> RuleEnsemble:
    rng = np.random.default_rng(seed)
    rules = []
    for _ in range(k):
        j = int(rng.integers(2))
        t = th[j][int(rng.integers(len(th[j])))]
        lo, hi = [-np.inf, -np.inf], [np.inf, np.inf]
        if rng.random() < 0.5:
            lo[j] = t
        else:
            hi[j] = t
        rules.append(Rule(conditions_from_box(lo, hi), 1.0))
    return refit_ensemble(ds, rules, reg=reg, fit_intercept=fit_intercept)[0]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("reg,fit_intercept", [(0.0, True), (0.1, True), (0.05, False)])
def test_descent_ends_one_swap_optimal_against_brute_force(seed, reg, fit_intercept):
    ds, th = _instance(seed)
    _, Q_all = distinct_boxes(ds.X, th, fit_intercept=fit_intercept)
    k = 2
    start = _random_model(ds, th, 1 + seed % 2, seed, reg, fit_intercept)
    out = swap_descent(ds, start, k, reg=reg, fit_intercept=fit_intercept, thresholds=th)
    assert out.one_swap_optimal
    assert out.risk <= float(start.risk(ds.X, ds.y, reg=reg)) + 1e-12
    assert out.risk == pytest.approx(float(out.ensemble.risk(ds.X, ds.y, reg=reg)), abs=1e-12)
    # no single replacement, anywhere in the language, beats the claimed model
    assert _best_swap_risk(ds, out.ensemble, k, reg, fit_intercept, Q_all) \
        >= out.risk - 1e-9 * max(1.0, out.risk)
    ok, checks = check_one_swap(ds, out.ensemble, k, reg=reg, fit_intercept=fit_intercept,
                                thresholds=th)
    assert ok and len(checks) >= 1


@pytest.mark.parametrize("seed", range(8))
def test_check_agrees_with_brute_force_on_arbitrary_models(seed):
    """The replayed check says "1-swap optimal" exactly when brute force finds no swap
    that lowers the risk (models not produced by the descent)."""
    ds, th = _instance(100 + seed)
    reg, k = 0.02, 2
    _, Q_all = distinct_boxes(ds.X, th, fit_intercept=True)
    model = _random_model(ds, th, k, seed, reg, True)
    risk = float(model.risk(ds.X, ds.y, reg=reg))
    brute = _best_swap_risk(ds, model, k, reg, True, Q_all)
    ok, _ = check_one_swap(ds, model, k, reg=reg, fit_intercept=True, thresholds=th)
    assert ok == (brute >= risk - 1e-9 * max(1.0, risk))


def test_descent_beats_a_poor_start_and_never_worsens():
    ds, th = _instance(7)
    reg = 1e-3
    start = _random_model(ds, th, 2, 3, reg, True)
    before = float(start.risk(ds.X, ds.y, reg=reg))
    out = swap_descent(ds, start, 2, reg=reg, fit_intercept=True, thresholds=th)
    assert out.swaps >= 1 and out.risk < before


def test_refuses_other_losses():
    ds, th = _instance(0)
    ens = RuleEnsemble((), 0.0, "poisson")
    with pytest.raises(InvalidParameterError, match="squared loss"):
        swap_descent(ds, ens, 2, reg=0.1, fit_intercept=True, thresholds=th)


@pytest.mark.parametrize("seed", range(6))
def test_descent_with_a_length_limit_is_one_swap_optimal_in_its_language(seed):
    """With ``max_rule_length=1`` the exact swap search counts restricted features, as the
    estimators do: the descent always ends proved, and no single-feature box beats it."""
    ds, th = _instance(200 + seed)
    reg, k = 0.05, 2
    _, Q_one = distinct_boxes(ds.X, th, fit_intercept=True, max_rule_length=1)
    start = _random_model(ds, th, 1, seed, reg, True)
    out = swap_descent(ds, start, k, reg=reg, fit_intercept=True, thresholds=th,
                       max_rule_length=1)
    assert out.one_swap_optimal
    assert all(len({c.feature for c in r.conditions}) <= 1 for r in out.ensemble.rules)
    assert _best_swap_risk(ds, out.ensemble, k, reg, True, Q_one) \
        >= out.risk - 1e-9 * max(1.0, out.risk)
