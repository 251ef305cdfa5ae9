"""TreeRuleExtractor: the node model, validation, scikit-learn conventions, methods."""

import sys
import types
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from rulemip.estimators.tree_rules import TreeRuleExtractor
from rulemip.exceptions import InvalidDataError, InvalidParameterError, SolveLimitWarning
from rulemip.formulations.tree_pruning import TreePruningCIP

pytestmark = pytest.mark.solver
pytest.importorskip("highspy")


def _data(n=40, seed=0, p=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = 2 * (X[:, 0] > 0) + X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def _small_gb():
    return GradientBoostingRegressor(n_estimators=3, max_depth=2, random_state=0)


@parametrize_with_checks([TreeRuleExtractor(_small_gb(), n_rules=3, reg=2.0,
                                            time_limit=1.5)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_prediction_matches_node_model_and_rules():
    X, y = _data()
    rf = RandomForestRegressor(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    m = TreeRuleExtractor(rf, n_rules=3, prefit=True, reg=1 / 0.3, time_limit=30).fit(X, y)
    assert 1 <= len(m.rules_) <= 3 and len(m.selected_) == len(m.rules_)
    nodes = m.nodes_
    direct = m.intercept_ + nodes.reach[:, m.selected_] @ m.coef_
    np.testing.assert_allclose(m.predict(X), direct, atol=1e-9)
    # the coefficient is s·μ_i·w_i and the objective is q(z) on the standardized y
    np.testing.assert_allclose(m.coef_, m.y_scale_ * nodes.mu[m.selected_] * m.weights_)
    z = np.zeros(nodes.n_nodes)
    z[m.selected_] = 1
    yc = (y - y.mean()) / y.std()
    assert np.isclose(TreePruningCIP(nodes.M, yc, 0.3).value(z), m.objective_)
    # new points: predict == rules_.predict == the trees' own routing
    Xn, _ = _data(30, seed=7)
    np.testing.assert_array_equal(m.predict(Xn), m.rules_.predict(Xn))
    reach_new = np.column_stack([
        np.asarray(rf.estimators_[t].decision_path(Xn.astype(np.float32))
                   [:, nodes.node[i]].todense()).ravel()
        for t, i in ((nodes.tree[i], i) for i in m.selected_)])
    np.testing.assert_allclose(m.predict(Xn), m.intercept_ + reach_new @ m.coef_, atol=1e-9)
    assert m.score(X, y) > 0.3
    assert np.isclose(m.train_risk_, np.mean((y - m.predict(X)) ** 2))
    assert m.result_.lower_bound <= m.result_.value + 1e-9


def test_budget_is_respected_for_each_attribute():
    X, y = _data(50, seed=1)
    gb = GradientBoostingRegressor(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    for attribute, K in (("rule", 2), ("depth", 4), ("feature", 3)):
        m = TreeRuleExtractor(gb, n_rules=K, attribute=attribute, prefit=True).fit(X, y)
        a = m.nodes_.attribute(attribute)
        assert a[m.selected_].sum() <= K
        # at most one node per root-to-leaf path
        for i in m.selected_:
            assert not set(m.nodes_.descendants[i]) & set(m.selected_)
    m0 = TreeRuleExtractor(gb, n_rules=0, prefit=True).fit(X, y)
    assert len(m0.rules_) == 0
    np.testing.assert_allclose(m0.predict(X), y.mean())


def test_fitted_node_values_extracted_once_and_used():
    X, y = _data(40, seed=2)
    gb = GradientBoostingRegressor(n_estimators=3, max_depth=2, learning_rate=0.5,
                                   random_state=0).fit(X, y)
    m = TreeRuleExtractor(gb, n_rules=4, prefit=True, node_values="fitted").fit(X, y)
    # the roots (the empty rule, which duplicates the intercept) are zeroed
    root = m.nodes_.depth == 0
    assert np.all(m.nodes_.mu[root] == 0.0)
    np.testing.assert_array_equal(m.nodes_.mu[~root], m.nodes_.fitted[~root])
    leaf_vals = 0.5 * np.concatenate([e.tree_.value[:, 0, 0] for e in gb.estimators_[:, 0]])
    np.testing.assert_allclose(m.nodes_.mu[~root], leaf_vals[~root])
    direct = m.intercept_ + m.nodes_.M[:, m.selected_] @ (m.y_scale_ * m.weights_)
    np.testing.assert_allclose(m.predict(X), direct, atol=1e-9)
    mean = TreeRuleExtractor(gb, n_rules=4, prefit=True).fit(X, y)
    assert not np.allclose(mean.nodes_.mu, m.nodes_.mu)


@pytest.mark.parametrize("params,match", [
    ({"n_rules": -3}, "`n_rules` must be a non-negative integer; got -3."),
    ({"n_rules": 2.5}, "`n_rules` must be a non-negative integer"),
    ({"attribute": "leaves"}, "`attribute` must be one of"),
    ({"engine": "greedy"}, "`engine` must be one of"),
    ({"node_values": "median"}, "`node_values` must be one of"),
    ({"reg": 0.0}, "`reg` must be > 0"),
    ({"time_limit": -1.0}, "`time_limit` must be >= 0"),
    ({"n_lambdas": 0}, "`n_lambdas` must be a positive integer"),
    ({"prefit": True}, "`prefit=True` needs a fitted `estimator`"),
])
def test_parameter_errors(params, match):
    X, y = _data(20)
    with pytest.raises(InvalidParameterError, match=match.replace("`", ".").replace(
            "(", r"\(").replace(")", r"\)")):
        TreeRuleExtractor(**params).fit(X, y)


def test_data_and_estimator_errors():
    from sklearn.ensemble import RandomForestClassifier

    X, y = _data(20)
    with pytest.raises(InvalidDataError, match="NaN"):
        TreeRuleExtractor(_small_gb()).fit(np.where(X > 1, np.nan, X), y)
    with pytest.raises(InvalidParameterError, match="not fitted"):
        TreeRuleExtractor(_small_gb(), prefit=True).fit(X, y)
    with pytest.raises(InvalidParameterError, match="regression ensemble"):
        TreeRuleExtractor(RandomForestClassifier(), n_rules=2).fit(X, y > 0)
    gb = _small_gb().fit(X, y)
    with pytest.raises(InvalidDataError, match="features"):
        TreeRuleExtractor(gb, prefit=True).fit(X[:, :2], y)


def test_pandas_feature_names_in_rules():
    pd = pytest.importorskip("pandas")
    X, y = _data(40)
    frame = pd.DataFrame(X, columns=["age", "bmi", "bp"])
    m = TreeRuleExtractor(_small_gb(), n_rules=2, reg=5.0).fit(frame, y)
    assert list(m.feature_names_in_) == ["age", "bmi", "bp"]
    text = m.rules_.to_text()
    assert ("age" in text or "bmi" in text) and "x1" not in text and "x2" not in text
    np.testing.assert_allclose(m.predict(frame), m.rules_.predict(X))


def test_time_limit_warns_and_reports_bound():
    X, y = _data(60, seed=3)
    gb = GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0).fit(X, y)
    with pytest.warns(SolveLimitWarning, match="lower bound"):
        m = TreeRuleExtractor(gb, n_rules=6, prefit=True, time_limit=0.0).fit(X, y)
    assert m.result_.termination != "optimal"
    assert m.result_.lower_bound <= m.result_.value + 1e-9
    assert len(m.rules_) <= 6


def test_rgb_regressor_hand_off():
    from rulemip import RGBRegressor

    X, y = _data(50, seed=4)
    # six full steps (learning_rate=1, the estimator's default before issue 25): enough fit
    # for the extracted rules to be scored below
    rgb = RGBRegressor(n_estimators=6, families=[(3, 1.0), (4, 2.0)], beta=0.0,
                       learning_rate=1.0, random_state=0).fit(X, y)
    m = TreeRuleExtractor(rgb, n_rules=3, prefit=True, node_values="fitted",
                          reg=5.0).fit(X, y)
    assert m.estimator_ is rgb
    nodes = m.nodes_
    # the node model of the RGB trees: offset + Σ leaves (fitted values) = predict_raw
    np.testing.assert_allclose(nodes.offset + nodes.M[:, nodes.is_leaf].sum(axis=1).A1,
                               rgb.predict_raw(X), atol=1e-9)
    np.testing.assert_allclose(nodes.multipliers, rgb.coefs_)
    assert 1 <= len(m.rules_) <= 3
    np.testing.assert_allclose(m.predict(X), m.intercept_ + nodes.reach[:, m.selected_]
                               @ m.coef_, atol=1e-9)
    assert m.score(X, y) > 0.3


# ---------------------------------------------------------------- path / relax_round
@dataclass(frozen=True)
class _PM:
    lam: float
    z: np.ndarray
    support: np.ndarray
    weights: np.ndarray
    objective: float
    q_value: float
    cost: float
    train_risk: float
    valid_risk: float


@dataclass(frozen=True)
class _PR:
    models: tuple
    lambdas: np.ndarray
    wall_time: float
    history: tuple


def test_path_selection_rule_with_stub_path(monkeypatch):
    """The chosen path model is the one of largest cost <= n_rules (ties: least risk)."""
    X, y = _data(40, seed=5)
    gb = _small_gb().fit(X, y)
    leaves = None
    calls = {}

    def regularization_path(nodes, yv, lambdas=None, *, n_lambdas=50, attribute="rule",
                            gamma=1.0, X_valid=None, y_valid=None,
                            solver="highs", exact_blocks=None, budget=None):
        nonlocal leaves
        calls.update(n_lambdas=n_lambdas, attribute=attribute, gamma=gamma, y=yv,
                     exact_blocks=exact_blocks)
        leaves = np.flatnonzero(nodes.is_leaf)
        orc = TreePruningCIP(nodes.M, yv, gamma)
        models = []
        for lam, S, risk in ((9.0, [], 1.0), (3.0, leaves[:1], 0.8),
                             (2.0, leaves[1:3], 0.5), (1.5, leaves[3:5], 0.4),
                             (1.0, leaves[:4], 0.2)):
            z = np.zeros(nodes.n_nodes)
            z[S] = 1
            sup, w = orc.weights(z)
            models.append(_PM(lam, z, sup, w, 0.0, orc.value(z), float(len(S)), risk,
                              np.nan))
        return _PR(tuple(models), np.array([m.lam for m in models]), 0.01, ())

    fake = types.ModuleType("rulemip.algorithms.pruning.cbcd")
    fake.regularization_path = regularization_path
    monkeypatch.setitem(sys.modules, "rulemip.algorithms.pruning.cbcd", fake)
    m = TreeRuleExtractor(gb, n_rules=3, engine="path", prefit=True, reg=2.0,
                          n_lambdas=7).fit(X, y)
    assert calls["n_lambdas"] == 7 and calls["gamma"] == 0.5
    assert calls["exact_blocks"] is False  # the paper's (fast) block updates
    np.testing.assert_allclose(calls["y"], (y - y.mean()) / y.std())
    assert m.path_index_ == 3  # cost 2 (two models), the lower risk one
    np.testing.assert_array_equal(np.sort(m.selected_), np.sort(leaves[3:5]))
    assert len(m.path_models_) == 5 and len(m.path_models_[4]) == 4
    assert m.path_ is m.result_.detail and m.result_.engine == "path"
    assert m.result_.lower_bound == -np.inf and not m.result_.is_optimal  # a heuristic
    np.testing.assert_allclose(m.predict(X), m.path_models_[3].predict(X))
    m1 = TreeRuleExtractor(gb, n_rules=1, engine="path", prefit=True).fit(X, y)
    assert m1.path_index_ == 1 and len(m1.rules_) == 1


def test_path_method_real():
    pytest.importorskip("rulemip.algorithms.pruning.cbcd")
    X, y = _data(60, seed=6)
    gb = GradientBoostingRegressor(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    m = TreeRuleExtractor(gb, n_rules=4, engine="path", prefit=True, reg=1.0,
                          n_lambdas=8, time_limit=30).fit(X, y)
    costs = [float(pm.cost) for pm in m.path_.models]
    assert all(c <= 4 + 1e-9 for c in [costs[m.path_index_]])
    assert costs[m.path_index_] == max(c for c in costs if c <= 4 + 1e-9)
    assert len(m.rules_) <= 4 and len(m.path_models_) == len(m.path_.models)
    np.testing.assert_allclose(m.predict(X), m.rules_.predict(X))
    assert m.score(X, y) > 0.3


def test_relax_round_method():
    pytest.importorskip("rulemip.algorithms.pruning.relax_and_round")
    X, y = _data(60, seed=6)
    gb = GradientBoostingRegressor(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    exact = TreeRuleExtractor(gb, n_rules=3, prefit=True, reg=50.0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SolveLimitWarning)
        m = TreeRuleExtractor(gb, n_rules=3, engine="relax_round", prefit=True, reg=50.0,
                              time_limit=30).fit(X, y)
    assert len(m.rules_) <= 3
    for i in m.selected_:
        assert not set(m.nodes_.descendants[i]) & set(m.selected_)
    # a heuristic: never better than the exact optimum (up to the exact method's tolerance)
    assert m.objective_ >= exact.result_.lower_bound - 1e-9
    np.testing.assert_allclose(m.predict(X), m.rules_.predict(X))


@pytest.mark.parametrize("method", ["exact", "path"])
def test_empty_rule_is_never_selected_even_when_free(method):
    # under attribute="depth" a root costs 0; its column duplicates the intercept, so it
    # must not appear as a rule (nor block its tree)
    pytest.importorskip("highspy")
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=200, noise=1.0, random_state=0)
    est = GradientBoostingRegressor(n_estimators=10, max_depth=3, learning_rate=0.2,
                                    random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolveLimitWarning)
        ex = TreeRuleExtractor(est, prefit=True, attribute="depth", n_rules=6, engine=method,
                               reg=1.0, n_lambdas=15, time_limit=1).fit(X, y)
    assert all(len(rule.conditions) > 0 for rule in ex.rules_.rules)
    assert np.all(ex.nodes_.depth[ex.selected_] > 0)
    if method == "path":  # before the fix, CBCD picked free roots along this path
        for pm in ex.path_.models:
            assert np.all(ex.nodes_.depth[np.asarray(pm.support, dtype=np.int64)] > 0)
        for ens in ex.path_models_:
            assert all(len(rule.conditions) > 0 for rule in ens.rules)
    np.testing.assert_allclose(ex.predict(X), ex.rules_.predict(X))


def test_vocabulary_defaults_and_errors():
    """solver='auto', mip_gap and verbose, as on the exact estimators
    (docs/reference/parameters.md)."""
    m = TreeRuleExtractor()
    assert (m.solver, m.mip_gap, m.verbose) == ("auto", 1e-4, False)
    X, y = _data(20)
    with pytest.raises(InvalidParameterError, match="mip_gap"):
        TreeRuleExtractor(_small_gb(), mip_gap=-0.1).fit(X, y)
    with pytest.raises(InvalidParameterError, match="verbose"):
        TreeRuleExtractor(_small_gb(), verbose="yes").fit(X, y)
    with pytest.raises(InvalidParameterError, match="solver"):
        TreeRuleExtractor(_small_gb(), solver="no-such-backend").fit(X, y)


def test_mip_gap_is_the_certification_tolerance_and_one_budget_is_passed(monkeypatch):
    """The exact method gets the user's mip_gap and the fit's Budget; the status it
    reports is promote's: OPTIMAL only with a gap within mip_gap."""
    import rulemip.algorithms.pruning.exact as pe
    from rulemip.budget import Budget
    from rulemip.solvers.result import TerminationReason

    seen = {}
    real = pe.prune_exact

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(pe, "prune_exact", spy)
    X, y = _data(40, seed=2)
    m = TreeRuleExtractor(_small_gb(), n_rules=2, reg=2.0, mip_gap=0.2,
                          engine="exact").fit(X, y)
    assert seen["mip_gap"] == 0.2 and isinstance(seen["budget"], Budget)
    assert m.result_.termination is TerminationReason.OPTIMAL
    assert m.result_.gap <= 0.2
    assert m.result_.lower_bound <= m.objective_ + 1e-9
    assert m.result_.value == pytest.approx(m.objective_, rel=1e-9)


@pytest.mark.parametrize("method", ["exact", "path", "relax_round"])
def test_verbose_reports_on_stderr(method, capsys):
    X, y = _data(40)
    TreeRuleExtractor(_small_gb(), n_rules=2, reg=2.0, engine=method, n_lambdas=5,
                      verbose=True).fit(X, y)
    err = capsys.readouterr().err
    assert "candidate nodes" in err and "rules, q =" in err


def test_engine_names_the_selection_algorithm():
    # issue 23 (one vocabulary): the selection algorithm is `engine`, as on the exact
    # estimators (`method`, its former name, was removed in 0.3)
    X, y = _data(40)
    gb = _small_gb().fit(X, y)
    new = TreeRuleExtractor(gb, n_rules=2, reg=2.0, engine="relax_round", prefit=True).fit(X, y)
    assert new.result_.engine == "relax_round"
    default = TreeRuleExtractor(gb, n_rules=2, reg=2.0, prefit=True).fit(X, y)
    assert default.result_.engine == "perspective"  # the default engine
    # one result type for the family (issue 23), the engine's own record in `detail`
    assert type(default.result_) is type(new.result_)
    assert type(default.result_.detail) is not type(new.result_.detail)
    assert new.result_.lower_bound <= new.result_.value + 1e-9
    with pytest.raises(InvalidParameterError, match="engine"):
        TreeRuleExtractor(gb, engine="nope", prefit=True).fit(X, y)
    with pytest.raises(TypeError, match="method"):
        TreeRuleExtractor(gb, method="exact")
