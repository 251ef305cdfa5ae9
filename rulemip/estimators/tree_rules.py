"""TreeRuleExtractor: select K nodes of a tree ensemble as rules by exact Alg. 1 ([PRUNE]).

Fits (or takes, ``prefit=True``) a tree ensemble, extracts every node as a candidate rule
(:mod:`rulemip.formulations.node_matrix`), centers y (unpenalized intercept ȳ) and solves
CIP (2) ``min q(z)`` subject to the conflict and budget constraints by outer
approximation.  The fitted model is ``ȳ + Σ_{i∈S} μ_i w_i 1{x ∈ box_i}``.
Only ``method="exact"`` is implemented in this version.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.utils.validation import check_is_fitted, validate_data

from rulemip.algorithms.outer_approximation import OAOptions
from rulemip.algorithms.prune_exact import prune_exact
from rulemip.exceptions import InvalidParameterError, SolveLimitWarning
from rulemip.formulations.node_matrix import extract_nodes
from rulemip.rules import Rule, RuleEnsemble, conditions_from_box
from rulemip.solvers.result import TerminationReason

__all__ = ["TreeRuleExtractor"]


class TreeRuleExtractor(RegressorMixin, BaseEstimator):
    """Rule/depth/feature pruning of a tree ensemble (squared loss).

    Parameters
    ----------
    estimator : tree ensemble (default GradientBoostingRegressor(n_estimators=100,
        max_depth=3)).
    n_rules : budget K of Σ a_i z_i ≤ K.
    attribute : "rule" (a_i = 1), "depth" (|P_i|) or "feature" (distinct features).
    method : "exact" (Alg. 1).
    gamma : ridge parameter γ of (1); γ = None uses 1/n on standardized y.
    solver, time_limit : master solver and wall-clock limit of the OA loop.
    prefit : use ``estimator`` as already fitted.
    node_values : "mean" (μ_i = mean training response) or "fitted".
    """

    def __init__(self, estimator: Any = None, n_rules: int = 10, attribute: str = "rule",
                 method: str = "exact", gamma: float | None = None, solver: str = "highs",
                 time_limit: float | None = 60.0, prefit: bool = False,
                 node_values: str = "mean", random_state: int | None = None) -> None:
        self.estimator = estimator
        self.n_rules = n_rules
        self.attribute = attribute
        self.method = method
        self.gamma = gamma
        self.solver = solver
        self.time_limit = time_limit
        self.prefit = prefit
        self.node_values = node_values
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> TreeRuleExtractor:
        Xv, yv = validate_data(self, X, y, y_numeric=True)
        X = np.asarray(Xv, dtype=float)
        y = np.asarray(yv, dtype=float)
        if self.method != "exact":
            raise InvalidParameterError(f"method must be 'exact'; got {self.method!r}")
        if self.attribute not in ("rule", "depth", "feature"):
            raise InvalidParameterError("attribute must be 'rule', 'depth' or 'feature'")
        if not (isinstance(self.n_rules, int | np.integer) and self.n_rules >= 0):
            raise InvalidParameterError("n_rules must be a non-negative integer")
        if self.prefit:
            if self.estimator is None:
                raise InvalidParameterError("prefit=True needs a fitted estimator")
            est = self.estimator
        else:
            est = (clone(self.estimator) if self.estimator is not None else
                   GradientBoostingRegressor(n_estimators=100, max_depth=3,
                                             random_state=self.random_state))
            est.fit(X, y)
        self.estimator_ = est
        self.intercept_ = float(y.mean())
        scale = float(y.std()) or 1.0
        yc = (y - self.intercept_) / scale
        nodes = extract_nodes(est, X, yc, node_values=self.node_values)  # type: ignore[arg-type]
        if self.node_values == "fitted":
            nodes = extract_nodes(est, X, node_values="fitted")
        gamma = self.gamma if self.gamma is not None else 1.0 / X.shape[0]
        res, oracle = prune_exact(nodes, yc, self.n_rules, attribute=self.attribute,
                                  gamma=gamma, options=OAOptions(time_limit=self.time_limit,
                                                                 solver=self.solver,
                                                                 rel_tol=1e-4))
        self.result_ = res
        if res.termination != TerminationReason.OPTIMAL:
            warnings.warn(f"pruning stopped at a limit; gap {res.gap:.3g}",
                          SolveLimitWarning, stacklevel=2)
        z = res.z if res.z is not None else np.zeros(nodes.n_nodes)
        S, w = oracle.weights(z)
        self.selected_ = S
        self.coef_ = scale * nodes.mu[S] * w  # per-rule weight in units of y
        self.nodes_ = nodes
        rules = [Rule(conditions_from_box(nodes.lower[i], nodes.upper[i]), float(c))
                 for i, c in zip(S, self.coef_, strict=True)]
        self.rules_ = RuleEnsemble(rules, intercept=self.intercept_)
        return self

    def predict(self, X: Any) -> NDArray[np.float64]:
        check_is_fitted(self, "rules_")
        X = np.asarray(validate_data(self, X, reset=False), dtype=float)
        out = np.full(X.shape[0], self.intercept_)
        for i, c in zip(self.selected_, self.coef_, strict=True):
            inside = np.all((self.nodes_.lower[i] < X) & (self.nodes_.upper[i] >= X), axis=1)
            out += c * inside
        return out
