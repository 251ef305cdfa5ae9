"""Exact rule pruning (Alg. 1 of [PRUNE], ``prune_exact``) in the shape of its Table 1.

Rerun (the committed numbers in docs/benchmarks/pruning.md came from these):

    python benchmarks/pruning.py table --time-limit 90 > table.md
    python benchmarks/pruning.py gamma --time-limit 45 > gamma.md
    python benchmarks/pruning.py ablation --time-limit 45 --gamma-n 0.3 > ablation.md
    python benchmarks/pruning.py heldout > heldout.md
    python benchmarks/pruning.py targets --time-limit 60 > targets.md   # issue 39
    python benchmarks/pruning.py table --time-limit 90 --gamma-n 1 --engine perspective
    python benchmarks/pruning.py heuristics --time-limit 60 --gamma-n 10     # issue 39, item 3

Instances: ``make_friedman1(n, n_features=10, noise=1.0, random_state=0)``; y standardized
(centered, unit variance); a GradientBoostingRegressor (learning rate 0.1, random_state 0)
with T trees of depth d fitted to it — [PRUNE] uses boosting ensembles; it does not name
the data of its Table 1; μ_i = mean standardized response in node i; K = 20 rules
(attribute ``rule``); γ = gamma_n / n; relative tolerance 1e-4.  Every node of the
ensemble is a binary (roots included).  Timings are wall-clock on a shared, loaded
2-core machine (other jobs running): noisy, compare orders of magnitude only.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

# the rulemip of this checkout, not an installed one (rulemip is imported inside functions)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PAPER = {(100, 3, 1000): "1.69 s", (100, 5, 1000): "7.64 s", (500, 4, 1000): "14.2 s",
         (100, 3, 3000): "8.8 s", (100, 5, 3000): "18.3 s", (500, 4, 3000): "38.1 s"}


@cache
def instance(n: int, trees: int, depth: int, seed: int = 0) -> tuple[Any, np.ndarray, float]:
    """(nodes, standardized y, seconds to fit the ensemble and extract the nodes)."""
    from sklearn.datasets import make_friedman1
    from sklearn.ensemble import GradientBoostingRegressor

    from rulemip.formulations.node_matrix import extract_nodes

    t = time.perf_counter()
    X, y = make_friedman1(n_samples=n, n_features=10, noise=1.0, random_state=seed)
    ys = (y - y.mean()) / y.std()
    est = GradientBoostingRegressor(n_estimators=trees, max_depth=depth, learning_rate=0.1,
                                    random_state=seed).fit(X, ys)
    nodes = extract_nodes(est, X, ys)
    return nodes, ys, time.perf_counter() - t


def run(n: int, trees: int, depth: int, gamma_n: float, time_limit: float, K: int = 20,
        **kw: Any) -> dict[str, Any]:
    from rulemip.algorithms.convex.outer_approximation import OAOptions
    from rulemip.algorithms.pruning.exact import prune_exact
    from rulemip.budget import Budget

    nodes, y, t_fit = instance(n, trees, depth)
    extra = kw.pop("master_extra", {})
    t = time.perf_counter()
    work = kw.pop("work_limit", None)
    budget = Budget.from_time_limit(None if work is not None else time_limit, work_limit=work)
    res, cip = prune_exact(nodes, y, K, gamma=gamma_n / n, budget=budget,
                         options=OAOptions(rel_tol=1e-4, master_extra=extra), **kw)
    wall = time.perf_counter() - t
    first = res.history[0]["lb"] if res.history else res.lower_bound
    S, w = cip.weights(res.z if res.z is not None else np.zeros(nodes.n_nodes))
    fit = nodes.M[:, S] @ w if S.size else np.zeros_like(y)
    r2 = 1.0 - float(np.sum((y - fit) ** 2) / np.sum(y ** 2))
    return {"status": res.termination.value, "time": wall, "iters": res.iterations,
            "cuts": res.n_cuts, "ub": res.value, "lb": res.lower_bound, "gap": res.gap,
            "lb_first": first, "m": nodes.n_nodes, "fit": t_fit, "q0": 0.5 * float(y @ y), "r2": r2,
            "notes": "; ".join(res.notes)}


def _fmt_gap(g: float) -> str:
    return f"{g:.1e}" if g > 0 else "0"


def run_engine(n: int, trees: int, depth: int, gamma_n: float, time_limit: float,
               engine: str, work_limit: int | None = None) -> dict[str, Any]:
    """One instance through the pruning driver with a registered ``engine``."""
    import os

    from rulemip.algorithms.pruning.driver import solve_pruning
    from rulemip.budget import Budget

    nodes, y, _ = instance(n, trees, depth)
    c0, w0 = time.process_time(), time.perf_counter()
    budget = Budget.from_time_limit(None if work_limit is not None else time_limit,
                                    work_limit=work_limit)
    fit = solve_pruning(nodes, y, engine=engine, max_cost=20, gamma=gamma_n / n, budget=budget)
    r = fit.result
    return {"status": r.termination.value, "cpu": time.process_time() - c0,
            "time": time.perf_counter() - w0, "ub": fit.objective, "lb": r.lower_bound,
            "gap": r.gap, "m": nodes.n_nodes, "nodes": getattr(r.detail, "nodes", ""),
            "load": os.getloadavg()[0]}


def table(args: argparse.Namespace) -> None:
    limit = (f"work limit {args.work_limit}" if args.work_limit is not None
             else f"time limit {args.time_limit:g} s")
    cases = [(1000, 100, 3), (1000, 100, 5), (1000, 500, 4),
             (3000, 100, 3), (3000, 100, 5), (3000, 500, 4)]
    if args.quick:
        cases = cases[:2]
    if args.engine != "exact":
        print(f"engine {args.engine!r}, γ = {args.gamma_n:g}/n, K = 20 rules, {limit}\n")
        print("| trees / depth | n / binaries | status | CPU (s) | wall (s) | B&B nodes | "
              "upper bound | lower bound | gap | load | paper (exact) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for n, T, d in cases:
            r = run_engine(n, T, d, args.gamma_n, args.time_limit, args.engine,
                           args.work_limit)
            print(f"| {T} / {d} | {n} / {r['m']} | {r['status']} | {r['cpu']:.1f} | "
                  f"{r['time']:.1f} | {r['nodes']} | {r['ub']:.4f} | {r['lb']:.4f} | "
                  f"{_fmt_gap(r['gap'])} | {r['load']:.1f} | {PAPER[(T, d, n)]} |", flush=True)
        return
    print(f"γ = {args.gamma_n:g}/n, K = 20 rules, {limit}, rel_tol 1e-4\n")
    print("| trees / depth | n / binaries | status | time (s) | integer masters | cuts | "
          "q(0) | upper bound | lower bound | gap | paper (exact) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n, T, d in cases:
        r = run(n, T, d, args.gamma_n, args.time_limit, work_limit=args.work_limit)
        print(f"| {T} / {d} | {n} / {r['m']} | {r['status']} | {r['time']:.1f} | "
              f"{r['iters']} | {r['cuts']} | {r['q0']:.1f} | {r['ub']:.4f} | {r['lb']:.4f} | "
              f"{_fmt_gap(r['gap'])} | {PAPER[(T, d, n)]} |", flush=True)


def gamma_sweep(args: argparse.Namespace) -> None:
    n, T, d = 1000, 100, 3
    print(f"{T} trees / depth {d}, n = {n}, K = 20, time limit {args.time_limit:g} s\n")
    print("| γ·n | γ | status | time (s) | integer masters | q(0) | upper bound | lower bound "
          "| gap | train R² of the K-rule refit | notes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for gn in args.gammas:
        r = run(n, T, d, gn, args.time_limit)
        print(f"| {gn:g} | {gn / n:.3g} | {r['status']} | {r['time']:.1f} | {r['iters']} | "
              f"{r['q0']:.1f} | {r['ub']:.4f} | {r['lb']:.4f} | {_fmt_gap(r['gap'])} | "
              f"{r['r2']:.3f} | {r['notes']} |", flush=True)


ABLATION: list[tuple[str, dict[str, Any]]] = [
    ("plain Alg. 1: pairwise rows, cuts at 0 and an exact-gain greedy, HiGHS defaults",
     {"clique": False, "relax_iterations": 0, "n_single": 0, "n_neighbours": 0,
      "local_search": False,
      "master_extra": {"presolve": "on", "mip_heuristic_run_feasibility_jump": True}}),
    ("+ master presolve and feasibility jump off",
     {"clique": False, "relax_iterations": 0, "n_single": 0, "n_neighbours": 0,
      "local_search": False}),
    ("+ clique (root-to-leaf) rows",
     {"relax_iterations": 0, "n_single": 0, "n_neighbours": 0, "local_search": False}),
    ("+ singleton and swap-neighbour first cuts (neighbours of the greedy)",
     {"relax_iterations": 0, "local_search": False}),
    ("+ LP-relaxation phase (100 LP masters, cuts kept)", {"local_search": False}),
    ("+ local search from the greedy and after every master (= default)", {}),
]


def ablation(args: argparse.Namespace) -> None:
    n, T, d = 1000, 100, 3
    print(f"{T} trees / depth {d}, n = {n}, K = 20, γ = {args.gamma_n:g}/n, time limit "
          f"{args.time_limit:g} s\n")
    print("| configuration | status | time (s) | integer masters | cuts | upper bound | "
          "bound after 1st master | final lower bound | gap |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, kw in ABLATION:
        r = run(n, T, d, args.gamma_n, args.time_limit, **kw)
        print(f"| {name} | {r['status']} | {r['time']:.1f} | {r['iters']} | {r['cuts']} | "
              f"{r['ub']:.4f} | {r['lb_first']:.4f} | {r['lb']:.4f} | {_fmt_gap(r['gap'])} |",
              flush=True)


def heldout(args: argparse.Namespace) -> None:
    """Train/held-out R² of the K = 20 rule refit vs γ (heuristic selection, no bound)."""
    from sklearn.datasets import make_friedman1

    from rulemip.algorithms.pruning.exact import local_search_prune
    from rulemip.formulations.tree_pruning import TreePruningCIP

    n, T, d = 1000, 100, 3
    nodes, ys, _ = instance(n, T, d)
    _, y = make_friedman1(n_samples=n, n_features=10, noise=1.0, random_state=0)
    Xt, yt = make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=1)
    yts = (yt - y.mean()) / y.std()
    print(f"{T} trees / depth {d}, n = {n}; 20 rules by exact-gain greedy + local search; "
          "held-out: 5000 fresh friedman1 samples\n")
    print("| γ·n | train R² | held-out R² |")
    print("|---|---|---|")
    for gn in args.gammas:
        z, _ = local_search_prune(nodes, ys, 20, gamma=gn / n)
        S, w = TreePruningCIP(nodes.M, ys, gn / n).weights(z)
        fit = nodes.M[:, S] @ w if S.size else np.zeros_like(ys)
        pred = np.zeros(len(yts))
        for i, wi in zip(S, w, strict=True):
            inside = np.all((nodes.lower[i] < Xt) & (nodes.upper[i] >= Xt), axis=1)
            pred += nodes.mu[i] * wi * inside
        r2_tr = 1.0 - float(np.sum((ys - fit) ** 2) / np.sum(ys ** 2))
        r2_te = 1.0 - float(np.mean((yts - pred) ** 2) / np.var(yts))
        print(f"| {gn:g} | {r2_tr:.3f} | {r2_te:.3f} |", flush=True)


def targets(args: argparse.Namespace) -> None:
    """Issue 39's workloads: ``TreeRuleExtractor(estimator=gb, prefit=True, n_rules=20,
    attribute="rule", time_limit=...)`` on friedman1 n = 1000 (100 trees of depth 3) at
    ``reg`` None (λ = n/10) and 10, one engine per row; CPU seconds of this process and the
    load average printed. With ``--work-limit`` the engines run through the pruning driver on
    the same nodes under that deterministic limit instead (reproducible on any machine)."""
    import os
    import warnings

    from sklearn.datasets import make_friedman1
    from sklearn.ensemble import GradientBoostingRegressor

    from rulemip.algorithms.pruning.driver import solve_pruning
    from rulemip.budget import Budget
    from rulemip.estimators import TreeRuleExtractor

    n = 1000
    X, y = make_friedman1(n_samples=n, n_features=10, noise=1.0, random_state=0)
    ys = (y - y.mean()) / y.std()
    gb = GradientBoostingRegressor(n_estimators=100, max_depth=3, learning_rate=0.1,
                                   random_state=0).fit(X, ys)
    limit = (f"work limit {args.work_limit} (driver)" if args.work_limit is not None
             else f"time_limit={args.time_limit:g}")
    print(f"friedman1 n = {n}, 100 trees / depth 3, K = 20 rules, {limit}; "
          f"load average at start {os.getloadavg()[0]:.2f}\n")
    print("| reg (λ) | engine | status | CPU (s) | wall (s) | q | lower bound | gap | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for reg in args.regs:
        reg_v = None if reg == "None" else float(reg)
        for engine in args.engines:
            c0, w0 = time.process_time(), time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if args.work_limit is None:
                    est = TreeRuleExtractor(estimator=gb, prefit=True, n_rules=20,
                                            attribute="rule", time_limit=args.time_limit,
                                            reg=reg_v, engine=engine).fit(X, ys)
                    res, q = est.result_, est.objective_
                else:
                    nodes, yc, _ = instance(n, 100, 3)
                    gamma = 10.0 / n if reg_v is None else 1.0 / reg_v
                    fit = solve_pruning(nodes, yc, engine=engine, max_cost=20, gamma=gamma,
                                        budget=Budget.from_time_limit(
                                            None, work_limit=args.work_limit))
                    res, q = fit.result, fit.objective
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            print(f"| {reg} ({100.0 if reg_v is None else reg_v:g}) | {engine} | "
                  f"{res.termination.value} | {cpu:.1f} | {wall:.1f} | {q:.4f} | "
                  f"{res.lower_bound:.4f} | {res.gap:.2%} | {os.getloadavg()[0]:.2f} |",
                  flush=True)


def heuristics(args: argparse.Namespace) -> None:
    """Issue 39, item 3: the heuristics against the perspective search on the Table 1
    shapes at γ = GAMMA_N/n — greedy with add/swap local search (the search's warm start),
    the CBCD regularization path (engine ``path``, the model of largest cost ≤ K),
    relax-and-round (engine ``relax_round``) and the perspective branch and bound
    (``--time-limit`` or ``--work-limit``), each through the pruning driver. Each
    heuristic's q is compared with the least q found by any (``excess``) and with the
    perspective search's proved lower bound LB (``(q − LB)/q``: a certified bound on its
    distance from the optimum; the optimum itself when the search proved it)."""
    import os

    from rulemip.algorithms.pruning.exact import local_search_prune

    cases = [(1000, 100, 3), (1000, 100, 5), (1000, 500, 4),
             (3000, 100, 3), (3000, 100, 5), (3000, 500, 4)]
    if args.quick:
        cases = cases[:2]
    limit = (f"work limit {args.work_limit}" if args.work_limit is not None
             else f"time limit {args.time_limit:g} s")
    print(f"γ = {args.gamma_n:g}/n, K = 20 rules, perspective search: {limit}; "
          f"load average at start {os.getloadavg()[0]:.2f}\n")
    print("| trees / depth | n | method | CPU (s) | q | excess over best q | "
          "(q − LB)/q | load |")
    print("|---|---|---|---|---|---|---|---|")
    for n, T, d in cases:
        nodes, y, _ = instance(n, T, d)
        rows: list[tuple[str, float, float]] = []
        c0 = time.process_time()
        _, q_ls = local_search_prune(nodes, y, 20, attribute="rule", gamma=args.gamma_n / n)
        rows.append(("greedy + local search", time.process_time() - c0, q_ls))
        for engine, name in (("path", "CBCD path (`path`)"),
                             ("relax_round", "relax-and-round (`relax_round`)")):
            r = run_engine(n, T, d, args.gamma_n, args.time_limit, engine)
            rows.append((name, r["cpu"], r["ub"]))
        r = run_engine(n, T, d, args.gamma_n, args.time_limit, "perspective",
                       args.work_limit)
        lb = r["lb"]
        status = "proved" if r["status"] == "optimal" else f"gap {_fmt_gap(r['gap'])}"
        rows.append((f"perspective ({status})", r["cpu"], r["ub"]))
        best = min(q for _, _, q in rows)
        for name, cpu, q in rows:
            print(f"| {T} / {d} | {n} | {name} | {cpu:.1f} | {q:.4f} | "
                  f"{(q - best) / best:.2e} | {(q - lb) / q:.2e} | "
                  f"{os.getloadavg()[0]:.1f} |", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["table", "gamma", "ablation", "heldout", "targets",
                                    "heuristics"])
    p.add_argument("--time-limit", type=float, default=120.0, help="seconds per instance")
    p.add_argument("--gamma-n", type=float, default=1.0, help="γ = GAMMA_N / n")
    p.add_argument("--gammas", type=float, nargs="+", default=[0.1, 0.3, 1.0, 3.0, 1000.0],
                   help="γ·n values of the γ sweep (γ·n = n is γ = 1)")
    p.add_argument("--quick", action="store_true", help="table: the two smallest instances")
    p.add_argument("--work-limit", type=int, default=None,
                   help="a deterministic work limit instead of the time limit (reproducible: "
                        "compare code changes with it)")
    p.add_argument("--regs", nargs="+", default=["None", "10"],
                   help="targets: the estimator's reg values (None: λ = n/10)")
    p.add_argument("--engine", default="exact",
                   help="table: a registered pruning engine other than 'exact' runs through "
                        "the pruning driver (e.g. perspective)")
    p.add_argument("--engines", nargs="+", default=["perspective", "exact"],
                   help="targets: the pruning engines, one row each")
    args = p.parse_args(argv)
    {"table": table, "gamma": gamma_sweep, "ablation": ablation,
     "heldout": heldout, "targets": targets, "heuristics": heuristics}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
