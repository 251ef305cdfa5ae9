"""The injected clock on the benchmark tables (issue 38, "Done when"): for each row of
``benchmarks/limits.py`` (every registered engine, the classifier, the boosting and RGB
regressors, ``TreeRuleExtractor`` with ``prefit=True`` and ``gap_study``; not ``rulemip
fit``, a child process), the budget expires right after its k-th clock check
(:class:`rulemip.testing.limit_cases.ExpiringClock`) for k = 1, 2, 3 and ``--samples``
more spread over the checks of a run that never expires, and the CPU seconds from that
check to the fit's return are printed against one indivisible step (0.5 s). The same
measurement as ``tests/integration/test_clock_checks.py`` (a 40 × 3 table, in the test
suite), on friedman1 5 000 × 10, ``make_mixed_table()`` and 100 000 × 20; results in
``docs/benchmarks/limits.md``. Rerun (from the repository root)::

    python benchmarks/clock_checks.py --quick            # make_mixed_table() only
    python benchmarks/clock_checks.py --samples 6        # all three tables
    python benchmarks/clock_checks.py --tables wide --rows trees,rgb
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from limits import ROWS, TABLES, _fitted_trees, _refusal, _warm  # noqa: E402

from rulemip.testing.limit_cases import cpu_after_expiry  # noqa: E402

#: CPU seconds a fit may spend after its budget expired (one indivisible step)
STEP_CPU = 0.5


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="make_mixed_table() only")
    ap.add_argument("--tables", default=None, help="comma-separated: friedman1,mixed,wide")
    ap.add_argument("--rows", default=None, help="comma-separated row names")
    ap.add_argument("--samples", type=int, default=4, help="values of k beyond 1, 2, 3")
    ap.add_argument("--time-limit", type=float, default=1.0,
                    help="each fit's limit (open-ended phases run until it)")
    args = ap.parse_args(argv)
    tables = ["mixed"] if args.quick else list(TABLES)
    if args.tables:
        tables = args.tables.split(",")
    rows = [r for r in (args.rows.split(",") if args.rows else ROWS) if r != "rulemip fit"]
    print("load average (1, 5, 15 min) at start: "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    _warm()
    print("| table | row | values of k | largest k | most CPU s after the k-th check (k) "
          "| within |")
    print("|---|---|---:|---:|---:|---|")
    failed = 0
    for table in tables:
        X, y = TABLES[table]()
        name = f"{table} {X.shape[0]}×{X.shape[1]}"
        for row in rows:
            extra: dict[str, Any] = {}
            if row.startswith("trees"):    # the ensemble is fitted before the clock
                extra["gb"] = _fitted_trees(X, y)
            fit = functools.partial(ROWS[row], X, y, args.time_limit, **extra)
            t0 = time.perf_counter()
            try:
                late = cpu_after_expiry(fit, args.samples)
            except Exception as exc:   # a size guard refuses before any check
                refusal = _refusal(exc)
                print(f"| {name} | {row} | — | — | — | "
                      f"{refusal or f'error: {type(exc).__name__}'} |", flush=True)
                failed += refusal is None
                continue
            if not late:
                print(f"| {name} | {row} | 0 | — | — | yes (no check) |", flush=True)
                continue
            k, cpu = max(late, key=lambda kc: kc[1])
            ok = cpu <= STEP_CPU
            failed += not ok
            print(f"| {name} | {row} | {len(late)} | "
                  f"{max(k for k, _ in late)} | {cpu:.2f} ({k}) | {'yes' if ok else 'NO'} |"
                  f"  <!-- {time.perf_counter() - t0:.0f} s -->", flush=True)
    print("load average (1, 5, 15 min) at end: "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
