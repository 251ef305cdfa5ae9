"""The exact estimators on ordinary tables: one time budget, risk against COB, valid bound.

Rerun (from the repository root; results in ``docs/benchmarks/exact.md``, section
"Ordinary tables")::

    python benchmarks/exact_tables.py --time-limit 60 --jsonl tables.jsonl
    python benchmarks/exact_tables.py --quick      # 10 s budgets, three rows

Every row is one ``ExactRuleEnsembleRegressor`` / ``...Classifier`` fit with the defaults
except ``n_rules`` and ``time_limit`` (and ``reg=1`` on the three-feature diabetes row, as
in the issue that set these targets): the engine ``"auto"`` chose, wall seconds of the whole
fit (warm start included), the training risk of the COB warm start, the returned model's
risk, its valid lower bound and the relative gap.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from typing import Any

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, make_friedman1

from rulemip.estimators import ExactRuleEnsembleClassifier, ExactRuleEnsembleRegressor


def _tables() -> dict[str, tuple[Any, Any, str]]:
    diabetes = load_diabetes(as_frame=True)
    cancer = load_breast_cancer(as_frame=True)
    Xf, yf = make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=0)
    return {
        "diabetes-3": (diabetes.data[["bmi", "bp", "s5"]], diabetes.target, "squared"),
        "diabetes": (diabetes.data, diabetes.target, "squared"),
        "breast-cancer": (cancer.data, cancer.target, "logistic"),
        "friedman1-5000": (Xf, yf, "squared"),
    }


PLAN = [("diabetes-3", 3), ("diabetes", 1), ("diabetes", 2), ("diabetes", 3),
        ("diabetes", 5), ("breast-cancer", 1), ("breast-cancer", 3), ("breast-cancer", 5),
        ("friedman1-5000", 3), ("friedman1-5000", 5), ("friedman1-5000", 10)]


def run(name: str, k: int, time_limit: float, tables: dict[str, Any]) -> dict[str, Any]:
    X, y, loss = tables[name]
    params: dict[str, Any] = {"n_rules": k, "time_limit": time_limit}
    if name == "diabetes-3":
        params["reg"] = 1.0
    est = (ExactRuleEnsembleClassifier(**params) if loss == "logistic"
           else ExactRuleEnsembleRegressor(**params))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    wall = time.perf_counter() - t0
    r = est.result_
    return {"table": name, "n": len(y), "d": int(np.asarray(X).shape[1]), "loss": loss,
            "k": k, "time_limit": time_limit, "engine": est.engine_, "wall": round(wall, 2),
            "cob_risk": est.boosting_risk_, "risk": r.risk, "lower_bound": r.lower_bound,
            "gap": r.gap, "status": r.termination.value, "n_boxes": r.n_boxes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--jsonl", default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    tables = _tables()
    plan = PLAN[:3] if args.quick else PLAN
    limit = 10.0 if args.quick else args.time_limit
    print(f"{'table':15s} {'k':>3s} {'engine':7s} {'wall':>6s} {'COB':>10s} {'risk':>10s} "
          f"{'bound':>10s} {'gap':>7s}  status")
    for name, k in plan:
        row = run(name, k, limit, tables)
        print(f"{row['table']:15s} {k:3d} {row['engine']:7s} {row['wall']:6.1f} "
              f"{row['cob_risk']:10.4g} {row['risk']:10.4g} {row['lower_bound']:10.4g} "
              f"{row['gap']:7.2%}  {row['status']}", flush=True)
        if args.jsonl:
            with open(args.jsonl, "a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
