"""Branch-and-bound rule search: exactness against brute force for every objective and rule
length, admissible bounds on every subtree, and valid partial results under time, node and
memory limits."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from rulemip.boosting import OrthonormalBasis, RuleBooster, SearchSpace, find_rule, make_objective
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.estimators.boosting import RuleBoostingClassifier, RuleBoostingRegressor
from rulemip.exceptions import InvalidParameterError, SolveLimitWarning

OBJECTIVES = ("gs", "gb", "xgb", "ogb")


def _instance(seed: int, name: str):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(5, 14)), int(rng.integers(1, 4))
    X = rng.integers(0, int(rng.integers(2, 5)), size=(n, d)).astype(float)
    w = rng.uniform(0.5, 2.0, n) if rng.random() < 0.3 else None
    basis = OrthonormalBasis(n, w)      # orthonormal in the weighted inner product
    basis.add(np.ones(n))
    for _ in range(int(rng.integers(0, 3))):
        basis.add((rng.random(n) < 0.5).astype(float))
    obj = make_objective(name, rng.normal(size=n), rng.uniform(0.1, 2.0, n), weights=w,
                         reg=float(rng.uniform(0, 0.5)), epsilon=0.05, basis=basis)
    return SearchSpace.build(X), obj


def _box_optima(space, obj, allow_empty):
    """Brute force: the best value over all boxes with each number of propositions
    (``best[L]`` = over boxes with at most ``L`` finite bounds)."""
    per_feature = []
    for j in range(space.d):
        t = np.concatenate([[-np.inf], space.thresholds[j], [np.inf]])
        per_feature.append(list(itertools.combinations(t, 2)))
    best = np.full(2 * space.d + 1, -np.inf)
    for combo in itertools.product(*per_feature):
        q = np.ones(space.n, bool)
        length = 0
        for j, (lo, hi) in enumerate(combo):
            q &= (space.X[:, j] > lo) & (space.X[:, j] <= hi)
            length += int(np.isfinite(lo)) + int(np.isfinite(hi))
        if not q.any() or (q.all() and not allow_empty):
            continue
        best[length] = max(best[length], obj.value(q))
    return np.maximum.accumulate(best)


def _feature_optima(space, obj, allow_empty):
    """Brute force over the feature-count language: ``best[L]`` = the best value over
    the boxes restricting at most ``L`` features (an interval ``lo < x_j <= hi`` is one)."""
    per_feature = []
    for j in range(space.d):
        t = np.concatenate([[-np.inf], space.thresholds[j], [np.inf]])
        per_feature.append(list(itertools.combinations(t, 2)))
    best = np.full(space.d + 1, -np.inf)
    for combo in itertools.product(*per_feature):
        q = np.ones(space.n, bool)
        n_feat = 0
        for j, (lo, hi) in enumerate(combo):
            q &= (space.X[:, j] > lo) & (space.X[:, j] <= hi)
            n_feat += int(np.isfinite(lo) or np.isfinite(hi))
        if not q.any() or (q.all() and not allow_empty):
            continue
        best[n_feat] = max(best[n_feat], obj.value(q))
    return np.maximum.accumulate(best)


@pytest.mark.parametrize("exact", ["bnb", "enumerate"])
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("name", ("gs", "gb", "xgb"))
def test_feature_count_language_against_brute_force(seed, name, exact):
    """``max_rule_length`` counts restricted features in both exact searches (the compiled
    range search, ``"bnb"``, and the set enumeration, ``"enumerate"``): ``find_rule``
    reaches the brute-force optimum over rules on at most that many features — two-sided
    intervals included — and never returns a rule on more; greedy and beam stay in the
    same language."""
    space, obj = _instance(seed, name)
    for allow_empty in (False, True):
        best = _feature_optima(space, obj, allow_empty)
        for max_len in (1, 2):
            opt = best[min(max_len, len(best) - 1)]
            res = find_rule(space, obj, search=exact, max_rule_length=max_len,
                            allow_empty=allow_empty)
            if not np.isfinite(opt):
                assert res is None
                continue
            assert res is not None and res.certified
            assert res.n_features <= max_len
            assert res.value == pytest.approx(opt, rel=1e-9, abs=1e-12)
            assert res.bound >= opt * (1 - 1e-9) - 1e-12
            for search in ("greedy", "beam"):
                h = find_rule(space, obj, search=search, max_rule_length=max_len,
                              allow_empty=allow_empty)
                assert h is not None and h.n_features <= max_len
                assert h.value <= opt * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("name", OBJECTIVES)
def test_bnb_exact_against_brute_force(seed, name):
    space, obj = _instance(seed, name)
    for allow_empty in (False, True):
        best = _box_optima(space, obj, allow_empty)
        for max_len in (1, 2, 3, None):
            opt = best[-1] if max_len is None else best[min(max_len, len(best) - 1)]
            res = find_rule(space, obj, search="bnb", max_propositions=max_len,
                            allow_empty=allow_empty)
            if not np.isfinite(opt):
                assert res is None
                continue
            assert res is not None
            assert obj.value(res.query) == pytest.approx(res.value, rel=1e-9, abs=1e-12)
            assert max_len is None or res.length <= max_len
            q = np.all((res.lower < space.X) & (res.upper >= space.X), axis=1)
            np.testing.assert_array_equal(q, res.query)
            # the certificate is valid whatever the objective
            assert res.bound >= opt * (1 - 1e-9) - 1e-12
            assert res.value <= opt * (1 + 1e-9) + 1e-12
            if name != "ogb":
                assert res.certified and res.status == "optimal"
            if res.certified:
                assert res.value == pytest.approx(opt, rel=1e-9, abs=1e-12)


def _subsets(idx):
    for r in range(1, len(idx) + 1):
        yield from itertools.combinations(idx, r)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("name", OBJECTIVES)
def test_bounds_admissible_on_every_subtree(seed, name):
    """The cheap child bound (all objectives) and the full bound (gs, gb, xgb) of a cover
    are at least the value of every sub-cover — so of every node below it."""
    rng = np.random.default_rng(1000 + seed)
    space, obj = _instance(seed, name)
    n = space.n
    for _ in range(3):
        cover = np.sort(rng.choice(n, int(rng.integers(1, min(n, 9) + 1)), replace=False))
        best_below = max(obj.value(np.array(s)) for s in _subsets(cover))
        assert obj.bound_stats is not None
        cheap = float(obj.bound_from_sums(obj.bound_stats[cover].sum(axis=0)))
        assert cheap >= best_below * (1 - 1e-9) - 1e-12
        if obj.admissible:
            assert obj.bound(cover) >= best_below * (1 - 1e-9) - 1e-12


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name", OBJECTIVES)
def test_stopped_search_gives_valid_partial_result(seed, name):
    """Node, time and memory limits: a rule whose value is its objective, never above the
    optimum, and a bound never below it (everything unexplored is bounded)."""
    space, obj = _instance(seed, name)
    opt = _box_optima(space, obj, False)[-1]
    if not np.isfinite(opt):
        return
    full = find_rule(space, obj)
    assert full is not None
    runs = [dict(node_limit=k) for k in (1, 2, 3, 5, 8)]
    runs += [dict(budget=Budget.from_time_limit(0.0)), dict(max_memory=1),
             dict(max_memory=3000)]
    for kw in runs:
        res = find_rule(space, obj, **kw)
        assert res is not None
        assert obj.value(res.query) == pytest.approx(res.value, rel=1e-9, abs=1e-12)
        assert res.value <= opt * (1 + 1e-9) + 1e-12
        assert res.bound >= opt * (1 - 1e-9) - 1e-12
        if res.limit_reached:
            assert not res.certified or res.value >= opt * (1 - 1e-9)
        if "node_limit" in kw:
            assert res.n_expanded <= kw["node_limit"]
        if "max_memory" in kw:
            assert res.peak_frontier_bytes <= kw["max_memory"]


def test_memory_budget_on_a_large_search():
    """A search that would need a large frontier stays within a small budget and says so."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    space = SearchSpace.build(X)
    obj = make_objective("ogb", rng.normal(size=300))
    budget = 200_000
    res = find_rule(space, obj, max_memory=budget, node_limit=3000)
    assert res is not None
    assert res.peak_frontier_bytes <= budget
    assert res.status in ("memory_limit", "node_limit", "heuristic", "optimal")
    assert res.bound >= res.value


def test_gs_pricing_oracle_value_and_bound():
    """Column-generation use: the gs objective's best value and a valid bound under a
    node budget; with no budget the bound closes on the exact maximum."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(12, 3)).astype(float)
    g = rng.normal(size=12)
    space = SearchSpace.build(X)
    obj = make_objective("gs", g)
    opt = _box_optima(space, obj, False)[-1]
    exact = find_rule(space, obj)
    assert exact is not None and exact.certified
    assert exact.value == pytest.approx(opt) and exact.bound == pytest.approx(opt)
    cut = find_rule(space, obj, node_limit=1)
    assert cut is not None and cut.value <= opt + 1e-12 <= cut.bound + 2e-12


def test_bad_limits():
    space = SearchSpace.build(np.arange(6.0).reshape(-1, 1))
    obj = make_objective("gs", np.arange(6.0) - 2.5)
    with pytest.raises(InvalidParameterError, match="node_limit"):
        find_rule(space, obj, node_limit=0)
    with pytest.raises(InvalidParameterError, match="max_memory"):
        find_rule(space, obj, max_memory=0)
    with pytest.raises(InvalidParameterError, match="max_memory"):
        RuleBooster(max_memory=-5)


def _dataset(seed=0, n=80):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] > 0.3, 2.0, -1.0) + 0.5 * X[:, 1] + rng.normal(scale=0.1, size=n)
    return X, y


def test_booster_shares_one_node_budget():
    X, y = _dataset()
    ds = Dataset.from_arrays(X, y, loss="squared")
    with pytest.warns(SolveLimitWarning, match="node limit"):
        b = RuleBooster(n_rules=5, objective="gb", search="bnb", node_limit=30).fit(ds)
    assert b.limit_reached_ == "node_limit"
    # every round gets a share of what is left, at least one expansion
    assert sum(r.search.n_expanded for r in b.rounds_) <= 30 + 5
    assert len(b.rounds_) == 5
    assert len(b.ensembles_) == len(b.rounds_) + 1 == len(b.risk_path_)
    assert not b.certified_
    for r in b.rounds_:   # a stopped search's rule is valid and its bound covers it
        assert r.search.bound >= r.search.value
    # an unlimited fit of the same rules is certified round by round (gb is admissible)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SolveLimitWarning)
        full = RuleBooster(n_rules=2, objective="gb", search="bnb",
                           max_rule_length=2).fit(ds)
    assert full.limit_reached_ is None and full.certified_
    assert all(r.search.status == "optimal" for r in full.rounds_)


@pytest.mark.parametrize("search", ["bnb", "greedy"])
@pytest.mark.parametrize("grace", [1e9, -1.0])
def test_booster_time_limit_returns_model(search, grace, monkeypatch):
    """On a spent budget every round started returns the best single proposition
    (brute force); rounds start within ``ROUND_GRACE`` of the deadline only — all of
    them with a long grace, only the first with none (issue 38: on 100 000 rows a round
    past the budget cost 1.6–2.6 s)."""
    from rulemip.boosting import booster as B

    monkeypatch.setattr(B, "ROUND_GRACE", grace)
    X, y = _dataset(1)
    ds = Dataset.from_arrays(X, y, loss="squared")
    with pytest.warns(SolveLimitWarning, match="time limit") as caught:
        b = RuleBooster(n_rules=4, search=search, time_limit=0.0).fit(ds)
    assert b.limit_reached_ == "time_limit"
    n = 4 if grace > 0 else 1
    assert b.rounds_skipped_ == 4 - n
    assert len(b.rounds_) == n and len(b.ensembles_) == n + 1 and len(b.rules_.rules) == n
    assert ("3 of 4 rounds did not start" in str(caught[-1].message)) == (n == 1)
    assert all(r.search.length == 1 for r in b.rounds_)
    first = b.rounds_[0].search
    assert first.status == "time_limit"
    # the first rule is the best single proposition (brute force), its bound covers it
    g = 2.0 * (y.mean() - y)          # the squared loss's gradient at the intercept
    obj = make_objective("ogb", g, epsilon=1e-3, basis=_intercept_basis(len(y)))
    best = max(float(obj.value(np.flatnonzero(q)))
               for j in range(X.shape[1]) for t in np.unique(X[:, j])[:-1]
               for q in (X[:, j] <= t, X[:, j] > t))
    assert first.value == pytest.approx(best, rel=1e-9)
    assert first.bound >= first.value
    assert np.all(np.diff(b.risk_path_) <= 1e-12)


def _intercept_basis(n):
    basis = OrthonormalBasis(n)
    basis.add(np.ones(n))
    return basis


def test_estimator_vocabulary_and_limits():
    X, y = _dataset(2)
    with pytest.raises(TypeError):
        RuleBoostingRegressor(3, "gb")  # everything after n_rules is keyword-only
    est = RuleBoostingRegressor(3, objective="gb", search="bnb", max_rule_length=2,
                                time_limit=60.0, node_limit=10_000, reg=0.1)
    est.fit(X, y)
    assert est.limit_reached_ is None
    assert est.get_params()["time_limit"] == 60.0
    clf = RuleBoostingClassifier(2, search="bnb", node_limit=3)
    with pytest.warns(SolveLimitWarning):
        clf.fit(X, y > 0)
    assert clf.limit_reached_ == "node_limit"


def test_cli_boost_limits_and_certificates(tmp_path, capsys):
    import json

    from rulemip.cli import main

    X, y = _dataset(3, n=60)
    csv = tmp_path / "d.csv"
    rows = ["a,b,c,d,target"] + [",".join(map(str, r)) + f",{t}" for r, t in zip(X, y)]
    csv.write_text("\n".join(rows) + "\n")
    out = tmp_path / "m.json"
    code = main(["boost", "--data", str(csv), "--target", "target", "--n-rules", "3",
                 "--objective", "gb", "--search", "bnb", "--node-limit", "6",
                 "--max-memory", "16", "--json", str(out)])
    assert code == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "bound" in text and "node_limit" in text
    # the SolveLimitWarning is printed as one clean line
    assert captured.err.startswith("warning: the node limit stopped")
    doc = json.loads(out.read_text())
    assert doc["limit_reached"] == "node_limit"
    assert len(doc["rules_search"]) == 3
    for r in doc["rules_search"]:
        assert r["bound"] is None or r["bound"] >= r["value"]
    # a proved fit: every rule's bound closes on its value
    code = main(["boost", "--data", str(csv), "--target", "target", "--n-rules", "2",
                 "--objective", "gb", "--search", "bnb", "--max-rule-length", "2",
                 "--quiet", "--json", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["certified"] and all(r["status"] == "optimal" for r in doc["rules_search"])


def test_progress_is_quiet_by_default_and_shown_when_verbose(monkeypatch, capsys):
    import rulemip.boosting.bnb as bnb
    import rulemip.boosting.boxsearch.range_search as range_search

    monkeypatch.setattr(bnb, "PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(range_search, "PROGRESS_EVERY", 0.0)
    X, y = _dataset(4)
    ds = Dataset.from_arrays(X, y, loss="squared")
    RuleBooster(n_rules=1, objective="gb", search="bnb", max_rule_length=2).fit(ds)
    assert capsys.readouterr().err == ""
    RuleBooster(n_rules=1, objective="gb", search="bnb", max_rule_length=2,
                verbose=True).fit(ds)
    err = capsys.readouterr().err
    assert "rule 1:" in err and "nodes" in err and "bound" in err
