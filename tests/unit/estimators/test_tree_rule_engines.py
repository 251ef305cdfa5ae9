"""TreeRuleExtractor takes every registered pruning engine (issue 32): its validation reads
the pruning registry, a third-party engine fits end to end through the driver (which
decides its status), and the built-in ``"mip"`` engine agrees with ``"exact"``."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor

from rulemip.algorithms.pruning import driver
from rulemip.algorithms.pruning.driver import register_pruning_engine
from rulemip.estimators.tree_rules import TreeRuleExtractor, engines
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.protocol import SearchOutcome
from rulemip.formulations.tree_pruning import TreePruningCIP
from rulemip.solvers.result import Limit, TerminationReason

pytestmark = pytest.mark.solver


def _data(n=40, seed=0, p=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = 2 * (X[:, 0] > 0) + X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def _forest(X, y):
    return GradientBoostingRegressor(n_estimators=3, max_depth=2, random_state=0).fit(X, y)


class BestSingleNode:
    """A tiny third-party engine: the one node of least q (every node tried), claiming
    the bound 0 (q ≥ 0) and a finished search. Records the settings it was built with."""

    engine = "best_single"
    built_with: ClassVar[dict] = {}

    def __init__(self, **settings):
        BestSingleNode.built_with = dict(settings)

    def search(self, built, *, solver, budget, mip_gap, callback):
        m = built.nodes.n_nodes
        values = [built.cip.value(built.point([i])) for i in range(m)]
        best = int(np.argmin(values))
        return SearchOutcome(x=built.point([best]), lower_bound=0.0, finished=True,
                             method="scan", iterations=m, payload={"values": values})

    def decode(self, built, outcome):
        return built.cip.weights(np.round(outcome.x))

    def limit_warning(self, result):
        return None

    def fitted_attributes(self, built, outcome):
        return {"scan_values_": outcome.payload["values"]}, {}


@pytest.fixture
def registry():
    """The pruning registry restored after the test."""
    engines_before = dict(driver.PRUNING_ENGINES)
    descriptions_before = dict(driver.PRUNING_DESCRIPTIONS)
    yield
    driver.PRUNING_ENGINES.clear()
    driver.PRUNING_ENGINES.update(engines_before)
    driver.PRUNING_DESCRIPTIONS.clear()
    driver.PRUNING_DESCRIPTIONS.update(descriptions_before)


def test_validation_reads_the_registry(registry):
    X, y = _data()
    assert {"exact", "path", "relax_round", "mip"} <= set(engines())
    with pytest.raises(InvalidParameterError, match=r"`engine` must be one of.*'mip'"):
        TreeRuleExtractor(engine="best_single").fit(X, y)
    register_pruning_engine("best_single", BestSingleNode, description="test engine")
    assert "best_single" in engines()
    TreeRuleExtractor(engine="best_single")._validate_params_()  # accepted now


def test_a_registered_engine_fits_end_to_end(registry):
    register_pruning_engine("best_single", BestSingleNode, description="test engine")
    X, y = _data(40, seed=3)
    gb = _forest(X, y)
    m = TreeRuleExtractor(gb, prefit=True, n_rules=1, reg=2.0, engine="best_single",
                          n_lambdas=7, time_limit=None).fit(X, y)
    assert BestSingleNode.built_with["n_lambdas"] == 7
    assert m.result_.engine == "best_single" and len(m.scan_values_) == m.nodes_.n_nodes
    assert m.selected_.size == 1 and len(m.rules_) == 1
    # the driver recomputed q at the engine's selection: the least single-node q
    nodes = m.nodes_
    yc = (y - y.mean()) / y.std()
    cip = TreePruningCIP(nodes.M, yc, m.gamma_)
    z = np.zeros(nodes.n_nodes)
    z[m.selected_] = 1.0
    assert m.objective_ == pytest.approx(cip.value(z), rel=1e-12)
    assert m.objective_ == pytest.approx(min(m.scan_values_), rel=1e-12)
    # ... and decided its status: a finished search whose bound 0 leaves a gap is feasible,
    # stopped at the gap, never optimal
    assert m.result_.termination is TerminationReason.FEASIBLE
    assert m.result_.limit is Limit.GAP and m.result_.lower_bound == 0.0
    assert m.result_.gap == pytest.approx(1.0)
    np.testing.assert_allclose(m.predict(X), m.rules_.predict(X))


def test_the_mip_engine_agrees_with_exact():
    pytest.importorskip("pyscipopt")
    pytest.importorskip("highspy")
    X, y = _data(30, seed=1)
    gb = _forest(X, y)
    # no time limit: both searches end by themselves on this forest (deterministic)
    common = {"prefit": True, "n_rules": 2, "reg": 2.0, "mip_gap": 1e-6, "time_limit": None}
    exact = TreeRuleExtractor(gb, engine="exact", **common).fit(X, y)
    mip = TreeRuleExtractor(gb, engine="mip", **common).fit(X, y)
    assert exact.result_.termination is TerminationReason.OPTIMAL
    assert mip.result_.termination is TerminationReason.OPTIMAL
    assert (mip.result_.engine, exact.result_.engine) == ("mip", "exact")
    assert mip.objective_ == pytest.approx(exact.objective_, rel=1e-5)
    assert math.isfinite(mip.result_.lower_bound)
    assert mip.result_.lower_bound <= exact.objective_ * (1 + 1e-5)
    assert exact.result_.lower_bound <= mip.objective_ * (1 + 1e-5)
