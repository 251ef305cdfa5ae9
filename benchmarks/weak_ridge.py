"""Exact k-rule ensembles at a vanishing ridge ([GAP] Table-1-like instances).

Instances (:func:`instance`): a subsample of n rows (``numpy.random.default_rng(seed)``,
without replacement) of the bundled diabetes data (features bmi=2, s5=8, bp=3) or of
``make_friedman1(n_samples=n, random_state=seed)`` (features 0, 1, 3), y standardized
(mean 0, std 1), 5 quantile cut points per feature, ``reg=1e-8``, no intercept, k = 10.

    python benchmarks/weak_ridge.py                        # everything, 60 s per solve
    python benchmarks/weak_ridge.py --features 1           # one-feature sets only
    python benchmarks/weak_ridge.py --engines cell-bnb auto --sizes 16 30 --time-limit 30
    python benchmarks/weak_ridge.py --features 2 --sizes 16 30 --ks 3 4 5 6 \
        --engines cell-bnb auto cip-bnb --time-limit 30

Engines: ``auto`` / ``cip`` / ``cip-bnb`` through :func:`rulemip.algorithms.fit_plan.solve_exact`
and ``cell-bnb`` (:func:`rulemip.algorithms.krule.cell_bnb.solve_cell_bnb`). Every solve asks for
relative gap 1e-4; the table reports the certified gap reached. Timings are wall-clock on a
shared 2-core machine: noisy.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time

import numpy as np
from sklearn.datasets import load_diabetes, make_friedman1

from rulemip.algorithms.fit_plan import solve_exact
from rulemip.algorithms.krule.cell_bnb import solve_cell_bnb
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.formulations.result import ExactResult
from rulemip.rules.problem import KRuleProblem

FEATURES = {"diabetes": [2, 8, 3], "friedman1": [0, 1, 3]}
SIZES = (16, 30, 50, 80, 124, 200)


def instance(source: str, n: int, n_features: int, seed: int = 0
             ) -> tuple[Dataset, list[np.ndarray]]:
    """The dataset and its 5 quantile cut points per feature (module docstring)."""
    if source == "diabetes":
        data = load_diabetes()
        rows = np.random.default_rng(seed).choice(len(data.target), size=n, replace=False)
        X, y = data.data[rows], data.target[rows]
    else:
        X, y = make_friedman1(n_samples=n, random_state=seed)
    X = X[:, FEATURES[source][:n_features]]
    y = (y - y.mean()) / y.std()
    return Dataset.from_arrays(X, y), candidate_thresholds(X, 5)


def solve(engine: str, ds: Dataset, th: list[np.ndarray], k: int, time_limit: float,
          gap: float) -> ExactResult:
    problem = KRuleProblem.of(ds, k, reg=1e-8, fit_intercept=False, thresholds=th)
    if engine == "cell-bnb":
        return solve_cell_bnb(problem, budget=Budget.from_time_limit(time_limit), mip_gap=gap)
    return solve_exact(problem, engine=engine, budget=Budget.from_time_limit(time_limit),
                       mip_gap=gap)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engines", nargs="+", default=["cell-bnb", "auto", "cip-bnb"])
    parser.add_argument("--sources", nargs="+", default=["diabetes", "friedman1"])
    parser.add_argument("--features", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--ks", type=int, nargs="+", default=[10])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--gap", type=float, default=1e-4)
    args = parser.parse_args()
    print(f"reg = 1e-8, no intercept, requested gap {args.gap:g}, time limit "
          f"{args.time_limit:g} s, load {os.getloadavg()[0]:.2f}")
    print("| data | d | n | cells | boxes | k | engine | status | time (s) | risk | bound | gap |"
          " nodes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for source in args.sources:
        for d in args.features:
            for n in args.sizes:
                ds, th = instance(source, n, d)
                for k, engine in itertools.product(args.ks, args.engines):
                    t = time.perf_counter()
                    r = solve(engine, ds, th, k, args.time_limit, args.gap)
                    wall = time.perf_counter() - t
                    print(f"| {source} | {d} | {n} | {r.n_cells} | {r.n_boxes} | {k} | {engine} | "
                          f"{r.termination.value} | {wall:.3f} | {r.risk:.10g} | "
                          f"{r.lower_bound:.10g} | {r.gap:.2e} | {r.iterations} |", flush=True)


if __name__ == "__main__":
    main()
