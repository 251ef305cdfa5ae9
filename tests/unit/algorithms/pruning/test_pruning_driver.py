"""The pruning family on one driver (issue 32, item 3): registered engines, one decide, one
status base shared with ExactResult."""

import math

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor

from rulemip.algorithms.pruning.driver import (
    PRUNING_ENGINES,
    PruningProblem,
    decide,
    register_pruning_engine,
    solve_pruning,
)
from rulemip.formulations.node_matrix import extract_nodes
from rulemip.formulations.protocol import SearchOutcome
from rulemip.formulations.result import ExactResult, PruningResult, SolveStatus
from rulemip.formulations.tree_pruning import TreePruningCIP
from rulemip.solvers.result import Limit, TerminationReason


def _instance(seed=3, n=30):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + (X[:, 2] > 0.3) - 0.8 * (X[:, 1] > 0) + 0.2 * rng.normal(size=n)
    est = GradientBoostingRegressor(n_estimators=2, max_depth=2, random_state=0).fit(X, y)
    return extract_nodes(est, X, y), y - y.mean()


class _Claimed:
    """A third-party engine that selects the given nodes and claims a bound."""

    def __init__(self, S=(), bound=-math.inf, finished=True, **settings):
        self.engine = "claimed"
        self.S, self.bound, self.finished = list(S), bound, finished

    def search(self, built, *, solver, budget, mip_gap, callback):
        return SearchOutcome(x=built.point(self.S), lower_bound=self.bound,
                             finished=self.finished, payload={"wall_time": 0.5})

    def decode(self, built, outcome):
        return built.cip.weights(outcome.x)

    def limit_warning(self, result):
        return None if result.is_optimal else "not optimal"

    def fitted_attributes(self, built, outcome):
        return {"claimed_": True}, {}


def test_builtin_engines_are_registered():
    assert {"exact", "path", "relax_round", "mip"} <= set(PRUNING_ENGINES)


def test_one_status_base():
    exact = ExactResult(None, 2.0, 1.0, 0.5, TerminationReason.FEASIBLE)
    pruning = PruningResult(3.0, 1.0, 0.5, TerminationReason.OPTIMAL, detail="record")
    assert isinstance(exact, SolveStatus) and isinstance(pruning, SolveStatus)
    assert exact.upper_bound == 2.0 and pruning.upper_bound == 3.0
    assert pruning.payload == "record" and exact.payload is None
    assert pruning.is_optimal and not exact.is_optimal


def test_decide_recomputes_q_and_promotes_once():
    nodes, y = _instance()
    register_pruning_engine("claimed", _Claimed)
    try:
        # no bound: a heuristic, feasible without a gap
        fit = solve_pruning(nodes, y, engine="claimed", n_rules=2, gamma=1.0, S=[1])
        assert fit.result.termination is TerminationReason.FEASIBLE
        assert fit.result.lower_bound == -math.inf and fit.result.gap == math.inf
        assert fit.attributes == {"claimed_": True} and fit.warning == "not optimal"
        q = fit.objective
        assert fit.result.value == q and fit.result.engine == "claimed"
        # a bound at q, finished: optimal (q recomputed from the data)
        fit = solve_pruning(nodes, y, engine="claimed", n_rules=2, gamma=1.0, S=[1],
                            bound=q)
        assert fit.result.is_optimal and fit.warning is None
        # a bound the recomputed q refutes falls back to 0 (q >= 0): no proof
        fit = solve_pruning(nodes, y, engine="claimed", n_rules=2, gamma=1.0, S=[1],
                            bound=2 * q + 1)
        assert not fit.result.is_optimal and fit.result.lower_bound == 0.0
        # stopped at a limit: feasible, the limit named
        formulation = _Claimed(S=[1], bound=0.0)
        built = PruningProblem(nodes, y, 2.0, "rule", 1.0, TreePruningCIP(nodes.M, y, 1.0))
        out = SearchOutcome(x=built.point([1]), lower_bound=0.0, finished=False,
                            limit=Limit.TIME)
        fit = decide(formulation, built, out, mip_gap=1e-4, wall_time=1.0)
        assert fit.result.termination is TerminationReason.FEASIBLE
        assert fit.result.limit is Limit.TIME and fit.result.wall_time == 1.0
    finally:
        PRUNING_ENGINES.pop("claimed", None)


def test_the_engines_agree_with_the_exact_optimum():
    pytest.importorskip("highspy")
    nodes, y = _instance()
    exact = solve_pruning(nodes, y, engine="exact", n_rules=2, gamma=1.0, mip_gap=1e-6)
    assert exact.result.is_optimal
    assert exact.result.lower_bound <= exact.objective * (1 + 1e-9)
    rr = solve_pruning(nodes, y, engine="relax_round", n_rules=2, gamma=1.0)
    assert rr.objective >= exact.objective * (1 - 1e-9)
    assert rr.result.lower_bound <= exact.objective * (1 + 1e-9)
    try:
        import pyscipopt  # noqa: F401
    except ImportError:
        return
    else:
        mip = solve_pruning(nodes, y, engine="mip", n_rules=2, gamma=1.0, mip_gap=1e-6,
                            solver="scip")
        assert mip.result.is_optimal
        assert mip.objective == pytest.approx(exact.objective, rel=1e-5)


def test_unknown_engine_is_refused():
    from rulemip.exceptions import InvalidParameterError

    nodes, y = _instance()
    with pytest.raises(InvalidParameterError, match="unknown pruning engine"):
        solve_pruning(nodes, y, engine="nope", n_rules=2)
