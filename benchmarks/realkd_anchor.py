"""Side by side with realkd: exhaustive XGB-objective rule boosting on diabetes (442 x 10).

realkd (the seed papers' code base) is not a dependency. Install it in a separate
environment (its pinned ``bitarray==1.5.3`` does not build on current Pythons, a current
bitarray works)::

    python -m venv rk && . rk/bin/activate
    pip install bitarray sortedcontainers pandas numpy scikit-learn sortednp matplotlib
    pip install --no-deps realkd==0.2.1
    python benchmarks/realkd_anchor.py --side realkd

and run rulemip's side in the project's environment::

    python benchmarks/realkd_anchor.py --side rulemip --time-limit 1500

Both fit an intercept and four rules with the XGB objective (Σg)²/(Σh + λ), λ = 1, and
stagewise weights (realkd's ``RuleBoostingEstimator(num_rules=5,
base_learner=XGBRuleEstimator(reg=1, search="exhaustive"))`` counts the intercept as its
first rule; rulemip's preset "SXB" with ``search="bnb"``). realkd's propositions are
``x <= v`` / ``x >= v`` at the edges of 5 quantile bins per feature; rulemip's are
``x <= t`` / ``x > t`` at 4 quantile thresholds (``max_thresholds=4``). Results in
``docs/benchmarks/boosting.md`` section (e).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import warnings

from sklearn.datasets import load_diabetes


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_realkd() -> None:
    from realkd.rules import RuleBoostingEstimator, XGBRuleEstimator

    data = load_diabetes(as_frame=True)
    t0 = time.perf_counter()
    est = RuleBoostingEstimator(num_rules=5, base_learner=XGBRuleEstimator(
        loss="squared", reg=1.0, search="exhaustive"))
    est.fit(data.data, data.target)
    print(f"realkd: {time.perf_counter() - t0:.1f} s, peak RSS {_peak_rss_mb():.0f} MB")
    print(est.rules_)


def run_rulemip(time_limit: float) -> None:
    from rulemip import RuleBoostingRegressor

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = RuleBoostingRegressor(n_rules=4, preset="SXB", search="bnb", max_thresholds=4,
                                    reg=1.0, time_limit=time_limit).fit(X, y)
    print(f"rulemip: {time.perf_counter() - t0:.1f} s, peak RSS {_peak_rss_mb():.0f} MB, "
          f"certified {est.certified_}, limit {est.limit_reached_}")
    for i, rnd in enumerate(est.booster_.rounds_):
        s = rnd.search
        print(f"  rule {i + 1}: value {s.value:.6g}, bound {s.bound:.6g}, {s.status}, "
              f"{s.elapsed:.1f} s, {s.n_expanded} nodes")
    print(est.rules_.to_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", choices=["realkd", "rulemip"], required=True)
    ap.add_argument("--time-limit", type=float, default=1500.0)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    if args.side == "realkd":
        run_realkd()
    else:
        run_rulemip(args.time_limit)


if __name__ == "__main__":
    main()
