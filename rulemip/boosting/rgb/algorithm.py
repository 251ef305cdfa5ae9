r"""Regularized gradient boosting (RGB), [RGB] Algorithm 1 (docs/explanation/rgb.md).

Model and objective
-------------------
The ensemble is :math:`F(x) = F_0 + \sum_{t=1}^T \alpha_t h_t(x)` with trees
:math:`h_t \in \mathcal H_{I_t}` from the families of :mod:`rulemip.boosting.rgb.families`
and an unpenalized intercept :math:`F_0` (the best constant of the loss when
``fit_intercept=True``, else 0 as in the paper's ``F = 0`` start). RGB minimizes [RGB] (7),

.. math:: L(\alpha) = \frac1m\sum_{i=1}^m \Phi\Big(y_i, F_0 + \sum_t \alpha_t h_t(x_i)\Big)
          + \beta \sum_t |\alpha_t|\, \tilde\Omega_{I_t},

with :math:`\tilde\Omega_k \in (0, 1]` the normalized complexity of family ``k`` (see
:class:`~rulemip.boosting.rgb.families.FamilyGrid`) and :math:`\Phi` the loss of
:mod:`rulemip.losses` (logistic for classification, squared or Poisson for regression).

One round (Algorithm 1)
-----------------------
1. Draw :math:`S` families i.i.d. from :math:`p` (``sampling``; default
   :math:`p_k \propto \lambda_k`, [RGB] (26)).
2. For each drawn family :math:`k`, the best member: a regression tree with at most
   :math:`n_k` internal nodes grown best-first (scikit-learn's ``DecisionTreeRegressor``
   with ``max_leaf_nodes = n_k + 1``) by least squares on the negative functional gradient
   :math:`-g_i = -\partial\Phi(y_i, F(x_i))/\partial F`, with the Newton leaf values
   :math:`\sum_{i\in l}(-g_i)/\sum_{i\in l}\partial^2\Phi_i` (``leaf_values="newton"``,
   default) or the leaf means of :math:`-g` (``"gradient"``), its leaf vector scaled
   radially into the ball :math:`\|w\|_q \le \lambda_k`. Candidates of the same size
   :math:`n_k` drawn in one round share one tree fit (they differ only in the scaling), so
   repeated draws cost nothing.
3. Coordinate step on the new coordinate :math:`\alpha`, with
   :math:`G = \frac1m\sum_i g_i h(x_i)` (the :math:`L'_k` of Algorithm 1 without the
   penalty) and :math:`\rho = \beta\tilde\Omega_k`:

   - ``step="lipschitz"`` (Algorithm 1): the proximal coordinate step
     :math:`\alpha = -\operatorname{sign}(G)\max(|G| - \rho, 0)/C_k`, which minimizes the
     quadratic upper model :math:`G\alpha + \frac{C_k}2\alpha^2 + \rho|\alpha|` (the
     :math:`\ell_1` term is not differentiable at 0, so the plain :math:`-L'_k/C_k` is
     replaced by its soft-thresholded form; with :math:`\beta = 0` they coincide).
     With the global curvature bound :math:`C_\Phi = 2` (squared) or :math:`1/4`
     (logistic), ``lipschitz="family"`` (default, the paper's experiments) uses the
     family constant of Lemma 4, :math:`C_k = \lambda_k C_\Phi`, raised to the tree's own
     value when that is larger (Lemma 4's linear form is not a valid bound for
     :math:`\lambda_k > 1` and large leaves); ``lipschitz="tree"`` uses Lemma 3 (9) at the
     fitted tree, :math:`C_k = C_\Phi\frac1m\sum_i h(x_i)^2`, the tightest constant.
     The Poisson loss has no global bound; :math:`C_k` starts at the current curvature
     :math:`\frac1m\sum_i h_i^2 e^{F_i}` (family: at least :math:`\lambda_k\max_i
     e^{F_i}`) and is doubled until the quadratic model majorizes the loss at the step
     (backtracking).
   - ``step="lipschitz_unpenalized"``: Algorithm 1 lines 4 and 7 read literally,
     :math:`\alpha = -G/C_k` with :math:`L'_k` the derivative of the loss alone; the
     penalty acts only through the selection score. The loss never increases, but (7)
     may (a step whose penalty outweighs its decrease of the loss is still taken).
   - ``step="line_search"``: the exact minimizer of the convex one-dimensional function
     :math:`\alpha \mapsto L(\alpha_{1..t-1}, \alpha)` (closed form for the squared loss,
     safeguarded Newton–bisection otherwise).

   Both steps are multiplied by ``learning_rate`` :math:`\nu \in (0, 1]` (1 = the
   learning-rate-free algorithm). Because the one-dimensional objective (or its upper
   model) is convex and not larger at the step than at 0, the scaled step does not
   increase (7) either; a step that would (round-off) is replaced by 0.
4. Keep the candidate with the least score: ``selection="objective"`` uses the value of
   (7) after the step, i.e. loss :math:`+\,\beta|\alpha|\tilde\Omega_k` (the coordinate that
   decreases the objective most); ``selection="complexity"`` uses Algorithm 1 line 6
   literally, loss :math:`+\,\beta\tilde\Omega_k`. Ties go to the earlier draw.

Hence (7) is non-increasing over the rounds (``objective_path``) for ``step="lipschitz"``
and ``"line_search"``. With ``beta=0``, one
family, ``S=1``, the squared loss, ``leaf_values="gradient"``, ``step="lipschitz"`` and
``lipschitz="tree"`` the step
is exactly the leaf-mean tree times :math:`\nu`, i.e. scikit-learn's gradient boosting
with ``learning_rate=ν`` (the curvature constant 2 of :math:`(f-y)^2` makes the Lipschitz
step the Newton step :math:`\alpha = 1/2` on a tree fitted to :math:`-g = 2(y - F)`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.tree import DecisionTreeRegressor

from rulemip.boosting.rgb.families import SAMPLINGS, FamilyGrid, leaf_scale
from rulemip.budget import Budget
from rulemip.exceptions import InvalidDataError, InvalidParameterError
from rulemip.losses import Loss, get_loss

FloatArray = NDArray[np.float64]

STEPS: tuple[str, ...] = ("lipschitz", "line_search", "lipschitz_unpenalized")
LIPSCHITZ: tuple[str, ...] = ("family", "tree")
SELECTIONS: tuple[str, ...] = ("objective", "complexity")
LEAF_VALUES: tuple[str, ...] = ("gradient", "newton")

#: Global bounds :math:`C_\Phi` on :math:`\partial^2\Phi/\partial f^2` ([RGB] Lemma 3).
_CURVATURE_BOUND: dict[str, float] = {"squared": 2.0, "logistic": 0.25}


@dataclass(frozen=True)
class RGBCandidate:
    r"""One drawn family of a round and what its best member would achieve.

    Attributes
    ----------
    family : index ``k`` into the family grid.
    n_internal, lam : :math:`n_k`, :math:`\lambda_k`.
    complexity : normalized :math:`\tilde\Omega_k`.
    scale : factor applied to the least-squares leaf values to enter the norm ball.
    alpha : the (learning-rate scaled) step :math:`\alpha`.
    loss : :math:`\frac1m\sum_i\Phi(y_i, F(x_i) + \alpha h(x_i))` after the step.
    penalty : :math:`\beta|\alpha|\tilde\Omega_k`, the increase of the penalty of (7).
    score : the selection score (``loss + penalty`` or ``loss + β Ω̃_k``).
    """

    family: int
    n_internal: int
    lam: float
    complexity: float
    scale: float
    alpha: float
    loss: float
    penalty: float
    score: float


@dataclass(frozen=True)
class RGBRound:
    """A round of Algorithm 1: the drawn candidates, the chosen one and objective (7)."""

    candidates: tuple[RGBCandidate, ...]
    chosen: int
    objective: float

    @property
    def chosen_candidate(self) -> RGBCandidate:
        return self.candidates[self.chosen]


@dataclass
class RGBFit:
    r"""Result of :func:`fit_rgb`: :math:`F(x) = F_0 + \sum_t \alpha_t h_t(x)`.

    Attributes
    ----------
    intercept : :math:`F_0`.
    trees : the fitted trees :math:`h_t` (leaf values already scaled into the ball).
    coefs : :math:`\alpha_t`, one per tree.
    family_indices : :math:`I_t`, the chosen family of each round.
    rounds : per-round record of all candidates (:class:`RGBRound`).
    initial_objective : (7) at :math:`\alpha = 0` (loss of :math:`F_0`).
    objective_path : (7) after each round.
    stopped_by_limit : True when the budget ran out before ``n_estimators`` rounds (the
        fields then hold the rounds completed).
    target_scale : the scale :math:`s` of :func:`target_scale` the labels were divided by
        (1 when ``scale_target=False`` or for the logistic loss). ``intercept``, ``coefs``
        and ``train_decision`` are mapped back to the scale of ``y``; ``rounds``,
        ``initial_objective`` and ``objective_path`` describe the scaled problem
        (:math:`y/s`), on which (7) is defined.
    """

    intercept: float
    trees: list[DecisionTreeRegressor]
    coefs: FloatArray
    family_indices: NDArray[np.int64]
    rounds: list[RGBRound]
    initial_objective: float
    objective_path: FloatArray
    train_decision: FloatArray = field(repr=False)
    stopped_by_limit: bool = False
    target_scale: float = 1.0


def _soft(g: float, rho: float) -> float:
    return float(np.sign(g) * max(abs(g) - rho, 0.0))


def _mean_loss(loss: Loss, f: FloatArray, y: FloatArray) -> float:
    return float(np.mean(loss.value(f, y)))


def lipschitz_step(loss: Loss, F: FloatArray, y: FloatArray, h: FloatArray, G: float,
                   rho: float, base_loss: float, family_lambda: float | None = None) -> float:
    r"""Proximal coordinate step :math:`-\operatorname{sign}(G)\max(|G|-\rho,0)/C_k`.

    Parameters
    ----------
    loss, F, y : the loss, current scores :math:`F(x_i)` and labels.
    h : the candidate tree on the sample, :math:`h(x_i)`.
    G : :math:`\frac1m\sum_i g_i h(x_i)`.
    rho : :math:`\beta\tilde\Omega_k`.
    base_loss : :math:`\frac1m\sum_i\Phi(y_i, F_i)` (used by the Poisson backtracking).
    family_lambda : ``None`` for the tree's own constant, Lemma 3 (9):
        :math:`C_k = C_\Phi\frac1m\sum_i h_i^2`; :math:`\lambda_k` for the family
        constant of Lemma 4, :math:`C_k = \max(\lambda_k C_\Phi,\ C_\Phi\frac1m\sum_i
        h_i^2)` (the max keeps :math:`C_k` a valid bound when :math:`\lambda_k > 1`,
        where Lemma 4's linear form can fall below (9)).
    """
    hh = h * h
    mean_hh = float(np.mean(hh))
    if mean_hh == 0.0 or abs(G) <= rho:
        return 0.0
    bound = _CURVATURE_BOUND.get(loss.name)
    if bound is not None:
        C = mean_hh * bound
        if family_lambda is not None:
            C = max(C, family_lambda * bound)
        return -_soft(G, rho) / C
    # no global curvature bound (Poisson): start from the local curvature (for the family
    # constant, lambda_k times the largest local curvature) and backtrack until the
    # quadratic model majorizes the loss at the step
    hess = loss.hessian(F, y)
    C = max(float(np.mean(hh * hess)), 1e-300)
    if family_lambda is not None:
        C = max(C, family_lambda * float(np.max(hess)))
    for _ in range(200):
        a = -_soft(G, rho) / C
        model = G * a + 0.5 * C * a * a
        actual = _mean_loss(loss, F + a * h, y) - base_loss
        if actual <= model:
            return a
        C *= 2.0
    return 0.0


def line_search_step(loss: Loss, F: FloatArray, y: FloatArray, h: FloatArray, G: float,
                     rho: float) -> float:
    r"""Exact minimizer of :math:`\alpha\mapsto\frac1m\sum_i\Phi(y_i,F_i+\alpha h_i)+\rho|\alpha|`.

    Convex in :math:`\alpha`; 0 is optimal iff :math:`|G| \le \rho`. Otherwise the minimizer
    lies on the side :math:`-\operatorname{sign}(G)` where the function is smooth, and its
    derivative is driven to 0 by Newton steps kept inside a bisection bracket.
    """
    hh = h * h
    if float(np.mean(hh)) == 0.0 or abs(G) <= rho:
        return 0.0
    if loss.name == "squared":
        return -_soft(G, rho) / (2.0 * float(np.mean(hh)))
    sgn = -float(np.sign(G))
    u = sgn * h

    def deriv(t: float) -> tuple[float, float]:
        f = F + t * u
        return (float(np.mean(loss.gradient(f, y) * u)) + rho,
                float(np.mean(loss.hessian(f, y) * hh)))

    d0, c0 = deriv(0.0)  # d0 = rho - |G| < 0
    lo, hi = 0.0, -d0 / max(c0, 1e-300)
    d_hi, _ = deriv(hi)
    expand = 0
    while d_hi < 0.0 and expand < 200:
        lo, hi = hi, 2.0 * hi
        d_hi, _ = deriv(hi)
        expand += 1
    t = 0.5 * (lo + hi)
    for _ in range(100):
        d, c = deriv(t)
        if abs(d) <= 1e-13 * (abs(G) + 1.0):
            break
        if d < 0.0:
            lo = t
        else:
            hi = t
        newton = t - d / c if c > 0.0 else np.nan
        t = newton if lo < newton < hi else 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * max(hi, 1.0):
            break
    return sgn * t


def newton_node_values(tree: DecisionTreeRegressor, X32: NDArray[np.float32],
                       neg_grad: FloatArray, hess: FloatArray) -> FloatArray:
    r"""Newton values :math:`w_v = \sum_{i\in v}(-g_i) / \sum_{i\in v}\partial^2\Phi_i`
    of every node :math:`v` of ``tree`` (0 where the curvature sum vanishes).

    Given the tree's partition, :math:`w_l` is one Newton step from 0 on
    :math:`w\mapsto\sum_{i\in l}\Phi(y_i, F_i + w)`, i.e. the second-order approximation
    of the loss-minimizing member of Algorithm 1 line 4 (module docstring).
    """
    paths = tree.decision_path(X32)  # (m, nodes) 0/1
    num = np.asarray(paths.T @ neg_grad, dtype=float).ravel()
    den = np.asarray(paths.T @ hess, dtype=float).ravel()
    out = np.zeros_like(num)
    ok = den > 1e-150
    out[ok] = num[ok] / den[ok]
    return out


def target_scale(loss_name: str, y: FloatArray, fit_intercept: bool = True) -> float:
    r"""The scale :math:`s > 0` of the labels that makes Algorithm 1 scale-free.

    - squared loss: :math:`s = \sqrt{\frac1m\sum_i (y_i - F_0)^2}`, the root of the risk
      of the start model (the standard deviation of ``y`` with the intercept, its root
      mean square without);
    - Poisson: :math:`s = \bar y`, the mean label;
    - logistic: :math:`s = 1` (the labels are :math:`\pm1`, nothing to scale).

    A zero scale (constant labels) is replaced by 1. For :math:`c > 0` the scale of
    :math:`c\,y` is :math:`c\,s` (for the squared loss also for :math:`c < 0`), which is
    what makes the fit equivariant (docs/explanation/rgb.md, section 2).
    """
    if loss_name == "squared":
        centre = float(np.mean(y)) if fit_intercept else 0.0
        s = float(np.sqrt(np.mean((y - centre) ** 2)))
    elif loss_name == "poisson":
        s = float(np.mean(y))
    else:
        return 1.0
    return s if s > 0.0 and np.isfinite(s) else 1.0


def _check_options(n_estimators: int, n_samples_per_round: int, beta: float, sampling: str,
                   step: str, learning_rate: float, selection: str,
                   min_samples_leaf: int, lipschitz: str = "family",
                   leaf_values: str = "newton") -> None:
    for name, v in (("n_estimators", n_estimators), ("n_samples_per_round", n_samples_per_round),
                    ("min_samples_leaf", min_samples_leaf)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise InvalidParameterError(f"`{name}` must be a positive integer; got {v!r}.")
    if isinstance(beta, bool) or not isinstance(beta, int | float | np.floating | np.integer) \
            or not np.isfinite(beta) or beta < 0:
        raise InvalidParameterError(
            f"`beta` (the weight of the complexity penalty in (7)) must be a finite number "
            f">= 0; got {beta!r}.")
    if isinstance(learning_rate, bool) or not isinstance(
            learning_rate, int | float | np.floating | np.integer) \
            or not (0.0 < float(learning_rate) <= 1.0):
        raise InvalidParameterError(
            "`learning_rate` must be a number in (0, 1] (1 = Algorithm 1's step; smaller "
            f"values shrink it and keep (7) non-increasing); got {learning_rate!r}.")
    for opt, value, choices in (("sampling", sampling, SAMPLINGS), ("step", step, STEPS),
                                ("selection", selection, SELECTIONS),
                                ("lipschitz", lipschitz, LIPSCHITZ),
                                ("leaf_values", leaf_values, LEAF_VALUES)):
        if value not in choices:
            listed = ", ".join(repr(c) for c in choices)
            raise InvalidParameterError(f"`{opt}` must be one of {listed}; got {value!r}.")


def fit_rgb(X: Any, y: Any, *, loss: str | Loss, families: FamilyGrid, n_estimators: int = 100,
            n_samples_per_round: int = 5, beta: float = 0.01, sampling: str = "lambda",
            step: str = "lipschitz", lipschitz: str = "family", learning_rate: float = 0.5,
            selection: str = "objective", fit_intercept: bool = True,
            min_samples_leaf: int = 1, leaf_values: str = "newton",
            scale_target: bool = True, random_state: Any = None,
            budget: Budget | None = None, verbose: bool = False) -> RGBFit:
    r"""Run [RGB] Algorithm 1 for ``n_estimators`` rounds (module docstring).

    Parameters
    ----------
    X : (m, d) finite float array.
    y : (m,) labels in the loss' convention (logistic: -1/+1; Poisson: >= 0).
    loss : ``"squared"``, ``"logistic"``, ``"poisson"`` or a :class:`~rulemip.losses.Loss`.
    families : the grid :math:`\{\mathcal H_{n_k,\lambda_k,q}\}`.
    n_estimators : :math:`T`.
    n_samples_per_round : :math:`S`, families drawn per round (with replacement).
    beta : :math:`\beta \ge 0` of (7).
    sampling : ``"lambda"`` (:math:`p_k\propto\lambda_k`), ``"lambda_squared"`` or
        ``"uniform"``.
    step : ``"lipschitz"`` (proximal), ``"lipschitz_unpenalized"`` or ``"line_search"``.
    lipschitz : ``"family"`` (Lemma 4 constant of the drawn family, safeguarded) or
        ``"tree"`` (Lemma 3 at the fitted tree), for ``step="lipschitz"``.
    learning_rate : :math:`\nu\in(0,1]` multiplying the step (1: Algorithm 1 as
        written; default 0.5, the estimators' default, docs/benchmarks/rgb.md).
    selection : ``"objective"`` or ``"complexity"``.
    fit_intercept : start from the best constant :math:`F_0` (unpenalized) instead of 0.
    min_samples_leaf : passed to the trees.
    leaf_values : ``"newton"`` (:func:`newton_node_values`, default) or ``"gradient"``
        (leaf means of :math:`-g`, the least-squares fit); the tree's splits are the same.
    scale_target : run Algorithm 1 on :math:`y/s` with :math:`s` = :func:`target_scale` and
        map the model back (squared: :math:`F = sF'`; Poisson: :math:`F = F' + \log s`),
        so that the fit does not depend on the unit of ``y``; ``False`` runs on ``y`` as
        given (the penalty and the λ grid then act on the absolute scale of ``y``).
    random_state : seed or ``RandomState``; fixes the draws and the trees' tie-breaking.
        The trees consume it as scikit-learn's gradient boosting does (one seed per tree
        fit, in order); the family draws come from an independent generator seeded by its
        initial state.
    budget : checked before every round; once expired — or once less time is left than
        the previous round took — the rounds completed so far are returned with
        ``stopped_by_limit=True`` (``None``: no limit). It is also asked after each of a
        round's candidate trees (on 100 000 rows a tree takes about half a second, a round
        of S of them seconds): a round whose budget ran out after its first candidates
        keeps the best of those and is the last.
    verbose : print every tenth round (family, step, objective (7)) to stderr.

    Returns
    -------
    RGBFit
    """
    from rulemip._validation import check_random_state

    _check_options(n_estimators, n_samples_per_round, beta, sampling, step, learning_rate,
                   selection, min_samples_leaf, lipschitz, leaf_values)
    loss_obj = get_loss(loss)
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    y_arr = np.ascontiguousarray(y, dtype=float)
    if X32.ndim != 2 or y_arr.ndim != 1 or X32.shape[0] != y_arr.shape[0] or not len(y_arr):
        raise InvalidDataError(
            f"X must be (m, d) and y (m,) with m >= 1; got {np.shape(X)} and {np.shape(y)}.")
    if not np.all(np.isfinite(X32)):
        raise InvalidDataError(
            "X contains NaN or infinity (or values beyond float32 range, which the trees "
            "use); impute, drop or rescale those entries first.")
    y_arr = loss_obj.check_labels(y_arr)
    scale = target_scale(loss_obj.name, y_arr, fit_intercept) if scale_target else 1.0
    if scale != 1.0:
        y_arr = y_arr / scale
    # Trees draw their tie-breaking seeds from `tree_rng` in fitting order, exactly as
    # scikit-learn's gradient boosting does; the family draws use an independent stream
    # seeded from tree_rng's initial state (not consuming it), so that with one family
    # and S = 1 the trees are the same as GradientBoostingRegressor's, ties included.
    tree_rng = check_random_state(random_state)
    _, key, pos, *_ = tree_rng.get_state()
    family_rng = np.random.default_rng([int(v) for v in key] + [int(pos)])
    m = y_arr.shape[0]
    omega = families.complexities()
    probs = families.probabilities(sampling)
    K = len(families)
    beta = float(beta)
    nu = float(learning_rate)
    sw = np.ones(m)

    intercept = loss_obj.best_constant(y_arr) if fit_intercept else 0.0
    F = np.full(m, intercept, dtype=float)
    cur_loss = _mean_loss(loss_obj, F, y_arr)
    initial_objective = cur_loss
    penalty_total = 0.0

    trees: list[DecisionTreeRegressor] = []
    coefs: list[float] = []
    chosen_families: list[int] = []
    rounds: list[RGBRound] = []
    path: list[float] = []
    stopped = False
    last_round = 0.0
    for t in range(n_estimators):
        if budget is not None and _no_time_for_a_round(budget, last_round):
            stopped = True
            if verbose:
                print(f"RGB: time limit reached after {t} of {n_estimators} rounds",
                      file=sys.stderr, flush=True)
            break
        round_start = time.perf_counter()
        draws = family_rng.choice(K, size=n_samples_per_round, replace=True, p=probs)
        neg_grad = -loss_obj.gradient(F, y_arr)
        hess = loss_obj.hessian(F, y_arr) if leaf_values == "newton" else None
        fitted: dict[int, tuple[DecisionTreeRegressor, FloatArray, FloatArray]] = {}
        cands: list[RGBCandidate] = []
        cand_h: list[FloatArray] = []
        for k in draws:
            k = int(k)
            n_k, lam_k = families.n_internal[k], families.lambdas[k]
            if n_k not in fitted:
                tree = DecisionTreeRegressor(
                    criterion="squared_error", max_leaf_nodes=n_k + 1,
                    min_samples_leaf=min_samples_leaf, random_state=tree_rng)
                tree.fit(X32, neg_grad, sample_weight=sw, check_input=False)
                if hess is not None:  # Newton leaf values
                    tree.tree_.value[:, 0, 0] = newton_node_values(tree, X32, neg_grad, hess)
                values = tree.tree_.value[:, 0, 0]
                is_leaf = tree.tree_.children_left == -1
                fitted[n_k] = (tree, values[tree.apply(X32)], values[is_leaf])
            _, pred, leaf_vector = fitted[n_k]
            s = leaf_scale(leaf_vector, lam_k, families.q)
            h = s * pred
            G = -float(np.mean(neg_grad * h))
            rho = beta * float(omega[k])
            unpenalized = step == "lipschitz_unpenalized"
            if step == "line_search":
                a = line_search_step(loss_obj, F, y_arr, h, G, rho)
            else:  # the penalty enters the step only in its proximal form
                a = lipschitz_step(loss_obj, F, y_arr, h, G, 0.0 if unpenalized else rho,
                                   cur_loss, lam_k if lipschitz == "family" else None)
            a *= nu
            new_loss = _mean_loss(loss_obj, F + a * h, y_arr) if a != 0.0 else cur_loss
            pen = beta * abs(a) * float(omega[k])
            # round-off guard: never increase (7); the unpenalized step guarantees only that
            # the loss does not increase (its penalty may outweigh the decrease)
            if (new_loss > cur_loss) if unpenalized else (new_loss + pen > cur_loss):
                a, new_loss, pen = 0.0, cur_loss, 0.0
            score = new_loss + (pen if selection == "objective" else beta * float(omega[k]))
            cands.append(RGBCandidate(k, n_k, lam_k, float(omega[k]), s, a, new_loss, pen,
                                      score))
            cand_h.append(h)
            if budget is not None and len(cands) < len(draws) and budget.expired():
                stopped = True       # the best of the candidates fitted; the last round
                break
        best = int(np.argmin([c.score for c in cands]))
        c = cands[best]
        tree = fitted[c.n_internal][0]
        if c.scale != 1.0:
            tree.tree_.value[:, 0, 0] *= c.scale
        F = F + c.alpha * cand_h[best]
        cur_loss = c.loss
        penalty_total += c.penalty
        trees.append(tree)
        coefs.append(c.alpha)
        chosen_families.append(c.family)
        objective = cur_loss + penalty_total
        rounds.append(RGBRound(tuple(cands), best, objective))
        path.append(objective)
        last_round = time.perf_counter() - round_start
        if stopped:
            if verbose:
                print(f"RGB: time limit reached in round {t + 1} of {n_estimators} (after "
                      f"{len(cands)} of {len(draws)} candidates)", file=sys.stderr, flush=True)
            break
        if verbose and ((t + 1) % 10 == 0 or t + 1 == n_estimators):
            print(f"RGB round {t + 1}/{n_estimators}: family (n={c.n_internal}, "
                  f"lambda={c.lam:g}), alpha={c.alpha:.4g}, objective (7) {objective:.6g}",
                  file=sys.stderr, flush=True)
    coef_arr = np.array(coefs, dtype=float)
    if scale != 1.0 and loss_obj.name == "poisson":  # log link: F = F' + log s
        intercept, F = intercept + float(np.log(scale)), F + float(np.log(scale))
    elif scale != 1.0:  # identity link: F = s F'
        intercept, coef_arr, F = intercept * scale, coef_arr * scale, F * scale
    return RGBFit(intercept=float(intercept), trees=trees, coefs=coef_arr,
                  family_indices=np.array(chosen_families, dtype=np.int64), rounds=rounds,
                  initial_objective=float(initial_objective),
                  objective_path=np.array(path, dtype=float), train_decision=F,
                  stopped_by_limit=stopped, target_scale=float(scale))


def _no_time_for_a_round(budget: Budget, last_round: float) -> bool:
    """The budget is spent, or less time is left than the previous round took."""
    if budget.expired():
        return True
    left = budget.remaining()
    return left is not None and left < last_round


def decision_function(intercept: float, trees: list[DecisionTreeRegressor],
                      coefs: FloatArray, X: Any) -> FloatArray:
    r""":math:`F(x) = F_0 + \sum_t \alpha_t h_t(x)` for the rows of ``X``."""
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    out = np.full(X32.shape[0], float(intercept))
    for a, tree in zip(coefs, trees):
        if a != 0.0:
            out += a * tree.predict(X32)
    return out
