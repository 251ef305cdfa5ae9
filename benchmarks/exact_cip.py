"""Studies specific to the box-selection CIP (docs/explanation/box_selection.md) — rerun with

    python benchmarks/exact_cip.py ablation --time-limit 20 > ablation.md
    python benchmarks/exact_cip.py mainjob --time-limit 30 --regs 1 0.01

``ablation``: what each outer-approximation trick buys; ``mainjob``: the configuration
``rulemip fit`` uses on the bundled diabetes_small. The time-to-optimality table of every
engine (CIP by enumeration / OA, interval-cover MIP on each backend) with its agreement
check is ``benchmarks/exact.py``, which also provides the data (:func:`exact.diabetes`).
Timings are wall-clock on a shared 2-core machine (other jobs running): noisy.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from exact import diabetes

from rulemip.algorithms.krule.box_selection import solve_box_selection
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.rules.language import Language


def run(ds: Dataset, k: int, reg: float, time_limit: float, **kw: Any) -> dict[str, Any]:
    t = time.perf_counter()
    cip = BoxSelectionCIP(Language(k, max_rule_length=kw.pop("max_rule_length", None)), reg=reg,
                          max_thresholds=kw.pop("max_thresholds", 5))
    res = solve_box_selection(cip, ds, budget=Budget.from_time_limit(time_limit),
                              threads=kw.pop("threads", 2), **kw)
    return {"status": res.termination.value, "time": time.perf_counter() - t,
            "iters": res.iterations, "gap": res.gap, "risk": res.risk,
            "lb": res.lower_bound, "B": res.n_boxes, "cells": res.n_cells,
            "backend": res.backend}


ABLATION = {
    "plain OA (cut at z=0 only, no hint, exact masters)":
        dict(initial_cuts="none", combinatorial_bounds=False,
             oa_options={"adaptive_master_gap": False}),
    "+ greedy-path cuts": dict(initial_cuts="greedy", combinatorial_bounds=False,
                               oa_options={"adaptive_master_gap": False}),
    "+ single-box cuts": dict(initial_cuts="all", combinatorial_bounds=False,
                              oa_options={"adaptive_master_gap": False}),
    "greedy + adaptive master gap": dict(initial_cuts="greedy", combinatorial_bounds=False),
    "greedy + adaptive + combinatorial ν bound": dict(initial_cuts="greedy"),
    "greedy + adaptive + bound + LP relaxation (200 LPs)":
        dict(initial_cuts="greedy", relaxation_iters=200),
}


def ablation(args: argparse.Namespace) -> None:
    cases = [(1, 100, 1.0, 5), (2, 100, 10.0, 2), (2, 100, 100.0, 5), (3, 100, 100.0, 2)]
    print("| instance | variant | status | time (s) | iterations | gap |")
    print("|---|---|---|---|---|---|")
    for d, n, reg, k in cases:
        ds = diabetes(n, d)
        for name, kw in ABLATION.items():
            r = run(ds, k, reg, args.time_limit, method="oa", **dict(kw))
            print(f"| {d}-d n={n} λ={reg:g} k={k} | {name} | {r['status']} | {r['time']:.2f} | "
                  f"{r['iters']} | {r['gap']:.1e} |", flush=True)


def mainjob(args: argparse.Namespace) -> None:
    """The configuration `rulemip fit` uses on the bundled diabetes_small."""
    from rulemip.data import load_bundled

    X, y = load_bundled("diabetes_small")
    ds = Dataset.from_arrays(X, y)
    print("| max_thresholds | max_rule_length | λ | method | status | time (s) | gap | R_λ |"
          " boxes | cells |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mt, mrl in ((2, None), (3, 2), (3, None), (4, None)):
        for reg in args.regs:
            r = run(ds, 3, reg, args.time_limit, max_thresholds=mt, max_rule_length=mrl,
                    method=args.method, relaxation_iters=args.relaxation_iters)
            print(f"| {mt} | {mrl} | {reg:g} | {r['backend']} | {r['status']} | "
                  f"{r['time']:.2f} | {r['gap']:.1e} | {r['risk']:.3f} | {r['B']} | "
                  f"{r['cells']} |", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["ablation", "mainjob"])
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--regs", type=float, nargs="+", default=[1.0, 10.0],
                   help="ridges λ of the main job")
    p.add_argument("--method", default="auto", choices=["auto", "oa", "enumerate"])
    p.add_argument("--relaxation-iters", type=int, default=200)
    args = p.parse_args(argv)
    {"ablation": ablation, "mainjob": mainjob}[args.what](args)


if __name__ == "__main__":
    main(sys.argv[1:])
