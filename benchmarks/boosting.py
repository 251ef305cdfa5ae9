"""Rule-boosting benchmarks (a script, not a test).

(a) speed-up of the incremental ogb prefix values ([OGB] Alg. 3) over explicit projection;
(b) wall time of COB (ogb + corrective) to reach complexity 50 on diabetes, breast cancer
    (logistic), friedman1 (n = 2000) and friedman2 (n = 10 000), for several searches.

Run:  python benchmarks/boosting.py [--budget SECONDS] [--out docs/benchmarks/boosting.md]
Each configuration runs in a child process killed after ``--budget`` seconds.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import time

import numpy as np

CONFIGS = [
    ("greedy, all thresholds", {"search": "greedy"}),
    ("beam 5, all thresholds", {"search": "beam"}),
    ("bnb, 10 thr, len<=2", {"search": "bnb", "max_thresholds": 10, "max_rule_length": 2}),
    ("bnb, 10 thr, len<=3", {"search": "bnb", "max_thresholds": 10, "max_rule_length": 3}),
    ("bnb, 10 thr, unlimited", {"search": "bnb", "max_thresholds": 10}),
]


def _data(name):
    from sklearn.datasets import load_breast_cancer, load_diabetes

    from rulemip.data import friedman1, friedman2

    if name == "diabetes":
        return (*load_diabetes(return_X_y=True), "squared")
    if name == "breast_cancer":
        return (*load_breast_cancer(return_X_y=True), "logistic")
    if name == "friedman1":
        return (*friedman1(2000), "squared")
    return (*friedman2(10_000), "squared")


def _run(name, params, queue):
    from rulemip.boosting import RuleBooster
    from rulemip.data import Dataset

    X, y, loss = _data(name)
    ds = Dataset.from_arrays(X, y, loss=loss)
    t = time.perf_counter()
    b = RuleBooster(n_rules=50, objective="ogb", weight_update="corrective", loss=loss,
                    max_complexity=50, **params).fit(ds)
    queue.put((time.perf_counter() - t, len(b.rules_), b.rules_.complexity,
               b.risk_path_[-1] / b.risk_path_[0]))


def prefix_speedup():
    from rulemip.boosting.objectives import (
        OrthonormalBasis,
        ogb_prefix_values,
        ogb_prefix_values_naive,
    )

    rows = []
    rng = np.random.default_rng(0)
    for n, t in ((1000, 10), (2000, 20), (5000, 20)):
        basis = OrthonormalBasis(n)
        basis.add(np.ones(n))
        for _ in range(t - 1):
            basis.add((rng.random(n) < 0.3).astype(float))
        g = basis.project_out(rng.normal(size=n))
        order = rng.permutation(n)
        ob = basis.columns
        t0 = time.perf_counter()
        naive = ogb_prefix_values_naive(g, ob, order, 1e-3)
        t1 = time.perf_counter()
        for _ in range(10):
            inc = ogb_prefix_values(g, ob, order, 1e-3)
        t2 = time.perf_counter()
        assert np.allclose(inc, naive, rtol=1e-6, atol=1e-9)
        rows.append((n, t, t1 - t0, (t2 - t1) / 10, (t1 - t0) / ((t2 - t1) / 10)))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--out", default="docs/benchmarks/boosting.md")
    ap.add_argument("--datasets", default="diabetes,breast_cancer,friedman1,friedman2")
    args = ap.parse_args()
    lines = ["# Rule-boosting benchmarks", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
             f"{time.strftime('%Y-%m-%d')}. Rerun: `python benchmarks/boosting.py "
             f"--budget {args.budget:g}`.", "",
             "## (a) incremental vs naive ogb prefix values (one full order)", "",
             "| n | t | naive s | incremental s | speed-up |", "|---|---|---|---|---|"]
    for n, t, a, b, s in prefix_speedup():
        lines.append(f"| {n} | {t} | {a:.3f} | {b:.5f} | {s:.0f}x |")
        print(lines[-1], flush=True)
    lines += ["", "## (b) COB to complexity 50 (ogb + corrective)", "",
              f"Budget {args.budget:g} s per run; `>` = killed at the budget.", "",
              "| data | search | seconds | rules | complexity | R/R(f0) |",
              "|---|---|---|---|---|---|"]
    ctx = mp.get_context("fork")
    for name in args.datasets.split(","):
        for label, params in CONFIGS:
            q = ctx.Queue()
            p = ctx.Process(target=_run, args=(name, params, q))
            t0 = time.perf_counter()
            p.start()
            p.join(args.budget)
            if p.is_alive():
                p.terminate()
                p.join()
                row = f"| {name} | {label} | >{args.budget:g} | | | |"
            else:
                el, k, c, r = q.get()
                row = f"| {name} | {label} | {el:.2f} | {k} | {c} | {r:.3f} |"
            del t0
            lines.append(row)
            print(row, flush=True)
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
