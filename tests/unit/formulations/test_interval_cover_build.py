"""Interval-cover MIP: model structure, bounds, encode/decode — no solver needed."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rulemip.data import Dataset, alternating, candidate_thresholds
from rulemip.exceptions import FormulationError, InvalidParameterError
from rulemip.formulations.interval_cover import (
    IntervalCoverMIP,
    max_det01,
    sublevel_interval,
)
from rulemip.losses import get_loss
from rulemip.rules import Condition, Rule, RuleEnsemble
from rulemip.rules.language import Language


def _tiny(seed: int = 0, n: int = 9, d: int = 2) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, d)).astype(float)
    y = rng.normal(size=n)
    return Dataset.from_arrays(X, y)


def test_max_det01_bounds_every_small_01_matrix() -> None:
    for n in (1, 2, 3):
        best = 0
        for bits in itertools.product((0.0, 1.0), repeat=n * n):
            best = max(best, round(abs(np.linalg.det(np.reshape(bits, (n, n))))))
        assert best <= max_det01(n)
    assert max_det01(0) == 1
    assert [max_det01(n) for n in (1, 2, 3, 4)] == [1, 1, 2, 3]  # Hadamard floor is tight here


@pytest.mark.parametrize("loss,y", [("squared", [0.3, -1.2]), ("logistic", [1.0, -1.0]),
                                    ("poisson", [0.0, 2.5])])
def test_sublevel_interval_contains_exactly_the_sublevel_set(loss: str, y: list[float]) -> None:
    ya = np.asarray(y)
    level = np.array([0.7, 1.9])
    lo, hi = sublevel_interval(loss, ya, level)
    grid = np.linspace(-30, 30, 20001)
    lossf = get_loss(loss)
    for i in range(len(ya)):
        inside = grid[lossf.value(grid, np.full_like(grid, ya[i])) <= level[i]]
        assert inside.min() >= lo[i] - 1e-9 and inside.max() <= hi[i] + 1e-9
        # and the bounds are (nearly) attained where finite
        if math.isfinite(lo[i]):
            assert abs(inside.min() - lo[i]) < 5e-3
        if math.isfinite(hi[i]):
            assert abs(inside.max() - hi[i]) < 5e-3


def test_model_sizes_use_groups_not_points() -> None:
    ds = _tiny()
    prob = IntervalCoverMIP(Language(2, candidate_thresholds(ds.X, 2)))
    built = prob.build(ds, linearization="bigm")
    S = int(built.offsets[-1])
    assert S == sum(len(o) for o in built.occupied) <= 2 * 3
    m = built.n_cells
    assert m <= ds.n
    assert built.model.var("z").shape == (m, 2)
    assert built.model.var("r").shape == (2, S)
    sf = built.model.to_standard_form()
    assert sf.loss_terms and not sf.indicators
    ind = prob.build(ds, linearization="indicator").model.to_standard_form()
    assert len(ind.indicators) == 2 * m * 2


def test_encode_decode_round_trip_and_start_is_feasible() -> None:
    ds = _tiny(3)
    ths = candidate_thresholds(ds.X)
    prob = IntervalCoverMIP(Language(3, ths), reg=0.1)
    built = prob.build(ds, linearization="bigm")
    rules = [Rule([Condition(0, ths[0][0], ths[0][2])], 0.5),
             Rule([Condition(1, -math.inf, ths[1][1]), Condition(0, ths[0][1], math.inf)], -1),
             Rule([Condition(1, ths[1][0], math.inf)], 2.0)]
    ens = RuleEnsemble(rules, 0.1)
    x = prob.encode(built, ens)
    sf = built.model.to_standard_form()
    assert sf.max_violation(x) < 1e-9
    dec, risk, solver_risk = prob.decode(built, x)
    # the same query vectors (in the model's rule order) and the start's objective equals
    # the recomputed risk of the refit weights
    Q_in = {tuple(r.query(ds.X)) for r in rules}
    Q_out = {tuple(r.query(ds.X)) for r in dec.rules}
    assert Q_in == Q_out
    # the model is in the units of y/s (interval_cover module docstring, "Units")
    assert built.objective_scale * sf.objective_value(x) == pytest.approx(solver_risk,
                                                                          rel=1e-9)
    assert risk == pytest.approx(solver_risk, rel=1e-7)


def test_symmetry_key_orders_encoded_rules() -> None:
    ds = _tiny(5)
    prob = IntervalCoverMIP(Language(3, candidate_thresholds(ds.X)))
    built = prob.build(ds, linearization="bigm")
    ths = candidate_thresholds(ds.X)
    rules = [Rule([Condition(0, ths[0][1], math.inf)], 1.0),
             Rule([Condition(0, -math.inf, ths[0][0])], 1.0),
             Rule([Condition(1, ths[1][0], math.inf)], 1.0)]
    x = prob.encode(built, RuleEnsemble(rules))
    sf = built.model.to_standard_form()
    rows = built.model.rows("symmetry").ids
    assert len(rows) == 2
    ax = sf.A[rows] @ x
    assert np.all(ax <= 1e-9)


def test_fixed_rules_and_more_rules_than_model() -> None:
    ds = _tiny(1)
    prob = IntervalCoverMIP(Language(1, candidate_thresholds(ds.X)))
    built = prob.build(ds, linearization="bigm")
    ens = RuleEnsemble([Rule([Condition(0, -math.inf, 1.5)], 1.0)] * 2)
    with pytest.raises(FormulationError):
        prob.encode(built, ens)


def test_proved_bound_contains_brute_force_optimum_weights() -> None:
    # reg = 0, squared: every basic optimum has |beta| <= B; check the best 2-rule model
    X, y = alternating(3, 0.1)
    ds = Dataset.from_arrays(X, y)
    prob = IntervalCoverMIP(Language(2, fit_intercept=False), reg=0.0)
    built = prob.build(ds, linearization="bigm")
    assert built.bound_valid
    from rulemip.refit import fit_weights

    n = ds.n
    boxes = [np.array([(a <= i <= b) for i in range(n)], float)
             for a in range(n) for b in range(a, n)]
    best = min((fit_weights(np.column_stack(c), ds.y, "squared", 0.0, False)
                for c in itertools.combinations_with_replacement(boxes, 2)),
               key=lambda r: r.risk)
    assert np.all(np.abs(best.weights) <= built.response_scale * built.weight_bound[0])


def test_logistic_without_reg_is_only_within_box() -> None:
    X = np.arange(6, dtype=float).reshape(-1, 1)
    y = np.array([0, 0, 1, 0, 1, 1])
    ds = Dataset.from_arrays(X, y, loss="logistic")
    built = IntervalCoverMIP(Language(2), loss="logistic", reg=0.0).build(ds, linearization="bigm")
    assert not built.bound_valid
    assert any("within" in n for n in built.notes)
    built2 = IntervalCoverMIP(Language(2), loss="logistic", reg=0.5).build(ds, linearization="bigm")
    assert built2.bound_valid


def test_bad_parameters() -> None:
    with pytest.raises(InvalidParameterError):
        IntervalCoverMIP(Language(0))
    with pytest.raises(InvalidParameterError):
        IntervalCoverMIP(Language(2), linearization="magic")
    with pytest.raises(InvalidParameterError):
        IntervalCoverMIP(Language(2), reg=-1.0)


def test_weight_box_is_translation_free_with_intercept() -> None:
    # reg = 0, squared, free intercept: shifting y shifts only the intercept box
    rng = np.random.default_rng(11)
    X = rng.integers(0, 4, size=(8, 1)).astype(float)
    y = rng.normal(size=8)
    ths = candidate_thresholds(X)
    boxes = []
    for a in range(len(ths[0]) + 1):
        for b in range(a, len(ths[0]) + 1):
            grp = np.searchsorted(ths[0], X[:, 0], side="left")
            q = ((grp >= a) & (grp <= b)).astype(float)
            if q.any():
                boxes.append(q)
    from rulemip.refit import fit_weights

    for shift in (0.0, 1000.0):
        ds = Dataset.from_arrays(X, y + shift)
        built = IntervalCoverMIP(Language(2, ths)).build(ds, linearization="bigm")
        assert built.bound_valid
        s = built.response_scale  # the model's unit (y/s)
        if shift == 0.0:
            B0 = s * built.weight_bound[0]
        else:
            assert s * built.weight_bound[0] == pytest.approx(B0, rel=1e-6)
        lo, hi = s * np.asarray(built.intercept_bounds)
        best, cols = min(((fit_weights(np.column_stack(c), ds.y, "squared", 0.0, True), c)
                          for c in itertools.combinations_with_replacement(boxes, 2)),
                         key=lambda rc: rc[0].risk)
        # the optimal predictions lie in the proved per-cell boxes; the intercept box moves
        # with the data
        f_opt = best.intercept + np.column_stack(cols) @ best.weights
        cell = built.reduction.cell_of_row
        assert np.all(f_opt >= s * built.f_bounds[0][cell] - 1e-9 * s)
        assert np.all(f_opt <= s * built.f_bounds[1][cell] + 1e-9 * s)
        if shift == 0.0:
            width, lo0 = hi - lo, lo
        else:
            assert hi - lo == pytest.approx(width, rel=1e-6)
            assert lo - lo0 == pytest.approx(shift, rel=1e-6)
