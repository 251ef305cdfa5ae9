r"""scikit-learn estimators for regularized gradient boosting ([RGB], docs/explanation/rgb.md).

:class:`RGBClassifier` (logistic loss) and :class:`RGBRegressor` (squared or Poisson loss)
run [RGB] Algorithm 1 as implemented in :mod:`rulemip.boosting.rgb.algorithm`; the math is in
``docs/explanation/rgb.md``.

Reading a fitted model as a tree ensemble (for tree pruning / rule extraction)
------------------------------------------------------------------------------
:math:`F(x) = \text{intercept\_} + \sum_t \text{coefs\_}[t]\cdot
\text{estimators\_}[t]\text{.predict}(x)`, where

- ``estimators_``: flat list of fitted ``sklearn.tree.DecisionTreeRegressor`` (one per
  round, ``tree_.value`` holds the leaf values :math:`w` already scaled into the
  family's ball :math:`\|w\|_q\le\lambda`);
- ``coefs_`` (alias ``estimator_weights_``, the AdaBoost name): per-tree multipliers
  :math:`\alpha_t` (may be 0 when the soft threshold removed a round's step);
- ``intercept_``: :math:`F_0` (unpenalized).

``predict_raw(X)`` returns :math:`F` on both estimators (the classifier's
``decision_function`` too): the log-odds of ``classes_[1]``, the mean (squared loss) or the
log-rate (Poisson). Every node of a tree (internal ones included) carries the scaled mean of
the negative gradient of its training points in ``tree_.value``; the extractor that wants
node values on the scale of :math:`F` multiplies them by ``coefs_[t]``. Trees compare
``float32(x_j) <= threshold`` (scikit-learn's convention). :meth:`to_rule_ensemble`
returns the same function as a
:class:`~rulemip.rules.RuleEnsemble` (one rule per leaf, weight :math:`\alpha_t w_l`).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from rulemip._validation import check_bool, check_nonneg_float, check_seed
from rulemip.boosting.rgb.algorithm import RGBFit, decision_function, fit_rgb
from rulemip.boosting.rgb.families import FamilyGrid
from rulemip.boosting.rgb.rules import trees_to_rule_ensemble
from rulemip.boosting.rgb.select import VALIDATION_FRACTION, select_beta
from rulemip.budget import Budget
from rulemip.data.dataset import Dataset
from rulemip.estimators._inputs import (
    binary_labels,
    check_float32_range,
    fit_dataset,
    predict_matrix,
)
from rulemip.exceptions import InvalidParameterError, SolveLimitWarning
from rulemip.losses import get_loss
from rulemip.rules import RuleEnsemble

FloatArray = NDArray[np.float64]

#: ``learning_rate=None``: ν by loss. Squared loss 1: its Newton leaf values are half the
#: leaf means of −g (curvature 2), and the family-constant step α·h scales with ‖h‖², so
#: Newton leaves alone quarter the step of the leaf-mean default; ν = 0.5 on top left
#: ``RGBRegressor(n_estimators=5)`` at training R² 0.42–0.47 on scikit-learn's
#: ``check_regressors_train`` data (ν = 1: 0.55–0.65, seeds 0–9), and ν = 0.5 scored below
#: ν = 1 in cross-validation on diabetes at every n_estimators measured
#: (docs/explanation/rgb.md §9).
#: Poisson and logistic keep 0.5.
DEFAULT_LEARNING_RATE: dict[str, float] = {"squared": 1.0}
#: ``beta=None``: share of the fit's budget (time and work left) the candidate fits of the
#: beta selection share; the final fit gets the rest (docs/architecture.md, "Time shares")
BETA_SELECTION_SHARE: float = 0.8

_PARAMS_DOC = r"""
    n_estimators : int, default=100
        :math:`T`, the number of boosting rounds (the paper uses 100).
    n_samples_per_round : int, default=5
        :math:`S`, families drawn (with replacement) per round; the best of the S
        candidates is kept.
    beta : float or None, default=None
        :math:`\beta\ge0`, weight of the complexity penalty
        :math:`\sum_t|\alpha_t|\tilde\Omega_{I_t}` of objective (7) (paper grid:
        {0.001, 0.01, 0.1, 0.3, 1}). ``None``: chosen from {0.01, 0.1, 0.3, 1} by the
        loss on an internal validation split of 20 % (stratified for the classifier,
        seeded by ``random_state``), then the model is refitted on all rows with it
        (:mod:`rulemip.boosting.rgb.select`; about five times the time of one fit).
    families : None, "paper" or sequence of (n_internal, lambda), default=None
        The families :math:`\mathcal H_{n_k,\lambda_k,q}`: trees with at most
        ``n_internal`` internal nodes and leaf norm :math:`\|w\|_q\le\lambda`. ``None`` is
        rulemip's 8×7 grid n ∈ {1,2,4,8,16,32,64,256} (the paper's plus stumps),
        λ ∈ {0.001,0.01,0.1,0.5,1,2,4}; ``"paper"`` the paper's 7×7 grid without stumps.
    q : {1, 2}, default=2
        The leaf-vector norm of the families.
    sampling : {"lambda", "lambda_squared", "uniform"}, default="lambda"
        Family sampling distribution: :math:`p_k\propto\lambda_k` (paper (26)),
        :math:`\propto\lambda_k^2` (the Lipschitz bound without Lemma 4's dropped square),
        or uniform.
    step : {"lipschitz", "lipschitz_unpenalized", "line_search"}, default="lipschitz"
        Coordinate step: the proximal Lipschitz step of Algorithm 1 (keeps (7)
        non-increasing), the same step with the penalty left out (Algorithm 1 read
        literally: β acts only in the selection; (7) may increase) or an exact line search
        on (7).
    lipschitz : {"family", "tree"}, default="family"
        Constant :math:`C_k` of the Lipschitz step: the drawn family's bound
        :math:`\lambda_k C_\Phi` (Lemma 4, as in the paper's experiments; raised to the
        tree's own value when that is larger) or the fitted tree's value
        :math:`C_\Phi\frac1m\sum_i h(x_i)^2` (Lemma 3, the tightest).
    learning_rate : float in (0, 1] or None, default=0.5 (classifier), None (regressor)
        :math:`\nu` multiplying the step; 1 is the learning-rate-free Algorithm 1. ``None``
        (the regressor's default): 1 for the squared loss, 0.5 otherwise
        (:data:`DEFAULT_LEARNING_RATE`; ``learning_rate_`` holds the value used). 0.5 (with
        Newton leaves) did better than 1 on every classification set of the benchmark; for
        the squared loss Newton leaves already quarter the family-constant step, and ν = 1
        did better (docs/explanation/rgb.md §9, docs/benchmarks/rgb.md, "Defaults"). With
        ``step="lipschitz"`` or ``"line_search"`` (7) stays non-increasing for any ν
        (``"lipschitz_unpenalized"`` may raise it).
    selection : {"objective", "complexity"}, default="objective"
        Candidate score: objective (7) after the step (loss + β|α|Ω̃) or Algorithm 1
        line 6 literally (loss + βΩ̃).
    fit_intercept : bool, default=True
        Start from the best constant :math:`F_0` (unpenalized) instead of :math:`F=0`.
    min_samples_leaf : int, default=1
        Minimum number of samples in a tree leaf.
    leaf_values : {"newton", "gradient"}, default="newton"
        Leaf values of a family's best member before the norm-ball scaling: the Newton
        values :math:`\sum_{i\in l}(-g_i)/\sum_{i\in l}\partial^2\Phi_i` (the
        second-order reading of Algorithm 1 line 4, docs/explanation/rgb.md; the default
        since it beat the leaf means on every benchmark set, docs/benchmarks/rgb.md) or the
        leaf means of the negative gradient (least squares).
    scale_target : bool, default=True
        Run Algorithm 1 on :math:`y/s` (squared loss: :math:`s` the standard deviation of
        ``y``; Poisson: its mean) and map the model back, so that β, the λ grid and the
        step do not depend on the unit of ``y`` (``target_scale_``;
        docs/explanation/rgb.md §2). No effect on the classifier. ``False``: the paper's
        absolute scale.
    random_state : int, RandomState or None, default=None
        Seeds the family draws and the trees' tie-breaking; fixed → reproducible fit.
    time_limit : float or None, default=None
        Seconds for the whole ``fit`` (one :class:`rulemip.budget.Budget`, checked before
        every round and after each candidate tree; a round is not started when less time
        is left than the previous one took). When it runs out, the rounds completed so far are kept
        (``n_estimators_`` < ``n_estimators``) and a
        :class:`~rulemip.exceptions.SolveLimitWarning` is issued. When the β selection
        (``beta=None``) used the whole limit, the model is the selection's candidate for
        the chosen β (``fitted_on_selection_split_``); a limit spent before any round
        leaves the intercept alone (no round is run past the limit: on 100 000 rows one
        takes seconds).
    verbose : bool, default=False
        Print every tenth round (chosen family, step, objective (7)) to stderr.
"""

_ATTRS_DOC = r"""
    estimators_ : list of DecisionTreeRegressor
        The trees :math:`h_t`, leaf values already scaled into the norm ball.
    coefs_ : ndarray of shape (n_estimators,)
        :math:`\alpha_t`, the multiplier of each tree. ``estimator_weights_`` is the same
        array.
    intercept_ : float
        :math:`F_0`.
    families_ : list of (int, float)
        The family ``(n_internal, lambda)`` chosen in each round.
    family_indices_ : ndarray of int
        Index of the chosen family into ``family_grid_``.
    family_grid_ : FamilyGrid
        The families searched.
    complexities_ : ndarray
        Normalized complexities :math:`\tilde\Omega_k\in(0,1]` of the grid.
    raw_complexities_ : ndarray
        :math:`\Omega_k` of Theorem 1 for the training sample size and dimension.
    sampling_probabilities_ : ndarray
        The distribution the families were drawn from.
    objective_path_ : ndarray of shape (n_estimators,)
        Objective (7) on the training data after each round (non-increasing).
    initial_objective_ : float
        Objective (7) before the first round.
    rounds_ : list of RGBRound
        Per round: every drawn candidate (family, scale, step α, loss, penalty, score)
        and the index of the chosen one.
    beta_ : float
        The :math:`\beta` used (``beta`` or the one chosen when ``beta=None``).
    learning_rate_ : float
        The :math:`\nu` used (``learning_rate``, or its default by loss when ``None``).
    beta_validation_losses_ : dict of float to float
        When ``beta=None``: the validation loss of every candidate :math:`\beta` (empty
        when ``beta`` was given or the sample was too small to split; then ``beta_`` is
        0.1).
    fitted_on_selection_split_ : bool
        True when the time limit left the final fit no round and the model is the β
        selection's candidate for ``beta_``, fitted on the selection's training split (a
        :class:`~rulemip.exceptions.SolveLimitWarning` says so); False otherwise.
    target_scale_ : float
        The scale :math:`s` the labels were divided by (1 for the classifier or with
        ``scale_target=False``). ``rounds_``, ``objective_path_`` and
        ``initial_objective_`` are on the scaled problem; ``coefs_`` and ``intercept_`` on
        the scale of ``y``.
    n_estimators_ : int
        Rounds completed (``n_estimators`` unless ``time_limit`` stopped the fit).
    n_features_in_, feature_names_in_ : as in scikit-learn.
"""


def _validate_common(est: Any) -> FamilyGrid:
    """Validate the parameters shared by both estimators; return the family grid."""
    check_bool(est.fit_intercept, "fit_intercept")
    if est.q not in (1, 2) or isinstance(est.q, bool):
        raise InvalidParameterError(f"`q` (the leaf norm) must be 1 or 2; got {est.q!r}.")
    check_nonneg_float(est.time_limit, "time_limit", allow_none=True)
    check_bool(est.scale_target, "scale_target")
    check_bool(est.verbose, "verbose")
    check_seed(est.random_state)
    if isinstance(est.families, str) and est.families == "paper":
        return FamilyGrid.paper(q=int(est.q))
    if est.families is None:
        return FamilyGrid.default(q=int(est.q))
    return FamilyGrid.from_pairs(est.families, q=int(est.q))


class _RGBBase(BaseEstimator):
    _loss_name: str = "squared"

    def _run(self, ds: Dataset, loss: str, budget: Budget) -> None:
        grid = _validate_common(self)
        nu = DEFAULT_LEARNING_RATE.get(loss, 0.5) if self.learning_rate is None \
            else self.learning_rate
        self.learning_rate_ = nu
        X, y = ds.X, ds.y
        check_float32_range(X, "the trees of RGB")
        self.encoder_ = ds.encoder
        def run(X_fit: Any, y_fit: Any, beta: float, fit_budget: Budget,
                final: bool = False) -> RGBFit:
            return fit_rgb(
                X_fit, y_fit, loss=loss, families=grid, n_estimators=self.n_estimators,
                n_samples_per_round=self.n_samples_per_round, beta=beta,
                sampling=self.sampling, step=self.step, lipschitz=self.lipschitz,
                learning_rate=nu,
                selection=self.selection, fit_intercept=bool(self.fit_intercept),
                min_samples_leaf=self.min_samples_leaf, leaf_values=self.leaf_values,
                scale_target=bool(self.scale_target), random_state=self.random_state,
                budget=fit_budget, verbose=bool(self.verbose) and final)

        self.beta_validation_losses_: dict[float, float] = {}
        candidates: dict[float, RGBFit] = {}
        if self.beta is None:
            # the candidate fits share BETA_SELECTION_SHARE of the time left; the final
            # fit gets the rest
            beta, self.beta_validation_losses_ = select_beta(
                X, y, loss, stratify=loss == "logistic", fit=run,
                random_state=self.random_state, budget=budget.fraction(BETA_SELECTION_SHARE),
                fits=candidates)
            if self.verbose:
                print(f"RGB: beta={beta:g} chosen by validation loss "
                      f"{self.beta_validation_losses_}", file=sys.stderr, flush=True)
        else:
            beta = self.beta
        self.beta_ = beta
        # when the final fit has no time for a round (a round on 100 000 rows takes
        # seconds), the selection's candidate for beta is the model
        chosen = candidates.get(beta)
        spare = chosen if chosen is not None and chosen.trees else None
        fit = run(X, y, beta, budget, final=True)
        self.fitted_on_selection_split_ = False
        if not fit.trees and spare is not None:
            fit, self.fitted_on_selection_split_ = spare, True
            warnings.warn(
                f"RGB: the beta selection used the time_limit={self.time_limit} s; the model "
                f"is its candidate for beta={beta:g} ({len(fit.trees)} rounds), fitted on "
                f"the selection's training split ({1 - VALIDATION_FRACTION:.0%} of the "
                "rows). Raise `time_limit` or give `beta` for a fit on every row.",
                SolveLimitWarning, stacklevel=3)
        elif fit.stopped_by_limit:
            warnings.warn(
                f"RGB stopped at time_limit={self.time_limit} s after {len(fit.trees)} of "
                f"{self.n_estimators} rounds; the model built so far is returned. Raise "
                "`time_limit` (or set None) for all rounds.", SolveLimitWarning, stacklevel=3)
        self.n_estimators_ = len(fit.trees)
        self.target_scale_ = fit.target_scale
        self._loss_name = loss
        self.family_grid_ = grid
        self.complexities_ = grid.complexities()
        self.raw_complexities_ = grid.raw_complexities(X.shape[0], X.shape[1])
        self.sampling_probabilities_ = grid.probabilities(self.sampling)
        self.estimators_ = fit.trees
        self.coefs_ = fit.coefs
        self.estimator_weights_ = fit.coefs
        self.intercept_ = fit.intercept
        self.family_indices_ = fit.family_indices
        self.families_ = [grid.pairs[int(k)] for k in fit.family_indices]
        self.rounds_ = fit.rounds
        self.objective_path_ = fit.objective_path
        self.initial_objective_ = fit.initial_objective

    def predict_raw(self, X: Any) -> FloatArray:
        r""":math:`F(x) = F_0 + \sum_t\alpha_t h_t(x)` on the link scale (log-odds of
        ``classes_[1]``, mean, or log-rate)."""
        Xf = predict_matrix(self, X, fitted="estimators_")
        return decision_function(self.intercept_, self.estimators_, self.coefs_, Xf)

    def _feature_names(self) -> list[str] | None:
        return list(self.encoder_.feature_names)

    def _classes(self) -> tuple[Any, ...] | None:
        return None

    def to_rule_ensemble(self) -> RuleEnsemble:
        """The fitted model as a :class:`~rulemip.rules.RuleEnsemble`: intercept
        :math:`F_0` and one rule per leaf with weight :math:`\\alpha_t w_l` and the
        root-to-leaf path as ``lower < x_j <= upper`` conditions. Its
        ``decision_function`` equals this estimator's :meth:`predict_raw` (see
        :mod:`rulemip.boosting.rgb.rules` for the threshold convention)."""
        check_is_fitted(self, "estimators_")
        ens = trees_to_rule_ensemble(self.intercept_, self.estimators_, self.coefs_,
                                     loss=self._loss_name,
                                     feature_names=self._feature_names(),
                                     classes=self._classes())
        return RuleEnsemble(ens.rules, ens.intercept, ens.loss, self.encoder_, ens.classes)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.categorical = True
        return tags


class RGBClassifier(ClassifierMixin, _RGBBase):
    __doc__ = r"""Binary classifier by regularized gradient boosting ([RGB] Algorithm 1)
    with the logistic loss :math:`\log(1+e^{-yF})`, :math:`y\in\{-1,+1\}` internally
    (``classes_[1]`` is +1).

    Parameters
    ----------""" + _PARAMS_DOC + r"""
    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class.""" + _ATTRS_DOC + r"""
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from rulemip.estimators import RGBClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = RGBClassifier(n_estimators=20, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    def __init__(self, n_estimators: int = 100, *, n_samples_per_round: int = 5,
                 beta: float | None = None, families: Any = None, q: int = 2,
                 sampling: str = "lambda", step: str = "lipschitz",
                 lipschitz: str = "family", learning_rate: float | None = 0.5,
                 selection: str = "objective",
                 fit_intercept: bool = True, min_samples_leaf: int = 1,
                 leaf_values: str = "newton", scale_target: bool = True,
                 random_state: Any = None, time_limit: float | None = None,
                 verbose: bool = False) -> None:
        self.n_estimators = n_estimators
        self.n_samples_per_round = n_samples_per_round
        self.beta = beta
        self.families = families
        self.q = q
        self.sampling = sampling
        self.step = step
        self.lipschitz = lipschitz
        self.learning_rate = learning_rate
        self.selection = selection
        self.fit_intercept = fit_intercept
        self.min_samples_leaf = min_samples_leaf
        self.leaf_values = leaf_values
        self.scale_target = scale_target
        self.random_state = random_state
        self.time_limit = time_limit
        self.verbose = verbose

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X: Any, y: Any) -> RGBClassifier:
        """Fit on ``X`` (n, d) and two-class labels ``y``."""
        _validate_common(self)
        budget = Budget.from_time_limit(self.time_limit)  # one budget for the whole fit
        if y is not None:
            binary_labels(self, y)
        ds = fit_dataset(self, X, y, loss="logistic")
        self.classes_ = np.asarray(ds.classes)
        self._run(ds, "logistic", budget)
        return self

    def _classes(self) -> tuple[Any, ...] | None:
        return tuple(c.item() if hasattr(c, "item") else c for c in self.classes_)

    def decision_function(self, X: Any) -> FloatArray:
        r""":math:`F(x)`, the log-odds of ``classes_[1]`` (same as :meth:`predict_raw`)."""
        return self.predict_raw(X)

    def predict_proba(self, X: Any) -> FloatArray:
        """Columns: probability of ``classes_[0]`` and of ``classes_[1]``."""
        p1 = get_loss("logistic").inverse_link(self.decision_function(X))
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X: Any) -> NDArray[Any]:
        """``classes_[1]`` where :math:`F(x) > 0`, else ``classes_[0]``."""
        check_is_fitted(self, "estimators_")
        return np.asarray(self.classes_[(self.decision_function(X) > 0).astype(int)])


class RGBRegressor(RegressorMixin, _RGBBase):
    __doc__ = r"""Regressor by regularized gradient boosting ([RGB] Algorithm 1) with the
    squared loss :math:`(F-y)^2` or the Poisson deviance (log link).

    Parameters
    ----------""" + _PARAMS_DOC + r"""    loss : {"squared", "poisson"}, default="squared"
        :math:`\Phi`. Poisson needs :math:`y\ge0`; predictions are :math:`e^{F}`.

    Attributes
    ----------""" + _ATTRS_DOC

    def __init__(self, n_estimators: int = 100, *, loss: str = "squared",
                 n_samples_per_round: int = 5, beta: float | None = None, families: Any = None,
                 q: int = 2, sampling: str = "lambda", step: str = "lipschitz",
                 lipschitz: str = "family", learning_rate: float | None = None,
                 selection: str = "objective",
                 fit_intercept: bool = True, min_samples_leaf: int = 1,
                 leaf_values: str = "newton", scale_target: bool = True,
                 random_state: Any = None, time_limit: float | None = None,
                 verbose: bool = False) -> None:
        self.loss = loss
        self.n_estimators = n_estimators
        self.n_samples_per_round = n_samples_per_round
        self.beta = beta
        self.families = families
        self.q = q
        self.sampling = sampling
        self.step = step
        self.lipschitz = lipschitz
        self.learning_rate = learning_rate
        self.selection = selection
        self.fit_intercept = fit_intercept
        self.min_samples_leaf = min_samples_leaf
        self.leaf_values = leaf_values
        self.scale_target = scale_target
        self.random_state = random_state
        self.time_limit = time_limit
        self.verbose = verbose

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = self.loss == "poisson"
        return tags

    def fit(self, X: Any, y: Any) -> RGBRegressor:
        """Fit on ``X`` (n, d) and real targets ``y`` (``y >= 0`` for Poisson)."""
        if self.loss not in ("squared", "poisson"):
            raise InvalidParameterError(
                f"`loss` must be 'squared' or 'poisson' for RGBRegressor; got {self.loss!r}."
                " Use RGBClassifier for the logistic loss.")
        _validate_common(self)
        budget = Budget.from_time_limit(self.time_limit)  # one budget for the whole fit
        self._run(fit_dataset(self, X, y, loss=self.loss), self.loss, budget)
        return self

    def predict(self, X: Any) -> FloatArray:
        r""":math:`\mu(F(x))`: :math:`F` (squared) or :math:`e^{F}` (Poisson)."""
        return get_loss(self.loss).inverse_link(self.predict_raw(X))
