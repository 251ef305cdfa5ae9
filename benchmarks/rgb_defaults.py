"""RGB's defaults against scikit-learn's default gradient boosting (docs/benchmarks/rgb.md).

Two measurements per task, both with ``random_state=0`` for every model:

1. the issue's: ``cross_val_score(est, X, y, cv=5)`` (unshuffled folds), mean score;
2. 3 × 5-fold (``RepeatedStratifiedKFold`` / ``RepeatedKFold``, seed 0): mean score, and the
   paired difference RGB − GB with its standard error over the 15 folds.

Tasks: breast cancer (569 × 30, accuracy) and diabetes (442 × 10, R²). Models:
``GradientBoosting*()`` and ``RGB*()`` (rulemip's grid: the paper's 7 × 7 plus stumps; β
chosen on an internal validation split). ``--old`` adds ``RGB*(families="paper", beta=0.01)``,
the defaults before issue 25.

Rerun (from the repository root)::

    python benchmarks/rgb_defaults.py [--old]
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
from sklearn.model_selection import RepeatedKFold, RepeatedStratifiedKFold, cross_val_score

from rulemip import RGBClassifier, RGBRegressor


def main() -> None:
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    Xc, yc = load_breast_cancer(return_X_y=True)
    Xr, yr = load_diabetes(return_X_y=True)
    tasks: list[tuple[str, Any, Any, Any, Any, Any]] = [
        ("breast cancer, accuracy", Xc, yc, GradientBoostingClassifier, RGBClassifier,
         RepeatedStratifiedKFold(n_splits=5, n_repeats=3, random_state=0)),
        ("diabetes, R²", Xr, yr, GradientBoostingRegressor, RGBRegressor,
         RepeatedKFold(n_splits=5, n_repeats=3, random_state=0))]
    for title, X, y, gb, rgb, cv in tasks:
        print(f"\n{title}\n| model | cv=5 | 3 × 5-fold mean | RGB − GB (se), 15 paired folds "
              "| s |\n|---|---|---|---|---|")
        base = cross_val_score(gb(random_state=0), X, y, cv=cv)
        plain = cross_val_score(gb(random_state=0), X, y, cv=5).mean()
        print(f"| GradientBoosting defaults | {plain:.4f} | {base.mean():.4f} | — | — |")
        models = [("RGB defaults", rgb(random_state=0))]
        if "--old" in sys.argv[1:]:
            models.append(("RGB families='paper', beta=0.01",
                           rgb(families="paper", beta=0.01, random_state=0)))
        for name, est in models:
            t0 = time.perf_counter()
            plain = cross_val_score(est, X, y, cv=5).mean()
            scores = cross_val_score(est, X, y, cv=cv)
            d = scores - base
            print(f"| {name} | {plain:.4f} | {scores.mean():.4f} | {d.mean():+.4f} "
                  f"({d.std(ddof=1) / np.sqrt(len(d)):.4f}) | {time.perf_counter() - t0:.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
