"""Issue 23, item 1: every built-in engine is a formulation run by ``driver.solve`` on one
path — one backend resolution per fit, one decode, one status, honest engine/method/
backend fields."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import rulemip.solvers.base as solver_base
from rulemip import ExactRuleEnsembleRegressor
from rulemip.algorithms.fit_plan import solve_exact
from rulemip.algorithms.krule.box_selection import BoxSelectionSearch
from rulemip.algorithms.krule.column_generation import ColumnGeneration
from rulemip.algorithms.solve.driver import solve
from rulemip.algorithms.solve.registry import engine_spec
from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.formulations.protocol import (
    Formulation,
    OracleFormulation,
    PricingHook,
    RelaxationHook,
    SearchOutcome,
)
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.status import RefutedBoundWarning


def _data(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] > 0.2, 1.0, 0.0) + 0.5 * (X[:, 1] < -0.3) \
        + rng.normal(scale=0.1, size=n)
    return X, y


def test_oracle_engines_are_formulations_with_their_hooks() -> None:
    assert isinstance(BoxSelectionCIP(Language(2)), Formulation)
    assert not isinstance(BoxSelectionCIP(Language(2)), OracleFormulation)  # the model only
    search = BoxSelectionSearch(Language(2))
    assert isinstance(search, OracleFormulation) and isinstance(search, RelaxationHook)
    cg = ColumnGeneration(Language(2))
    assert isinstance(cg, OracleFormulation) and isinstance(cg, PricingHook)
    assert BoxSelectionSearch(Language(2), method="bnb").engine == "cip-bnb"


@pytest.mark.parametrize("engine", ["cip", "cg"])
def test_one_backend_resolution_per_fit(engine: str, monkeypatch: Any) -> None:
    """The estimator resolves ``solver`` once; solve_exact, the driver and every outer-
    approximation master (relaxation, integer masters, column generation's restricted
    relaxations and integer phases) reuse that backend."""
    calls: list[str] = []
    real = solver_base.get_backend

    def counting(name: str, **kwargs: Any) -> Any:
        calls.append(name)
        return real(name, **kwargs)

    monkeypatch.setattr(solver_base, "get_backend", counting)
    X, y = _data()
    est = ExactRuleEnsembleRegressor(2, reg=0.05, max_thresholds=3, engine=engine,
                                     solver="highs", time_limit=30, preset=None)
    est.fit(X, y)
    assert est.result_.engine == engine
    assert calls == ["highs"], calls


@pytest.mark.parametrize(("engine", "method", "uses_backend"), [
    ("cip", "enumeration", False), ("cip-bnb", "bnb", False), ("cg", "pricing", True),
    ("mip", "native", True), ("cell-bnb", "sweep bnb", False)])
def test_results_name_the_engine_method_and_backend(engine: str, method: str,
                                                    uses_backend: bool) -> None:
    X, y = _data(40)
    ds = Dataset.from_arrays(X, y)
    ths = candidate_thresholds(X, 2)
    res = solve_exact(KRuleProblem.of(ds, 2, reg=0.05, thresholds=ths), engine=engine,
                      solver="highs"
                      if engine != "mip" else "scip", budget=Budget.from_time_limit(60))
    assert res.engine == engine and res.method == method
    assert (res.backend != "") is uses_backend
    assert res.is_optimal
    if engine in ("cip", "cip-bnb", "cell-bnb"):
        assert res.n_boxes > 0  # the built model's boxes (was always 0 on the driver)


def test_the_driver_decides_the_status_of_an_oracle_search() -> None:
    """A search that claims a bound above the risk of its own point is refuted by the
    driver's one promote: the bound falls back to the built model's safe bound and the
    result is not optimal."""

    class Overclaiming(BoxSelectionSearch):
        def search(self, built: Any, **kwargs: Any) -> SearchOutcome:
            honest = super().search(built, **kwargs)
            assert honest.x is not None
            risk = built.decode(honest.x)[1]
            return SearchOutcome(x=honest.x, lower_bound=risk * 1.5 + 1.0, finished=True,
                                 method="overclaim")

    X, y = _data(40)
    ds = Dataset.from_arrays(X, y)
    formulation = Overclaiming(Language(2, candidate_thresholds(X, 2)), reg=0.05)
    with pytest.warns(RefutedBoundWarning):
        res = solve(formulation, ds, solver="highs", budget=Budget.from_time_limit(30))
    assert not res.is_optimal and res.ensemble is not None
    safe = formulation.build(ds).safe_bound
    assert res.lower_bound == pytest.approx(safe) and res.lower_bound <= res.risk
    assert math.isfinite(res.gap) and res.method == "overclaim"


def _probe_problem(loss: str, reg: float) -> KRuleProblem:
    X, y = _data(12)
    if loss == "logistic":
        y = np.where(y > np.median(y), 1.0, -1.0)
    elif loss == "poisson":
        y = np.round(np.exp(0.3 * y))
    ds = Dataset.from_arrays(X, y, loss=loss)
    return KRuleProblem.of(ds, 1, loss=loss, reg=reg, thresholds=candidate_thresholds(X, 2))


def test_cip_and_cg_registered_as_formulations_in_their_modules() -> None:
    problem = _probe_problem("squared", 0.1)
    for engine, cls in (("cip", BoxSelectionSearch), ("cip-bnb", BoxSelectionSearch),
                        ("cg", ColumnGeneration)):
        spec = engine_spec(engine)
        _needs, tangent_cuts = spec.solver_needs(problem)
        assert tangent_cuts is False  # an oracle search needs its master, no tangent cuts
        assert isinstance(spec.factory(problem), cls)


def test_declared_solver_needs_equal_what_a_probe_formulation_asks() -> None:
    """Every built-in formulation engine declares its ``needs`` (no probe is built to check
    a solver); the declaration equals what a probe formulation's ``needs()`` returns, and
    whether it is an oracle, for every loss it takes and ridge 0, 1e-3 and 1."""
    from rulemip.algorithms.solve.registry import ENGINES
    from rulemip.formulations.protocol import OracleFormulation

    builtin = ("cip", "cip-bnb", "mip", "cg", "cell-bnb", "kbox")
    # every built-in engine (other tests may have registered examples of their own)
    assert set(builtin) <= set(ENGINES)
    for engine in builtin:
        spec = engine_spec(engine)
        assert spec.needs is not None and spec.oracle is not None, engine
        for loss in spec.losses or ("squared", "logistic", "poisson"):
            for reg in (0.0, 1e-3, 1.0):
                problem = _probe_problem(loss, reg)
                probe = spec.factory(_probe_problem(loss, reg if reg > 0 else 1e-3))
                needs, tangent_cuts = spec.solver_needs(problem)
                assert needs == probe.needs(), (engine, loss, reg)
                assert tangent_cuts == (not isinstance(probe, OracleFormulation))


def test_a_declared_formulation_is_never_built_to_check_a_solver() -> None:
    """With ``needs``/``oracle`` declared, asking what the engine needs builds nothing (the
    factory here would fail if called); the two are declared together or not at all."""
    from rulemip.algorithms.solve.registry import register_formulation, unregister
    from rulemip.exceptions import InvalidParameterError
    from rulemip.solvers.base import Capability

    def factory(*args, **kwargs):
        raise AssertionError("a probe was built")

    register_formulation("declared-test", factory, needs={Capability.LP}, oracle=False)
    try:
        assert engine_spec("declared-test").solver_needs(_probe_problem("squared", 0.0)) \
            == ({Capability.LP}, True)
    finally:
        unregister("declared-test")
    with pytest.raises(InvalidParameterError, match="together"):
        register_formulation("half-declared", factory, needs=frozenset())
