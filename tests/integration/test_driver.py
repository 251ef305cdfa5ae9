"""The driver: a limit returns the best known model, the registry dispatches, and every
engine's result is re-checked against the data."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from rulemip.algorithms.fit_decision import (
    FitState,
    PhaseOutcome,
    absorb,
    decide_fit,
    engine_outcome,
)
from rulemip.algorithms.fit_plan import solve_exact
from rulemip.algorithms.solve import registry
from rulemip.algorithms.solve.driver import solve
from rulemip.algorithms.solve.registry import ENGINES
from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds
from rulemip.exceptions import InvalidParameterError, SolverError
from rulemip.formulations.interval_cover import IntervalCoverMIP
from rulemip.formulations.result import ExactResult
from rulemip.rules import Condition, Rule, RuleEnsemble
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
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
    res = solve(IntervalCoverMIP(Language(2, ths), reg=0.01), ds,
                solver=backend,  # type: ignore[arg-type]
                warm_start=warm, budget=Budget.from_time_limit(5.0))
    assert res.ensemble is not None
    assert res.termination is TerminationReason.FEASIBLE and res.limit is Limit.TIME
    assert any("warm start" in n for n in res.notes)
    assert res.ensemble.risk(ds.X, ds.y, reg=0.01) == pytest.approx(res.risk, rel=1e-9)
    # the backend got the time left after building, not the whole limit
    assert backend.calls and backend.calls[0] is not None and backend.calls[0] <= 5.0
    without = solve(IntervalCoverMIP(Language(2, ths), reg=0.01), ds,
                    solver=backend)  # type: ignore[arg-type]
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
    solve(_BuildWithoutBudget(Language(1), reg=0.01, max_thresholds=2), ds, solver=backend,  # type: ignore[arg-type]
          budget=Budget.from_time_limit(0.0))
    assert backend.calls == [0.0]


def test_an_expired_budget_stops_a_build_that_asks_it() -> None:
    # the interval cover checks its budget between blocks of rows (issue 38, item 6): a
    # spent budget never reaches the backend, and nothing is claimed
    ds = _data()
    backend = NothingFound()
    res = solve(IntervalCoverMIP(Language(1), reg=0.01, max_thresholds=2), ds, solver=backend,  # type: ignore[arg-type]
                budget=Budget.from_time_limit(0.0))
    assert backend.calls == []
    assert res.ensemble is None and res.termination is TerminationReason.NO_SOLUTION_FOUND
    assert res.limit is Limit.TIME and any("building the interval-cover" in n
                                           for n in res.notes)


@pytest.mark.parametrize("checks_before_expiry", [0, 1, 2])
def test_an_expired_budget_stops_the_column_generation_build(checks_before_expiry) -> None:
    """Column generation's build asks the budget before the cell reduction, after it and
    before the search space (each O(n d) or more; issue 38, item 8): expired at any of
    them, nothing is built, searched or claimed."""
    from rulemip.algorithms.krule.column_generation import ColumnGeneration
    from rulemip.budget import use_clock

    ds = _data()
    calls = [0]

    def clock() -> float:       # check 1 creates the budget, the solve's coerce is none
        calls[0] += 1
        return 0.0 if calls[0] <= 1 + checks_before_expiry else 1e9

    reduced: list[int] = []
    cg = ColumnGeneration(Language(2), reg=0.01, max_thresholds=2)
    original = cg.cip.reduce

    def reduce(dataset: Dataset) -> Any:
        reduced.append(1)
        return original(dataset)

    cg.cip.reduce = reduce  # type: ignore[method-assign]
    with use_clock(clock):
        res = solve(cg, ds, budget=Budget.from_time_limit(10.0))
    assert res.ensemble is None and res.termination is TerminationReason.NO_SOLUTION_FOUND
    assert res.limit is Limit.TIME
    assert any("building the column-generation model" in n for n in res.notes)
    assert reduced == ([] if checks_before_expiry == 0 else [1])


def test_a_registered_factory_receives_the_problem() -> None:
    """The registry maps a name to ``factory(problem) -> Formulation``: the factory gets
    the one problem built at the surface, and the named engine's checks (``reg > 0``) run
    before any work."""
    seen: list[KRuleProblem] = []

    def factory(problem: KRuleProblem) -> IntervalCoverMIP:
        seen.append(problem)
        return IntervalCoverMIP(problem.language, **problem.keywords())

    registry.register_formulation("test-engine", factory, needs_positive_reg=True)
    try:
        assert "test-engine" in ENGINES
        ds = _data()
        problem = KRuleProblem.of(ds, 1, reg=0.1, thresholds=candidate_thresholds(ds.X, 2))
        res = solve_exact(problem, engine="test-engine", budget=Budget.from_time_limit(30.0))
        assert res.ensemble is not None and res.engine == "mip"
        assert seen and all(p is problem for p in seen)
        with pytest.raises(InvalidParameterError, match="reg"):
            solve_exact(KRuleProblem.of(ds, 1, reg=0.0, thresholds=problem.thresholds),
                        engine="test-engine")
    finally:
        registry.unregister("test-engine")
    assert "test-engine" not in ENGINES
    with pytest.raises(InvalidParameterError, match="engine"):
        solve_exact(KRuleProblem.of(_data(), 1, thresholds=[np.zeros(1), np.zeros(1)]),
                    engine="nope")


def _decided(result: ExactResult, problem: KRuleProblem, *,
             warm_start: RuleEnsemble | None = None, budget: Budget | None = None
             ) -> ExactResult:
    """What the fit decides of an engine's ``result`` (the plan: warm start, engine)."""
    state = FitState(problem, 1e-6)
    if warm_start is not None:
        absorb(state, PhaseOutcome(warm_start), "warm start")
    absorb(state, engine_outcome(result, problem, budget=budget, incumbent=state.model),
           "engine")
    return decide_fit(state, result)


def test_a_wrong_claim_of_an_engine_is_withdrawn() -> None:
    ds = _data()
    problem = KRuleProblem.of(ds, 1, reg=0.1, thresholds=candidate_thresholds(ds.X, 2))
    res = solve_exact(problem, engine="cip")
    # a bound above the risk and a risk that is not the ensemble's
    forged = dataclasses.replace(res, lower_bound=res.risk * 1.01, risk=res.risk * 0.9,
                                 termination=TerminationReason.OPTIMAL, gap=0.0)
    with pytest.warns(RefutedBoundWarning):
        res = _decided(forged, problem)
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
        solve(IntervalCoverMIP(Language(2, ths), reg=0.01), ds,
              solver=Faulty(),  # type: ignore[arg-type]
              warm_start=warm)
    best = info.value.result  # type: ignore[attr-defined]
    assert best.ensemble is not None and best.termination is TerminationReason.FEASIBLE
    assert best.risk == pytest.approx(best.ensemble.risk(ds.X, ds.y, reg=0.01), rel=1e-9)


def test_unable_solvers_are_refused_before_any_work() -> None:
    from rulemip.algorithms.solve.registry import engine_backend
    from rulemip.exceptions import UnsupportedCapabilityError
    from rulemip.solvers import available_backends

    ds = _data()
    squared = KRuleProblem.of(ds, 1, reg=0.1, thresholds=candidate_thresholds(ds.X, 2))
    logistic = KRuleProblem.of(Dataset.from_arrays(ds.X, ds.y > 0, loss="logistic"), 1,
                               loss="logistic", reg=0.1, thresholds=squared.thresholds)
    engine_backend("cip", "highs", squared)
    engine_backend("mip", "highs", logistic)  # tangent cuts
    engine_backend("cip-bnb", "auto", squared)
    if "cbc" in available_backends():
        with pytest.raises(UnsupportedCapabilityError, match="persistent"):
            engine_backend("cip", "cbc", squared)
    if "cpsat" in available_backends():
        with pytest.raises(UnsupportedCapabilityError, match="master"):
            engine_backend("mip", "cpsat", logistic)
        with pytest.raises(UnsupportedCapabilityError):
            solve_exact(squared, engine="cip", solver="cpsat")


@pytest.mark.parametrize("spend", [True, False])
def test_a_search_that_ran_out_of_time_says_limit_time(spend: bool) -> None:
    """Issue 22: the warning and the CLI said `limit=gap` when the time limit had stopped
    the search (a phase that noticed the clock called its open gap a gap limit). With the
    budget spent the limit is named `time`; a search that ended by itself keeps `gap`."""
    ds = _data()
    problem = KRuleProblem.of(ds, 1, reg=0.1, thresholds=candidate_thresholds(ds.X, 2))
    res = solve_exact(problem, engine="cip")
    gap_ending = dataclasses.replace(res, lower_bound=0.5 * res.risk, gap=0.5,
                                     termination=TerminationReason.FEASIBLE, limit=Limit.GAP)
    budget = Budget.from_time_limit(0.0 if spend else 60.0)
    res = _decided(gap_ending, problem, budget=budget)
    assert res.termination is TerminationReason.FEASIBLE
    assert res.limit is (Limit.TIME if spend else Limit.GAP)
    assert any("time limit ended" in n for n in res.notes) is spend


def test_progress_reports_the_gap_of_bounds_only_callbacks() -> None:
    """Engines that report only bounds (column generation) get ``gap`` filled in."""
    from rulemip.algorithms.solve.driver import with_gap

    seen: list[dict[str, Any]] = []
    cb = with_gap(seen.append)
    assert cb is not None
    cb({"iteration": 1, "ub": 2.0, "lb": 1.0, "time": 0.0})
    assert seen[0]["gap"] == pytest.approx(0.5)  # not inf: both bounds finite


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

    forged_result = ExactResult(ensemble=forged, risk=forged_risk, lower_bound=forged_risk,
                                gap=0.0, termination=TerminationReason.OPTIMAL)
    problem = KRuleProblem.of(ds, 1, reg=0.1, thresholds=ths, max_rule_length=1)
    res = _decided(forged_result, problem, warm_start=warm)
    cold = _decided(forged_result, problem)
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
