"""The how-to's formulation (examples/nonnegative_rules.py): registered in one file, solved
by every backend that can take it, equal to brute force."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.optimize import nnls

from rulemip.algorithms.fit_plan import solve_exact
from rulemip.algorithms.solve.driver import solve
from rulemip.algorithms.solve.registry import ENGINES
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.exceptions import UnsupportedCapabilityError
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers import TerminationReason, available_backends
from rulemip.solvers.base import resolve_backend
from rulemip.testing.brute_force import distinct_boxes

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nonnegative_rules.py"


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("nonnegative_rules", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["nonnegative_rules"] = module
    spec.loader.exec_module(module)
    return module


def _data() -> tuple[Dataset, list[np.ndarray]]:
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(10, 2)).astype(float)
    y = 1.5 * (X[:, 0] >= 2) - 1.0 * (X[:, 1] >= 2) + rng.normal(scale=0.2, size=10)
    return Dataset.from_arrays(X, y), [np.array([0.5, 1.5]), np.array([1.5])]


def _brute_force(ds: Dataset, ths: list[np.ndarray], k: int, reg: float) -> float:
    """min over multisets of k boxes of min_{β ≥ 0} (‖y − Qβ‖² + λ‖β‖²)/n (no intercept);
    a zero weight drops a rule, so multisets of exactly k cover "at most k"."""
    _, Q = distinct_boxes(ds.X, ths, fit_intercept=False)
    n = ds.n
    best = np.inf
    for combo in itertools.combinations_with_replacement(range(Q.shape[1]), k):
        A = np.vstack([Q[:, combo], np.sqrt(reg) * np.eye(k)])
        b = np.concatenate([ds.y, np.zeros(k)])
        _, resid = nnls(A, b)
        best = min(best, resid ** 2 / n)
    return float(best)


@pytest.mark.parametrize("backend", ["highs", "scip", "cbc", "cpsat", "pyomo"])
def test_nonnegative_rules_match_brute_force_on_every_capable_backend(backend: str) -> None:
    if backend not in available_backends():
        pytest.skip(f"{backend} not installed")
    module = _example()
    ds, ths = _data()
    k, reg = 2, 0.05
    formulation = module.NonnegativeRulesMIP(Language(k, ths, fit_intercept=False), reg=reg)
    try:
        resolve_backend(backend, formulation.needs())
    except UnsupportedCapabilityError:
        pytest.skip(f"{backend} can take neither the model nor its tangent-cut master")
    expected = _brute_force(ds, ths, k, reg)
    # 1e-5: the reported bound is lowered by the backend's feasibility tolerance times the
    # objective weight (CBC: 1e-7 x 2 on a risk of 0.13, a relative 1.5e-6), so a tighter
    # request cannot be certified honestly on every backend
    res = solve(formulation, ds, solver=backend, budget=Budget.from_time_limit(120), mip_gap=1e-5)
    assert res.termination is TerminationReason.OPTIMAL, res.notes
    assert res.risk == pytest.approx(expected, rel=1e-5, abs=1e-9)
    assert res.lower_bound <= expected + 1e-6
    assert res.ensemble is not None
    assert all(r.weight >= 0 for r in res.ensemble.rules)
    # the unconstrained optimum is better here: the constraint is really in the model
    problem = KRuleProblem.of(ds, k, reg=reg, fit_intercept=False, thresholds=ths)
    unconstrained = solve_exact(problem,
                                engine="mip", solver=backend, budget=Budget.from_time_limit(120),
                                mip_gap=1e-7)
    assert unconstrained.risk < expected - 1e-6


def test_registered_as_an_engine() -> None:
    _example()
    assert "mip-nonneg" in ENGINES
    ds, ths = _data()
    res = solve_exact(KRuleProblem.of(ds, 1, reg=0.05, fit_intercept=False, thresholds=ths),
                      engine="mip-nonneg", budget=Budget.from_time_limit(60))
    assert res.engine == "mip-nonneg" and res.ensemble is not None
    assert all(r.weight >= 0 for r in res.ensemble.rules)


def _registered_formulation_factories() -> dict[str, Any]:
    """The factory ``factory(problem) -> Formulation`` of every registered engine."""
    from rulemip.algorithms.solve.registry import engine_spec

    # "auto" is a choice among the engines, not an engine
    return {name: engine_spec(name).factory for name in ENGINES if name != "auto"}


def test_every_registered_formulation_implements_the_protocol() -> None:
    """``isinstance`` against the runtime-checkable protocols, for the built-in "mip" and
    the example's "mip-nonneg" (and any other formulation registered), and the built
    model against ``BuiltModel`` (what the example's decode and polish rely on)."""
    import rulemip
    from rulemip.formulations.protocol import BuiltModel, Formulation
    from rulemip.solvers.base import get_backend

    _example()
    factories = _registered_formulation_factories()
    assert {"mip", "mip-nonneg"} <= set(factories)
    ds, ths = _data()
    for name, factory in factories.items():
        formulation = factory(KRuleProblem.of(ds, 1, reg=0.05, thresholds=ths))
        assert isinstance(formulation, Formulation), name
        assert isinstance(formulation, rulemip.Formulation), name
        built = formulation.build_model(ds, backend=get_backend("highs"), native=True,
                                        warm_start=None)
        assert isinstance(built, BuiltModel), name
    assert not isinstance(object(), Formulation)


def test_example_polish_respects_the_sign_constraint() -> None:
    """The base's polish refits weights without the sign; the example returns its point
    only when every weight is nonnegative."""
    from rulemip.solvers.base import get_backend

    module = _example()
    ds, ths = _data()
    formulation = module.NonnegativeRulesMIP(Language(2, ths, fit_intercept=False), reg=0.05)
    built = formulation.build_model(ds, backend=get_backend("highs"), native=True)
    beta = built.block("beta")
    n_polished = n_refused = 0
    rng = np.random.default_rng(0)
    for _ in range(30):
        x = np.zeros(built.model.n_cols)
        sf = built.model.to_standard_form()
        lo, hi = np.maximum(sf.col_lower, -3), np.minimum(sf.col_upper, 3)
        x[:] = np.where(sf.integrality.astype(bool), np.round(rng.uniform(lo, hi)),
                        rng.uniform(lo, hi))
        base = formulation.base.polish(built, x)
        mine = formulation.polish(built, x)
        if base is None:
            assert mine is None
        elif np.any(base[beta] < 0):
            assert mine is None
            n_refused += 1
        else:
            np.testing.assert_array_equal(mine, base)
            n_polished += 1
    assert n_refused > 0  # the base really proposes negative weights here
