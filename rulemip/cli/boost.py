"""``rulemip boost``: fit a rule-boosting model on a CSV file (docs/explanation/boosting.md)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from rulemip.boosting.booster import PRESETS, RuleBooster
from rulemip.boosting.objectives import OBJECTIVES
from rulemip.boosting.search import SEARCHES
from rulemip.boosting.weights import WEIGHT_UPDATES
from rulemip.cli._common import (
    add_categorical_argument,
    add_data_arguments,
    add_max_thresholds_argument,
    check_output_path,
    parse_max_thresholds,
    read_table,
    warnings_as_lines,
    write_json_atomic,
)
from rulemip.data.dataset import Dataset
from rulemip.parallel import resolve_n_jobs, search_workers


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "boost", help="boost an additive rule ensemble (SGS, SGB, SXB, CGB, COB)",
        description="Fit a rule-boosting model and print its rules and the training risk "
                    "R_lambda after every round.")
    add_data_arguments(p)
    add_categorical_argument(p)
    p.add_argument("--n-rules", type=int, default=10, metavar="K",
                   help="number of rules k (boosting rounds; default 10).")
    p.add_argument("--preset", choices=sorted(PRESETS),
                   help="named variant fixing objective, weight update and search "
                        "(explicit --objective/--weight-update/--search must agree).")
    p.add_argument("--objective", choices=OBJECTIVES, help="rule objective (default ogb).")
    p.add_argument("--weight-update", choices=WEIGHT_UPDATES,
                   help="weight update (default corrective).")
    p.add_argument("--search", choices=SEARCHES,
                   help="rule search (default greedy without a preset).")
    p.add_argument("--beam-width", type=int, default=5, help="beam width w (default 5).")
    p.add_argument("--max-rule-length", type=int, default=None,
                   help="maximum number of features one rule may restrict (an interval "
                        "a < x <= b is one; default unlimited), as in `rulemip fit`.")
    p.add_argument("--max-propositions", type=int, default=None,
                   help="maximum number of propositions per rule (an interval counts "
                        "two; realkd's rule length; default unlimited).")
    add_max_thresholds_argument(p, "all")
    p.add_argument("--reg", type=float, default=0.0,
                   help="ridge lambda of R_lambda = mean loss + (lambda/n)||beta||^2.")
    p.add_argument("--epsilon", type=float, default=1e-3, help="epsilon of obj_ogb.")
    p.add_argument("--no-intercept", action="store_true",
                   help="no background rule beta_0 (the empty rule may be chosen).")
    p.add_argument("--loss", choices=("squared", "logistic", "poisson"), default="squared",
                   help="loss (default squared; logistic needs two classes).")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="time for the whole fit, shared by all rules (default unlimited); "
                        "when it runs out the rules found so far are kept.")
    p.add_argument("--node-limit", type=int, default=None, metavar="N",
                   help="node expansions of all rule searches together (default unlimited).")
    p.add_argument("--max-memory", type=float, default=None, metavar="MB",
                   help="memory for the open nodes of one branch-and-bound search, in MB "
                        "(default 512).")
    p.add_argument("--n-jobs", type=int, default=1, metavar="N",
                   help="threads of each branch-and-bound rule search (-1: one per core); "
                        "the rules are the same as with 1.")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines for long rule searches.")
    p.add_argument("--json", metavar="OUT", help="write the ensemble and risk path here.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rulemip.estimators.boosting import _DEFAULTS

    choices: dict[str, Any] = {}
    if args.preset:
        choices = dict(PRESETS[args.preset])
    for c, v in (("objective", args.objective), ("weight_update", args.weight_update),
                 ("search", args.search)):
        if v is not None:
            if args.preset and choices[c] != v:
                from rulemip.exceptions import InvalidParameterError

                raise InvalidParameterError(
                    f"--{c.replace('_', '-')} {v} conflicts with --preset {args.preset}.")
            choices[c] = v
        choices.setdefault(c, _DEFAULTS[c])
    max_thresholds = parse_max_thresholds(args.max_thresholds)
    if args.max_memory is not None and not (0 < args.max_memory < float("inf")):
        from rulemip.exceptions import InvalidParameterError

        raise InvalidParameterError(
            f"`--max-memory` must be a positive number of MB; got {args.max_memory:g}. Omit "
            "it for the default of 512 MB.")
    if args.json:
        check_output_path(args.json, "--json")
    X, y = read_table(args.data, args.target, categorical=args.categorical)
    with warnings_as_lines():
        return _fit_and_print(args, X, y, max_thresholds, choices)


def _fit_and_print(args: argparse.Namespace, X: Any, y: Any, max_thresholds: int | None,
                   choices: dict[str, Any]) -> int:
    from rulemip._kernels import ensure_compiled

    ds = Dataset.from_arrays(X, y, loss=args.loss)
    if choices.get("search") == "bnb":  # compiled before the time limit starts
        kernels = ensure_compiled("box")
        if kernels.message and not args.quiet:
            print(kernels.message, file=sys.stderr)
    with search_workers(resolve_n_jobs(args.n_jobs)):
        booster = _boost(args, ds, max_thresholds, choices)
    print(booster.rules_.to_text())
    print()
    print("round  rules  complexity  risk        rule value  bound       status")
    for t, (ens, r) in enumerate(zip(booster.ensembles_, booster.risk_path_, strict=True)):
        line = f"{t:5d}  {len(ens):5d}  {ens.complexity:10d}  {r:<10.6g}"
        if t > 0:
            s = booster.rounds_[t - 1].search
            line += f"  {s.value:<10.6g}  {s.bound:<10.6g}  {s.status}"
        print(line)
    if booster.limit_reached_ is not None:
        print(f"stopped by the {booster.limit_reached_.replace('_', ' ')} after "
              f"{len(booster.rounds_)} of {args.n_rules} rules")
    if args.json:
        write_json_atomic(args.json, {"ensemble": booster.rules_.to_dict(),
                                      "risk_path": [float(r) for r in booster.risk_path_],
                                      "options": {**booster.get_params()},
                                      "certified": booster.certified_,
                                      "limit_reached": booster.limit_reached_,
                                      "rules_search": [
                                          {"value": r.search.value,
                                           "bound": r.search.bound
                                           if math.isfinite(r.search.bound) else None,
                                           "status": r.search.status,
                                           "nodes": r.search.n_expanded}
                                          for r in booster.rounds_]})
    return 0


def _boost(args: argparse.Namespace, ds: Any, max_thresholds: int | None,
           choices: dict[str, Any]) -> RuleBooster:
    return RuleBooster(n_rules=args.n_rules, beam_width=args.beam_width,
                       max_rule_length=args.max_rule_length,
                       max_propositions=args.max_propositions,
                       max_thresholds=max_thresholds, reg=args.reg,
                       epsilon=args.epsilon, fit_intercept=not args.no_intercept,
                       loss=args.loss, time_limit=args.time_limit,
                       node_limit=args.node_limit,
                       max_memory=None if args.max_memory is None
                       else max(1, int(args.max_memory * 2**20)),
                       verbose=not args.quiet, **choices).fit(ds)
