"""MIP-boosting (idealized boosting by the interval-cover MIP) and D(k, Δ) of [GAP] §3."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rulemip.algorithms.krule.mip_boosting import boosting_risks, mip_boosting
from rulemip.algorithms.solve.driver import solve
from rulemip.budget import Budget
from rulemip.data import Dataset, alternating, candidate_thresholds, threshold_groups
from rulemip.formulations.interval_cover import IntervalCoverMIP
from rulemip.refit import fit_weights
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem

pytestmark = pytest.mark.solver

BACKENDS = ["highs", "scip"]


def _skip_missing(backend: str) -> None:
    pytest.importorskip({"highs": "highspy", "scip": "pyscipopt"}[backend])


def _delta(k: int) -> float:
    # inside Lemma 2's range (0, 1/(2k-4+√2/2)) and small enough that the labels keep
    # alternating in sign (a_i = 1-(i-1)Δ > 0 needs Δ < 1/(2k-2))
    return min(0.5 / (2 * k - 4 + math.sqrt(2) / 2), 0.5 / (2 * k - 2))


def lemma1(k: int, D: float) -> float:
    return D * D * k * (k * k - 1) / (3 * (2 * k - 1))


def lemma2(k: int, D: float) -> float:
    return (k - 1) * (6 - 6 * D * (3 * k - 2) + D * D * (14 * k * k - 19 * k + 6)) \
        / (6 * (2 * k - 1))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [2, 3])
def test_stagewise_mip_boosting_reproduces_lemma2(backend: str, k: int) -> None:
    _skip_missing(backend)
    D = _delta(k)
    X, y = alternating(k, D)
    ds = Dataset.from_arrays(X, y)
    problem = KRuleProblem.of(ds, k, reg=0.0, fit_intercept=False,
                              thresholds=candidate_thresholds(ds.X, None))
    rounds = mip_boosting(problem, variant="stagewise", solver=backend,
                          time_limit_per_round=60)
    assert len(rounds) == k and all(r.is_optimal for r in rounds)
    assert rounds[-1].risk == pytest.approx(lemma2(k, D), rel=1e-7)
    # idealized boosting covers one point per round, in order (Lemma 2's proof)
    final = rounds[-1].ensemble
    assert final is not None
    Q = final.query_matrix(ds.X)
    assert np.array_equal(Q, np.eye(2 * k - 1)[:, :k])
    # risks decrease and every round's bound is valid for it
    risks = boosting_risks(rounds)
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(risks))
    assert all(r.bound <= r.risk + 1e-9 for r in rounds)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [2, 3])
def test_exact_mip_certifies_lemma1_on_alternating_data(backend: str, k: int) -> None:
    _skip_missing(backend)
    D = _delta(k)
    X, y = alternating(k, D)
    ds = Dataset.from_arrays(X, y)
    res = solve(IntervalCoverMIP(Language(k, fit_intercept=False), reg=0.0), ds, solver=backend,
                                                                  budget=Budget.from_time_limit(60))
    # reg = 0, squared loss: the weight box is proved (basic optimal solutions), so this
    # is a global certificate
    assert res.bound_valid and res.is_optimal
    assert res.risk <= lemma1(k, D) + 1e-12
    assert res.lower_bound >= res.risk - 1e-6 * max(res.risk, 1e-10) - 1e-9
    # Theorem 1's gap is realised: boosting minus optimum
    assert lemma2(k, D) - res.risk >= lemma2(k, D) - lemma1(k, D) - 1e-9


def _greedy_corrective(ds: Dataset, ths: list[np.ndarray], k: int, reg: float) -> list[float]:
    G = threshold_groups(ds.X, ths)
    g = len(ths[0]) + 1
    boxes = [((G[:, 0] >= a) & (G[:, 0] <= b)).astype(float)
             for a in range(g) for b in range(a, g)]
    chosen: list[np.ndarray] = []
    out = []
    for _ in range(k):
        best = min(((fit_weights(np.column_stack([*chosen, q]), ds.y, "squared", reg,
                                 True).risk, i) for i, q in enumerate(boxes)))
        chosen.append(boxes[best[1]])
        out.append(best[0])
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_corrective_mip_boosting_is_forward_selection(backend: str) -> None:
    _skip_missing(backend)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=12)
    ds = Dataset.from_arrays(X, y)
    ths = candidate_thresholds(ds.X, 4)
    rounds = mip_boosting(KRuleProblem.of(ds, 3, reg=0.01, fit_intercept=True, thresholds=ths),
                          variant="corrective", solver=backend, time_limit_per_round=60)
    assert all(r.is_optimal for r in rounds)
    expected = _greedy_corrective(ds, ths, 3, 0.01)
    assert boosting_risks(rounds) == pytest.approx(expected, rel=1e-6)


def test_stagewise_round_keeps_earlier_weights() -> None:
    pytest.importorskip("highspy")
    rng = np.random.default_rng(8)
    X = rng.normal(size=(10, 2))
    y = X[:, 0] - X[:, 1] + 0.2 * rng.normal(size=10)
    ds = Dataset.from_arrays(X, y)
    problem = KRuleProblem.of(ds, 2, reg=0.1, thresholds=candidate_thresholds(ds.X, 3))
    rounds = mip_boosting(problem, variant="stagewise", solver="highs",
                          time_limit_per_round=60)
    first, second = rounds[0].ensemble, rounds[1].ensemble
    assert first is not None and second is not None
    assert first.intercept == pytest.approx(float(np.mean(y)))  # f^(0), fixed from round 1
    assert second.intercept == pytest.approx(float(np.mean(y)))
    assert second.rules[0].weight == pytest.approx(first.rules[0].weight)
    assert second.rules[0].same_body(first.rules[0])
    assert rounds[1].risk <= rounds[0].risk + 1e-12


@pytest.mark.parametrize("loss", ["logistic", "poisson"])
def test_stagewise_rounds_match_exhaustive_line_searches(loss: str) -> None:
    pytest.importorskip("highspy")
    from rulemip.losses import get_loss
    from rulemip.testing.brute_force import distinct_boxes

    rng = np.random.default_rng(17)
    X = rng.integers(0, 5, size=(12, 2)).astype(float)
    if loss == "logistic":
        y = np.where(rng.random(12) < 0.2 + 0.15 * X[:, 0], 1, 0)
    else:
        y = rng.poisson(0.5 + 0.4 * X[:, 1]).astype(float)
    ds = Dataset.from_arrays(X, y, loss=loss)
    ths = candidate_thresholds(ds.X, 2)
    reg = 0.3
    problem = KRuleProblem.of(ds, 2, loss=loss, reg=reg, fit_intercept=True, thresholds=ths)
    rounds = mip_boosting(problem, variant="stagewise", solver="highs",
                          time_limit_per_round=60)
    # exhaustive stagewise: intercept fixed at the best constant, then per round the box
    # and weight minimizing R_λ(f + β q) with the earlier weights kept
    _, Q = distinct_boxes(ds.X, ths, fit_intercept=False)
    lo = get_loss(loss)
    f = np.full(ds.n, lo.best_constant(ds.y))
    penalty = 0.0
    for rnd in rounds:
        best = min(((fit_weights(Q[:, [b]], ds.y, loss, reg, False, offset=f), b)
                    for b in range(Q.shape[1])), key=lambda rb: rb[0].risk)
        res, b = best
        beta = float(res.weights[0])
        risk = (float(lo.value(f + beta * Q[:, b], ds.y).sum()) + penalty
                + reg * beta * beta) / ds.n
        assert rnd.is_optimal
        assert rnd.risk == pytest.approx(risk, rel=1e-5)
        f = f + beta * Q[:, b]
        penalty += reg * beta * beta
