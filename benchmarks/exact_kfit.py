"""k >= 2 rules on ordinary tables: the budget spent, 1-swap optimality, the incumbent
against COB, and tiny instances against brute force (issue 24; results in
``docs/benchmarks/exact.md``, section "k-rule fits: local optimality and the budget").

Rerun (from the repository root)::

    python benchmarks/exact_kfit.py --time-limit 60 --jsonl kfit.jsonl
    python benchmarks/exact_kfit.py --quick     # 10 s diabetes budgets, fewer tiny instances
    python benchmarks/exact_kfit.py --quick --work-limit 20000   # reproducible: every fit
                                                # stopped by work, not time (one thread)
    python benchmarks/exact_kfit.py --ks 2 3 --three-ks --tiny 0 --tables friedman1 cancer
    python benchmarks/exact_kfit.py --ks --tiny 0 --three-ks 2 3 5 --jsonl kfit.jsonl

Part 1 (``diabetes``): one ``ExactRuleEnsembleRegressor(n_rules=k, time_limit=T)`` fit per
k on scikit-learn's diabetes (442 x 10, defaults otherwise): wall time (the budget used),
COB's risk, the returned risk, the valid bound, the gap, whether the certificate claims
1-swap optimality, and each start of the local phase (start risk -> risk after swaps).

Part 2 (``tiny``): random tables of 6-12 rows and 2 features (3 quantile cuts per
feature), k = 1..3, ridge 1e-3 and 0.1, with and without intercept; every engine that
accepts the problem, against the brute-force optimum
(:func:`rulemip.testing.brute_force.brute_force_optimum`). For squared-loss fits the
returned model is re-checked by :func:`rulemip.algorithms.local.rule_swaps.check_one_swap`
(is there a single rule swap that lowers its risk?).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from typing import Any

import numpy as np
from sklearn.datasets import load_diabetes

from rulemip.algorithms.local.rule_swaps import check_one_swap
from rulemip.data import Dataset, candidate_thresholds
from rulemip.estimators import ExactRuleEnsembleRegressor
from rulemip.rules.problem import KRuleProblem
from rulemip.testing.brute_force import brute_force_optimum

TINY_ENGINES = ("auto", "cip", "cip-bnb", "cg", "cell-bnb", "mip")
#: with ``--work-limit``: the settings that make every fit deterministic (no time limit,
#: the work limit, one thread, a fixed seed), given to every estimator
DETERMINISTIC: dict[str, Any] = {}


def _limits(time_limit: float | None) -> dict[str, Any]:
    """The limits of one fit: ``time_limit``, or the deterministic settings."""
    return {"time_limit": time_limit, **DETERMINISTIC}


def diabetes_row(k: int, time_limit: float, three: bool = False) -> dict[str, Any]:
    """One fit on diabetes 442 x 10 (defaults), or with ``three`` on its columns bmi, bp,
    s5 at ``reg=1`` (the README's three features)."""
    X, y = load_diabetes(return_X_y=True)
    params: dict[str, Any] = {"n_rules": k, "time_limit": time_limit}
    if three:
        X = X[:, [2, 3, 8]]
        params["reg"] = 1.0
    params.update(_limits(time_limit))
    return _fit_row(ExactRuleEnsembleRegressor(**params), X, y,
                    "diabetes-3" if three else "diabetes", k, time_limit)


def _fit_row(est: Any, X: Any, y: Any, table: str, k: int, time_limit: float
             ) -> dict[str, Any]:
    """Fit ``est`` (warnings silenced) and report its certificate as one row."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    wall = time.perf_counter() - t0
    cert = est.certificate_
    local = cert.local_optimality
    return {"part": "diabetes", "table": table, "k": k, "time_limit": time_limit,
            "engine": est.engine_, "wall": wall, "cob_risk": est.boosting_risk_,
            "risk": cert.risk, "bound": cert.lower_bound, "gap": cert.gap,
            "status": cert.status,
            "one_swap_optimal": bool(local is not None and local.get("proved")),
            "starts": [list(s) for s in getattr(est, "local_starts_", ())],
            "init_source": est.init_source_}


def table_row(table: str, k: int, time_limit: float) -> dict[str, Any]:
    """One fit at defaults on an ordinary table: ``friedman1`` (scikit-learn's
    ``make_friedman1``, 5 000 x 10, noise 1, seed 0; squared loss) or ``cancer``
    (scikit-learn's breast cancer, 569 x 30; logistic loss)."""
    from sklearn.datasets import load_breast_cancer, make_friedman1

    from rulemip.estimators import ExactRuleEnsembleClassifier

    est: Any
    if table == "friedman1":
        X, y = make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=0)
        est = ExactRuleEnsembleRegressor(n_rules=k, **_limits(time_limit))
    else:
        X, y = load_breast_cancer(return_X_y=True)
        est = ExactRuleEnsembleClassifier(n_rules=k, **_limits(time_limit))
    return _fit_row(est, X, y, table, k, time_limit)


def tiny_rows(n_instances: int, time_limit: float) -> list[dict[str, Any]]:
    rows = []
    for seed in range(n_instances):
        rng = np.random.default_rng(seed)
        n = 6 + seed % 7
        X = rng.normal(size=(n, 2))
        y = np.where(X[:, 0] > 0, 1.0, 0.0) + 0.5 * rng.normal(size=n)
        ds = Dataset.from_arrays(X, y, loss="squared")
        th = candidate_thresholds(ds.X, 3, None)
        k = 1 + seed % 3
        reg = 1e-3 if seed % 2 == 0 else 0.1
        fit_intercept = seed % 4 != 3
        best = brute_force_optimum(X, y, k, reg=reg, fit_intercept=fit_intercept,
                                   thresholds=th)
        for engine in TINY_ENGINES:
            est = ExactRuleEnsembleRegressor(n_rules=k, reg=reg, fit_intercept=fit_intercept,
                                             thresholds=th, engine=engine,
                                             **_limits(time_limit))
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(X, y)
            except Exception as exc:  # an engine refusing the problem is a row, not a crash
                rows.append({"part": "tiny", "seed": seed, "n": n, "k": k, "reg": reg,
                             "fit_intercept": fit_intercept, "engine": engine,
                             "error": f"{type(exc).__name__}: {exc}"[:160]})
                continue
            wall = time.perf_counter() - t0
            cert = est.certificate_
            problem = KRuleProblem.of(ds, k, reg=reg, fit_intercept=fit_intercept, thresholds=th)
            swap_ok, _ = check_one_swap(problem, est.rules_)
            rows.append({"part": "tiny", "seed": seed, "n": n, "k": k, "reg": reg,
                         "fit_intercept": fit_intercept, "engine": engine,
                         "chosen": est.engine_, "wall": wall, "status": cert.status,
                         "limit": None if est.result_.limit is None
                         else est.result_.limit.value,
                         "risk": cert.risk, "optimum": best.risk, "bound": cert.lower_bound,
                         "at_optimum": cert.risk <= best.risk + 1e-9 * max(1.0, best.risk),
                         "one_swap_optimal": swap_ok})
    return rows


def summarize(rows: list[dict[str, Any]]) -> None:
    print("| table | k | engine | wall s | COB risk | risk | valid bound | gap | "
          "1-swap optimal |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["part"] == "diabetes":
            print(f"| {r.get('table', 'diabetes')} | {r['k']} | {r['engine']} | "
                  f"{r['wall']:.1f} | {r['cob_risk']:.6g} | "
                  f"{r['risk']:.6g} | {r['bound']:.4g} | {r['gap']:.1%} | "
                  f"{'yes' if r['one_swap_optimal'] else 'no'} |")
            for s in r["starts"]:
                print(f"| | | start {s[0]} | | {s[1]:.6g} | -> {s[2]:.6g} | | | "
                      f"{'yes' if s[3] else 'no'} |")
    tiny = [r for r in rows if r["part"] == "tiny"]
    if tiny:
        print()
        print("| engine | runs | errors | optimal (status) | at brute-force optimum | "
              "1-swap optimal | max wall s |")
        print("|---|---|---|---|---|---|---|")
        for engine in TINY_ENGINES:
            rs = [r for r in tiny if r["engine"] == engine]
            ok = [r for r in rs if "error" not in r]
            if not rs:
                continue
            print(f"| {engine} | {len(rs)} | {len(rs) - len(ok)} | "
                  f"{sum(r['status'] == 'optimal' for r in ok)} | "
                  f"{sum(r['at_optimum'] for r in ok)} | "
                  f"{sum(r['one_swap_optimal'] for r in ok)} | "
                  f"{max((r['wall'] for r in ok), default=0):.1f} |")
        for r in tiny:
            if "error" in r:
                print(f"  error: seed {r['seed']} k {r['k']} {r['engine']}: {r['error']}")
            elif not r["at_optimum"] or not r["one_swap_optimal"]:
                print(f"  off: seed {r['seed']} k {r['k']} {r['engine']} ({r['chosen']}): "
                      f"{r['status']} risk {r['risk']:.6g} optimum {r['optimum']:.6g} "
                      f"1-swap {r['one_swap_optimal']}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--time-limit", type=float, default=60.0,
                   help="seconds per diabetes fit (default 60)")
    p.add_argument("--tiny-time-limit", type=float, default=20.0,
                   help="seconds per tiny fit (default 20)")
    p.add_argument("--ks", type=int, nargs="*", default=[2, 3, 5])
    p.add_argument("--tiny", type=int, default=39, help="tiny instances (default 39)")
    p.add_argument("--three-ks", type=int, nargs="*", default=[3],
                   help="k of the diabetes bmi/bp/s5 rows at reg 1 (default 3)")
    p.add_argument("--tables", nargs="*", default=[], choices=["friedman1", "cancer"],
                   help="ordinary tables to fit at every k of --table-ks (default none)")
    p.add_argument("--table-ks", type=int, nargs="*", default=[3, 5])
    p.add_argument("--quick", action="store_true",
                   help="10 s diabetes fits, 12 tiny instances at 5 s")
    p.add_argument("--work-limit", type=int, default=None,
                   help="units of work per fit, with no time limit, one thread and seed 0: "
                        "rows that are reproducible on any machine (default: none)")
    p.add_argument("--jsonl", help="append every row to this file")
    p.add_argument("--summarize", nargs="*", help="reprint rows from JSONL files")
    args = p.parse_args()
    if args.summarize:
        rows = []
        for name in args.summarize:
            with open(name) as fh:
                rows.extend(json.loads(line) for line in fh if line.strip())
        summarize(rows)
        return
    if args.quick:
        args.time_limit, args.tiny, args.tiny_time_limit = 10.0, 12, 5.0
    if args.work_limit is not None:
        DETERMINISTIC.update(time_limit=None, work_limit=args.work_limit, n_jobs=1,
                             random_state=0)
    rows: list[dict[str, Any]] = []
    for k in args.ks:
        rows.append(diabetes_row(k, args.time_limit))
        print(json.dumps(rows[-1]), flush=True)
    for k in args.three_ks:
        rows.append(diabetes_row(k, args.time_limit, three=True))
        print(json.dumps(rows[-1]), flush=True)
    for table in args.tables:
        for k in args.table_ks:
            rows.append(table_row(table, k, args.time_limit))
            print(json.dumps(rows[-1]), flush=True)
    if args.tiny:
        rows.extend(tiny_rows(args.tiny, args.tiny_time_limit))
    if args.jsonl:
        with open(args.jsonl, "a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    summarize(rows)


if __name__ == "__main__":
    main()
