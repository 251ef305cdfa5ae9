"""Limits that hold on every engine: wall and CPU seconds of each fit against its time limit
(issue 38; results in ``docs/benchmarks/limits.md``).

Rerun (from the repository root, numba cache warm — the script warms it first)::

    python benchmarks/limits.py --quick        # make_mixed_table() only
    python benchmarks/limits.py                # + friedman1 5 000 x 10, 100 000 x 20
    python benchmarks/limits.py --tables friedman1 --rows mip-scip,gap_study

Tables: friedman1 5 000 × 10 (``make_friedman1(noise=1, random_state=0)``),
``tests/conftest.py``'s ``make_mixed_table()`` (1 070 × 6, numeric and one-hot columns,
a target in the ten thousands) and a generated 100 000 × 20 table (Gaussian features,
a rule-shaped target). Rows: every engine of ``ExactRuleEnsembleRegressor`` (``mip`` on
SCIP and on HiGHS), the classifier (target above its median), the boosting and RGB
regressors, ``TreeRuleExtractor`` (``prefit=True``: its limit covers the selection),
``gap_study(k_max=2, variants=["SGB", "COB"])`` (bound: ``k_max × time_limit``) and
``rulemip fit`` (a subprocess: its bound adds the wall of ``rulemip fit --time-limit 0.01`` on
20 rows — the interpreter's start, the imports and the kernels — printed first). Every row runs
with ``time_limit=5`` (``--time-limit``) and every other parameter at its default, and is
judged against ``max(1.1 × limit, limit + 2 s)`` on wall seconds; the machine's load is
printed first and last (wall seconds on a loaded machine exceed CPU seconds). The column
"CPU s past the limit" is the CPU the process spent after the row's limit had passed on
the wall clock (read by a timer thread): the work a fit does past its deadline, which a
loaded machine does not inflate (the bound allows 2 s of it; "—" for ``rulemip fit``,
whose child process's CPU is known only when it ends).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import make_friedman1

from rulemip.testing.limit_cases import exact_engine_cases

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))


def _friedman1() -> tuple[np.ndarray, np.ndarray]:
    return make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=0)


def _mixed() -> tuple[np.ndarray, np.ndarray]:
    from conftest import make_mixed_table

    return make_mixed_table()


def _wide() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100_000, 20))
    y = (2.0 * ((X[:, 0] > 0.5) & (X[:, 1] < 0.0)) - 1.5 * (X[:, 2] > 1.0)
         + 1.0 * ((X[:, 3] < -0.5) & (X[:, 4] > 0.2)) + rng.normal(scale=0.5, size=len(X)))
    return X, y


TABLES: dict[str, Callable[[], tuple[np.ndarray, np.ndarray]]] = {
    "friedman1": _friedman1, "mixed": _mixed, "wide": _wide}


def _exact(**kw: Any) -> Callable[[np.ndarray, np.ndarray, float], Any]:
    def fit(X: np.ndarray, y: np.ndarray, limit: float) -> Any:
        from rulemip import ExactRuleEnsembleRegressor

        est = ExactRuleEnsembleRegressor(time_limit=limit, **kw).fit(X, y)
        res = est.result_
        return f"{res.termination.value}, {res.engine}"
    return fit


def _classifier(X: np.ndarray, y: np.ndarray, limit: float) -> Any:
    from rulemip import ExactRuleEnsembleClassifier

    est = ExactRuleEnsembleClassifier(time_limit=limit).fit(X, y > np.median(y))
    return f"{est.result_.termination.value}, {est.result_.engine}"


def _boosting(X: np.ndarray, y: np.ndarray, limit: float) -> Any:
    from rulemip import RuleBoostingRegressor

    est = RuleBoostingRegressor(time_limit=limit).fit(X, y)
    return f"{len(est.rules_.rules)} rules"


def _rgb(X: np.ndarray, y: np.ndarray, limit: float) -> Any:
    from rulemip import RGBRegressor

    est = RGBRegressor(time_limit=limit).fit(X, y)
    return f"{est.n_estimators_} trees"


def _fitted_trees(X: np.ndarray, y: np.ndarray) -> Any:
    """The ensemble ``TreeRuleExtractor`` prunes, fitted before the clock starts (its
    ``time_limit`` covers the selection, ``prefit=True``)."""
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(n_estimators=100, max_depth=3, random_state=0).fit(X, y)


def _trees(X: np.ndarray, y: np.ndarray, limit: float, gb: Any = None) -> Any:
    from rulemip import TreeRuleExtractor

    gb = _fitted_trees(X, y) if gb is None else gb
    est = TreeRuleExtractor(gb, prefit=True, time_limit=limit).fit(X, y)
    return f"{len(est.selected_)} nodes"


def _gap_study(X: np.ndarray, y: np.ndarray, limit: float) -> Any:
    from rulemip.certify.gap import gap_study

    study = gap_study(X, y, 2, variants=["SGB", "COB"], time_limit=limit)
    return "status " + "/".join(str(s) for s in study.table["status"])


def _cli_run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rulemip.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, check=False)


def _cli(X: np.ndarray, y: np.ndarray, limit: float, csv: Path | None = None) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.csv" if csv is None else csv
        if csv is None:
            _write_csv(X, y, path)
        out = _cli_run(["fit", "--data", str(path), "--target", "y", "--time-limit",
                        str(limit), "--quiet"])
        return f"exit {out.returncode}"


def _write_csv(X: np.ndarray, y: np.ndarray, path: Path) -> None:
    header = ",".join([f"x{j}" for j in range(X.shape[1])] + ["y"])
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header=header, comments="")


def _cli_startup() -> float:
    """Wall seconds of ``rulemip fit --time-limit 0.01`` on a 20-row table: the interpreter's
    start, the imports, loading the compiled kernels and writing the report — what the
    ``rulemip fit`` row includes and its time limit cannot (``--help`` alone, used
    before, leaves out the kernels)."""
    X, y = _friedman1()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tiny.csv"
        _write_csv(X[:20, :3], y[:20], path)
        t0 = time.perf_counter()
        _cli_run(["fit", "--data", str(path), "--target", "y", "--time-limit", "0.01",
                  "--quiet"])
        return time.perf_counter() - t0


ROWS: dict[str, Callable[..., Any]] = {
    **{name: _exact(**kw) for name, kw in exact_engine_cases().items()},
    "classifier": _classifier,
    "boosting": _boosting,
    "rgb": _rgb,
    "trees (prefit)": _trees,
    "gap_study": _gap_study,
    "rulemip fit": _cli,
}


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the ``rulemip fit`` row)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


class _CpuAt:
    """The process's CPU seconds (:func:`_cpu`) read by a timer thread at a wall-clock
    instant (the row's time limit): :meth:`past` is the CPU spent after it — work past
    the deadline, which a loaded machine does not inflate as it inflates wall seconds."""

    def __init__(self, when: float) -> None:
        self.cpu: float | None = None
        self.timer = threading.Timer(max(when - time.perf_counter(), 0.0), self._read)
        self.timer.daemon = True
        self.timer.start()

    def _read(self) -> None:
        self.cpu = _cpu()

    def past(self) -> float:
        self.timer.cancel()
        return 0.0 if self.cpu is None else max(_cpu() - self.cpu, 0.0)


def _refusal(exc: Exception) -> str | None:
    """"refused (size guard)" for an engine's size guard (an ``InvalidParameterError``
    raised up front: the enumerating engines and the k-box search on tables they cannot
    hold), else None."""
    from rulemip.exceptions import InvalidParameterError

    text = str(exc)
    guard = "enumerates every candidate box" in text or "builds every box" in text
    return "refused (size guard)" if isinstance(exc, InvalidParameterError) and guard else None


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def _warm() -> None:
    """Compile (or load) every numba kernel and run each row once on a tiny table."""
    X, y = _friedman1()
    for name, fit in ROWS.items():
        if name == "rulemip fit":
            continue
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            # a row that fails shows up in the table
            warnings.simplefilter("ignore")
            fit(X[:200, :3], y[:200], 2.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="make_mixed_table() only")
    ap.add_argument("--tables", default=None, help="comma-separated: friedman1,mixed,wide")
    ap.add_argument("--rows", default=None, help="comma-separated row names")
    ap.add_argument("--time-limit", type=float, default=5.0)
    args = ap.parse_args(argv)
    limit = float(args.time_limit)
    tables = ["mixed"] if args.quick else list(TABLES)
    if args.tables:
        tables = args.tables.split(",")
    rows = list(ROWS) if not args.rows else args.rows.split(",")
    print(f"load average (1, 5, 15 min) at start: {_load()}")
    _warm()
    print("| table | row | wall s | CPU s | CPU s past the limit | bound s | within | result |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    startup = _cli_startup() if "rulemip fit" in rows else 0.0
    if startup:
        print(f"(`rulemip fit --time-limit 0.01` on 20 rows takes {startup:.2f} s wall: the "
              "interpreter's start, the imports and the kernels, added to the bound of the "
              "`rulemip fit` rows)")
    failed = 0
    tmp = tempfile.TemporaryDirectory()
    for table in tables:
        X, y = TABLES[table]()
        for row in rows:
            bound = (2 if row == "gap_study" else 1) * limit
            bound = max(1.1 * bound, bound + 2.0)
            extra: dict[str, Any] = {}
            if row.startswith("trees"):      # the ensemble is fitted before the clock
                extra["gb"] = _fitted_trees(X, y)
            if row == "rulemip fit":         # the CSV is written before the clock
                extra["csv"] = Path(tmp.name) / f"{table}.csv"
                _write_csv(X, y, extra["csv"])
                bound += startup
            t0, c0 = time.perf_counter(), _cpu()
            # the row's own limit: k_max × limit for gap_study, + start-up for the CLI
            own = (2 if row == "gap_study" else 1) * limit + \
                (startup if row == "rulemip fit" else 0.0)
            at_limit = _CpuAt(t0 + own)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    what = ROWS[row](X, y, limit, **extra)
                except Exception as exc:  # reported in the table
                    what = _refusal(exc) or f"error: {type(exc).__name__}: {exc}"[:80]
            wall, cpu = time.perf_counter() - t0, _cpu() - c0
            # a child's CPU counts only once it has ended: not readable at the deadline
            past = "—" if row == "rulemip fit" else f"{at_limit.past():.2f}"
            ok = wall <= bound
            failed += not ok
            print(f"| {table} {X.shape[0]}×{X.shape[1]} | {row} | {wall:.2f} | {cpu:.2f} | "
                  f"{past} | {bound:.1f} | {'yes' if ok else 'NO'} | {what} |",
                  flush=True)
    tmp.cleanup()
    print(f"load average (1, 5, 15 min) at end: {_load()}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
