r"""TreeRuleExtractor: compact rule sets from a tree ensemble ([PRUNE],
docs/explanation/tree_pruning.md).

Fits (or takes, ``prefit=True``) a tree ensemble, extracts every node as a candidate rule
(:func:`~rulemip.formulations.node_matrix.extract_nodes`), centers and scales y
(unpenalized intercept :math:`\bar y`, scale :math:`s` = std of y) and selects nodes for
Problem (1) / CIP (2) of ``docs/explanation/tree_pruning.md`` with a registered pruning
engine (:func:`~rulemip.algorithms.pruning.driver.register_pruning_engine`; the driver
:func:`~rulemip.algorithms.pruning.driver.solve_pruning` decides every engine's status the
same way), among them the built-in ones:

``"perspective"`` (the default)
    Best-first branch and bound whose bound is the perspective relaxation through its dual,
    the node/descendant rule and the budget inside
    (:func:`~rulemip.algorithms.pruning.perspective_bnb.perspective_bnb`;
    docs/explanation/tree_pruning.md, "The perspective bound"); optimal up to ``mip_gap``
    when ``result_.termination`` is ``optimal``, otherwise the incumbent with a valid
    lower bound and a :class:`~rulemip.exceptions.SolveLimitWarning`. On friedman1
    (docs/benchmarks/pruning.md) it proves faster than the outer approximation where both
    prove, and its bound is the higher where neither does (far higher at the default γn =
    10).
``"exact"``
    Alg. 1 (outer approximation, :func:`~rulemip.algorithms.pruning.exact.prune_exact`) on
    the budgeted problem :math:`\sum_i a_i z_i \le K`; optimal up to the relative gap
    ``mip_gap`` when ``result_.termination`` is ``optimal`` (decided by
    the pruning driver's :func:`~rulemip.algorithms.pruning.driver.decide` on q recomputed
    from the data), otherwise the
    incumbent with a valid lower bound (a :class:`~rulemip.exceptions.SolveLimitWarning`
    is issued).
``"path"``
    The penalized problem (4) over a descending grid of :math:`\lambda` by cyclic block
    coordinate descent (:func:`rulemip.algorithms.pruning.cbcd.regularization_path`). The model
    kept is the one with the **largest cost** :math:`\sum_i a_i z_i \le K` (``n_rules``);
    among models of that cost, the one with the least training risk. All path models are
    kept in ``path_models_``.
``"relax_round"``
    The convex relaxation of the budgeted problem rounded by the knapsack-with-conflicts
    dynamic program (:func:`rulemip.algorithms.pruning.relax_and_round.relax_and_round`), a
    heuristic (no optimality claim).
``"mip"``
    Problem (1) as a convex MIQP
    (:class:`~rulemip.formulations.tree_pruning.TreePruningMIP`) solved natively by a
    backend that takes it (SCIP); the backend's dual bound is the bound.

The fitted model is :math:`\bar y + \sum_{i\in S} s\,\mu_i w_i\,\mathbb 1\{x\in
\text{box}_i\}`: ``rules_`` (a :class:`~rulemip.rules.RuleEnsemble`) holds one rule per
selected node with weight ``coef_`` :math:`= s\,\mu_i w_i` and the node's root-to-node
path as conditions (thresholds mapped by
:func:`~rulemip.boosting.rgb.rules.float64_threshold`, so the rules route every input
exactly as the trees do); :meth:`predict` is ``rules_.predict``.

Accepted ensembles (``estimator``): scikit-learn random forests / extra trees / gradient
boosting regressors, and a fitted :class:`~rulemip.RGBRegressor` (``prefit=True``; its
trees ``estimators_`` with multipliers ``coefs_`` and offset ``intercept_``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, RegressorMixin, clone, is_classifier
from sklearn.ensemble import GradientBoostingRegressor

from rulemip._kernels import ensure_compiled
from rulemip._solver_names import check_solver_name
from rulemip._validation import (
    check_bool,
    check_choice,
    check_nonneg_float,
    check_positive_int,
    check_seed,
)
from rulemip.algorithms.pruning.driver import PRUNING_ENGINES, solve_pruning
from rulemip.boosting.rgb.rules import float64_threshold
from rulemip.budget import Budget
from rulemip.data.encoding import FeatureEncoder
from rulemip.estimators._inputs import check_float32_range, fit_dataset, predict_matrix
from rulemip.estimators._progress import progress_printer, say
from rulemip.exceptions import InvalidDataError, InvalidParameterError, SolveLimitWarning
from rulemip.formulations.node_matrix import NodeMatrix, extract_nodes, scale_columns
from rulemip.formulations.result import PruningResult
from rulemip.rules import Condition, Rule, RuleEnsemble
from rulemip.rules.ensemble import conditions_from_box

__all__ = ["DEFAULT_GAMMA_N", "DEFAULT_REG_PER_ROW", "TreeRuleExtractor", "engines"]

#: default γ·n of [PRUNE] (1) on the standardized response (trade-off: `reg` docstring)
DEFAULT_GAMMA_N = 10.0
#: the same default as a ridge: λ = 1/γ = n / DEFAULT_GAMMA_N, i.e. λ/n = 0.1
DEFAULT_REG_PER_ROW = 1.0 / DEFAULT_GAMMA_N

FloatArray = NDArray[np.float64]

#: the engines this module documents; ``engine`` takes any registered one (:func:`engines`)
ENGINES = ("perspective", "exact", "path", "relax_round", "mip")
METHODS = ENGINES  # the former name (the parameter was ``method`` until 0.3)
ATTRIBUTES = ("rule", "depth", "feature")
NODE_VALUES = ("mean", "fitted")


def engines() -> tuple[str, ...]:
    """The values ``engine`` takes: every pruning engine registered when the estimator is
    validated (:data:`~rulemip.algorithms.pruning.driver.PRUNING_ENGINES`, the built-in
    ones and those a user added with
    :func:`~rulemip.algorithms.pruning.driver.register_pruning_engine`), in registration
    order."""
    return tuple(PRUNING_ENGINES)


class _TreeSum:
    """A weighted sum of fitted trees in the duck-typed form :func:`ensemble_trees` reads:
    ``intercept_ + Σ_t tree_multipliers_[t] · estimators_[t](x)``."""

    def __init__(self, trees: list[Any], multipliers: FloatArray, intercept: float) -> None:
        self.estimators_ = list(trees)
        self.tree_multipliers_ = np.asarray(multipliers, dtype=float).reshape(-1)
        self.intercept_ = float(intercept)


def _as_tree_ensemble(est: Any) -> Any:
    """The object handed to :func:`extract_nodes`: RGB models become a :class:`_TreeSum`
    (trees × ``coefs_`` + ``intercept_``), everything else is passed as is."""
    if hasattr(est, "coefs_") and hasattr(est, "predict_raw") and hasattr(est, "estimators_"):
        return _TreeSum(est.estimators_, est.coefs_, est.intercept_)
    return est


def _box_conditions(lower: FloatArray, upper: FloatArray,
                    encoder: FeatureEncoder | None) -> list[Condition]:
    """``lower_j < x_j <= upper_j`` with scikit-learn thresholds mapped to the float64
    cut that reproduces the trees' float32 comparison (named after ``encoder``)."""
    lo64 = [float64_threshold(float(v)) if np.isfinite(v) else -math.inf for v in lower]
    hi64 = [float64_threshold(float(v)) if np.isfinite(v) else math.inf for v in upper]
    return conditions_from_box(lo64, hi64, encoder)


def _without_empty_rules(nodes: NodeMatrix) -> NodeMatrix:
    """Zero the columns of the roots (the empty rule, no condition).

    The response is centered and the intercept ȳ is fitted separately, so the empty rule
    duplicates the intercept: its column μ_root·1 has μ_root = mean of the centered
    response (0 up to round-off) for mean node values, and is collinear with the
    intercept for fitted ones. Left in, a root costs nothing under ``attribute="depth"``
    and, once selected, blocks every node of its tree (conflicts), at no gain. With an
    exactly zero column its gain is exactly 0, so no algorithm prefers it.
    """
    root = nodes.depth == 0
    if not root.any():
        return nodes
    M = scale_columns(nodes.M, np.where(root, 0.0, 1.0))
    keep = np.where(root, 0.0, 1.0)
    return dataclasses.replace(nodes, M=M, mu=nodes.mu * keep)


class TreeRuleExtractor(RegressorMixin, BaseEstimator):
    """Rule, depth or feature pruning of a tree ensemble (squared loss).

    Parameters
    ----------
    estimator : estimator or None, default=None
        The tree ensemble. ``None`` is ``GradientBoostingRegressor(n_estimators=100,
        max_depth=3, random_state=random_state)``. With ``prefit=False`` a clone is fitted
        on (X, y); with ``prefit=True`` it is used as fitted (scikit-learn ensembles or a
        fitted :class:`~rulemip.RGBRegressor`).
    n_rules : int, default=10
        Budget :math:`K` of :math:`\\sum_i a_i z_i \\le K` (number of rules for
        ``attribute="rule"``, total depth for ``"depth"``, total number of features on the
        paths for ``"feature"``). Non-negative.
    attribute : {"rule", "depth", "feature"}, default="rule"
        Node cost :math:`a_i`: 1, the depth :math:`|P_i|`, or the number of distinct
        features on the root-to-node path.
    engine : str, default="perspective"
        Selection algorithm: a registered pruning engine — the built-in ``"perspective"``
        (branch and bound on the perspective relaxation's dual with the node/descendant
        rule and the budget inside; docs/explanation/tree_pruning.md, "The perspective
        bound"), ``"exact"`` (outer approximation, Alg. 1), ``"path"``, ``"relax_round"``
        (module docstring) and ``"mip"`` (problem (1) as a
        convex MIQP solved natively by a backend that takes it, SCIP), or one registered
        with :func:`~rulemip.algorithms.pruning.driver.register_pruning_engine` (its
        factory receives ``n_lambdas`` among its settings). The same word as the exact
        estimators' ``engine`` (docs/reference/parameters.md).
    reg : float or None, default=None
        Ridge :math:`\\lambda > 0` of the project's risk
        :math:`\\tfrac1n\\|y_c - \\sum_i M_i w_i\\|^2 + \\tfrac{\\lambda}{n}\\|w\\|^2`
        (docs/reference/parameters.md) on the standardized response :math:`y_c`, whose
        columns :math:`M_i` are the node means times the node indicators; it is
        :math:`1/\\gamma` of [PRUNE] (1). ``None`` means :math:`\\lambda = n/10`
        (:math:`\\gamma n = 10`). Large λ shrinks the rule weights strongly (for a node
        with a fraction f of the points and standardized mean μ the single-rule weight is
        :math:`nf\\mu^2/(\\lambda + nf\\mu^2)`) but makes q flatter and the exact method
        much faster; λ of order 1 gives nearly unshrunk weights. Measured on friedman1
        (docs/benchmarks/pruning.md, 20 rules): λ/n ≥ 3.3 certifies in seconds but reaches
        held-out R² ≤ 0.36; λ/n = 0.1 (the default) R² 0.81, the exact method usually
        stopping at its time limit with a gap of a few percent (reported, with a
        :class:`~rulemip.exceptions.SolveLimitWarning`); λ/n = 0.01 R² 0.87 with a bound
        near 0.
    solver : str, default="auto"
        Backend for the master / subproblem (I)LPs (``rulemip.solvers.backend_names()``);
        ``"auto"`` takes the first installed backend that serves a persistent MILP master
        (HiGHS when installed).
    time_limit : float or None, default=60.0
        Wall-clock limit in seconds of the selection (not of the ensemble fit): node
        extraction and every phase of the method ask one
        :class:`~rulemip.budget.Budget` started after the ensemble is fitted.
    mip_gap : float, default=1e-4
        Relative gap :math:`(U - L)/|U|` at which ``engine="perspective"`` or ``"exact"``
        certifies its selection optimal (and stops).
    verbose : bool, default=False
        Progress on stderr: the phases, and the bounds of the exact method about once a
        second.
    prefit : bool, default=False
        Use ``estimator`` as already fitted.
    node_values : {"mean", "fitted"}, default="mean"
        :math:`\\mu_i`: the mean training response in node i ([PRUNE] Remark 7), or the
        tree's fitted node value times the tree multiplier.
    n_lambdas : int, default=50
        Number of :math:`\\lambda` values of the path (``engine="path"`` only).
    random_state : int or None, default=None
        Seed of the default ensemble.

    Attributes
    ----------
    rules_ : RuleEnsemble
        Intercept :math:`\\bar y` plus one rule per selected node.
    estimator_ : the fitted ensemble.
    nodes_ : NodeMatrix
        All candidate nodes (on the training data).
    selected_ : ndarray of int
        Global node indices of the selected nodes (the support S).
    weights_ : ndarray
        :math:`w_S` of (1) on the standardized response.
    coef_ : ndarray
        Rule weights in units of y: :math:`s\\,\\mu_i w_i`.
    intercept_, y_scale_ : float
        :math:`\\bar y` and :math:`s`.
    reg_ : float
        The ridge λ used.
    gamma_ : float
        :math:`\\gamma = 1/\\lambda` of [PRUNE] (1).
    objective_ : float
        :math:`q(z)` of CIP (2) (= objective of (1) at the refit weights) on the
        standardized response.
    train_risk_ : float
        Mean squared error of :meth:`predict` on the training data.
    result_ : PruningResult
        The same status fields for every engine (``value``, ``lower_bound``, ``gap``,
        ``termination``, ``limit``, ``is_optimal``); the engine's own record
        (``OAResult``, ``PathResult`` or ``RelaxRoundResult``) is ``result_.detail``.
    path_ : PathResult
        (``engine="path"``) the whole path; ``path_models_`` the list of its models as
        RuleEnsembles and ``path_index_`` the index of the chosen one.
    n_features_in_, feature_names_in_ : as in scikit-learn (names are used in the rules).
    """

    result_: PruningResult

    def __init__(self, estimator: Any = None, *, n_rules: int = 10, attribute: str = "rule",
                 engine: str = "perspective", reg: float | None = None, solver: str = "auto",
                 time_limit: float | None = 60.0, mip_gap: float = 1e-4, prefit: bool = False,
                 node_values: str = "mean", n_lambdas: int = 50,
                 random_state: int | None = None, verbose: bool = False) -> None:
        self.estimator = estimator
        self.n_rules = n_rules
        self.attribute = attribute
        self.engine = engine
        self.reg = reg
        self.solver = solver
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.verbose = verbose
        self.prefit = prefit
        self.node_values = node_values
        self.n_lambdas = n_lambdas
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def _validate_params_(self) -> None:
        if (isinstance(self.n_rules, bool) or not isinstance(self.n_rules, numbers.Integral)
                or self.n_rules < 0):
            raise InvalidParameterError(
                f"`n_rules` must be a non-negative integer; got {self.n_rules!r}.")
        check_choice(self.attribute, "attribute", ATTRIBUTES)
        check_choice(self.engine, "engine", engines())
        check_choice(self.node_values, "node_values", NODE_VALUES)
        check_nonneg_float(self.reg, "reg", allow_none=True, strictly_positive=True)
        check_nonneg_float(self.time_limit, "time_limit", allow_none=True)
        check_nonneg_float(self.mip_gap, "mip_gap")
        check_seed(self.random_state)
        check_bool(self.verbose, "verbose")
        check_positive_int(self.n_lambdas, "n_lambdas")
        check_solver_name(self.solver)
        if not isinstance(self.prefit, bool | np.bool_):
            raise InvalidParameterError(f"`prefit` must be True or False; got {self.prefit!r}.")
        if self.prefit and self.estimator is None:
            raise InvalidParameterError(
                "`prefit=True` needs a fitted `estimator`; pass one or use prefit=False.")
        if self.estimator is not None and is_classifier(self.estimator):
            raise InvalidParameterError(
                "`estimator` must be a regression ensemble; TreeRuleExtractor fits squared "
                f"loss, got the classifier {type(self.estimator).__name__}.")

    def _fitted_ensemble(self, X: FloatArray, y: FloatArray) -> Any:
        if self.prefit:
            est = self.estimator
            if not hasattr(est, "estimators_") and not hasattr(est, "tree_"):
                raise InvalidParameterError(
                    "`prefit=True` but `estimator` is not fitted (no `estimators_`); fit it "
                    "first or use prefit=False.")
            n_in = getattr(est, "n_features_in_", X.shape[1])
            if n_in != X.shape[1]:
                raise InvalidDataError(
                    f"X has {X.shape[1]} features but the prefit estimator was fitted on "
                    f"{n_in}.")
            return est
        est = (clone(self.estimator) if self.estimator is not None else
               GradientBoostingRegressor(n_estimators=100, max_depth=3,
                                         random_state=self.random_state))
        est.fit(X, y)
        return est

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any) -> TreeRuleExtractor:
        """Fit (or take) the ensemble, extract its nodes and select rules."""
        self._validate_params_()
        ds = fit_dataset(self, X, y, loss="squared")
        X, y = ds.X, ds.y
        check_float32_range(X, "the trees of the ensemble")
        est = self._fitted_ensemble(X, y)
        engine = self.engine
        if engine == "perspective":  # its dynamic program, compiled before the clock
            kernels = ensure_compiled("pruning")
            if kernels.message:
                say(self.verbose, kernels.message)
        # one clock for the selection: extraction and every phase of the method ask it
        budget = Budget.from_time_limit(self.time_limit)
        self.estimator_ = est
        self.intercept_ = float(y.mean())
        sd = float(y.std())
        self.y_scale_ = sd if sd > 0 else 1.0
        yc = (y - self.intercept_) / self.y_scale_
        nodes = extract_nodes(_as_tree_ensemble(est), X,
                              yc if self.node_values == "mean" else None,
                              node_values=self.node_values,  # type: ignore[arg-type]
                              budget=budget)
        nodes = _without_empty_rules(nodes)
        self.nodes_ = nodes
        say(self.verbose, f"TreeRuleExtractor: {nodes.n_nodes} candidate nodes in "
                          f"{budget.elapsed():.2f} s; engine {engine!r}")
        self.gamma_ = self._gamma(X.shape[0])
        self.reg_ = 1.0 / self.gamma_
        self._encoder = ds.encoder
        fit = solve_pruning(nodes, yc, engine=engine, max_cost=self.n_rules,
                            attribute=self.attribute, gamma=self.gamma_, solver=self.solver,
                            budget=budget, mip_gap=float(self.mip_gap),
                            callback=progress_printer() if self.verbose else None,
                            n_lambdas=self.n_lambdas)
        if fit.warning is not None:
            warnings.warn(fit.warning, SolveLimitWarning, stacklevel=2)
        for name, value in fit.attributes.items():  # the engine's own (e.g. ``path_``)
            setattr(self, name, value)
        for name, selections in fit.model_lists.items():
            setattr(self, name, [self._ensemble(S, self.y_scale_ * nodes.mu[S] * w)
                                 for S, w in selections])
        self.result_ = fit.result
        self.objective_ = fit.objective
        S, w = fit.support, fit.weights
        self.selected_ = np.asarray(S, dtype=np.int64)
        self.weights_ = np.asarray(w, dtype=float)
        self.coef_ = self.y_scale_ * nodes.mu[self.selected_] * self.weights_
        self.rules_ = self._ensemble(self.selected_, self.coef_)
        self.train_risk_ = float(np.mean((y - self.rules_.decision_function_encoded(X)) ** 2))
        say(self.verbose, f"TreeRuleExtractor: {self.selected_.size} rules, q = "
                          f"{self.objective_:.6g}, {budget.elapsed():.2f} s")
        return self

    def _ensemble(self, S: NDArray[np.int64], coef: FloatArray) -> RuleEnsemble:
        nodes = self.nodes_
        rules = [Rule(_box_conditions(nodes.lower[i], nodes.upper[i], self._encoder),
                      float(c)) for i, c in zip(S, coef, strict=True)]
        return RuleEnsemble(rules, intercept=self.intercept_, encoder=self._encoder)

    def _gamma(self, n: int) -> float:
        """[PRUNE]'s γ = 1/λ from ``reg`` (default ``DEFAULT_REG_PER_ROW`` · n)."""
        reg = DEFAULT_REG_PER_ROW * n if self.reg is None else float(self.reg)
        return 1.0 / reg

    # ------------------------------------------------------------------ prediction
    def predict(self, X: Any) -> FloatArray:
        """:math:`\\bar y + \\sum_{i\\in S} \\text{coef}_i \\mathbb 1\\{x \\in
        \\text{box}_i\\}` (identical to ``rules_.predict``)."""
        Xf = predict_matrix(self, X)  # checks that the estimator is fitted
        return np.asarray(self.rules_.decision_function_encoded(Xf), dtype=float)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.categorical = True
        return tags
