"""RGB's defaults against scikit-learn's default gradient boosting (docs/benchmarks/rgb.md).

Every model is used with its defaults and ``random_state=0``; missing values (16 in the
paper's *cancer*) are replaced by the training fold's median for every model.

1. On every benchmark set, one fixed cross-validation, ``KFold(5, shuffle=True,
   random_state=0)``: the mean score of ``RGB*()`` and ``GradientBoosting*()`` with the
   standard error over the 5 folds of each, and the paired difference RGB − GB with its
   standard error. The target (issue 25) is "RGB never worse than GB by more than one
   standard error"; the table says whether the difference is above −1 paired standard
   error (``met``).
2. The issue's own measurement on breast cancer: ``cross_val_score(est, X, y, cv=5)``
   (unshuffled stratified folds), target ``>= GB - 0.01``.

Sets: breast cancer (569 × 30), the paper's *cancer* (``MASS::biopsy``, 699 × 9) and
*diabetes* (``MASS::Pima``, 532 × 7) when the ``bench`` extra is installed, the
``make_classification`` task of benchmarks/rgb.py (300 × 60) — accuracy — and
scikit-learn's diabetes regression (442 × 10, R²).

``--set key=value`` (repeatable) changes an RGB parameter for a side study, e.g.
``--set leaf_values=gradient --set learning_rate=1.0`` (the defaults before issue 25).

``--scale`` instead fits ``RGBRegressor()`` (with the ``--set`` parameters) on diabetes with
the target multiplied by c ∈ {0.01, 1, 100} on the same folds: a scale-free fit gives the
same R² for every c (docs/explanation/rgb.md §2).

Rerun (from the repository root)::

    nice -n 10 python benchmarks/rgb_defaults.py [--jobs 2] [--data breast,diabetes]
    nice -n 10 python benchmarks/rgb_defaults.py --scale [--set scale_target=False]
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from typing import Any

import numpy as np
from rgb_data import benchmark_datasets  # sibling module (benchmarks/)
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
from sklearn.impute import SimpleImputer
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import make_pipeline

from rulemip import RGBClassifier, RGBRegressor

CV = KFold(5, shuffle=True, random_state=0)


def tasks() -> list[tuple[str, Any, Any, bool]]:
    """(name, X, y, is_classification) for every benchmark set available."""
    out = [(name, X, y, True) for name, (X, y) in benchmark_datasets(quick=False).items()]
    Xr, yr = load_diabetes(return_X_y=True)
    out.append(("diabetes regression (442x10), R²", Xr, yr, False))
    return out


def _se(v: np.ndarray) -> float:
    return float(v.std(ddof=1) / np.sqrt(len(v)))


def compare(X: Any, y: Any, classification: bool, rgb_params: dict[str, Any], jobs: int,
            cv: Any = CV) -> dict[str, Any]:
    """Fold scores of RGB and GB defaults on ``cv`` and their paired difference."""
    rgb_cls, gb_cls = ((RGBClassifier, GradientBoostingClassifier) if classification
                       else (RGBRegressor, GradientBoostingRegressor))
    scores = {}
    for name, est in (("RGB", rgb_cls(random_state=0, **rgb_params)),
                      ("GB", gb_cls(random_state=0))):
        model = make_pipeline(SimpleImputer(strategy="median"), est)
        t0 = time.perf_counter()
        scores[name] = cross_val_score(model, X, y, cv=cv, n_jobs=jobs)
        scores[name + " s"] = time.perf_counter() - t0
    d = scores["RGB"] - scores["GB"]
    return {"rgb": scores["RGB"], "gb": scores["GB"], "diff": float(d.mean()),
            "diff_se": _se(d), "seconds": scores["RGB s"]}


def scale_study(params: dict[str, Any], jobs: int) -> None:
    """R² of ``RGBRegressor(**params)`` on diabetes with the target times c, same folds."""
    X, y = load_diabetes(return_X_y=True)
    print("\n| c (target c·y) | R² mean ± se |\n|---|---|")
    for c in (0.01, 1.0, 100.0):
        scores = cross_val_score(RGBRegressor(random_state=0, **params), X, c * y, cv=CV,
                                 n_jobs=jobs)
        print(f"| {c:g} | {scores.mean():.4f} ± {_se(scores):.4f} |", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="parallel folds (default 2)")
    parser.add_argument("--data", default=None,
                        help="comma-separated prefixes of the set names ('breast,diabetes')")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="an RGB parameter for a side study (Python literal value)")
    parser.add_argument("--no-issue-cv", action="store_true",
                        help="skip the issue's unshuffled cv=5 run on breast cancer")
    parser.add_argument("--scale", action="store_true",
                        help="only the y -> c*y study of RGBRegressor on diabetes")
    args = parser.parse_args(argv)
    params: dict[str, Any] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        try:
            params[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            params[key] = value
    print(f"load average at start: {os.getloadavg()[0]:.2f}; RGB parameters {params or '{}'}; "
          f"cv = {CV}")
    if args.scale:
        scale_study(params, args.jobs)
        return
    print("\n| data | RGB defaults (± se) | GB defaults (± se) | RGB − GB (± paired se) | "
          "met | RGB s |\n|---|---|---|---|---|---|")
    for name, X, y, classification in tasks():
        if args.data and not any(name.startswith(p.strip()) for p in args.data.split(",")):
            continue
        r = compare(X, y, classification, params, args.jobs)
        met = "yes" if r["diff"] >= -r["diff_se"] else "no"
        print(f"| {name} | {r['rgb'].mean():.4f} ± {_se(r['rgb']):.4f} | "
              f"{r['gb'].mean():.4f} ± {_se(r['gb']):.4f} | {r['diff']:+.4f} ± "
              f"{r['diff_se']:.4f} | {met} | {r['seconds']:.0f} |", flush=True)
    if not args.no_issue_cv and (not args.data or "breast" in args.data):
        X, y = load_breast_cancer(return_X_y=True)
        r = compare(X, y, True, params, args.jobs, cv=5)
        print(f"\nissue's measurement, breast cancer cross_val_score(cv=5): RGB "
              f"{r['rgb'].mean():.4f}, GB {r['gb'].mean():.4f}, target >= "
              f"{r['gb'].mean() - 0.01:.4f}: "
              f"{'met' if r['rgb'].mean() >= r['gb'].mean() - 0.01 else 'missed'}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}", file=sys.stdout)


if __name__ == "__main__":
    main()
