"""Tree-ensemble pruning side by side with OKRidge (issue 39, item 2).

Rerun (OKRidge in an environment of its own: 0.1.1 pins numpy < 2, which the project's
OR-Tools does not accept, and imports ``requests`` without declaring it):

    python -m venv /tmp/peers && /tmp/peers/bin/pip install okridge==0.1.1 "numpy<2" requests
    python benchmarks/peers_pruning.py --peer-python /tmp/peers/bin/python --time-limit 60

Workload: friedman1 n = 1000 (noise 1, seed 0, y standardized),
``GradientBoostingRegressor(n_estimators=100, max_depth=3, learning_rate=0.1,
random_state=0)``, ``TreeRuleExtractor(estimator=gb, prefit=True, n_rules=20,
attribute="rule", time_limit=...)`` at each ``reg``. The estimator's node matrix (all-zero
columns dropped, as OKRidge needs) is exported to an ``.npz``; OKRidge solves
``min ‖y − Xβ‖² + λ‖β‖²`` s.t. ``‖β‖₀ ≤ 20`` on it in a subprocess of the other
interpreter (``Node.lower_solve = Node.lower_solve_fast``: its default lower solver fails
on matrices with more columns than rows or duplicate columns). Its objective drops
``‖y‖²``, so ``q = ½(obj + ‖y‖²)``; its bound converts the same way. It cannot express the
node/descendant rule, so its bound is a bound for rulemip's problem and its model is
re-checked: the rule, and q recomputed by rulemip at its support (the ridge refit) and at
its own weights. One invocation prints rulemip at ``--time-limit`` next to OKRidge at its
actual stop time; CPU seconds of each process and the load average are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def _peer_okridge(path: str, reg: float, k: int, time_limit: float) -> None:
    """Run inside the peers' interpreter: OKRidge on the exported matrix; JSON on stdout."""
    import okridge.tree as tree  # type: ignore[import-not-found]
    from okridge.node import Node  # type: ignore[import-not-found]

    Node.lower_solve = Node.lower_solve_fast
    data = np.load(path)
    X, y = data["X"], data["y"]
    c0 = time.process_time()
    w0 = time.perf_counter()
    bnb = tree.BNBTree(X, y, lambda2=reg, max_memory_GB=4)
    ub, beta, _, lb, _ = bnb.solve(k, gap_tol=1e-4, time_limit=time_limit)
    print(json.dumps({"obj": float(ub), "lb": float(lb), "beta": np.asarray(beta).tolist(),
                      "cpu": time.process_time() - c0, "wall": time.perf_counter() - w0}))


def _estimator(reg: float | None, time_limit: float) -> tuple[Any, np.ndarray, Any, float]:
    import warnings

    from sklearn.datasets import make_friedman1
    from sklearn.ensemble import GradientBoostingRegressor

    from rulemip.estimators import TreeRuleExtractor

    X, y = make_friedman1(n_samples=1000, n_features=10, noise=1.0, random_state=0)
    ys = (y - y.mean()) / y.std()
    gb = GradientBoostingRegressor(n_estimators=100, max_depth=3, learning_rate=0.1,
                                   random_state=0).fit(X, ys)
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = TreeRuleExtractor(estimator=gb, prefit=True, n_rules=20, attribute="rule",
                                time_limit=time_limit, reg=reg).fit(X, ys)
    return est, (ys - est.intercept_) / est.y_scale_, gb, time.process_time() - c0


def _check(est: Any, yc: np.ndarray, cols: np.ndarray, beta: np.ndarray) -> dict[str, Any]:
    """The peer's model against rulemip's problem: rule count, node/descendant conflicts,
    q at its own weights and q of the ridge refit on its support."""
    from rulemip.formulations.tree_pruning import TreePruningCIP

    nodes = est.nodes_
    S = cols[np.abs(beta) > 1e-10]
    conflicts = sum(int(np.isin(nodes.descendants[i], S).sum()) for i in S)
    w = np.zeros(nodes.n_nodes)
    w[cols] = beta
    resid = yc - nodes.M @ w
    q_own = 0.5 * float(resid @ resid) + 0.5 * float(w @ w) / est.gamma_
    z = np.zeros(nodes.n_nodes)
    z[S] = 1.0
    q_refit = TreePruningCIP(nodes.M, yc, est.gamma_).value(z)
    return {"rules": int(S.size), "conflicts": conflicts, "q_own": q_own, "q_refit": q_refit}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer-python", default=None,
                   help="the interpreter with okridge installed (none: rulemip only)")
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--regs", nargs="+", default=["None", "10", "1000"])
    p.add_argument("--run-peer", nargs=4, metavar=("NPZ", "REG", "K", "SECONDS"),
                   help=argparse.SUPPRESS)  # the subprocess side
    args = p.parse_args(argv)
    if args.run_peer:
        npz, reg, k, seconds = args.run_peer
        _peer_okridge(npz, float(reg), int(k), float(seconds))
        return
    print(f"friedman1 n = 1000, 100 trees / depth 3, K = 20, time limit {args.time_limit:g} s; "
          f"load average at start {os.getloadavg()[0]:.2f}\n")
    print("| reg (λ) | solver | q | lower bound (q units) | gap | CPU (s) | wall (s) | "
          "rules | node/descendant conflicts | q refit on its support | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for reg in args.regs:
        reg_v = None if reg == "None" else float(reg)
        w0 = time.perf_counter()
        est, yc, _, cpu = _estimator(reg_v, args.time_limit)
        res = est.result_
        lam = est.reg_
        print(f"| {reg} ({lam:g}) | rulemip {res.engine} | {est.objective_:.4f} | "
              f"{res.lower_bound:.4f} | {res.gap:.2%} | {cpu:.1f} | "
              f"{time.perf_counter() - w0:.1f} | {est.selected_.size} | 0 | "
              f"{est.objective_:.4f} | {os.getloadavg()[0]:.2f} |", flush=True)
        if args.peer_python is None:
            continue
        nodes = est.nodes_
        cols = np.flatnonzero(np.diff(nodes.M.tocsc().indptr) > 0)
        with tempfile.TemporaryDirectory() as tmp:
            npz = str(Path(tmp) / "nodes.npz")
            np.savez(npz, X=nodes.M.tocsc()[:, cols].toarray(), y=yc)
            out = subprocess.run([args.peer_python, __file__, "--run-peer", npz, str(lam), "20",
                                  str(args.time_limit)], capture_output=True, text=True,
                                 check=False)
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not line:
            print(f"| {reg} ({lam:g}) | OKRidge 0.1.1 | failed: "
                  f"{out.stderr.strip().splitlines()[-1:]} |", flush=True)
            continue
        r = json.loads(line[-1])
        yty = float(yc @ yc)
        q = 0.5 * (r["obj"] + yty)
        lb = 0.5 * (r["lb"] + yty) if r["lb"] > -1e18 else -np.inf  # -maxsize: no bound
        chk = _check(est, yc, cols, np.asarray(r["beta"]))
        print(f"| {reg} ({lam:g}) | OKRidge 0.1.1 (k = 20) | {q:.4f} (own weights "
              f"{chk['q_own']:.4f}) | {lb:.4f} | {(q - lb) / abs(q):.2%} | {r['cpu']:.1f} | "
              f"{r['wall']:.1f} | {chk['rules']} | {chk['conflicts']} | {chk['q_refit']:.4f} | "
              f"{os.getloadavg()[0]:.2f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
