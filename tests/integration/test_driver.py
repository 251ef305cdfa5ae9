"""The driver: a limit returns the best known model, the registry dispatches, and every
engine's result is re-checked against the data."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from rulemip.algorithms.fit_plan import solve_exact
from rulemip.algorithms.solve import registry
from rulemip.algorithms.solve.driver import ENGINES, register_method, solve
from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds
from rulemip.exceptions import InvalidParameterError, SolverError
from rulemip.formulations.interval_cover import IntervalCoverMIP
from rulemip.formulations.result import ExactResult
from rulemip.rules import Condition, Rule, RuleEnsemble
from rulemip.solvers import Capability, Limit, SolveResult, TerminationReason
from rulemip.solvers.status import RefutedBoundWarning


class NothingFound:
    """A backend that runs out of time before finding anything (as SCIP did on a 5 s
    limit with n_rules=8 in the hardening review)."""

    def __init__(self) -> None:
        # claims every model natively, so the driver calls it directly (no tangent cuts)
        self.name, self.install_hint = "nothing", "-"
        self.capabilities = frozenset(Capability) - {Capability.PERSISTENT}
        self.unsupported_combinations: tuple[frozenset[Capability], ...] = ()
        self.calls: list[float | None] = []

    def available(self) -> bool:
        return True

    def version(self) -> str:
        return "0"

    def solve(self, model: Any, options: Any = None, start: Any = None) -> SolveResult:
        self.calls.append(None if options is None else options.time_limit)
        return SolveResult(TerminationReason.NO_SOLUTION_FOUND, limit=Limit.TIME,
                           backend=self.name)

    def persistent(self, model: Any) -> Any:
        raise NotImplementedError


def _data() -> Dataset:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 2))
    return Dataset.from_arrays(X, X[:, 0] + 0.3 * rng.normal(size=30))


def test_a_limit_returns_the_warm_start_never_an_error() -> None:
    ds = _data()
    ths = candidate_thresholds(ds.X, 3)
    warm = RuleEnsemble([Rule([Condition(0, float(ths[0][1]), math.inf, "x1")], 1.0)],
                        0.0, "squared")
    backend = NothingFound()
    res = solve(IntervalCoverMIP(2, reg=0.01, thresholds=ths), ds, solver=backend,  # type: ignore[arg-type]
                warm_start=warm, budget=Budget.from_time_limit(5.0))
    assert res.ensemble is not None
    assert res.termination is TerminationReason.FEASIBLE and res.limit is Limit.TIME
    assert any("warm start" in n for n in res.notes)
    assert res.ensemble.risk(ds.X, ds.y, reg=0.01) == pytest.approx(res.risk, rel=1e-9)
    # the backend got the time left after building, not the whole limit
    assert backend.calls and backend.calls[0] is not None and backend.calls[0] <= 5.0
    without = solve(IntervalCoverMIP(2, reg=0.01, thresholds=ths), ds, solver=backend)  # type: ignore[arg-type]
    assert without.ensemble is None
    assert without.termination is TerminationReason.NO_SOLUTION_FOUND


class _BuildWithoutBudget(IntervalCoverMIP):
    """The interval cover built without a budget (a formulation whose build cannot stop)."""

    budgeted_build = False

    def build_model(self, dataset: Dataset, *, backend: Any, native: bool,  # type: ignore[override]
                    warm_start: Any = None) -> Any:
        return super().build_model(dataset, backend=backend, native=native,
                                   warm_start=warm_start)


def test_an_expired_budget_reaches_the_backend_as_zero_time() -> None:
    ds = _data()
    backend = NothingFound()
    solve(_BuildWithoutBudget(1, reg=0.01, max_thresholds=2), ds, solver=backend,  # type: ignore[arg-type]
          budget=Budget.from_time_limit(0.0))
    assert backend.calls == [0.0]


def test_an_expired_budget_stops_a_build_that_asks_it() -> None:
    # the interval cover checks its budget between blocks of rows (issue 38, item 6): a
    # spent budget never reaches the backend, and nothing is claimed
    ds = _data()
    backend = NothingFound()
    res = solve(IntervalCoverMIP(1, reg=0.01, max_thresholds=2), ds, solver=backend,  # type: ignore[arg-type]
                budget=Budget.from_time_limit(0.0))
    assert backend.calls == []
    assert res.ensemble is None and res.termination is TerminationReason.NO_SOLUTION_FOUND
    assert res.limit is Limit.TIME and any("building the interval-cover" in n
                                           for n in res.notes)


def test_registered_method_receives_only_its_keywords() -> None:
    seen: dict[str, Any] = {}

    def engine(dataset: Dataset, n_rules: int, *, reg: float, thresholds: Any,
               time_limit: float | None) -> ExactResult:
        seen.update(reg=reg, time_limit=time_limit, n=n_rules)
        return solve_exact(dataset, n_rules, reg=reg, thresholds=thresholds, engine="cip")

    register_method("test-engine", engine, needs_positive_reg=True, replace=True)
    try:
        assert "test-engine" in ENGINES
        ds = _data()
        res = solve_exact(ds, 1, reg=0.1, thresholds=candidate_thresholds(ds.X, 2),
                          engine="test-engine", budget=Budget.from_time_limit(30.0))
        assert res.ensemble is not None and seen["n"] == 1 and seen["reg"] == 0.1
        assert seen["time_limit"] is not None and seen["time_limit"] <= 30.0
        with pytest.raises(InvalidParameterError, match="reg"):
            solve_exact(ds, 1, reg=0.0, thresholds=candidate_thresholds(ds.X, 2),
                        engine="test-engine")
    finally:
        registry._METHODS.pop("test-engine", None)
    assert "test-engine" not in ENGINES
    with pytest.raises(InvalidParameterError, match="engine"):
        solve_exact(_data(), 1, thresholds=[np.zeros(1), np.zeros(1)], engine="nope")


def test_a_wrong_claim_of_an_engine_is_withdrawn() -> None:
    ds = _data()
    ths = candidate_thresholds(ds.X, 2)

    def overclaiming(dataset: Dataset, n_rules: int, *, time_limit: float | None,
                     **kw: Any) -> ExactResult:
        res = solve_exact(dataset, n_rules, engine="cip", **kw)  # time is kw["budget"]
        # a bound above the risk and a risk that is not the ensemble's
        return dataclasses.replace(res, lower_bound=res.risk * 1.01, risk=res.risk * 0.9,
                                   termination=TerminationReason.OPTIMAL, gap=0.0)

    register_method("overclaiming", overclaiming, replace=True)
    try:
        with pytest.warns(RefutedBoundWarning):
            res = solve_exact(ds, 1, reg=0.1, thresholds=ths, engine="overclaiming")
    finally:
        registry._METHODS.pop("overclaiming", None)
    assert res.termination is not TerminationReason.OPTIMAL
    assert res.ensemble is not None
    assert res.risk == pytest.approx(res.ensemble.risk(ds.X, ds.y, reg=0.1), rel=1e-12)
    assert res.lower_bound == 0.0


class Faulty(NothingFound):
    def solve(self, model: Any, options: Any = None, start: Any = None) -> SolveResult:
        raise SolverError("SCIP returned no status.")


def test_a_backend_fault_surfaces_as_solver_error_with_the_incumbent() -> None:
    ds = _data()
    ths = candidate_thresholds(ds.X, 3)
    warm = RuleEnsemble([Rule([Condition(0, float(ths[0][1]), math.inf, "x1")], 1.0)],
                        0.0, "squared")
    with pytest.raises(SolverError, match="no status") as info:
        solve(IntervalCoverMIP(2, reg=0.01, thresholds=ths), ds, solver=Faulty(),  # type: ignore[arg-type]
              warm_start=warm)
    best = info.value.result  # type: ignore[attr-defined]
    assert best.ensemble is not None and best.termination is TerminationReason.FEASIBLE
    assert best.risk == pytest.approx(best.ensemble.risk(ds.X, ds.y, reg=0.01), rel=1e-9)


def test_unable_solvers_are_refused_before_any_work() -> None:
    from rulemip.algorithms.solve.driver import check_solver
    from rulemip.exceptions import UnsupportedCapabilityError
    from rulemip.solvers import available_backends

    check_solver("cip", "highs")
    check_solver("mip", "highs", loss="logistic", reg=0.1)  # tangent cuts
    check_solver("cip-bnb", "auto")
    if "cbc" in available_backends():
        with pytest.raises(UnsupportedCapabilityError, match="persistent"):
            check_solver("cip", "cbc")
    if "cpsat" in available_backends():
        with pytest.raises(UnsupportedCapabilityError, match="master"):
            check_solver("mip", "cpsat", loss="logistic", reg=0.1)
        ds = _data()
        with pytest.raises(UnsupportedCapabilityError):
            solve_exact(ds, 1, reg=0.1, thresholds=candidate_thresholds(ds.X, 2),
                        engine="cip", solver="cpsat")


@pytest.mark.parametrize("spend", [True, False])
def test_a_search_that_ran_out_of_time_says_limit_time(spend: bool) -> None:
    """Issue 22: the warning and the CLI said `limit=gap` when the time limit had stopped
    the search (a phase that noticed the clock called its open gap a gap limit). With the
    budget spent the limit is named `time`; a search that ended by itself keeps `gap`."""
    import time

    ds = _data()
    ths = candidate_thresholds(ds.X, 2)
    seen: list[dict[str, Any]] = []

    def gap_ending(dataset: Dataset, n_rules: int, *, budget: Budget, callback: Any,
                   time_limit: float | None, **kw: Any) -> ExactResult:
        res = solve_exact(dataset, n_rules, engine="cip", **kw)
        if callback is not None:  # bounds only, as column generation reports them
            callback({"iteration": 1, "ub": res.risk, "lb": 0.5 * res.risk, "time": 0.0})
        while spend and not budget.expired():
            time.sleep(0.02)
        return dataclasses.replace(res, lower_bound=0.5 * res.risk, gap=0.5,
                                   termination=TerminationReason.FEASIBLE, limit=Limit.GAP)

    register_method("gap-ending", gap_ending, replace=True)
    try:
        res = solve_exact(ds, 1, reg=0.1, thresholds=ths, engine="gap-ending",
                          budget=Budget.from_time_limit(0.6), callback=seen.append)
    finally:
        registry._METHODS.pop("gap-ending", None)
    assert res.termination is TerminationReason.FEASIBLE
    assert res.limit is (Limit.TIME if spend else Limit.GAP)
    assert any("time limit ended" in n for n in res.notes) is spend
    assert seen and seen[0]["gap"] == pytest.approx(0.5)  # not inf: both bounds finite


@pytest.mark.filterwarnings("ignore::rulemip.solvers.status.RefutedBoundWarning")
@pytest.mark.parametrize("edit", ["long rule", "off grid", "too many rules"])
def test_a_model_outside_the_language_is_never_the_result(edit: str) -> None:
    """Issue 30, item 1: whatever an engine returns is a model of the problem's language
    (``n_rules``, ``max_rule_length``, the candidate thresholds) or is no model at all. An
    engine claiming ``optimal`` for a model outside it (a risk below the language's
    optimum) is refused by ``solve_exact``: the warm start is the incumbent, not optimal."""
    ds = _data()
    ths = candidate_thresholds(ds.X, 2)
    t0, t1 = float(ths[0][0]), float(ths[1][0])
    outside = {
        "long rule": [Rule([Condition(0, upper=t0), Condition(1, lower=t1)], 1.0)],
        "off grid": [Rule([Condition(0, upper=t0 + 0.123)], 1.0)],
        "too many rules": [Rule([Condition(0, upper=t0)], 1.0),
                           Rule([Condition(1, upper=t1)], 1.0)],
    }[edit]
    from rulemip.algorithms.local.rule_swaps import refit_ensemble

    forged, forged_risk = refit_ensemble(ds, outside, reg=0.1, fit_intercept=True)
    warm, warm_risk = refit_ensemble(ds, [Rule([Condition(0, lower=t0)], 1.0)], reg=0.1,
                                     fit_intercept=True)

    def outside_engine(dataset: Dataset, n_rules: int, **kw: Any) -> ExactResult:
        return ExactResult(ensemble=forged, risk=forged_risk, lower_bound=forged_risk,
                           gap=0.0, termination=TerminationReason.OPTIMAL)

    register_method("outside", outside_engine, replace=True)
    try:
        res = solve_exact(ds, 1, reg=0.1, thresholds=ths, max_rule_length=1,
                          engine="outside", warm_start=warm)
        cold = solve_exact(ds, 1, reg=0.1, thresholds=ths, max_rule_length=1,
                           engine="outside")
    finally:
        registry._METHODS.pop("outside", None)
    assert res.ensemble is warm and res.risk == pytest.approx(warm_risk, rel=1e-12)
    assert res.termination is not TerminationReason.OPTIMAL
    assert any("outside the problem's language" in n for n in res.notes)
    assert cold.ensemble is not None and len(cold.ensemble.rules) == 0  # intercept only
    assert cold.termination is not TerminationReason.OPTIMAL


def test_decide_refuses_a_decoded_model_outside_the_language() -> None:
    """Issue 30, item 1, at the one decode of every engine: a search whose point decodes
    to a rule restricting two features under ``max_rule_length=1`` does not give the
    result; the start (in the language) does, and the status is not optimal. Without a
    start there is no model."""
    from types import SimpleNamespace

    from rulemip.algorithms.solve.driver import decide
    from rulemip.formulations.protocol import SearchOutcome

    ds = _data()
    ths = candidate_thresholds(ds.X, 2)
    t0, t1 = float(ths[0][0]), float(ths[1][0])
    long_rule = RuleEnsemble([Rule([Condition(0, upper=t0), Condition(1, lower=t1)], 1.0)])
    short = RuleEnsemble([Rule([Condition(0, upper=t0)], 1.0)])
    point, start = np.array([1.0]), np.array([0.0])

    class Fake:
        engine = "fake"
        n_rules, max_rule_length, fit_intercept, thresholds = 1, 1, True, ths

        def decode_solution(self, built: Any, x: Any) -> Any:
            ens = long_rule if x is point else short
            return ens, float(ens.risk(ds.X, ds.y, reg=0.1)), []

    built = SimpleNamespace(notes=[], bound_valid=True, safe_bound=0.0, n_cells=0,
                            n_boxes=0)
    risk = float(long_rule.risk(ds.X, ds.y, reg=0.1))
    outcome = SearchOutcome(x=point, lower_bound=risk, finished=True)
    res = decide(Fake(), built, outcome, wall_time=0.0, start=start)  # type: ignore[arg-type]
    assert res.ensemble is short and res.termination is not TerminationReason.OPTIMAL
    assert any("outside the problem's language" in n for n in res.notes)
    none = decide(Fake(), built, outcome, wall_time=0.0)  # type: ignore[arg-type]
    assert none.ensemble is None and none.termination is not TerminationReason.OPTIMAL
