"""Timings of the interval-cover MIP (docs/explanation/interval_cover.md) on every installed MILP
backend (HiGHS +
tangent cuts, SCIP native, ...; ``exact.mip_backends``) on the paper's toy instances.

Run: ``python benchmarks/interval_cover.py [--time-limit 120] [--quick]``. Prints one line
per solve (status, recomputed risk, lower bound, seconds, nodes/iterations). The diabetes
time-to-optimality table of all engines is ``benchmarks/exact.py``. Instances:

* D(k, Δ) of [GAP] §3 (squared, reg 0, no intercept, all thresholds), k = 2..5, with
  MIP-boosting (stagewise) alongside;
* 20 uniform points on one feature, y = sin(6x) + noise, all thresholds, reg 0 with
  intercept, k = 2, 3 — cold and warm-started from COB boosting.

Numbers are wall-clock on whatever machine runs this; on a shared machine they are noisy.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from exact import mip_backends

from rulemip.algorithms.krule.mip_boosting import mip_boosting
from rulemip.algorithms.solve.driver import solve
from rulemip.budget import Budget
from rulemip.data import Dataset, alternating, candidate_thresholds
from rulemip.formulations.interval_cover import IntervalCoverMIP
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem


def _line(*parts: object) -> None:
    print(" | ".join(str(p) for p in parts), flush=True)


def alternating_runs(backends: list[str], ks: list[int], time_limit: float) -> None:
    for k in ks:
        delta = min(0.5 / (2 * k - 4 + math.sqrt(2) / 2), 0.5 / (2 * k - 2))
        X, y = alternating(k, delta)
        ds = Dataset.from_arrays(X, y)
        for backend in backends:
            t0 = time.perf_counter()
            problem = KRuleProblem.of(ds, k, reg=0.0, fit_intercept=False,
                                      thresholds=candidate_thresholds(ds.X, None))
            rounds = mip_boosting(problem, solver=backend, time_limit_per_round=time_limit)
            _line(f"D({k},{delta:.4f})", backend, "mip-boosting", rounds[-1].status.value,
                  f"{rounds[-1].risk:.6g}", f"{time.perf_counter() - t0:.2f}s")
            t0 = time.perf_counter()
            res = solve(IntervalCoverMIP(Language(k, fit_intercept=False)), ds, solver=backend,
                        budget=Budget.from_time_limit(time_limit))
            _line(f"D({k},{delta:.4f})", backend, "exact", res.termination.value,
                  f"{res.risk:.6g}", f"lb {res.lower_bound:.6g}",
                  f"{time.perf_counter() - t0:.2f}s", f"it {res.iterations}")


def sine_runs(backends: list[str], ks: list[int], time_limit: float) -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(20, 1))
    y = np.sin(6 * X[:, 0]) + 0.3 * rng.normal(size=20)
    ds = Dataset.from_arrays(X, y)
    for k in ks:
        start = None
        try:
            from rulemip.boosting import RuleBooster

            booster = RuleBooster.from_preset("COB", n_rules=k, reg=0.0, fit_intercept=True)
            start = booster.fit(ds).ensembles_[-1]
        except Exception as exc:  # boosting is optional for this benchmark
            _line("no warm start:", repr(exc))
        for backend in backends:
            for warm in (None, start) if start is not None else (None,):
                t0 = time.perf_counter()
                res = solve(IntervalCoverMIP(Language(k), reg=0.0), ds, solver=backend,
                            warm_start=warm,
                            budget=Budget.from_time_limit(time_limit))
                _line(f"sine20 k={k}", backend, "warm" if warm is not None else "cold",
                      res.termination.value, f"{res.risk:.6g}", f"lb {res.lower_bound:.6g}",
                      f"{time.perf_counter() - t0:.2f}s", f"it {res.iterations}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--quick", action="store_true", help="k <= 3 only")
    args = parser.parse_args()
    backends = mip_backends()
    ks = [2, 3] if args.quick else [2, 3, 4, 5]
    alternating_runs(backends, ks, args.time_limit)
    sine_runs(backends, [2, 3] if not args.quick else [2], args.time_limit)


if __name__ == "__main__":
    main()
