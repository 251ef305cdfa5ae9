"""First run against second run on an empty numba cache (a script, not a test; issue 31).

Every repetition makes a fresh ``NUMBA_CACHE_DIR`` and runs ``rulemip fit`` (the main job,
bundled data) twice in fresh interpreters: the first compiles the kernels, the second
loads them. It records both wall times, the compile time the first run reports, whether
both printed the same model, boosting risk and certified gap (every line but the status
line, which carries the times), and the machine's load before each run.

The full run adds, each on its own empty cache, the two estimator fits of the issue —
``ExactRuleEnsembleRegressor(2, max_thresholds=2, reg=1, time_limit=5)`` (status, cold
and warm) and ``RuleBoostingRegressor(3, preset="COB", time_limit=2)`` (same model cold
and warm) — and ``rulemip compile`` followed by ``rulemip fit`` (the kernels compiled once
per installation, before any fit).

Run:  python benchmarks/cold_start.py [--quick] [--repeats N] [--out docs/benchmarks/cold_start.md]
``--quick``: one repetition of the ``rulemip fit`` pair, nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ESTIMATORS = r"""
import json, warnings
warnings.simplefilter("ignore")
from rulemip import ExactRuleEnsembleRegressor, RuleBoostingRegressor, load_bundled
X, y = load_bundled()
e = ExactRuleEnsembleRegressor(2, max_thresholds=2, reg=1, time_limit=5).fit(X, y)
b = RuleBoostingRegressor(3, preset="COB", time_limit=2).fit(X, y)
print(json.dumps({"status": e.result_.termination.value, "risk": e.result_.risk,
                  "compile": e.timings_["compile"] + b.timings_["compile"],
                  "fit": e.timings_["fit"], "boost": b.rules_.to_text(),
                  "boost_limit": b.limit_reached_}))
"""


def _env(cache: str) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, NUMBA_CACHE_DIR=cache,
                PYTHONPATH=str(ROOT) + (os.pathsep + path if path else ""))


def _run(argv: list[str], cache: str) -> tuple[float, float, str]:
    """(load before, wall seconds, stdout) of one fresh interpreter."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], env=_env(cache), capture_output=True,
                          text=True, check=True)
    return load, time.perf_counter() - t0, done.stdout


def _printed(out: str) -> list[str]:
    """What must not depend on the cache: every line but the status line (its times)."""
    return [line for line in out.splitlines() if not line.startswith("status:")]


def _compile_seconds(out: str) -> float:
    for line in out.splitlines():
        if line.startswith("status:") and "compiling kernels" in line:
            return float(line.split("(+ ")[1].split(" s")[0])
    return 0.0


def fit_pair(compile_first: bool = False) -> dict[str, object]:
    """``rulemip fit`` twice on one fresh cache (after ``rulemip compile`` when asked)."""
    cache = tempfile.mkdtemp(prefix="numba-cold-")
    try:
        pre = _run(["-m", "rulemip.cli", "compile"], cache) if compile_first else None
        l1, w1, o1 = _run(["-m", "rulemip.cli", "fit", "--quiet"], cache)
        l2, w2, o2 = _run(["-m", "rulemip.cli", "fit", "--quiet"], cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {"first": w1, "second": w2, "load1": l1, "load2": l2,
            "compile": _compile_seconds(o1), "same": _printed(o1) == _printed(o2),
            "precompile": None if pre is None else pre[1]}


def estimator_pair() -> dict[str, object]:
    cache = tempfile.mkdtemp(prefix="numba-cold-")
    try:
        l1, w1, o1 = _run(["-c", ESTIMATORS], cache)
        l2, w2, o2 = _run(["-c", ESTIMATORS], cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    a, b = json.loads(o1.splitlines()[-1]), json.loads(o2.splitlines()[-1])
    return {"cold": a, "warm": b, "load1": l1, "load2": l2, "wall1": w1, "wall2": w2}


def _machine() -> str:
    import numba

    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, numba {numba.__version__}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one rulemip fit pair only")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="write a markdown table here")
    args = ap.parse_args()
    repeats = 1 if args.quick else args.repeats
    rows = [fit_pair() for _ in range(repeats)]
    lines = [f"machine: {_machine()}", "",
             "| run | load (1 min) | first s | second s | first/second | compile s "
             "(reported) | same output |", "|---|---|---|---|---|---|---|"]
    for i, r in enumerate(rows, 1):
        lines.append(f"| `rulemip fit` #{i} | {r['load1']:.1f} / {r['load2']:.1f} | "
                     f"{r['first']:.1f} | {r['second']:.1f} | "
                     f"{r['first'] / r['second']:.2f} | {r['compile']:.1f} | "
                     f"{'yes' if r['same'] else 'NO'} |")
    if not args.quick:
        r = fit_pair(compile_first=True)
        lines.append(f"| `rulemip compile` ({r['precompile']:.1f} s), then `rulemip fit` | "
                     f"{r['load1']:.1f} / {r['load2']:.1f} | {r['first']:.1f} | "
                     f"{r['second']:.1f} | {r['first'] / r['second']:.2f} | "
                     f"{r['compile']:.1f} | {'yes' if r['same'] else 'NO'} |")
        e = estimator_pair()
        cold, warm = e["cold"], e["warm"]
        assert isinstance(cold, dict) and isinstance(warm, dict)
        lines += ["", "| estimators on one empty cache | load | cold | warm |",
                  "|---|---|---|---|",
                  f"| `ExactRuleEnsembleRegressor(2, max_thresholds=2, reg=1, time_limit=5)` "
                  f"status | {e['load1']:.1f} / {e['load2']:.1f} | {cold['status']} | "
                  f"{warm['status']} |",
                  f"| same risk | | {cold['risk']:.6g} | {warm['risk']:.6g} |",
                  f"| `RuleBoostingRegressor(3, preset=\"COB\", time_limit=2)` same model | "
                  f"| {'yes' if cold['boost'] == warm['boost'] else 'NO'} "
                  f"(limit {cold['boost_limit']}) | (limit {warm['boost_limit']}) |",
                  f"| compile s outside the time limits (both fits) | | "
                  f"{cold['compile']:.1f} | {warm['compile']:.2f} |",
                  f"| process wall s | | {e['wall1']:.1f} | {e['wall2']:.1f} |"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
