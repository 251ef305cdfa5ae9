"""The exact box search (rulemip/boosting/boxsearch/kernel.py) on ordinary tables: the targets of
the compiled search, side by side with the set-enumeration search it replaces.

Three parts, all in one process after a warm-up fit (numba's cached machine code is loaded
once per process; that load is not in the figures):

* ``fit``: ``ExactRuleEnsembleRegressor(n_rules=1)`` — diabetes 442 x 10 at the defaults
  (8 thresholds per feature, reg 1e-3, intercept), diabetes with every midpoint, and
  friedman1 n = 10 000, d = 10 at 8 thresholds: wall seconds to a certified optimum.
* ``search``: the one-rule ridge-gain search alone, compiled range search against the
  set-enumeration branch and bound (``find_rule(search="enumerate")``)
  under the same time limit: seconds, nodes, value and bound.
* ``jobs`` (issue 31, not in the default parts): the one-rule fit with every midpoint on
  ``n_jobs`` 1 and 2 threads and on a Dask ``LocalCluster`` of two processes.
* ``cob``: COB (``RuleBoostingRegressor(preset="COB")``, branch and bound, unlimited rule
  length, every midpoint) with five rules on diabetes: per rule its status, value, bound,
  nodes and seconds; the process's peak RSS.

Run:  python benchmarks/box_search.py [--quick] [--parts fit search cob] [--cob] [--time-limit S]
      (--quick: search and cob capped at 10 s and 60 s instead of 120 s and 900 s;
      --cob: the cob part alone, the issue-31 workload; every part prints the load average
      when it starts and ends — the machine is shared, compare node counts and bounds)
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
import warnings

import numpy as np


def _diabetes():
    from sklearn.datasets import load_diabetes

    return load_diabetes(return_X_y=True)


def _friedman(n: int = 10_000):
    from sklearn.datasets import make_friedman1

    return make_friedman1(n_samples=n, n_features=10, noise=1.0, random_state=0)


def _warm_up() -> None:
    import rulemip

    X, y = _diabetes()
    rulemip.ExactRuleEnsembleRegressor(n_rules=1).fit(X[:60], y[:60])
    rulemip.RuleBoostingRegressor(n_rules=1, preset="COB").fit(X[:60], y[:60])


def part_fit() -> list[str]:
    import rulemip

    rows = ["| workload | seconds | status | risk | lower bound | target |",
            "|---|---|---|---|---|---|"]
    cases = [("diabetes 442 x 10, defaults", _diabetes(), {}, "<= 1 s"),
             ("diabetes, every midpoint", _diabetes(), {"max_thresholds": None}, "<= 20 s"),
             ("friedman1 10 000 x 10, 8 thresholds", _friedman(), {}, "<= 5 s")]
    for name, (X, y), kw, target in cases:
        t = time.perf_counter()
        model = rulemip.ExactRuleEnsembleRegressor(n_rules=1, **kw).fit(X, y)
        dt = time.perf_counter() - t
        c = model.certificate_
        rows.append(f"| {name} | {dt:.2f} | {c.status} | {c.risk:.6g} | {c.lower_bound:.6g} "
                    f"| {target} |")
        print(rows[-1], flush=True)
    return rows


def part_search(time_limit: float) -> list[str]:
    import rulemip.boosting.search as search
    from rulemip.boosting.objectives import ridge_gain_objective
    from rulemip.boosting.space import SearchSpace
    from rulemip.budget import Budget

    rows = ["| instance | search | seconds | status | nodes | value | bound |",
            "|---|---|---|---|---|---|---|"]
    Xd, yd = _diabetes()
    Xf, yf = _friedman()
    cases = [("diabetes, 8 thresholds", Xd, yd, 8), ("diabetes, 16 thresholds", Xd, yd, 16),
             ("diabetes, every midpoint", Xd, yd, None),
             ("friedman1 10 000, 8 thresholds", Xf, yf, 8)]
    for name, X, y, cuts in cases:
        space = SearchSpace.build(X, cuts)
        obj = ridge_gain_objective(y - y.mean(), reg=1e-3, fit_intercept=True)
        for label, kind in (("compiled ranges", "bnb"), ("set enumeration", "enumerate")):
            t = time.perf_counter()
            res = search.find_rule(space, obj, search=kind,
                                   budget=Budget.from_time_limit(time_limit))
            dt = time.perf_counter() - t
            assert res is not None
            rows.append(f"| {name} | {label} | {dt:.2f} | {res.status} | {res.n_expanded} "
                        f"| {res.value:.6g} | {res.bound:.6g} |")
            print(rows[-1], flush=True)
    return rows


def part_cob(time_limit: float) -> list[str]:
    import rulemip

    X, y = _diabetes()
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rulemip.RuleBoostingRegressor(n_rules=5, preset="COB",
                                              time_limit=time_limit).fit(X, y)
    dt = time.perf_counter() - t
    rows = [f"COB, 5 rules, unlimited length, every midpoint, diabetes: {dt:.1f} s in all, "
            f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, "
            f"load {os.getloadavg()[0]:.1f} at the end",
            "", "| rule | status | value | bound | nodes | seconds | length |",
            "|---|---|---|---|---|---|---|"]
    for i, rnd in enumerate(model.booster_.rounds_, 1):
        s = rnd.search
        rows.append(f"| {i} | {s.status} | {s.value:.6g} | {s.bound:.6g} | {s.n_expanded} "
                    f"| {s.elapsed:.2f} | {s.length} |")
        print(rows[-1], flush=True)
    return rows


def part_jobs(repeats: int = 3) -> list[str]:
    """``ExactRuleEnsembleRegressor(n_rules=1, max_thresholds=None)`` on diabetes with
    ``n_jobs`` 1 and 2 (alternating, best of ``repeats`` each), and the same proof on a Dask
    ``LocalCluster`` of two worker processes (when dask is installed)."""
    import rulemip

    X, y = _diabetes()
    rows = ["| run | seconds (best) | load before | status | risk | lower bound |",
            "|---|---|---|---|---|---|"]
    best: dict[str, float] = {}
    info: dict[str, tuple[float, object]] = {}
    for _ in range(repeats):
        for jobs in (1, 2):
            load = os.getloadavg()[0]
            t = time.perf_counter()
            m = rulemip.ExactRuleEnsembleRegressor(n_rules=1, max_thresholds=None,
                                                   n_jobs=jobs).fit(X, y)
            dt = time.perf_counter() - t
            key = f"n_jobs={jobs}"
            if dt < best.get(key, np.inf):
                best[key], info[key] = dt, (load, m.certificate_)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        Client = None
    if Client is not None:      # the one-rule search itself (the fit's proof) on two processes
        from rulemip.boosting.boxsearch.range_search import box_search
        from rulemip.boosting.objectives import ridge_gain_objective
        from rulemip.boosting.space import SearchSpace

        space = SearchSpace.build(X, None)
        obj = ridge_gain_objective(y - y.mean(), reg=1e-3, fit_intercept=True)
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as lc, \
                Client(lc) as client:
            for label, kw in (("search alone, n_jobs=2", {"n_jobs": 2}),
                              ("search alone, Dask LocalCluster(n_workers=2)",
                               {"scheduler": client})):
                load = os.getloadavg()[0]
                t = time.perf_counter()
                r = box_search(space, obj, **kw)
                rows.append(f"| {label} | {time.perf_counter() - t:.2f} | {load:.1f} "
                            f"| {r.status} | value {r.value!r} | bound {r.bound!r}, "
                            f"{r.n_expanded} nodes |")
                print(rows[-1], flush=True)
    for key, dt in best.items():
        load, c = info[key]
        rows.append(f"| {key} | {dt:.2f} | {load:.1f} | {c.status} | {c.risk!r} "
                    f"| {c.lower_bound!r} |")
        print(rows[-1], flush=True)
    if "n_jobs=1" in best:
        rows.append(f"speed-up n_jobs=2: {best['n_jobs=1'] / best['n_jobs=2']:.2f}x")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--parts", nargs="+", default=["fit", "search", "cob"],
                    choices=["fit", "search", "cob", "jobs"])
    ap.add_argument("--cob", action="store_true", help="the cob part alone")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds per search (search part) and per COB fit")
    args = ap.parse_args()
    if args.cob:
        args.parts = ["cob"]
    search_limit = args.time_limit or (10.0 if args.quick else 120.0)
    cob_limit = args.time_limit or (60.0 if args.quick else 900.0)
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; numpy {np.__version__}")
    _warm_up()
    if "fit" in args.parts:
        print("\n".join(part_fit()))
    if "search" in args.parts:
        print("\n".join(part_search(search_limit)))
    if "cob" in args.parts:
        print("\n".join(part_cob(cob_limit)))
    if "jobs" in args.parts:
        print("\n".join(part_jobs(2 if args.quick else 5)))


if __name__ == "__main__":
    main()
