"""The one-rule box search split over threads and a Dask cluster
(rulemip.boosting.boxsearch.split_search): the same optimum and bound as the serial search, results
that do not depend on the number of workers, reproducible node limits."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import rulemip.boosting.boxsearch.split_search as SS
from rulemip.boosting.boxsearch.range_search import box_search
from rulemip.boosting.objectives import OrthonormalBasis, make_objective, ridge_gain_objective
from rulemip.boosting.space import SearchSpace
from rulemip.parallel import search_workers


def _problem(seed: int, n: int = 120, d: int = 4, cuts: int = 6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, 0] * (X[:, 1] > 0) + 0.3 * rng.normal(size=n)
    return SearchSpace.build(X, cuts), y - y.mean()


@pytest.fixture(autouse=True)
def _small_rounds(monkeypatch):
    """Rounds and task counts small enough that small problems are split many times."""
    monkeypatch.setattr(SS, "N_TASKS", 6)
    monkeypatch.setattr(SS, "MIN_LIVE", 4)
    monkeypatch.setattr(SS, "ROUND_EVALS", 64)
    monkeypatch.setattr(SS, "RAMP_MIN_EVALS", 0)


def _same(a, b):
    np.testing.assert_array_equal(a.query, b.query)
    np.testing.assert_array_equal(a.lower, b.lower)
    np.testing.assert_array_equal(a.upper, b.upper)
    assert a.value == b.value and a.bound == b.bound and a.status == b.status


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", ["ridge", "ogb"])
def test_split_search_matches_serial_and_does_not_depend_on_workers(seed, kind):
    space, r = _problem(seed)
    if kind == "ridge":
        obj = ridge_gain_objective(r, reg=0.1)
    else:
        basis = OrthonormalBasis(space.n)
        basis.add(np.ones(space.n))
        basis.add((space.X[:, 2] > 0).astype(float))
        obj = make_objective("ogb", r, basis=basis)
    serial = box_search(space, obj, n_jobs=1)
    two = box_search(space, obj, n_jobs=2)
    three = box_search(space, obj, n_jobs=3)
    assert serial.status == "optimal" and two.status == "optimal"
    assert two.value == pytest.approx(serial.value, rel=1e-12)
    assert two.bound == pytest.approx(serial.bound, rel=1e-11)
    np.testing.assert_array_equal(two.query, serial.query)
    _same(two, three)
    with search_workers(n_jobs=2):                    # what the estimators set
        _same(box_search(space, obj), two)


def test_node_limit_is_reproducible():
    space, r = _problem(5, n=300, d=6, cuts=30)        # 313 branchings when serial
    obj = ridge_gain_objective(r, reg=0.01)
    runs = [box_search(space, obj, n_jobs=j, node_limit=120) for j in (2, 2, 4)]
    assert runs[0].status == "node_limit"
    _same(runs[0], runs[1])
    _same(runs[0], runs[2])
    full = box_search(space, obj, n_jobs=1)
    assert runs[0].value <= full.value + 1e-12 <= runs[0].bound + 2e-12


def test_a_work_limit_caps_and_is_charged_by_the_split_search():
    """The budget's work (one unit a branching) stops the split search as it stops the
    serial one: an uncapped split search ran 10^7 evaluations inside a work-limited fit."""
    from rulemip.budget import Budget

    space, r = _problem(5, n=300, d=6, cuts=30)        # 313 branchings when serial
    obj = ridge_gain_objective(r, reg=0.01)
    runs = []
    for j in (2, 2, 4):
        budget = Budget.from_time_limit(None, work_limit=120)
        res = box_search(space, obj, n_jobs=j, budget=budget)
        assert res.status == "work_limit" and budget.expired()
        assert budget.work_spent() == res.n_expanded
        runs.append(res)
    _same(runs[0], runs[1])
    _same(runs[0], runs[2])
    # the same stop as a node limit at the work left, and within one round of it
    by_nodes = box_search(space, obj, n_jobs=2, node_limit=120)
    assert by_nodes.status == "node_limit"
    _same(runs[0], dataclasses.replace(by_nodes, status="work_limit"))
    assert 120 <= runs[0].n_expanded <= 120 + SS.ROUND_EVALS
    full = box_search(space, obj, n_jobs=1)
    assert runs[0].value <= full.value + 1e-12 <= runs[0].bound + 2e-12


def test_memory_shares_stay_within_the_budget():
    space, r = _problem(2, n=150, d=4, cuts=8)
    obj = ridge_gain_objective(r, reg=0.05)
    want = box_search(space, obj).value
    small = box_search(space, obj, n_jobs=2, max_memory=200 * 1024)
    assert small.status == "optimal"
    assert small.value == pytest.approx(want, rel=1e-12)
    assert small.peak_frontier_bytes <= 200 * 1024


def test_dask_local_cluster_gives_the_same_result():
    distributed = pytest.importorskip("dask.distributed")
    space, r = _problem(1)
    obj = ridge_gain_objective(r, reg=0.1)
    threads = box_search(space, obj, n_jobs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        on_dask = box_search(space, obj, scheduler=client)
    _same(on_dask, threads)


def test_bad_n_jobs_is_refused():
    space, r = _problem(0, n=30)
    with pytest.raises(Exception, match="n_jobs"):
        box_search(space, ridge_gain_objective(r), n_jobs=0)


def test_estimators_take_n_jobs_and_return_the_same_model():
    import rulemip

    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 4))
    y = 2.0 * (X[:, 0] > 0.3) * (X[:, 1] < 0.5) + 0.2 * rng.normal(size=150)
    fits = [rulemip.ExactRuleEnsembleRegressor(n_rules=1, max_thresholds=12, preset=None,
                                               n_jobs=j).fit(X, y) for j in (1, 2)]
    assert fits[0].rules_.to_text() == fits[1].rules_.to_text()
    assert fits[1].certificate_.status == "optimal"
    assert fits[1].certificate_.risk == pytest.approx(fits[0].certificate_.risk, rel=1e-12)
    assert fits[1].certificate_.lower_bound == pytest.approx(
        fits[0].certificate_.lower_bound, rel=1e-9)
    boost = [rulemip.RuleBoostingRegressor(3, preset="COB", max_thresholds=10,
                                           n_jobs=j).fit(X, y) for j in (1, 2)]
    assert boost[0].rules_.to_text() == boost[1].rules_.to_text()
    with pytest.raises(Exception, match="n_jobs"):
        rulemip.RuleBoostingRegressor(2, n_jobs=0).fit(X, y)
