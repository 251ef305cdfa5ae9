"""RGB against gradient boosting, after [RGB] §5 / Table 1, plus run time per round vs S.

Protocol (the paper's): 10 × 5-fold stratified cross-validation (the same 50 splits for
every method and configuration). Each method is tuned over a grid; the configuration with
the lowest mean cross-validated error is selected and its error reported (mean and the
standard deviation over the 10 repetitions). Selection and evaluation use the same splits,
as in the paper, which favours every method alike. A one-tailed paired t-test compares the
10 per-repetition errors of RGB and GB (H1: RGB has the lower error).

- RGB: ``RGBClassifier`` with T = 100, S = 3, the paper's 7×7 family grid (q = 2,
  p_k ∝ λ_k), otherwise default options (Lipschitz step with the family constant,
  selection by objective (7)), β ∈ {0.001, 0.01, 0.1, 0.3, 1} (the paper's grid).
- GB: ``sklearn.ensemble.GradientBoostingClassifier`` with 100 trees, max_depth ∈
  {1, 2, 3, 5, 7}, learning_rate ∈ {0.1, 0.5, 1} (the paper's XGBoost grid has depths
  1..7 and rates {0.001, ..., 4}; rates below 0.1 underfit in 100 rounds and rates above
  1 diverge, so they are left out to fit the time budget). scikit-learn has no ℓ2
  penalty on leaf values, so the paper's third XGBoost axis is absent.
- XGBoost (only if ``import xgboost`` works): 100 trees, max_depth ∈ {1, 3, 5, 7},
  reg_lambda ∈ {0.01, 1, 4}, learning_rate ∈ {0.1, 0.5, 1}.

Data: scikit-learn's breast-cancer data (569 × 30) and binary tasks from
``make_classification`` of higher dimension (300 × 60 and 300 × 100; 10 informative and 10
redundant features, 5 % label noise).

Run:  python benchmarks/rgb.py            (full: ~2.2e3 CPU-seconds, 18-20 minutes on two
                                          idle cores; 52 minutes on a shared, loaded one)
      python benchmarks/rgb.py --quick    (2 × 5-fold, small grids, about 30 s)
Options: --jobs N (parallel fits, default 2), --json PATH (write the raw numbers).
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import time
from typing import Any

import numpy as np
import sklearn
from joblib import Parallel, delayed
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.model_selection import RepeatedStratifiedKFold

from rulemip.estimators.rgb import RGBClassifier


def _datasets(quick: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    X, y = load_breast_cancer(return_X_y=True)
    out = {"breast_cancer (569x30)": (X, y)}
    dims = (60,) if quick else (60, 100)
    for d in dims:
        Xs, ys = make_classification(n_samples=300, n_features=d, n_informative=10,
                                     n_redundant=10, flip_y=0.05, random_state=d)
        out[f"make_classification (300x{d})"] = (Xs, ys)
    return out


def _grids(quick: bool) -> dict[str, list[Any]]:
    T = 30 if quick else 100
    betas = (0.01, 0.1) if quick else (0.001, 0.01, 0.1, 0.3, 1.0)
    depths = (1, 3) if quick else (1, 2, 3, 5, 7)
    rates = (0.1, 0.5) if quick else (0.1, 0.5, 1.0)
    grids: dict[str, list[Any]] = {
        "RGB": [RGBClassifier(n_estimators=T, n_samples_per_round=3, beta=b, random_state=0)
                for b in betas],
        "GB": [GradientBoostingClassifier(n_estimators=T, max_depth=d, learning_rate=r,
                                          random_state=0)
               for d, r in itertools.product(depths, rates)],
    }
    try:
        from xgboost import XGBClassifier  # optional, not a rulemip dependency
    except ImportError:
        print("xgboost is not installed: XGBoost column skipped.")
    else:
        grids["XGBoost"] = [
            XGBClassifier(n_estimators=T, max_depth=d, reg_lambda=lam, learning_rate=r,
                          n_jobs=1, random_state=0)
            for d, lam, r in itertools.product((1, 3, 5, 7), (0.01, 1.0, 4.0),
                                               (0.1, 0.5, 1.0))]
    return grids


def _error(est: Any, X: np.ndarray, y: np.ndarray, train: np.ndarray,
           test: np.ndarray) -> float:
    model = clone(est).fit(X[train], y[train])
    return float(np.mean(model.predict(X[test]) != y[test]))


def _describe(est: Any) -> str:
    keys = ("beta", "max_depth", "learning_rate", "reg_lambda")
    params = est.get_params()
    return ", ".join(f"{k}={params[k]}" for k in keys if k in params)


def cross_validate(X: np.ndarray, y: np.ndarray, grids: dict[str, list[Any]],
                   n_repeats: int, jobs: int) -> dict[str, Any]:
    """Errors of every configuration on the same repeated stratified 5-fold splits."""
    splits = list(RepeatedStratifiedKFold(n_splits=5, n_repeats=n_repeats,
                                          random_state=0).split(X, y))
    tasks = [(name, c, s) for name, grid in grids.items() for c in range(len(grid))
             for s in range(len(splits))]
    errs = Parallel(n_jobs=jobs)(
        delayed(_error)(grids[name][c], X, y, *splits[s]) for name, c, s in tasks)
    table: dict[str, np.ndarray] = {name: np.zeros((len(g), len(splits)))
                                    for name, g in grids.items()}
    for (name, c, s), e in zip(tasks, errs):
        table[name][c, s] = e
    out: dict[str, Any] = {}
    for name, errors in table.items():
        best = int(np.argmin(errors.mean(axis=1)))
        per_rep = errors[best].reshape(n_repeats, 5).mean(axis=1)
        out[name] = {"config": _describe(grids[name][best]), "per_repetition": per_rep,
                     "mean": float(per_rep.mean()), "std": float(per_rep.std(ddof=1))}
    return out


def time_per_round(X: np.ndarray, y: np.ndarray, sizes: tuple[int, ...],
                   T: int) -> list[dict[str, float]]:
    """Seconds per boosting round of RGB for each S, and per tree of GB (one core)."""
    rows = []
    for S in sizes:
        best = np.inf
        for _ in range(2):
            t0 = time.perf_counter()
            RGBClassifier(n_estimators=T, n_samples_per_round=S, random_state=0).fit(X, y)
            best = min(best, time.perf_counter() - t0)
        rows.append({"method": f"RGB S={S}", "seconds_per_round": best / T})
    for depth in (3, 7):
        best = np.inf
        for _ in range(2):
            t0 = time.perf_counter()
            GradientBoostingClassifier(n_estimators=T, max_depth=depth,
                                       random_state=0).fit(X, y)
            best = min(best, time.perf_counter() - t0)
        rows.append({"method": f"GB depth={depth}", "seconds_per_round": best / T})
    return rows


def _fmt_pct(v: float) -> str:
    return f"{100 * v:.2f}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reduced size (~30 s)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel fits (default 2)")
    parser.add_argument("--json", default=None, help="write raw results to this file")
    args = parser.parse_args(argv)
    n_repeats = 2 if args.quick else 10
    t_start = time.perf_counter()
    grids = _grids(args.quick)
    report: dict[str, Any] = {
        "command": "python benchmarks/rgb.py" + (" --quick" if args.quick else ""),
        "platform": platform.platform(), "python": platform.python_version(),
        "sklearn": sklearn.__version__, "n_repeats": n_repeats,
        "grid_sizes": {k: len(v) for k, v in grids.items()}, "datasets": {}}
    print(f"{n_repeats} x 5-fold CV; grid sizes {report['grid_sizes']}")
    header = "| data | " + " | ".join(f"{k} error % (std)" for k in grids) + \
        " | one-tailed paired t-test RGB < GB (p) | selected |"
    lines = [header, "|" + "---|" * (len(grids) + 3)]
    for name, (X, y) in _datasets(args.quick).items():
        t0 = time.perf_counter()
        res = cross_validate(X, y, grids, n_repeats, args.jobs)
        rgb, gb = res["RGB"]["per_repetition"], res["GB"]["per_repetition"]
        diff = rgb - gb
        p = float("nan") if np.allclose(diff, 0) else float(
            stats.ttest_rel(rgb, gb, alternative="less").pvalue)
        cells = [f"{_fmt_pct(r['mean'])} ({_fmt_pct(r['std'])})" for r in res.values()]
        selected = "; ".join(f"{k}: {r['config']}" for k, r in res.items())
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {p:.3g} | {selected} |")
        report["datasets"][name] = {
            "results": {k: {**r, "per_repetition": r["per_repetition"].tolist()}
                        for k, r in res.items()},
            "p_value_rgb_less_than_gb": p, "seconds": time.perf_counter() - t0}
        print(lines[-1], f"[{time.perf_counter() - t0:.0f} s]", flush=True)
    X, y = load_breast_cancer(return_X_y=True)
    sizes = (1, 5) if args.quick else (1, 2, 5, 10, 20)
    timing = time_per_round(X, y, sizes, T=20 if args.quick else 50)
    report["timing_breast_cancer"] = timing
    report["total_seconds"] = time.perf_counter() - t_start
    print("\n".join(lines))
    print("\nrun time per round on breast_cancer (569x30), one core:")
    print("| method | ms per round |\n|---|---|")
    for row in timing:
        print(f"| {row['method']} | {1000 * row['seconds_per_round']:.1f} |")
    print(f"\ntotal {report['total_seconds']:.0f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return report


if __name__ == "__main__":
    main()
