"""Rule-boosting benchmarks (a script, not a test).

(a) speed-up of the incremental ogb prefix values ([OGB] Alg. 3) over explicit projection;
(b) wall time of COB (ogb + corrective) to reach complexity 50 on diabetes, breast cancer
    (logistic), friedman1 (n = 2000) and friedman2 (n = 10 000), for several searches.

Run:  python benchmarks/boosting.py [--budget SECONDS] [--out docs/benchmarks/boosting.md]
          [--before-tree DIR]
Each configuration runs in a fresh interpreter killed after ``--budget`` seconds. With
``--before-tree DIR`` (a directory holding an older ``rulemip`` package, e.g. made by
``git archive <commit> rulemip | tar -x -C DIR``) every configuration is also run with
that code, right before the current one, so that both see the same machine load; the
table then has a "before s" column.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

CONFIGS = [
    ("greedy, all thresholds", {"search": "greedy"}),
    ("beam 5, all thresholds", {"search": "beam"}),
    ("bnb, 10 thr, len<=2", {"search": "bnb", "max_thresholds": 10, "max_propositions": 2}),
    ("bnb, 10 thr, len<=3", {"search": "bnb", "max_thresholds": 10, "max_propositions": 3}),
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


def _run(name, label):
    from rulemip.boosting import RuleBooster
    from rulemip.data import Dataset

    params = dict(CONFIGS)[label]
    X, y, loss = _data(name)
    ds = Dataset.from_arrays(X, y, loss=loss)
    t = time.perf_counter()
    b = RuleBooster(n_rules=50, objective="ogb", weight_update="corrective", loss=loss,
                    max_complexity=50, **params).fit(ds)
    print(json.dumps([time.perf_counter() - t, len(b.rules_), b.rules_.complexity,
                      b.risk_path_[-1] / b.risk_path_[0]]))


def _timed(name, label, budget, tree=None):
    """(seconds, rules, complexity, R/R0) of one configuration, or None past ``budget``."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([tree, env.get("PYTHONPATH", "")])
    try:
        out = subprocess.run([sys.executable, __file__, "--one", name, label], env=env,
                             capture_output=True, text=True, timeout=budget + 30, check=True)
    except subprocess.TimeoutExpired:
        return None
    el, k, c, r = json.loads(out.stdout.strip().splitlines()[-1])
    return None if el > budget else (el, k, c, r)


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
    ap.add_argument("--before-tree", default=None)
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        _run(*args.one)
        return
    cmd = f"python benchmarks/boosting.py --budget {args.budget:g}" + (
        " --before-tree DIR" if args.before_tree else "")
    lines = ["# Rule-boosting benchmarks", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
             f"{time.strftime('%Y-%m-%d')}. Rerun: `{cmd}`.", "",
             "## (a) incremental vs naive ogb prefix values (one full order)", "",
             "| n | t | naive s | incremental s | speed-up |", "|---|---|---|---|---|"]
    for n, t, a, b, s in prefix_speedup():
        lines.append(f"| {n} | {t} | {a:.3f} | {b:.5f} | {s:.0f}x |")
        print(lines[-1], flush=True)
    before = args.before_tree is not None
    lines += ["", "## (b) COB to complexity 50 (ogb + corrective)", "",
              f"Budget {args.budget:g} s per run; `>` = killed at the budget.", "",
              "| data | search | " + ("before s | " if before else "") +
              "seconds | rules | complexity | R/R(f0) |",
              "|---|---|" + ("---|" if before else "") + "---|---|---|---|"]
    for name in args.datasets.split(","):
        for label, _ in CONFIGS:
            cells = [name, label]
            if before:
                old = _timed(name, label, args.budget, args.before_tree)
                cells.append(f">{args.budget:g}" if old is None else f"{old[0]:.2f}")
            res = _timed(name, label, args.budget)
            if res is None:
                cells += [f">{args.budget:g}", "", "", ""]
            else:
                el, k, c, r = res
                cells += [f"{el:.2f}", str(k), str(c), f"{r:.3f}"]
            lines.append("| " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
