"""RGB's defaults against scikit-learn's default gradient boosting, 5-fold CV.

Rerun (from the repository root; results in ``docs/benchmarks/rgb.md``, section
"Defaults against GradientBoosting*")::

    python benchmarks/rgb_defaults.py

Breast cancer (accuracy) and diabetes (R²), shuffled folds with seed 0; every RGB variant
with ``random_state=0``. The variants change one setting of the defaults at a time.
"""

from __future__ import annotations

import os
import time
from typing import Any

from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score

from rulemip import RGBClassifier, RGBRegressor

SMALL_FAMILIES = [(n, lam) for n in (2, 4, 8) for lam in (0.1, 0.5, 1, 2, 4)]


def variants() -> dict[str, dict[str, Any]]:
    return {"defaults (paper grid)": {}, "beta=0": {"beta": 0.0},
            "learning_rate=0.1": {"learning_rate": 0.1},
            "step=line_search": {"step": "line_search"},
            "lipschitz=tree": {"lipschitz": "tree"},
            "n_estimators=300": {"n_estimators": 300},
            "n_samples_per_round=10": {"n_samples_per_round": 10},
            "small families (n <= 8)": {"families": SMALL_FAMILIES},
            "small families, n_estimators=300": {"families": SMALL_FAMILIES,
                                                 "n_estimators": 300}}


def row(name: str, est: Any, X: Any, y: Any, cv: Any) -> None:
    t0 = time.perf_counter()
    scores = cross_val_score(est, X, y, cv=cv)
    print(f"| {name} | {scores.mean():.4f} | {time.perf_counter() - t0:.1f} |", flush=True)


def main() -> None:
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    Xc, yc = load_breast_cancer(return_X_y=True)
    Xr, yr = load_diabetes(return_X_y=True)
    for title, X, y, gb, rgb, cv in (
            ("breast cancer, accuracy", Xc, yc, GradientBoostingClassifier,
             RGBClassifier, StratifiedKFold(5, shuffle=True, random_state=0)),
            ("diabetes, R²", Xr, yr, GradientBoostingRegressor, RGBRegressor,
             KFold(5, shuffle=True, random_state=0))):
        print(f"\n{title}\n| model | mean | seconds (5 folds) |\n|---|---|---|")
        row("GradientBoosting (defaults)", gb(random_state=0), X, y, cv)
        for name, params in variants().items():
            row(f"RGB {name}", rgb(random_state=0, **params), X, y, cv)


if __name__ == "__main__":
    main()
