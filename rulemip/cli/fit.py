"""``rulemip fit``: learn a certified-optimal k-rule ensemble (the main job).

Without ``--data`` it runs on the dataset bundled with the package (100 patients of
scikit-learn's diabetes data, three features), so ``rulemip fit`` alone shows a certified
small rule set, its gap and the boosting risk it improves on.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from typing import Any

from rulemip.cli._common import (
    add_categorical_argument,
    add_data_arguments,
    add_engine_arguments,
    add_max_thresholds_argument,
    check_output_path,
    parse_max_thresholds,
    read_table,
)
from rulemip.cli._progress import Progress, progress_wanted

DEFAULT_MAX_THRESHOLDS = 2


def register(sub: Any) -> None:
    p = sub.add_parser(
        "fit", help="learn a certified-optimal rule ensemble (main job)",
        description="Learn the additive ensemble of at most K rules with the least "
                    "regularized training risk over candidate thresholds, and certify it "
                    "(incumbent, valid lower bound, gap). Without --data, runs on the "
                    "bundled diabetes_small dataset.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_data_arguments(p, required=False)
    add_categorical_argument(p)
    p.add_argument("--n-rules", "-k", type=int, default=3, metavar="K",
                   help="maximum number of rules (k), intercept not counted")
    p.add_argument("--loss", choices=["squared", "logistic", "poisson"], default="squared",
                   help="loss; logistic needs a two-class target, poisson y >= 0")
    p.add_argument("--reg", type=float, default=1.0,
                   help="ridge lambda in R = (1/n)(sum loss + lambda*||beta||^2)")
    add_max_thresholds_argument(p, DEFAULT_MAX_THRESHOLDS)
    p.add_argument("--max-rule-length", type=int, default=None,
                   help="maximum number of features one rule may restrict")
    p.add_argument("--no-intercept", action="store_true",
                   help="no background rule; an all-covering rule may be one of the K")
    add_engine_arguments(p)
    p.add_argument("--solver", default="auto",
                   help="backend: auto, highs, scip, cpsat, cbc, pyomo")
    p.add_argument("--time-limit", type=float, default=120.0,
                   help="seconds; on the limit the incumbent and a valid bound are reported")
    p.add_argument("--work-limit", type=int, default=None, metavar="UNITS",
                   help="deterministic limit: units of work (search nodes, evaluations, "
                        "iterations); the same data, options and --seed give the same model "
                        "on any machine (keep --time-limit generous)")
    p.add_argument("--mip-gap", type=float, default=1e-6, help="relative optimality gap")
    p.add_argument("--preset", default="COB",
                   help="boosting preset used as first incumbent (SGS, SGB, SXB, CGB, COB) "
                        "or 'none'")
    p.add_argument("--certificate", metavar="OUT.json", default=None,
                   help="write the certificate (re-check with `rulemip verify`)")
    p.add_argument("--seed", type=int, default=0, help="solver random seed")
    p.add_argument("--n-jobs", type=int, default=-1, metavar="N",
                   help="threads of the compiled searches (-1, the default: one per core; "
                        "1: serial); the result is the same as with 1")
    p.add_argument("--progress", action="store_true",
                   help="show live progress on stderr (phase, elapsed, incumbent, bound, "
                        "gap) even when stderr is not a terminal")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rulemip._kernels import ensure_compiled, groups_for_fit
    from rulemip._solver_names import check_solver_name
    from rulemip._validation import check_seed
    from rulemip.data import load_bundled
    from rulemip.estimators.exact import ExactRuleEnsembleClassifier, ExactRuleEnsembleRegressor
    from rulemip.exceptions import InvalidParameterError, SolveLimitWarning
    from rulemip.rules.language import Language

    if (args.data is None) != (args.target is None):
        raise InvalidParameterError("give both --data and --target, or neither (bundled data).")
    max_thresholds = parse_max_thresholds(args.max_thresholds)
    check_solver_name(args.solver, "--solver")
    check_seed(args.seed, "--seed")
    if args.certificate:  # refuse an unusable path before solving, not after
        check_output_path(args.certificate, "--certificate")
    if args.data is None:
        X, y = load_bundled("diabetes_small")
        source = "bundled diabetes_small (100 rows; bmi, bp, s5 -> progression)"
    else:
        X, y = read_table(args.data, args.target, categorical=args.categorical)
        source = f"{args.data} (target {args.target!r}, {len(X)} rows)"
    warm = None if str(args.preset).lower() == "none" else args.preset
    kwargs: dict[str, Any] = dict(
        n_rules=args.n_rules, reg=args.reg, fit_intercept=not args.no_intercept,
        max_thresholds=max_thresholds,
        max_rule_length=args.max_rule_length, engine=args.engine, solver=args.solver,
        time_limit=args.time_limit, mip_gap=args.mip_gap, preset=warm,
        random_state=args.seed, verbose=False, work_limit=args.work_limit,
        n_jobs=args.n_jobs)
    est: Any = (ExactRuleEnsembleClassifier(**kwargs) if args.loss == "logistic"
                else ExactRuleEnsembleRegressor(loss=args.loss, **kwargs))
    print(f"data: {source}")
    print(f"problem: at most {args.n_rules} rules, {args.loss} loss, reg {args.reg:g}, "
          f"max {max_thresholds or 'all'} thresholds per feature")
    progress = Progress(progress_wanted(args.progress, args.quiet))
    if progress.enabled:
        est.set_params(verbose=True)  # its solver lines go to the progress display
    first = (f"warm start (boosting {warm}), then the exact solve" if warm
             else "building and solving the exact model")
    with warnings.catch_warnings(record=True) as caught, progress:
        warnings.simplefilter("always", SolveLimitWarning)
        # compiled before the fit's clock starts (a first run prints what a second does)
        progress.phase("loading compiled kernels (compiling on a first run)")
        kernels = ensure_compiled(*groups_for_fit(
            Language(args.n_rules, max_rule_length=args.max_rule_length), loss=args.loss,
            reg=args.reg))
        if kernels.message:
            progress.phase(kernels.message)
        progress.phase(first)
        with progress.capture(next_phase=f"exact solve ({args.engine} engine)"):
            est.fit(X, y)
        progress.phase("done")
    cert = est.certificate_
    print()
    print(est.rules_.to_text())
    print()
    cut = est.warm_start_limit_
    if not math.isnan(est.boosting_risk_):
        print(f"boosting ({warm}) training risk: {est.boosting_risk_:.6g}"
              + (f" (cut short by its share of the time limit, {cut}: not boosting run "
                 "to its end)" if cut else ""))
    print(f"exact training risk:            {cert.risk:.6g}")
    print(f"valid lower bound:              {cert.lower_bound:.6g}")
    print(f"gap:                            {cert.gap:.4%}")
    local = cert.local_optimality
    if local is not None and local.get("proved"):
        print("local:                          1-swap optimal (no single rule swap lowers "
              "the risk; docs/explanation/local_optimality.md)")
    status = cert.status + ("" if cert.bound_valid else " (bound not proved valid)")
    backend = f"{cert.backend} {cert.backend_version}".strip()
    method = getattr(est.result_, "method", "")
    print(f"status: {status}; engine {cert.engine}"
          + (f" ({method})" if method else "")
          + (f", backend {backend}" if backend else "") + f", {cert.wall_time:.2f} s"
          + (f" (+ {kernels.seconds:.1f} s compiling kernels before it, first run only)"
             if kernels.compiled else ""))
    if not math.isnan(est.boosting_risk_):
        lo, hi = est.boosting_risk_ - cert.risk, est.boosting_risk_ - cert.lower_bound
        print(f"boosting's certified excess risk: in [{lo:.6g}, {hi:.6g}]"
              + (" (of the cut-short warm start above)" if cut else ""))
    for w in caught:
        print(f"warning: {' '.join(str(w.message).split())}", file=sys.stderr)
    if args.certificate:
        path = cert.save(args.certificate)
        data = ("--bundled" if args.data is None else
                f"--data {args.data} --target {args.target}")
        print(f"certificate written to {path} (re-check: rulemip verify {path} {data})")
    return 0
