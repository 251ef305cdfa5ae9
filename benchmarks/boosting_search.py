"""Branch-and-bound rule search at the scale of ordinary tables (a script, not a test).

Every workload fits a boosting model with ``search="bnb"`` and all midpoints as thresholds
under a time limit, in a fresh interpreter, and reports wall seconds, peak RSS of that
process (``resource.getrusage``), the rules found, and per rule its search status, value,
valid bound and nodes expanded. A limit returns the best model so far, so every row
finishes; "proved" counts the rules whose bound closed on their value.

Run:  python benchmarks/boosting_search.py [--time-limit 120] [--only NAME ...]
          [--out docs/benchmarks/boosting.md]   (appends a section to that file)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

#: name -> (data, n_rules, objective, max_propositions (the "len"), extra booster parameters)
WORKLOADS: dict[str, tuple[str, int, str, int | None, dict[str, int]]] = {
    "COB diabetes len<=2": ("diabetes", 5, "ogb", 2, {}),
    "CGB diabetes len<=2": ("diabetes", 5, "gb", 2, {}),
    "COB diabetes len<=3": ("diabetes", 5, "ogb", 3, {}),
    "COB diabetes unlimited": ("diabetes", 5, "ogb", None, {}),
    "CGB diabetes unlimited": ("diabetes", 5, "gb", None, {}),
    "COB breast cancer len<=3 (logistic)": ("breast_cancer", 5, "ogb", 3, {}),
    "COB friedman1 n=10000 len<=3": ("friedman1", 10, "ogb", 3, {}),
    "COB diabetes unlimited, 32 MiB frontier": ("diabetes", 5, "ogb", None,
                                                {"max_memory": 32 * 2**20}),
}


def _data(name: str):
    from sklearn.datasets import load_breast_cancer, load_diabetes, make_friedman1

    if name == "diabetes":
        return (*load_diabetes(return_X_y=True), "squared")
    if name == "breast_cancer":
        return (*load_breast_cancer(return_X_y=True), "logistic")
    X, y = make_friedman1(n_samples=10_000, n_features=10, noise=1.0, random_state=0)
    return X, y, "squared"


def _run(name: str, time_limit: float) -> dict:
    import resource
    import warnings

    from rulemip.boosting import RuleBooster
    from rulemip.data import Dataset

    data, k, objective, max_len, extra = WORKLOADS[name]
    X, y, loss = _data(data)
    ds = Dataset.from_arrays(X, y, loss=loss)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = RuleBooster(n_rules=k, objective=objective, weight_update="corrective",
                        search="bnb", loss=loss, max_propositions=max_len,
                        time_limit=time_limit, **extra).fit(ds)
    secs = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {"seconds": secs, "rss_mb": rss, "rules": len(b.rounds_), "k": k,
            "limit": b.limit_reached_, "risk": float(b.risk_path_[-1] / b.risk_path_[0]),
            "rounds": [{"status": r.search.status, "value": r.search.value,
                        "bound": r.search.bound, "nodes": r.search.n_expanded,
                        "length": r.search.length, "frontier_mb":
                        r.search.peak_frontier_bytes / 2**20} for r in b.rounds_]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_run(args.child, args.time_limit)))
        return
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))}
    load = os.getloadavg()[0]
    lines = ["## Branch-and-bound rule search (`benchmarks/boosting_search.py`)", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), load "
             f"{load:.2f} at start, {time.strftime('%Y-%m-%d')}. Time limit "
             f"{args.time_limit:g} s per fit (shared by its rules). Rerun: `python "
             f"benchmarks/boosting_search.py --time-limit {args.time_limit:g}`.", "",
             "| workload | s | peak RSS MB | frontier MB | rules | proved | stopped by | "
             "R/R(f0) | per rule: value / bound (nodes) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in (args.only or list(WORKLOADS)):
        out = subprocess.run([sys.executable, __file__, "--child", name, "--time-limit",
                              str(args.time_limit)], capture_output=True, text=True,
                             env=env, check=False)
        if out.returncode != 0:
            lines.append(f"| {name} | failed: {out.stderr.strip().splitlines()[-1]} |")
            print(lines[-1], flush=True)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        proved = sum(x["status"] == "optimal" for x in r["rounds"])
        per = "; ".join(f"{x['value']:.4g} / {x['bound']:.4g} ({x['nodes']})"
                        for x in r["rounds"])
        frontier = max([x["frontier_mb"] for x in r["rounds"]], default=0.0)
        lines.append(f"| {name} | {r['seconds']:.1f} | {r['rss_mb']:.0f} | {frontier:.1f} | "
                     f"{r['rules']}/{r['k']} | {proved} | {r['limit'] or '—'} | "
                     f"{r['risk']:.3f} | {per} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    else:
        print(text)


if __name__ == "__main__":
    main()
