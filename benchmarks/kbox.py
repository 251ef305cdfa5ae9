"""Two rules in the languages people read: the k-box search against the targets of issue 29
(results in ``docs/benchmarks/exact.md``, section "Two short rules proved").

Rerun (from the repository root)::

    python benchmarks/kbox.py --quick          # diabetes k = 2, L = 2 (fit and verify)
    python benchmarks/kbox.py                  # + friedman1 5 000 x 10, L = 3, gap study
    python benchmarks/kbox.py --rows diabetes-L3 --time-limit 600

Every row is ``ExactRuleEnsembleRegressor(n_rules=k, max_rule_length=L)`` with every other
parameter at its default (8 cut points, reg 1e-3, intercept, ``time_limit`` 60 unless
given): status, risk, valid lower bound, gap, the engine and the fit's wall and CPU
seconds; then ``rulemip.verify`` replays the certificate (its wall seconds and how it
knows the lower bound). The gap-study row runs ``gap_study(k_max=3, variants=["COB"],
max_rule_length=2, ...)`` as issue 29 item 4 states it. The machine's load is printed
first: wall seconds on a loaded machine are not the idle figure, CPU seconds are closer.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.datasets import load_diabetes, make_friedman1

import rulemip
from rulemip.exceptions import SolveLimitWarning


def _diabetes() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_diabetes(return_X_y=True)
    return X, y


def _friedman1() -> tuple[np.ndarray, np.ndarray]:
    X, y = make_friedman1(n_samples=5000, noise=1.0, random_state=0)  # as in §8, §10
    return X, y


ROWS: dict[str, tuple[Callable[[], tuple[np.ndarray, np.ndarray]], int, int]] = {
    "diabetes-L2": (_diabetes, 2, 2),
    "diabetes-L1": (_diabetes, 2, 1),
    "friedman1-L2": (_friedman1, 2, 2),
    "diabetes-L3": (_diabetes, 2, 3),
}


def fit_row(name: str, time_limit: float) -> dict[str, Any]:
    """One fit and its verification."""
    data, k, length = ROWS[name]
    X, y = data()
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolveLimitWarning)
        model = rulemip.ExactRuleEnsembleRegressor(n_rules=k, max_rule_length=length,
                                                   time_limit=time_limit).fit(X, y)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    cert = model.certificate_
    t1 = time.perf_counter()
    report = rulemip.verify(cert, X, y)
    basis = {c.claim: c.basis for c in report.claims}
    return {"row": name, "k": k, "L": length, "status": cert.status, "risk": cert.risk,
            "lower_bound": cert.lower_bound, "gap": cert.gap, "engine": cert.engine,
            "wall": wall, "cpu": cpu, "verify_ok": report.ok,
            "verify_s": time.perf_counter() - t1,
            "bound_basis": basis.get("lower bound", "?")}


def gap_row(time_limit: float) -> dict[str, Any]:
    """Issue 29 item 4: COB against the certified optimum, k = 1..3, rules of ≤ 2
    features, on diabetes."""
    X, y = _diabetes()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = rulemip.gap_study(X, y, k_max=3, variants=["COB"], max_rule_length=2,
                                  max_thresholds=8, reg=1e-3, fit_intercept=True,
                                  time_limit=time_limit)
    return {"row": "gap_study", "table": study.table, "wall": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="diabetes k = 2, L = 2 only (the 2 s target)")
    parser.add_argument("--rows", nargs="*", choices=sorted(ROWS), default=None)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--gap", action="store_true", help="also the gap-study row")
    args = parser.parse_args(argv)
    rows = args.rows or (["diabetes-L2"] if args.quick else list(ROWS))
    print(f"# machine: {os.cpu_count()} cores; load average {os.getloadavg()}")
    # compile the kernels once, outside the measured rows (issue 31: first-run compiling)
    X, y = _diabetes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rulemip.ExactRuleEnsembleRegressor(n_rules=2, max_rule_length=1, max_thresholds=2,
                                           time_limit=30).fit(X[:60], y[:60])
    print("| row | k | L | status | risk | lower bound | gap | engine | wall s | CPU s "
          "| verify | verify s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in rows:
        r = fit_row(name, args.time_limit)
        print(f"| {r['row']} | {r['k']} | {r['L']} | {r['status']} | {r['risk']:.6g} "
              f"| {r['lower_bound']:.6g} | {r['gap']:.3%} | {r['engine']} "
              f"| {r['wall']:.2f} | {r['cpu']:.2f} "
              f"| {'ok' if r['verify_ok'] else 'REJECTED'}, bound {r['bound_basis']} "
              f"| {r['verify_s']:.2f} |", flush=True)
    if args.gap or (not args.quick and args.rows is None):
        g = gap_row(args.time_limit)
        print(f"\ngap study (COB, k <= 3, L = 2), {g['wall']:.1f} s:\n")
        print(g["table"].to_string() if hasattr(g["table"], "to_string") else g["table"])
    print(f"# load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
