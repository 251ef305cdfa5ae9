r"""Engine conformance: one suite every exact engine runs, against brute force.

:func:`check_engine` takes an engine's factory — a k-rule engine's
``factory(problem) -> Formulation`` (:func:`rulemip.algorithms.solve.registry.
register_formulation`) or a pruning engine's ``factory(**settings)``
(:func:`rulemip.algorithms.pruning.driver.register_pruning_engine`) — and runs it on
instances small enough to enumerate (:mod:`rulemip.testing.brute_force`), asserting the
contract of docs/explanation/solving.md:

* **optimal never above the optimum** — an ``OPTIMAL`` result is the brute-force optimum
  within the gap it claims;
* **bounds never above it** — every reported lower bound is at most the optimum, also
  when a work limit stopped the search (**a stopped search returns a valid bound**);
* **the language respected** — a k-rule model has at most ``n_rules`` rules of at most
  ``max_rule_length`` features on candidate thresholds, its risk the one recomputed from
  the data; a pruning selection keeps no node together with an ancestor and stays within
  the budget :math:`a^\top z \le K`;
* **deterministic work limits honoured** — under a work limit the search ends, names
  the limit when it did not finish, and gives the same answer twice;
* **k-rule certificates verify** (:func:`rulemip.certify.verify`).

A typed refusal up front (:class:`~rulemip.exceptions.InvalidParameterError`,
:class:`~rulemip.exceptions.UnsupportedCapabilityError`,
:class:`~rulemip.exceptions.BackendUnavailableError`: "not my problem", "no backend for
it") passes for that instance. The suite is small on purpose (a dozen rows, work limits):
every built-in engine runs it in ``tests/conformance/``, and a new engine ends its how-to
with the one call (docs/howto/add_formulation.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.pruning.driver import PRUNING_ENGINES, PruningFit, run_pruning
from rulemip.algorithms.solve.driver import solve
from rulemip.algorithms.solve.registry import ENGINES, engine_spec
from rulemip.budget import Budget
from rulemip.certify import verify
from rulemip.certify.certificate import make_certificate
from rulemip.data import Dataset, candidate_thresholds
from rulemip.exceptions import (
    BackendUnavailableError,
    InvalidParameterError,
    UnsupportedCapabilityError,
)
from rulemip.formulations.node_matrix import NodeMatrix, extract_nodes
from rulemip.formulations.result import ExactResult
from rulemip.formulations.tree_pruning import TreePruningCIP
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.result import Limit, TerminationReason
from rulemip.testing.brute_force import brute_force_optimum, brute_force_pruning

__all__ = ["KINDS", "KRULE_CASES", "PRUNING_CASES", "EngineCheck", "check_engine",
           "engine_kind", "registered_factories"]

FloatArray = NDArray[np.float64]
#: the kinds of engine :func:`check_engine` knows
KINDS = ("k-rule", "pruning")
#: what an engine may raise up front instead of solving an instance
REFUSALS = (InvalidParameterError, UnsupportedCapabilityError, BackendUnavailableError)
#: relative slack of "never above the optimum" (the driver's refutation tolerance)
TOL = 1e-7
#: the time a run may take at most (the instances take milliseconds; a limit, not a goal)
SECONDS = 30.0
#: the deterministic work limits the stopped runs are given
WORK_LIMITS = (1, 40)


@dataclass(frozen=True)
class KRuleCase:
    """A k-rule instance: ``n`` rows of ``d`` features from ``seed``, the problem's
    settings, and two candidate thresholds per feature."""

    seed: int
    n_rules: int
    loss: str = "squared"
    reg: float = 0.05
    fit_intercept: bool = True
    max_rule_length: int | None = None
    n: int = 12
    d: int = 2

    def problem(self) -> tuple[KRuleProblem, FloatArray, FloatArray]:
        """The problem, and ``X``, ``y`` as a user gives them (labels 0/1 for logistic)."""
        rng = np.random.default_rng(self.seed)
        X = np.round(rng.normal(size=(self.n, self.d)), 2)
        signal = np.where(X[:, 0] > 0.1, 1.5, -0.5) + 0.6 * (X[:, 1] < -0.2)
        y = signal + 0.3 * rng.normal(size=self.n)
        if self.loss == "logistic":
            y = (y > np.median(y)).astype(float)
        elif self.loss == "poisson":
            y = np.round(np.exp(0.5 * signal))
        ds = Dataset.from_arrays(X, y, loss=self.loss)
        problem = KRuleProblem.of(ds, self.n_rules, loss=self.loss, reg=self.reg,
                                  fit_intercept=self.fit_intercept,
                                  thresholds=candidate_thresholds(X, 2),
                                  max_rule_length=self.max_rule_length)
        return problem, X, y


#: the k-rule instances: one and two rules, with and without an intercept, a length cap,
#: a classification loss
KRULE_CASES: tuple[KRuleCase, ...] = (
    KRuleCase(0, 1),
    KRuleCase(1, 2, reg=0.1, max_rule_length=1),
    KRuleCase(2, 2, reg=0.02, fit_intercept=False),
    KRuleCase(3, 1, loss="logistic", reg=0.1),
    KRuleCase(4, 3, reg=0.1, max_rule_length=1),
)


@dataclass(frozen=True)
class PruningCase:
    """A pruning instance: a two-tree boosted ensemble of depth 2 on ``n`` rows from
    ``seed``, the cost ``attribute``, the budget ``K`` and γ."""

    seed: int
    attribute: str
    K: float
    gamma: float
    n: int = 25

    def nodes(self) -> tuple[NodeMatrix, FloatArray]:
        from sklearn.ensemble import GradientBoostingRegressor

        rng = np.random.default_rng(self.seed)
        X = rng.normal(size=(self.n, 3))
        y = X[:, 0] + (X[:, 2] > 0.3) - 0.8 * (X[:, 1] > 0) + 0.2 * rng.normal(size=self.n)
        est = GradientBoostingRegressor(n_estimators=2, max_depth=2, random_state=0)
        est.fit(X, y)
        return extract_nodes(est, X, y), y - y.mean()


PRUNING_CASES: tuple[PruningCase, ...] = (
    PruningCase(3, "rule", 2, 1.0),
    PruningCase(4, "depth", 3, 0.5),
)


@dataclass(frozen=True)
class EngineCheck:
    """What :func:`check_engine` ran: the engine's kind, the instances it solved, those it
    refused up front, the results proved optimal (checked against brute force) and the
    work-limited runs that stopped at their limit (their bounds checked)."""

    kind: str
    solved: int
    refused: int
    optimal: int
    stopped: int


def engine_kind(factory: Callable[..., Any]) -> str:
    """``"pruning"`` for a factory registered as a pruning engine, else ``"k-rule"``."""
    return "pruning" if any(f is factory for f in PRUNING_ENGINES.values()) else "k-rule"


def check_engine(factory: Callable[..., Any], *, kind: str | None = None,
                 optimum: Callable[[KRuleProblem], float | None] | None = None
                 ) -> EngineCheck:
    """Run the engine of ``factory`` against brute force (module docstring); raises
    ``AssertionError`` naming the instance and the broken promise. ``kind``: ``"k-rule"``
    or ``"pruning"`` (default: :func:`engine_kind`). ``optimum(problem)``: the optimum of
    the engine's own problem on an instance when it solves a restriction of the k-rule
    problem (nonnegative weights, say), ``None`` for an instance it has no oracle for
    (skipped); default :func:`~rulemip.testing.brute_force.brute_force_optimum`."""
    kind = engine_kind(factory) if kind is None else kind
    if kind == "k-rule":
        return _check_krule(factory, optimum or _brute_force)
    if kind == "pruning":
        return _check_pruning(factory)
    raise InvalidParameterError(f"`kind` must be one of {KINDS}; got {kind!r}.")


def registered_factories() -> dict[tuple[str, str], Callable[..., Any]]:
    """Every registered engine's factory by ``(kind, name)``."""
    out: dict[tuple[str, str], Callable[..., Any]] = {
        ("k-rule", name): engine_spec(name).factory for name in ENGINES if name != "auto"}
    out.update({("pruning", name): f for name, f in PRUNING_ENGINES.items()})
    return out


# ---------------------------------------------------------------------- k-rule engines
def _close_above(value: float, optimum: float, gap: float = 0.0) -> bool:
    """``value`` is at most ``optimum`` (within the claimed ``gap`` and :data:`TOL`)."""
    return value <= optimum + (gap + TOL) * max(1.0, abs(optimum))


def _brute_force(problem: KRuleProblem) -> float:
    ds = problem.dataset
    return brute_force_optimum(ds.X, np.asarray(ds.y), problem.n_rules, loss=problem.loss,
                               reg=problem.reg, fit_intercept=problem.fit_intercept,
                               thresholds=problem.thresholds,
                               sample_weight=ds.sample_weight,
                               max_rule_length=problem.max_rule_length).risk


def _check_value(name: str, value: float, reported: float, best: float,
                 claimed_gap: float | None, where: str) -> None:
    """The objective ``value`` recomputed from the data is the ``reported`` one, never
    below the brute-force optimum ``best``, and — when optimality is claimed at
    ``claimed_gap`` — within that gap of it."""
    assert abs(value - reported) <= TOL * max(1.0, abs(value)), \
        f"{where}: reported {name} {reported!r}, recomputed {value!r}"
    assert best <= value + TOL * max(1.0, abs(best)), \
        f"{where}: {name} {value!r} below the brute-force optimum {best!r}"
    if claimed_gap is not None:
        assert _close_above(value, best, max(claimed_gap, 1e-6)), \
            f"{where}: OPTIMAL at {name} {value!r}, the optimum is {best!r}"


def _check_krule(factory: Callable[[KRuleProblem], Any],
                 optimum: Callable[[KRuleProblem], float | None]) -> EngineCheck:
    solved = refused = optimal = stopped = 0
    limited = False
    for case in KRULE_CASES:
        problem, X, y = case.problem()
        where = f"k-rule case {case}"
        best = optimum(problem)
        if best is None:
            continue
        try:
            result = _solve(factory, problem, Budget.from_time_limit(SECONDS))
        except REFUSALS:
            refused += 1
            continue
        _check_krule_result(result, problem, best, where)
        _check_certificate(result, problem, X, y, where)
        solved += 1
        optimal += result.is_optimal
        if case.n_rules == 2 and not limited:  # one two-rule instance under work limits
            limited = True
            stopped += _check_krule_work_limits(factory, problem, best, where)
    return EngineCheck("k-rule", solved, refused, optimal, stopped)


def _solve(factory: Callable[[KRuleProblem], Any], problem: KRuleProblem,
           budget: Budget) -> ExactResult:
    return solve(factory(problem), problem.dataset, budget=budget)


def _check_krule_result(result: ExactResult, problem: KRuleProblem, best: float,
                        where: str) -> None:
    assert _close_above(result.lower_bound, best), \
        f"{where}: lower bound {result.lower_bound!r} above the optimum {best!r}"
    if result.ensemble is None:
        assert not result.is_optimal, f"{where}: OPTIMAL without a model"
        return
    bad = problem.violations(result.ensemble)
    assert not bad, f"{where}: a model outside the language: {bad}"
    _check_value("risk", problem.risk(result.ensemble), result.risk, best,
                 result.gap if result.is_optimal else None, where)


def _check_certificate(result: ExactResult, problem: KRuleProblem, X: FloatArray,
                       y: FloatArray, where: str) -> None:
    if result.ensemble is None:
        return
    cert = make_certificate(
        problem, result.ensemble, risk=result.risk, lower_bound=result.lower_bound,
        status=result.termination.value, bound_valid=result.bound_valid,
        engine=result.engine, backend=result.backend)
    report = verify(cert, X, y, thresholds=problem.thresholds)
    assert report.ok, f"{where}: the certificate does not verify:\n{report}"


def _check_krule_work_limits(factory: Callable[[KRuleProblem], Any], problem: KRuleProblem,
                             best: float, where: str) -> int:
    runs = 0
    for work in WORK_LIMITS:
        at = f"{where}, work_limit={work}"
        try:
            first = _solve(factory, problem, Budget.from_time_limit(None, work_limit=work))
            again = _solve(factory, problem, Budget.from_time_limit(None, work_limit=work))
        except REFUSALS:
            continue
        _check_krule_result(first, problem, best, at)
        _check_stop(first.termination, first.limit, at)
        assert (first.termination, first.limit, first.risk, first.lower_bound) == \
            (again.termination, again.limit, again.risk, again.lower_bound), \
            f"{at}: two runs differ: {first.risk!r}/{first.lower_bound!r} vs " \
            f"{again.risk!r}/{again.lower_bound!r}"
        runs += not first.is_optimal
    return runs


def _check_stop(termination: TerminationReason, limit: Limit | None, where: str) -> None:
    """A search under a work limit either proved its result or names why it stopped
    (never the wall clock: the limit is the work)."""
    if termination is TerminationReason.OPTIMAL:
        return
    assert limit is not Limit.TIME, f"{where}: stopped by time under a work limit"


# ---------------------------------------------------------------------- pruning engines
def _check_pruning(factory: Callable[..., Any]) -> EngineCheck:
    solved = refused = optimal = stopped = 0
    for case in PRUNING_CASES:
        nodes, yc = case.nodes()
        cip = TreePruningCIP(nodes.M, yc, case.gamma)
        cost = nodes.attribute(case.attribute)  # type: ignore[arg-type]
        best = brute_force_pruning(nodes, cip.value, cost, budget=case.K)[0]
        where = f"pruning case {case}"
        try:
            fit = _prune(factory, case, nodes, yc, Budget.from_time_limit(SECONDS))
        except REFUSALS:
            refused += 1
            continue
        _check_pruning_fit(fit, case, nodes, cip, cost, best, where)
        solved += 1
        optimal += fit.result.is_optimal
        if case is PRUNING_CASES[0]:
            for work in WORK_LIMITS:
                at = f"{where}, work_limit={work}"
                runs = [_prune(factory, case, nodes, yc,
                               Budget.from_time_limit(None, work_limit=work))
                        for _ in range(2)]
                _check_pruning_fit(runs[0], case, nodes, cip, cost, best, at)
                _check_stop(runs[0].result.termination, runs[0].result.limit, at)
                a, b = (r.result for r in runs)
                assert (a.termination, a.value, a.lower_bound) == \
                    (b.termination, b.value, b.lower_bound), f"{at}: two runs differ"
                stopped += not a.is_optimal
    return EngineCheck("pruning", solved, refused, optimal, stopped)


def _prune(factory: Callable[..., Any], case: PruningCase, nodes: NodeMatrix,
           yc: FloatArray, budget: Budget) -> PruningFit:
    return run_pruning(factory(), nodes, yc, max_cost=case.K, attribute=case.attribute,
                       gamma=case.gamma, budget=budget)


def _check_pruning_fit(fit: PruningFit, case: PruningCase, nodes: NodeMatrix,
                       cip: TreePruningCIP, cost: FloatArray, best: float,
                       where: str) -> None:
    res = fit.result
    if math.isfinite(res.lower_bound):
        assert _close_above(res.lower_bound, best), \
            f"{where}: lower bound {res.lower_bound!r} above the optimum {best!r}"
    if not math.isfinite(res.value):
        assert not res.is_optimal, f"{where}: OPTIMAL without a selection"
        return
    selected = {int(s) for s in fit.support}
    z = np.zeros(nodes.n_nodes)
    z[list(selected)] = 1.0
    assert float(cost @ z) <= case.K + 1e-9, f"{where}: the selection costs {cost @ z}"
    parent = np.asarray(nodes.parent)
    for s in selected:
        p = int(parent[s])
        while p >= 0:
            assert p not in selected, f"{where}: node {s} selected with its ancestor {p}"
            p = int(parent[p])
    _check_value("q", float(cip.value(z)), res.value, best,
                 max(res.gap, 1e-4) if res.is_optimal else None, where)
