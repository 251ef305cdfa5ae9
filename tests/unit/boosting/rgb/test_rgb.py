"""[RGB] Algorithm 1: objective (7), candidate selection, steps, GB equivalence, seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.ensemble import GradientBoostingRegressor

from rulemip.boosting.rgb.algorithm import fit_rgb, line_search_step, lipschitz_step
from rulemip.boosting.rgb.families import FamilyGrid
from rulemip.estimators.rgb import RGBClassifier, RGBRegressor
from rulemip.exceptions import InvalidParameterError
from rulemip.losses import get_loss

SMALL_GRID = [(1, 0.1), (2, 0.5), (4, 1.0), (8, 2.0), (16, 0.01)]


@pytest.fixture(scope="module")
def data() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(160, 5))
    f = X[:, 0] ** 2 - np.sin(2 * X[:, 1]) + 0.5 * X[:, 2]
    y_reg = f + 0.3 * rng.normal(size=160)
    y_cls = (f + 0.5 * rng.normal(size=160) > np.median(f)).astype(int)
    y_poi = rng.poisson(np.exp(0.4 * f - 0.5)).astype(float)
    return {"squared": (X, y_reg), "logistic": (X, y_cls), "poisson": (X, y_poi)}


def _fit(loss: str, data: dict, **kw: object) -> RGBClassifier | RGBRegressor:
    X, y = data[loss]
    params = dict(n_estimators=25, n_samples_per_round=4, families=SMALL_GRID,
                  random_state=3)
    params.update(kw)
    if loss == "logistic":
        return RGBClassifier(**params).fit(X, y)  # type: ignore[arg-type]
    return RGBRegressor(loss=loss, **params).fit(X, y)  # type: ignore[arg-type]


def _labels(loss: str, y: np.ndarray) -> np.ndarray:
    return np.where(y == 1, 1.0, -1.0) if loss == "logistic" else y.astype(float)


def _objective(model: RGBClassifier | RGBRegressor, loss: str, X: np.ndarray,
               y: np.ndarray, beta: float, upto: int | None = None) -> float:
    """Objective (7) recomputed from the fitted trees (first ``upto`` rounds), on the
    scaled problem y / s (s = ``target_scale_``): squared F' = F / s, Poisson
    F' = F - log s."""
    T = len(model.estimators_) if upto is None else upto
    s = model.target_scale_
    coefs = model.coefs_[:T] / (s if loss == "squared" else 1.0)
    F = np.full(len(y), model.intercept_)
    for a, tree in zip(model.coefs_[:T], model.estimators_[:T]):
        F += a * tree.predict(X.astype(np.float32))
    F = F / s if loss == "squared" else F - np.log(s)
    omega = model.complexities_[model.family_indices_[:T]]
    penalty = beta * float(np.sum(np.abs(coefs) * omega))
    return float(np.mean(get_loss(loss).value(F, _labels(loss, y) / s))) + penalty


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
@pytest.mark.parametrize("step, lipschitz", [("lipschitz", "family"),
                                             ("lipschitz", "tree"),
                                             ("line_search", "family")])
@pytest.mark.parametrize("beta", [0.0, 0.05])
def test_objective_is_non_increasing_and_matches_recomputation(
        data: dict, loss: str, step: str, lipschitz: str, beta: float) -> None:
    model = _fit(loss, data, step=step, lipschitz=lipschitz, beta=beta)
    path = np.concatenate([[model.initial_objective_], model.objective_path_])
    assert len(model.objective_path_) == 25
    assert np.all(np.diff(path) <= 1e-12), np.diff(path).max()
    assert path[-1] < path[0]  # it does learn something
    X, y = data[loss]
    for t in (1, 10, 25):
        assert _objective(model, loss, X, y, beta, upto=t) == pytest.approx(
            model.objective_path_[t - 1], rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("selection", ["objective", "complexity"])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_chosen_candidate_minimizes_loss_plus_complexity(data: dict, selection: str,
                                                         loss: str) -> None:
    beta = 0.02
    model = _fit(loss, data, beta=beta, selection=selection, n_samples_per_round=5)
    grid = model.family_grid_
    omega = model.complexities_
    n_distinct_choices = 0
    for t, rnd in enumerate(model.rounds_):
        assert len(rnd.candidates) == 5
        scores = []
        for c in rnd.candidates:
            assert (c.n_internal, c.lam) == grid.pairs[c.family]
            assert c.complexity == omega[c.family]
            assert c.penalty == pytest.approx(beta * abs(c.alpha) * omega[c.family])
            extra = c.penalty if selection == "objective" else beta * omega[c.family]
            scores.append(c.loss + extra)
        np.testing.assert_allclose([c.score for c in rnd.candidates], scores, rtol=1e-14)
        assert rnd.chosen == int(np.argmin(scores))
        chosen = rnd.chosen_candidate
        assert model.family_indices_[t] == chosen.family
        assert model.families_[t] == grid.pairs[chosen.family]
        assert model.coefs_[t] == pytest.approx(model.target_scale_ * chosen.alpha,
                                                rel=1e-15)
        n_distinct_choices += len({c.family for c in rnd.candidates}) > 1
        # the recorded loss of the chosen candidate is the loss of the fitted model
        X, y = data[loss]
        assert _objective(model, loss, X, y, 0.0, upto=t + 1) == pytest.approx(
            chosen.loss, rel=1e-10)
    assert n_distinct_choices > 10  # the selection was exercised


@pytest.mark.parametrize("q", [1, 2])
def test_trees_respect_their_family(data: dict, q: int) -> None:
    model = _fit("squared", data, q=q, families=[(2, 0.05), (4, 0.2), (8, 1.0)],
                 n_samples_per_round=3)
    scaled = 0
    for tree, (n, lam), rnd in zip(model.estimators_, model.families_, model.rounds_):
        t = tree.tree_
        is_leaf = t.children_left == -1
        assert int((~is_leaf).sum()) <= n
        w = t.value[is_leaf, 0, 0]
        assert np.linalg.norm(w, ord=q) <= lam * (1 + 1e-12)
        scaled += rnd.chosen_candidate.scale < 1
    assert scaled > 0  # the norm constraint was active in some rounds


@pytest.mark.parametrize("learning_rate", [0.1, 0.5, 1.0])
def test_reduces_to_sklearn_gradient_boosting(data: dict, learning_rate: float) -> None:
    """beta = 0, one family, S = 1, no binding norm: RGB with the Lipschitz step is
    sklearn's least-squares gradient boosting with max_leaf_nodes = n + 1 (exactly: the
    tree on -g = 2(y - F) has leaf values 2 * mean residual and the step is nu / 2).

    The trees consume ``random_state`` like sklearn's, so split ties break the same way.
    ``min_samples_leaf=3`` keeps leaves off single points: there, residuals that are zero
    up to round-off (ours differ from sklearn's in the last bit, as the step nu / 2 is
    computed, not hard-wired) would decide splits and make the comparison meaningless.
    """
    X, y = data["squared"]
    n = 6
    rgb = RGBRegressor(n_estimators=40, n_samples_per_round=1, beta=0.0,
                       families=[(n, 1e9)], learning_rate=learning_rate, lipschitz="tree",
                       leaf_values="gradient", min_samples_leaf=3, random_state=0).fit(X, y)
    gb = GradientBoostingRegressor(n_estimators=40, learning_rate=learning_rate,
                                   max_leaf_nodes=n + 1, max_depth=None, subsample=1.0,
                                   min_samples_leaf=3, random_state=0).fit(X, y)
    assert rgb.intercept_ == pytest.approx(float(np.mean(y)), rel=1e-14)
    # the step nu / 2 is taken on the scaled problem y / s; coefs_ are on the scale of y
    np.testing.assert_allclose(rgb.coefs_ / rgb.target_scale_, learning_rate / 2,
                               rtol=1e-12)
    np.testing.assert_allclose(rgb.predict(X), gb.predict(X), rtol=0, atol=1e-10)
    X_new = np.random.default_rng(1).normal(size=(50, X.shape[1]))
    np.testing.assert_allclose(rgb.predict(X_new), gb.predict(X_new), rtol=0, atol=1e-10)
    for ours, theirs in zip(rgb.estimators_, gb.estimators_[:, 0]):
        np.testing.assert_array_equal(ours.tree_.feature, theirs.tree_.feature)
        np.testing.assert_array_equal(ours.tree_.threshold, theirs.tree_.threshold)


def test_reproducible_for_a_fixed_seed(data: dict) -> None:
    X, y = data["logistic"]
    # a fixed beta: with beta=None the validation split also draws from a RandomState
    # instance, so only an integer seed reproduces the fit then (test_rgb_select.py)
    kw = dict(n_estimators=15, n_samples_per_round=3, beta=0.01, random_state=11)
    a = RGBClassifier(**kw).fit(X, y)  # type: ignore[arg-type]
    b = RGBClassifier(**kw).fit(X, y)  # type: ignore[arg-type]
    assert a.families_ == b.families_
    np.testing.assert_array_equal(a.coefs_, b.coefs_)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert [r.candidates for r in a.rounds_] == [r.candidates for r in b.rounds_]
    rs = np.random.RandomState(11)
    c = RGBClassifier(n_estimators=15, n_samples_per_round=3, beta=0.01,
                      random_state=rs).fit(X, y)
    assert c.families_ == a.families_
    d = RGBClassifier(n_estimators=15, n_samples_per_round=3, beta=0.01,
                      random_state=12).fit(X, y)
    assert d.families_ != a.families_


def test_families_are_drawn_with_the_sampling_probabilities() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=40)
    grid = FamilyGrid.from_pairs([(1, 1.0), (2, 3.0)])
    for sampling, p_second in (("lambda", 0.75), ("lambda_squared", 0.9), ("uniform", 0.5)):
        fit = fit_rgb(X, y, loss="squared", families=grid, n_estimators=200,
                      n_samples_per_round=10, sampling=sampling, random_state=1)
        draws = np.array([c.family for r in fit.rounds for c in r.candidates])
        assert len(draws) == 2000
        # binomial standard deviation <= 0.0112; allow 4 of them
        assert abs(draws.mean() - p_second) < 0.045


def test_huge_beta_keeps_the_constant_model(data: dict) -> None:
    X, y = data["squared"]
    model = RGBRegressor(n_estimators=5, beta=1e6, families=SMALL_GRID,
                         random_state=0).fit(X, y)
    assert np.all(model.coefs_ == 0.0)
    np.testing.assert_allclose(model.predict(X), np.mean(y))
    np.testing.assert_allclose(model.objective_path_, model.initial_objective_)


def test_no_intercept_starts_from_zero(data: dict) -> None:
    X, y = data["logistic"]
    model = RGBClassifier(n_estimators=3, fit_intercept=False, random_state=0).fit(X, y)
    assert model.intercept_ == 0.0
    assert model.initial_objective_ == pytest.approx(np.log(2.0))


@pytest.mark.parametrize("loss, c", [("squared", 1e-3), ("squared", 250.0), ("squared", -2.0),
                                     ("poisson", 1e-3), ("poisson", 250.0)])
@pytest.mark.parametrize("beta", [0.05, None])
def test_regressor_is_equivariant_under_scaling_of_y(data: dict, loss: str, c: float,
                                                     beta: float | None) -> None:
    """y -> c y gives predictions c * (those of y): the same rounds on the scaled problem
    y / s (docs/explanation/rgb.md section 2), beta chosen on the validation split too."""
    X, y = data[loss]
    base = _fit(loss, data, beta=beta)
    scaled = _fit(loss, {loss: (X, c * y)}, beta=beta)
    assert scaled.target_scale_ == pytest.approx(abs(c) * base.target_scale_, rel=1e-12)
    assert scaled.beta_ == base.beta_
    np.testing.assert_array_equal(scaled.family_indices_, base.family_indices_)
    np.testing.assert_allclose(scaled.objective_path_, base.objective_path_, rtol=1e-9)
    np.testing.assert_allclose(scaled.predict(X), c * base.predict(X), rtol=1e-9,
                               atol=1e-12 * abs(c) * np.abs(y).max())


def test_without_target_scaling_the_fit_depends_on_the_unit_of_y(data: dict) -> None:
    """The penalty beta * |alpha| and the absolute lambda grid are not scale-free: the
    equivariance above is the scaling's doing, not an accident of the data."""
    X, y = data["squared"]
    base = _fit("squared", data, beta=0.05, scale_target=False)
    scaled = _fit("squared", {"squared": (X, 100.0 * y)}, beta=0.05, scale_target=False)
    assert base.target_scale_ == scaled.target_scale_ == 1.0
    assert not np.allclose(scaled.predict(X), 100.0 * base.predict(X), rtol=1e-3)


# ---------------------------------------------------------------------------- steps
def _coord(loss: str, F: np.ndarray, y: np.ndarray, h: np.ndarray, rho: float):
    lo = get_loss(loss)

    def phi(a: float) -> float:
        return float(np.mean(lo.value(F + a * h, y))) + rho * abs(a)

    G = float(np.mean(lo.gradient(F, y) * h))
    return lo, phi, G


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
@pytest.mark.parametrize("rho", [0.0, 0.01])
def test_line_search_is_the_exact_minimizer(loss: str, rho: float) -> None:
    rng = np.random.default_rng(5)
    F = 0.3 * rng.normal(size=80)
    y = {"squared": rng.normal(size=80), "logistic": rng.choice([-1.0, 1.0], size=80),
         "poisson": rng.poisson(1.5, size=80).astype(float)}[loss]
    h = rng.choice([-0.7, 0.2, 1.1], size=80)
    lo, phi, G = _coord(loss, F, y, h, rho)
    a = line_search_step(lo, F, y, h, G, rho)
    ref = minimize_scalar(phi, bounds=(-20, 20), method="bounded",
                          options={"xatol": 1e-12})
    assert phi(a) <= ref.fun + 1e-12
    assert a == pytest.approx(ref.x, abs=1e-5)
    # the Lipschitz step decreases phi, but (for a curved loss) not more than the optimum
    b = lipschitz_step(lo, F, y, h, G, rho, phi(0.0))
    assert phi(a) <= phi(b) + 1e-14 <= phi(0.0) + 1e-14
    assert np.sign(b) == np.sign(a)


def test_lipschitz_step_formulas() -> None:
    rng = np.random.default_rng(2)
    F = rng.normal(size=50)
    h = rng.normal(size=50)
    y = rng.normal(size=50)
    lo, phi, G = _coord("squared", F, y, h, 0.0)
    # squared loss: C = 2 mean(h^2) is the exact curvature, the step is Newton's
    a = lipschitz_step(lo, F, y, h, G, 0.0, phi(0.0))
    assert a == pytest.approx(-G / (2 * np.mean(h * h)), rel=1e-14)
    assert a == pytest.approx(line_search_step(lo, F, y, h, G, 0.0), rel=1e-12)
    # soft thresholding: |G| <= rho gives no step; otherwise the threshold is subtracted
    assert lipschitz_step(lo, F, y, h, G, abs(G) * 1.01, phi(0.0)) == 0.0
    rho = abs(G) / 3
    assert lipschitz_step(lo, F, y, h, G, rho, phi(0.0)) == pytest.approx(
        -np.sign(G) * (abs(G) - rho) / (2 * np.mean(h * h)), rel=1e-14)
    # logistic: C_Phi = 1/4
    yl = np.where(y > 0, 1.0, -1.0)
    lo, phi, G = _coord("logistic", F, yl, h, 0.0)
    assert lipschitz_step(lo, F, yl, h, G, 0.0, phi(0.0)) == pytest.approx(
        -G / (0.25 * np.mean(h * h)), rel=1e-14)
    # family constant (Lemma 4): C = lambda * C_Phi, unless the tree's own (9) is larger
    mean_hh = float(np.mean(h * h))
    big = 3.0 * mean_hh
    assert lipschitz_step(lo, F, yl, h, G, 0.0, phi(0.0), family_lambda=big) == \
        pytest.approx(-G / (0.25 * big), rel=1e-14)
    assert lipschitz_step(lo, F, yl, h, G, 0.0, phi(0.0), family_lambda=mean_hh / 3) == \
        pytest.approx(-G / (0.25 * mean_hh), rel=1e-14)


def test_poisson_backtracking_majorizes() -> None:
    rng = np.random.default_rng(4)
    F = rng.normal(size=60)
    y = rng.poisson(3.0, size=60).astype(float)
    h = np.where(rng.random(60) < 0.5, 2.0, -1.0)
    lo, phi, G = _coord("poisson", F, y, h, 0.0)
    a = lipschitz_step(lo, F, y, h, G, 0.0, phi(0.0))
    assert a != 0.0
    assert phi(a) < phi(0.0)


@pytest.mark.parametrize("kw, fragment", [
    ({"n_estimators": 0}, "`n_estimators` must be a positive integer"),
    ({"n_samples_per_round": 2.5}, "`n_samples_per_round` must be a positive integer"),
    ({"min_samples_leaf": 0}, "`min_samples_leaf`"),
    ({"beta": -1.0}, "`beta`"),
    ({"beta": float("nan")}, "`beta`"),
    ({"learning_rate": 0.0}, r"`learning_rate` must be a number in \(0, 1\]"),
    ({"learning_rate": 1.5}, "`learning_rate`"),
    ({"sampling": "nesterov"}, "`sampling` must be one of"),
    ({"step": "newton"}, "`step` must be one of"),
    ({"selection": "best"}, "`selection` must be one of"),
    ({"lipschitz": "global"}, "`lipschitz` must be one of"),
])
def test_fit_rgb_rejects_bad_options(kw: dict, fragment: str) -> None:
    X = np.zeros((4, 1))
    y = np.arange(4.0)
    params: dict = dict(loss="squared", families=FamilyGrid.from_pairs([(1, 1.0)]))
    params.update(kw)
    with pytest.raises(InvalidParameterError, match=fragment):
        fit_rgb(X, y, **params)


def test_newton_node_values_by_brute_force(data: dict) -> None:
    from sklearn.tree import DecisionTreeRegressor

    from rulemip.boosting.rgb.algorithm import newton_node_values

    X, y = data["logistic"]
    X32 = X.astype(np.float32)
    loss = get_loss("logistic")
    y_pm = np.where(y == 1, 1.0, -1.0)
    F = 0.3 * X[:, 0]  # a non-constant model, so curvatures differ between rows
    neg_grad, hess = -loss.gradient(F, y_pm), loss.hessian(F, y_pm)
    tree = DecisionTreeRegressor(max_leaf_nodes=5, random_state=0).fit(X32, neg_grad)
    values = newton_node_values(tree, X32, neg_grad, hess)
    paths = tree.decision_path(X32).toarray().astype(bool)
    for v in range(tree.tree_.node_count):
        rows = paths[:, v]
        assert values[v] == pytest.approx(neg_grad[rows].sum() / hess[rows].sum(), rel=1e-12)
    # a Newton leaf value decreases the leaf's loss (one Newton step on a convex function
    # whose curvature is at most 1/4: here it strictly helps)
    leaf = tree.apply(X32)
    for v in np.unique(leaf):
        rows = leaf == v
        before = loss.value(F[rows], y_pm[rows]).sum()
        after = loss.value(F[rows] + values[v], y_pm[rows]).sum()
        assert after < before


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("leaf_values", ["newton", "gradient"])
def test_both_leaf_values_keep_the_objective_non_increasing(data: dict, loss: str,
                                                            leaf_values: str) -> None:
    X, y = data[loss]
    model = _fit(loss, data, leaf_values=leaf_values, beta=0.05)
    path = np.concatenate([[model.initial_objective_], model.objective_path_])
    assert np.all(np.diff(path) <= 1e-12)
    assert path[-1] < path[0]
    assert _objective(model, loss, X, y, 0.05) == pytest.approx(path[-1], rel=1e-10)
    if loss == "logistic":  # squared loss: Newton values are the leaf means / 2, same tree
        other = _fit(loss, data, beta=0.05,
                     leaf_values="gradient" if leaf_values == "newton" else "newton")
        assert not np.allclose(model.predict_raw(X), other.predict_raw(X))


class _ExpiresAfter:
    """A budget stand-in whose deadline passes at the ``n``-th check."""

    def __init__(self, n: int) -> None:
        self.checks, self.n = 0, n

    def expired(self) -> bool:
        self.checks += 1
        return self.checks > self.n

    def remaining(self) -> None:
        return None


def test_budget_stops_between_rounds_with_the_model_so_far(data: dict) -> None:
    # one candidate a round: the budget is asked once a round, before it
    X, y = data["squared"]
    kw = dict(loss="squared", families=FamilyGrid.from_pairs(SMALL_GRID), n_estimators=12,
              n_samples_per_round=1, random_state=5)
    full = fit_rgb(X, y, **kw)  # type: ignore[arg-type]
    cut = fit_rgb(X, y, budget=_ExpiresAfter(4), **kw)  # type: ignore[arg-type]
    assert not full.stopped_by_limit and cut.stopped_by_limit
    assert len(cut.trees) == len(cut.coefs) == len(cut.objective_path) == 4
    np.testing.assert_array_equal(cut.coefs, full.coefs[:4])
    np.testing.assert_array_equal(cut.objective_path, full.objective_path[:4])
    np.testing.assert_array_equal(cut.family_indices, full.family_indices[:4])


def test_unpenalized_step_is_the_plain_lipschitz_step(data: dict) -> None:
    """Algorithm 1 read literally: alpha = -G/C_k whatever beta is; with beta = 0 it is the
    proximal step; the loss (not (7)) is non-increasing."""
    plain = _fit("logistic", data, step="lipschitz_unpenalized", beta=0.5)
    losses = [r.chosen_candidate.loss for r in plain.rounds_]
    assert np.all(np.diff(losses) <= 1e-12)
    prox0 = _fit("logistic", data, step="lipschitz", beta=0.0)
    plain0 = _fit("logistic", data, step="lipschitz_unpenalized", beta=0.0)
    np.testing.assert_array_equal(prox0.coefs_, plain0.coefs_)
    prox = _fit("logistic", data, step="lipschitz", beta=0.5)
    # the proximal step shrinks every step by rho / C: the unpenalized one moves further
    assert np.abs(plain.coefs_).sum() > np.abs(prox.coefs_).sum()


class _NeverEnoughTime:
    """A budget stand-in that has not expired but has less time left than any round."""

    def expired(self) -> bool:
        return False

    def remaining(self) -> float:
        return 1e-12


def test_a_round_is_not_started_with_less_time_left_than_the_last_took(data: dict) -> None:
    X, y = data["squared"]
    kw = dict(loss="squared", families=FamilyGrid.from_pairs(SMALL_GRID), n_estimators=12,
              n_samples_per_round=3, random_state=5)
    full = fit_rgb(X, y, **kw)  # type: ignore[arg-type]
    cut = fit_rgb(X, y, budget=_NeverEnoughTime(), **kw)  # type: ignore[arg-type]
    assert cut.stopped_by_limit and len(cut.trees) == 1      # the first round has no "last"
    np.testing.assert_array_equal(cut.coefs, full.coefs[:1])


def test_a_round_cut_by_the_budget_keeps_the_best_of_its_fitted_candidates(data: dict) -> None:
    """The budget is asked after each candidate tree: a round whose budget ran out after
    its first candidates keeps the best of those and is the last round."""
    X, y = data["squared"]
    kw = dict(loss="squared", families=FamilyGrid.from_pairs(SMALL_GRID), n_estimators=12,
              n_samples_per_round=3, random_state=5)
    full = fit_rgb(X, y, **kw)  # type: ignore[arg-type]
    # checks: before round 1 (1), after its candidates 1 and 2 (2, 3), before round 2 (4),
    # after round 2's first candidate (5): expired there
    cut = fit_rgb(X, y, budget=_ExpiresAfter(4), **kw)  # type: ignore[arg-type]
    assert cut.stopped_by_limit and len(cut.trees) == 2
    assert len(cut.rounds[0].candidates) == 3 and len(cut.rounds[1].candidates) == 1
    np.testing.assert_array_equal(cut.coefs[:1], full.coefs[:1])
    assert cut.rounds[1].candidates[0] == full.rounds[1].candidates[0]


def test_a_limit_spent_in_the_selection_keeps_the_chosen_candidate(data: dict,
                                                                   monkeypatch) -> None:
    """The β selection used the limit and the final fit has no time for a round: the
    model is the selection's candidate for the chosen β (fitted on its training split),
    not a round past the limit (3 s on 100 000 rows) and not an empty model."""
    import rulemip.estimators.rgb as rgb_module
    from rulemip import RGBRegressor
    from rulemip.budget import Budget
    from rulemip.exceptions import SolveLimitWarning

    X, y = data["squared"]
    real = rgb_module.fit_rgb
    seen: list[tuple[int, int]] = []

    def final_fit_without_time(X_fit, y_fit, **kw):
        if len(X_fit) == len(X):     # the final fit, on every row: its budget is spent
            kw["budget"] = Budget.from_time_limit(0.0)
        fit = real(X_fit, y_fit, **kw)
        seen.append((len(X_fit), len(fit.trees)))
        return fit

    monkeypatch.setattr(rgb_module, "fit_rgb", final_fit_without_time)
    with pytest.warns(SolveLimitWarning, match="candidate for beta"):
        est = RGBRegressor(n_estimators=4, time_limit=None, random_state=0).fit(X, y)
    assert est.fitted_on_selection_split_
    assert seen[-1] == (len(X), 0) and all(n < len(X) and t == 4 for n, t in seen[:-1])
    assert est.n_estimators_ == 4 and est.beta_ in est.beta_validation_losses_
    assert np.mean((est.predict(X) - y) ** 2) < np.var(y)
