"""Ordinary tables at a vanishing ridge: 1 000-1 500 rows x 4-10 features, 5 quantile cuts
per feature, reg = 1e-8, no intercept, y standardized, k = 10, one 60 s budget (the kind of
table on which Gurobi's bound stayed 0).

Rerun (results in ``docs/benchmarks/exact.md``, section 8)::

    python benchmarks/exact_weak_tables.py [--time-limit 60]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.datasets import make_friedman1

from rulemip import ExactRuleEnsembleRegressor
from rulemip.data.thresholds import candidate_thresholds


def tables() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    X10, y10 = make_friedman1(n_samples=1500, n_features=10, noise=1.0, random_state=0)
    X5, y5 = make_friedman1(n_samples=1000, n_features=5, noise=1.0, random_state=1)
    return {"friedman1 1 000 x 4 (seed 1)": (X5[:, :4], y5),
            "friedman1 1 500 x 10 (seed 0)": (X10, y10)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print("| table | engine | wall s | risk | valid bound | gap |\n|---|---|---|---|---|---|")
    for name, (X, y) in tables().items():
        ys = (y - y.mean()) / y.std()
        est = ExactRuleEnsembleRegressor(n_rules=10, reg=1e-8, fit_intercept=False,
                                         thresholds=candidate_thresholds(X, 5),
                                         time_limit=args.time_limit)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, ys)
        r = est.result_
        print(f"| {name} | {r.engine} | {time.perf_counter() - t0:.1f} | {r.risk:.4g} | "
              f"{r.lower_bound:.4g} | {r.gap:.1%} |", flush=True)


if __name__ == "__main__":
    main()
