"""Held-out quality at a fixed number of rules: the exact k-rule model against COB, a
depth-limited tree and (when installed) imodels' FIGS and RuleFit.

Rerun (from the repository root; results in ``docs/benchmarks/exact.md``, section
"Held-out comparison")::

    pip install imodels six        # optional: FIGS and RuleFit rows
    python benchmarks/heldout.py --time-limit 20

5-fold cross-validation (shuffled, seed 0). Regression: R²; classification: accuracy.
Every model has at most ``k`` rules besides the intercept: the exact model
(``ExactRuleEnsemble*``, defaults except ``n_rules``, ``time_limit`` and ``reg`` as in the
issue that set this comparison: ``reg=1`` on the three-feature diabetes table), COB
(``RuleBoosting*`` with ``preset="COB"``, branch-and-bound search bounded by the same time
limit), a decision tree with at most k + 1 leaves (k splits), FIGS with ``max_rules=k``,
RuleFit with ``max_rules=k``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from rulemip.estimators import (
    ExactRuleEnsembleClassifier,
    ExactRuleEnsembleRegressor,
    RuleBoostingClassifier,
    RuleBoostingRegressor,
)


def _models(k: int, time_limit: float, classification: bool, reg: float | None
            ) -> dict[str, Any]:
    exact_kw: dict[str, Any] = {"n_rules": k, "time_limit": time_limit}
    if reg is not None:
        exact_kw["reg"] = reg
    boost_kw = {"n_rules": k, "preset": "COB", "time_limit": time_limit}
    if classification:
        models: dict[str, Any] = {
            "exact": ExactRuleEnsembleClassifier(**exact_kw),
            "COB": RuleBoostingClassifier(**boost_kw),
            f"tree ({k + 1} leaves)": DecisionTreeClassifier(max_leaf_nodes=k + 1,
                                                             random_state=0)}
    else:
        models = {
            "exact": ExactRuleEnsembleRegressor(**exact_kw),
            "COB": RuleBoostingRegressor(**boost_kw),
            f"tree ({k + 1} leaves)": DecisionTreeRegressor(max_leaf_nodes=k + 1,
                                                            random_state=0)}
    try:
        from imodels import (
            FIGSClassifier,
            FIGSRegressor,
            RuleFitClassifier,
            RuleFitRegressor,
        )
    except ImportError:
        return models
    if classification:
        models["FIGS"] = FIGSClassifier(max_rules=k)
        models["RuleFit"] = RuleFitClassifier(max_rules=k, random_state=0)
    else:
        models["FIGS"] = FIGSRegressor(max_rules=k)
        models["RuleFit"] = RuleFitRegressor(max_rules=k, random_state=0)
    return models


def evaluate(name: str, X: Any, y: Any, k: int, time_limit: float, classification: bool,
             reg: float | None) -> None:
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    folds = (StratifiedKFold(5, shuffle=True, random_state=0) if classification
             else KFold(5, shuffle=True, random_state=0))
    scores: dict[str, list[float]] = {}
    seconds: dict[str, float] = {}
    for train, test in folds.split(X, y):
        for label, model in _models(k, time_limit, classification, reg).items():
            est = clone(model)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X[train], y[train])
            seconds[label] = seconds.get(label, 0.0) + time.perf_counter() - t0
            scores.setdefault(label, []).append(float(est.score(X[test], y[test])))
    metric = "accuracy" if classification else "R²"
    print(f"\n{name} (n = {len(y)}, d = {X.shape[1]}), k = {k}, 5-fold {metric}")
    print(f"| model | mean {metric} | sd | fit seconds (5 folds) |")
    print("|---|---|---|---|")
    for label, vals in scores.items():
        print(f"| {label} | {np.mean(vals):.3f} | {np.std(vals):.3f} | {seconds[label]:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--k", type=int, default=3)
    args = ap.parse_args()
    print(f"time limit {args.time_limit:g} s per fit, load {os.getloadavg()[0]:.2f}")
    diabetes = load_diabetes(as_frame=True)
    evaluate("diabetes bmi/bp/s5", diabetes.data[["bmi", "bp", "s5"]], diabetes.target,
             args.k, args.time_limit, False, reg=1.0)
    evaluate("diabetes", diabetes.data, diabetes.target, args.k, args.time_limit, False,
             reg=None)
    cancer = load_breast_cancer()
    evaluate("breast cancer", cancer.data, cancer.target, args.k, args.time_limit, True,
             reg=None)


if __name__ == "__main__":
    main()
