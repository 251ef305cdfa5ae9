"""Regularization paths by CBCD and relax-and-round for tree pruning ([PRUNE],
docs/explanation/tree_pruning.md).

(a) Time a λ path (default 50 values) of CBCD on a gradient-boosting ensemble of 500
    depth-4 trees fitted to friedman1 (n = 5000, noise 1); [PRUNE] reports 45 s on its
    hardware.
(b) Hold-out comparison at 10–25 rules: the CBCD path model with the most rules ≤ K versus
    relax-and-round with budget K (both refit by ridge on their support), out-of-sample R².

Run::

    python benchmarks/pruning_paths.py            # 500 trees, n = 5000
    python benchmarks/pruning_paths.py --small    # 100 trees, n = 1000 (about a minute)

Options: ``--trees``, ``--n``, ``--lambdas``, ``--rr-time`` (time limit of each
relax-and-round relaxation), ``--relaxation`` (``frank_wolfe`` or ``oa``), ``--skip-path``
(skip part (a)), ``--seed``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.model_selection import train_test_split

from rulemip.algorithms.pruning.cbcd import node_reach, regularization_path
from rulemip.algorithms.pruning.relax_and_round import relax_and_round
from rulemip.budget import Budget
from rulemip.formulations.node_matrix import extract_nodes
from rulemip.solvers.result import relative_gap


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    return float(1.0 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))


def _predict(nodes, X, support, weights, intercept):
    if support.size == 0:
        return np.full(X.shape[0], intercept)
    R = node_reach(nodes, X, support)
    return intercept + (R @ (nodes.mu[support] * weights))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", action="store_true", help="100 trees, n = 1000")
    ap.add_argument("--trees", type=int, default=None)
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--lambdas", type=int, default=50)
    ap.add_argument("--rr-time", type=float, default=None,
                    help="time limit (s) of each relax-and-round relaxation")
    ap.add_argument("--relaxation", choices=["frank_wolfe", "oa"], default="frank_wolfe")
    ap.add_argument("--skip-path", action="store_true", help="skip part (a)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    T = args.trees or (100 if args.small else 500)
    n = args.n or (1000 if args.small else 5000)
    rr_time = args.rr_time if args.rr_time is not None else (20.0 if args.small else 60.0)

    # ---------------------------------------------------------------- (a) path timing
    X, y = make_friedman1(n_samples=n, noise=1.0, random_state=args.seed)
    if not args.skip_path:
        _part_a(X, y, T, args.depth, args.lambdas, args.seed)
    _part_b(X, y, T, args, rr_time)


def _part_a(X: np.ndarray, y: np.ndarray, T: int, depth: int, n_lambdas: int,
            seed: int) -> None:
    n = X.shape[0]
    gb = GradientBoostingRegressor(n_estimators=T, max_depth=depth, random_state=seed)
    gb.fit(X, y)
    nodes = extract_nodes(gb, X, y)
    yc = y - y.mean()
    t0 = time.perf_counter()
    path = regularization_path(nodes, yc, n_lambdas=n_lambdas)
    t_path = time.perf_counter() - t0
    tot = {k: sum(h[k] for h in path.history)
           for k in ("sweeps", "block_updates", "block_solves", "accepted")}
    print(f"(a) {T} trees of depth {depth}, n = {n}, m = {nodes.n_nodes} binaries, "
          f"{len(path.lambdas)} λ values (λ_max = {path.lambda_max:.4g}):")
    print(f"    path time {t_path:.2f} s; {len(path.models)} distinct models; "
          f"rules {int(path.models[0].cost)}..{int(path.models[-1].cost)}; {tot}")


def _part_b(X: np.ndarray, y: np.ndarray, T: int, args: argparse.Namespace,
            rr_time: float) -> None:
    # ---------------------------------------------------------------- (b) hold-out R²
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=args.seed)
    gb2 = GradientBoostingRegressor(n_estimators=T, max_depth=args.depth,
                                    random_state=args.seed).fit(Xtr, ytr)
    nodes2 = extract_nodes(gb2, Xtr, ytr)
    mu = float(ytr.mean())
    ytc = ytr - mu
    t0 = time.perf_counter()
    path2 = regularization_path(nodes2, ytc, n_lambdas=args.lambdas,
                                X_valid=Xte, y_valid=yte, intercept=mu)
    t_path2 = time.perf_counter() - t0
    print(f"\n(b) hold-out (70/30), {T} trees, n_train = {len(ytr)}; CBCD path "
          f"{t_path2:.1f} s; full ensemble test R² = {_r2(yte, gb2.predict(Xte)):.3f}")
    print(f"relaxation: {args.relaxation}, time limit {rr_time:g} s")
    print("| K | CBCD rules | CBCD test R² | R&R rules | R&R test R² | R&R q(z) / CBCD q(z) "
          "| relaxation value | relaxation LB | relative gap | R&R time (s) "
          "| relaxation status (iterations) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    var = float(np.mean((yte - yte.mean()) ** 2))
    for K in (10, 15, 20, 25):
        cands = [m for m in path2.models if m.cost <= K]
        best = cands[-1]
        assert best.valid_risk is not None
        r2_cbcd = 1.0 - best.valid_risk / var
        t1 = time.perf_counter()
        rr = relax_and_round(nodes2, ytc, max_cost=K, budget=Budget.from_time_limit(rr_time),
                             relaxation=args.relaxation)
        t_rr = time.perf_counter() - t1
        pred = _predict(nodes2, Xte, rr.support, rr.weights, mu)
        gap = relative_gap(rr.relaxation_value, rr.relaxation_lower_bound)
        print(f"| {K} | {int(best.cost)} | {r2_cbcd:.3f} | {int(rr.cost)} | {_r2(yte, pred):.3f} "
              f"| {rr.value:.1f} / {best.q_value:.1f} | {rr.relaxation_value:.2f} "
              f"| {rr.relaxation_lower_bound:.2f} | {gap:.2%} | {t_rr:.1f} "
              f"| {rr.relaxation_termination} ({rr.relaxation_iterations}) |")


if __name__ == "__main__":
    main()
