"""``rulemip prune``: extract a compact rule set from a tree ensemble ([PRUNE],
docs/explanation/tree_pruning.md).

Fits a gradient-boosting (default) or random-forest ensemble on a CSV file, selects nodes
as rules with :class:`~rulemip.estimators.tree_rules.TreeRuleExtractor` and prints the
rules, the training risk (mean squared error), the bound and gap of the exact method and
the timings.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from typing import Any

from rulemip.cli._common import (
    add_categorical_argument,
    add_data_arguments,
    check_output_path,
    read_table,
    write_json_atomic,
)
from rulemip.cli._progress import Progress, progress_wanted


def register(sub: Any) -> None:
    p = sub.add_parser(
        "prune", help="extract a compact rule set from a tree ensemble (rule/depth pruning)",
        description="Fit a gradient-boosting (or, with --forest, random-forest) ensemble, "
                    "treat every node as a candidate rule and select rules whose total "
                    "cost (rules, depths or features) is at most K, minimizing the "
                    "ridge-regularized squared error (Problem (1) of Liu, Mazumder & "
                    "Radchenko). Prints the rules, the training risk, the valid lower "
                    "bound and gap of the exact method, and timings.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_data_arguments(p)
    add_categorical_argument(p)
    p.add_argument("--n-rules", "-k", type=int, default=10, metavar="K",
                   help="budget K of sum_i a_i z_i <= K (rules, total depth or total "
                        "features, per --attribute)")
    p.add_argument("--attribute", choices=["rule", "depth", "feature"], default="rule",
                   help="node cost a_i: 1 per rule, the rule's depth, or the number of "
                        "distinct features in the rule")
    p.add_argument("--engine", default="exact", metavar="ENGINE",
                   help="a registered pruning engine (checked by TreeRuleExtractor). "
                        "Built in: exact: outer approximation with a certified gap; path: "
                        "regularization path by block coordinate descent, keeping the "
                        "model of largest cost <= K; relax_round: convex relaxation rounded "
                        "by a knapsack-with-conflicts dynamic program (heuristic); mip: the "
                        "MIQP of [PRUNE] (1) solved natively (SCIP)")
    p.add_argument("--trees", type=int, default=100, metavar="N",
                   help="number of trees of the ensemble (as TreeRuleExtractor's default "
                        "ensemble)")
    p.add_argument("--depth", type=int, default=3, metavar="D", help="maximum tree depth")
    p.add_argument("--forest", action="store_true",
                   help="random forest instead of gradient boosting")
    p.add_argument("--node-values", choices=["mean", "fitted"], default="mean",
                   help="node value mu_i: mean training response in the node, or the "
                        "tree's fitted value times its multiplier")
    p.add_argument("--reg", type=float, default=None, metavar="L",
                   help="ridge lambda > 0 on the standardized response, as in the other "
                        "commands (default n/10; larger certifies faster, smaller predicts "
                        "better)")
    p.add_argument("--n-lambdas", type=int, default=50,
                   help="number of lambda values of the path (--engine path)")
    p.add_argument("--solver", default="auto",
                   help="backend of the (I)LP subproblems (default auto: the first installed "
                        "backend that serves them)")
    p.add_argument("--mip-gap", type=float, default=1e-4, metavar="G",
                   help="relative gap at which --engine exact certifies its selection "
                        "optimal (default 1e-4)")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                   help="seconds for the selection; on the limit the incumbent (and for "
                        "exact a valid lower bound) is reported")
    p.add_argument("--seed", type=int, default=0, help="random seed of the ensemble")
    p.add_argument("--json", metavar="OUT", default=None,
                   help="write the rules, risks, bound/gap and timings as JSON")
    p.add_argument("--progress", action="store_true",
                   help="show live progress (phase, elapsed) on stderr even when it is not "
                        "a terminal")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=run)


def _is_numeric(col: Any) -> bool:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return bool(is_numeric_dtype(col) or is_bool_dtype(col))


def _num(v: float) -> Any:
    return float(v) if math.isfinite(v) else str(v)


def run(args: argparse.Namespace) -> int:
    import numpy as np
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    from rulemip._solver_names import check_solver_name
    from rulemip._validation import check_positive_int, check_seed
    from rulemip.estimators._inputs import predict_matrix
    from rulemip.estimators.tree_rules import TreeRuleExtractor
    from rulemip.exceptions import SolveLimitWarning

    check_solver_name(args.solver, "--solver")
    check_seed(args.seed, "--seed")
    trees = check_positive_int(args.trees, "--trees")
    depth = check_positive_int(args.depth, "--depth")
    if args.json:
        check_output_path(args.json, "--json")
    X, y = read_table(args.data, args.target, categorical=args.categorical)
    if not _is_numeric(y):
        from rulemip.exceptions import InvalidDataError

        raise InvalidDataError(
            f"--target: column {args.target!r} must be numeric (prune fits a regression "
            f"ensemble); got values such as {y.iloc[0]!r}.")
    ensemble: Any = (RandomForestRegressor(n_estimators=trees, max_depth=depth,
                                           random_state=args.seed) if args.forest else
                     GradientBoostingRegressor(n_estimators=trees, max_depth=depth,
                                               random_state=args.seed))
    kind = "random forest" if args.forest else "gradient boosting"
    print(f"data: {args.data} (target {args.target!r}, {len(X)} rows, {X.shape[1]} features)")
    extractor = TreeRuleExtractor(
        ensemble, n_rules=args.n_rules, attribute=args.attribute, engine=args.engine,
        reg=args.reg, solver=args.solver, time_limit=args.time_limit,
        mip_gap=args.mip_gap, node_values=args.node_values, n_lambdas=args.n_lambdas,
        random_state=args.seed)
    extractor._validate_params_()  # parameter errors before the ensemble is fitted
    t0 = time.perf_counter()
    progress = Progress(progress_wanted(args.progress, args.quiet))
    with warnings.catch_warnings(record=True) as caught, progress:
        warnings.simplefilter("always", SolveLimitWarning)
        progress.phase(f"fitting {trees} trees, then selecting rules ({args.engine}, limit "
                       f"{args.time_limit:g} s)")
        extractor.fit(X, y)
        progress.phase("done")
    total = time.perf_counter() - t0
    res = extractor.result_
    nodes = extractor.nodes_
    yv = np.asarray(y, dtype=float)
    ens_pred = extractor.estimator_.predict(predict_matrix(extractor, X))
    ens_risk = float(np.mean((yv - ens_pred) ** 2))
    sel = extractor.selected_
    print(f"ensemble: {kind}, {trees} trees of depth <= {depth}, {nodes.n_nodes} nodes")
    print(f"problem: {args.attribute} budget K = {args.n_rules}, reg = "
          f"{extractor.reg_:.4g} (gamma = {extractor.gamma_:.4g}), engine {args.engine}")
    print()
    print(extractor.rules_.to_text())
    print()
    cost = float(nodes.attribute(args.attribute)[sel].sum())
    depths = nodes.depth[sel]
    mean_depth = float(depths.mean()) if len(sel) else 0.0
    print(f"rules: {len(sel)}, cost {cost:g} <= {args.n_rules}, mean depth {mean_depth:.3g}")
    print(f"training risk (MSE):   {extractor.train_risk_:.6g}")
    print(f"ensemble risk (MSE):   {ens_risk:.6g}")
    print(f"objective q(z):        {extractor.objective_:.6g} (standardized response)")
    info: dict[str, Any] = {}
    if args.engine == "exact":
        info = {"status": str(res.termination), "objective": _num(res.value),
                "lower_bound": _num(res.lower_bound), "gap": _num(res.gap),
                "iterations": int(res.detail.iterations), "solve_time": float(res.wall_time)}
        print(f"valid lower bound:     {res.lower_bound:.6g}")
        print(f"gap:                   {res.gap:.4%}")
        print(f"status: {res.termination}, {res.detail.iterations} OA iterations, "
              f"{res.wall_time:.2f} s selection")
    elif args.engine == "path":
        path = res.detail
        info = {"path_index": int(extractor.path_index_), "n_models": len(path.models),
                "lambda": _num(float(path.models[extractor.path_index_].lam))
                if extractor.path_index_ >= 0 else None,
                "solve_time": float(res.wall_time)}
        lam = info["lambda"]
        print(f"path: {len(path.models)} models; chosen #{extractor.path_index_} "
              f"(lambda {lam}); {res.wall_time:.2f} s selection (heuristic, no bound)")
    else:
        info = {"relaxation_lower_bound": _num(float(res.detail.relaxation_lower_bound)),
                "status": str(res.termination), "lower_bound": _num(res.lower_bound),
                "gap": _num(res.gap), "solve_time": float(res.wall_time)}
        print(f"relaxation lower bound: {float(res.detail.relaxation_lower_bound):.6g} "
              f"(on q; rounded selection is a heuristic); {res.wall_time:.2f} s selection")
    print(f"total time (ensemble fit + selection): {total:.2f} s")
    for w in caught:
        print(f"warning: {' '.join(str(w.message).split())}", file=sys.stderr)
    if args.json:
        write_json_atomic(args.json, {
            "ensemble": extractor.rules_.to_dict(),
            "n_rules": len(sel), "cost": cost, "mean_depth": mean_depth,
            "train_risk": extractor.train_risk_, "ensemble_risk": ens_risk,
            "objective": extractor.objective_, "reg": extractor.reg_,
            "gamma": extractor.gamma_,
            "engine": args.engine, "attribute": args.attribute,
            "budget": args.n_rules,
            "total_time": total, **info,
            "options": {"trees": trees, "depth": depth, "forest": bool(args.forest),
                        "node_values": args.node_values, "time_limit": args.time_limit,
                        "solver": args.solver, "mip_gap": args.mip_gap,
                        "seed": args.seed}})
        print(f"written to {args.json}")
    return 0
