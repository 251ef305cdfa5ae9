"""Side by side with realkd 0.2.1: exhaustive XGB rule boosting on diabetes (442 x 10).

Both sides solve the same problem (docs/benchmarks/boosting.md, "realkd side by side"):

- realkd: ``RuleBoostingEstimator(num_rules=K, base_learner=XGBRuleEstimator(
  loss="squared", reg=1.0, search="exhaustive"))``. Its first term is a rule like every
  other (the empty conjunction wins it), so K counts that term.
- rulemip: ``RuleBooster(n_rules=K, objective="xgb", weight_update="xgb", search="bnb",
  reg=0.5, fit_intercept=False, max_rule_length=None, thresholds=T)``. Without an
  intercept the empty query is a legal rule (``allow_empty``), so the first round picks the
  same all-rows rule.

The objectives agree exactly: with squared loss both use g = 2(f - y), h = 2; realkd
maximizes (Σg)² / (2n(λ + Σh)) with λ = 1 and rulemip |Σg| / sqrt(Σh + 2·reg) with
reg = 0.5 (docs/explanation/boosting.md, "The 2λ in obj_xgb"), so realkd's value is
rulemip's value squared over 2n; both weights are -Σg / (Σh + 1).

The language. realkd builds its propositions per numeric column from
``pandas.qcut(x, 5, retbins=True, duplicates="drop")``: the bin edges after the minimum,
v (four quintiles and the maximum), each as ``x <= v`` and ``x >= v``; a column with at
most 5 distinct values keeps all its values instead (``x <= u_i`` except the largest,
``x >= u_i`` except the smallest). On the data ``x <= v`` cuts at the midpoint between
the largest value <= v and the smallest value > v, and ``x >= v`` at the midpoint
between the largest value < v and the smallest value >= v; T is the set of these
midpoints. rulemip's language (``x <= t`` and ``x > t`` for every t in T) contains
realkd's; it is larger exactly where realkd has only one side of a cut (``x <= max`` is
all rows, so ``x < max`` is not realkd's; a quintile that equals a data value v gives
``x < v`` and ``x > v`` to rulemip only). The script counts these extra propositions.
That is ``--language realkd``. The default, ``--language matched``, is the identical
problem: T = the cuts of realkd's ``x <= v`` only, and realkd gets the same cuts through
its ``discretization`` hook, so both search the propositions ``x <= c``, ``x > c``.

Run (realkd in its own venv, numpy < 2; see the doc page for the install)::

    /work/venv-realkd/bin/python benchmarks/realkd_anchor.py --side realkd --terms 5 \\
        --prefixes --save results/
    python benchmarks/realkd_anchor.py --side rulemip --terms 4 5 --save results/
    python benchmarks/realkd_anchor.py --compare --terms 4 5 --load results/
    python benchmarks/realkd_anchor.py --compare --terms 4 5 \\
        --realkd-python /work/venv-realkd/bin/python    # runs both sides

``--compare`` runs each side in its own interpreter (one process per side and K) and
prints a table: same covers, values within 1e-9 relative, CPU ratio. ``--load DIR``
reuses the JSON results a previous run saved with ``--save DIR``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

QUANTILE_BINS = 5  # realkd's max_col_attr=10 attributes per column -> 10 // 2 bins
REALKD_LAMBDA = 1.0
REL_TOL = 1e-9


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _load() -> tuple[Any, Any]:
    from sklearn.datasets import load_diabetes

    data = load_diabetes(as_frame=True)
    return data.data, data.target


def _cut_between(values: np.ndarray, below: float | None, at_least: float | None) -> float:
    """Midpoint between the largest value of ``values <= below`` (or ``< at_least``)
    and the next value up."""
    if below is not None:
        lo_v, hi_v = values[values <= below], values[values > below]
    else:
        lo_v, hi_v = values[values < at_least], values[values >= at_least]
    return 0.5 * (float(lo_v.max()) + float(hi_v.min()))


def realkd_language(X: Any) -> dict[str, Any]:
    """realkd's propositions per column (its Context.from_df rule, re-derived) as cuts.

    Returns per column the rulemip thresholds (midpoints), the cuts realkd uses with
    ``x <= v`` (``le``) and with ``x >= v`` (``ge``), and the raw edges v."""
    import pandas as pd

    out: dict[str, Any] = {}
    for col in X.columns:
        x = X[col].to_numpy(dtype=float)
        u = np.unique(x)
        if 2 * len(u) > 2 * QUANTILE_BINS:
            _, bins = pd.qcut(X[col], QUANTILE_BINS, retbins=True, duplicates="drop")
            edges = [float(v) for v in bins[1:]]
            le_vals, ge_vals = edges, edges
        else:
            edges = [float(v) for v in u]
            le_vals, ge_vals = edges[:-1], edges[1:]
        le = sorted({_cut_between(u, v, None) for v in le_vals if v < u.max()})
        ge = sorted({_cut_between(u, None, v) for v in ge_vals if v > u.min()})
        out[col] = {"edges": edges, "le": le, "ge": ge,
                    "thresholds": sorted(set(le) | set(ge))}
    return out


def language(X: Any, name: str) -> dict[str, Any]:
    """``"realkd"``: realkd's default propositions, rulemip on all their cuts (a superset
    language). ``"matched"``: both sides on the cuts of realkd's ``x <= v`` (the quintile
    edges below the maximum, each moved up to the next midpoint), two-sided on both."""
    lang = realkd_language(X)
    if name == "matched":
        for v in lang.values():
            v["ge"] = v["thresholds"] = v["le"]
    return lang


def _qcut_with_cuts(cuts: dict[str, list[float]]) -> Any:
    """A ``pandas.qcut``-compatible discretization for realkd's ``Context.from_df`` that
    returns the given cut points (after a -inf first edge, which realkd drops). A cut c
    lies strictly between data values, so realkd's ``x <= c`` and ``x >= c`` are
    complements: the two sides of rulemip's threshold c."""

    def discretize(col: Any, q: int, retbins: bool = True, duplicates: str = "drop") -> Any:
        return None, np.asarray([-np.inf, *cuts[str(col.name)]])

    return discretize


def _result(side: str, terms: int, rounds: list[dict[str, Any]], cpu: float, wall: float,
            extra: dict[str, Any]) -> dict[str, Any]:
    return {"side": side, "terms": terms, "cpu_s": cpu, "wall_s": wall,
            "peak_rss_mb": _peak_rss_mb(), "load_start": extra.pop("load_start"),
            "rounds": rounds, **extra}


def run_realkd(terms: int, lang_name: str) -> dict[str, Any]:
    from realkd.rules import (
        GradientBoostingObjective,
        RuleBoostingEstimator,
        XGBRuleEstimator,
    )

    X, y = _load()
    log: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    if lang_name == "matched":
        cuts = {c: v["thresholds"] for c, v in language(X, lang_name).items()}
        params["search_params"] = {**XGBRuleEstimator().search_params,
                                   "discretization": _qcut_with_cuts(cuts)}

    class TimedXGB(XGBRuleEstimator):  # type: ignore[misc]
        """realkd's base learner, timed per round; the node count from its own report."""

        def fit(self, data: Any, target: Any, scores: Any = None,
                verbose: Any = False) -> Any:
            buf = io.StringIO()
            c0, w0 = time.process_time(), time.perf_counter()
            with contextlib.redirect_stdout(buf):
                super().fit(data, target, scores, verbose=1)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            m = re.search(r"inspecting (\d+) nodes", buf.getvalue())
            obj = GradientBoostingObjective(data, target, predictions=scores,
                                            loss=self.loss, reg=self.reg)
            value = float(obj(obj.data.loc[self.rule_.q].index))
            cover = np.broadcast_to(np.asarray(self.rule_.q(data), dtype=bool), len(data))
            log.append({"rule": str(self.rule_.q) or "True", "weight": float(self.rule_.y),
                        "value": value, "nodes": int(m.group(1)) if m else None,
                        "cpu_s": cpu, "wall_s": wall,
                        "cover": np.flatnonzero(cover).tolist()})
            print(f"  term {len(log)}: {cpu:.1f} CPU s, {log[-1]['nodes']} nodes, "
                  f"value {value:.12g}, weight {self.rule_.y:+.6g} if {log[-1]['rule']}",
                  flush=True)
            return self

    load = os.getloadavg()[0]
    est = RuleBoostingEstimator(num_rules=terms, base_learner=TimedXGB(
        loss="squared", reg=REALKD_LAMBDA, search="exhaustive", **params))
    c0, w0 = time.process_time(), time.perf_counter()
    est.fit(X, y)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return _result("realkd", terms, log, cpu, wall,
                   {"load_start": load, "language": lang_name})


def run_rulemip(terms: int, lang_name: str) -> dict[str, Any]:
    from rulemip.boosting.booster import RuleBooster
    from rulemip.data import Dataset

    X, y = _load()
    lang = language(X, lang_name)
    thresholds = [np.asarray(lang[c]["thresholds"]) for c in X.columns]
    ds = Dataset.from_arrays(X.to_numpy(float), y.to_numpy(float), loss="squared",
                             feature_names=list(X.columns))
    n = ds.n
    params = dict(objective="xgb", weight_update="xgb", search="bnb",
                  reg=REALKD_LAMBDA / 2, fit_intercept=False, max_rule_length=None,
                  thresholds=thresholds)
    # compile (numba, cache=True) outside the timings
    w0 = time.perf_counter()
    small = Dataset.from_arrays(X.to_numpy(float)[:40], y.to_numpy(float)[:40],
                                loss="squared")
    RuleBooster(n_rules=2, **params).fit(small)
    warmup = time.perf_counter() - w0
    load = os.getloadavg()[0]
    booster = RuleBooster(n_rules=terms, **params)
    c0, w0 = time.process_time(), time.perf_counter()
    booster.fit(ds)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    rules = booster.rules_.rules
    le = [set(lang[c]["le"]) for c in X.columns]
    ge = [set(lang[c]["ge"]) for c in X.columns]
    log = []
    for t, rnd in enumerate(booster.rounds_):
        s = rnd.search
        # realkd can state x <= t only for t in le and x > t (its x >= v) only for t in ge
        in_realkd = all((not np.isfinite(lo) or lo in ge[j]) and
                        (not np.isfinite(hi) or hi in le[j])
                        for j, (lo, hi) in enumerate(zip(s.lower, s.upper, strict=True)))
        log.append({"in_realkd_language": bool(in_realkd), "rule": rules[t].to_text(),
                    "weight": float(rnd.weights[-1]),
                    "value": float(s.value) ** 2 / (2 * n),
                    "bound": float(s.bound) ** 2 / (2 * n), "status": s.status,
                    "nodes": int(s.n_expanded), "wall_s": float(s.elapsed),
                    "cover": np.flatnonzero(s.query).tolist()})
        print(f"  term {t + 1}: {s.elapsed:.2f} s, {s.n_expanded} nodes, {s.status}, "
              f"in realkd's language: {in_realkd}, "
              f"value {log[-1]['value']:.12g} (bound {log[-1]['bound']:.12g}), "
              f"{rules[t].to_text()}", flush=True)
    extra_props = sum(len(set(v["thresholds"]) - set(v["le"])) +
                      len(set(v["thresholds"]) - set(v["ge"])) for v in lang.values())
    return _result("rulemip", terms, log, cpu, wall,
                   {"load_start": load, "warmup_wall_s": warmup, "language": lang_name,
                    "n_thresholds": sum(len(v["thresholds"]) for v in lang.values()),
                    "extra_propositions": extra_props, "certified": booster.certified_})


def _prefix(res: dict[str, Any], j: int) -> dict[str, Any]:
    """The K = j result inside a K > j realkd run: boosting is sequential, so its first j
    terms are exactly what ``num_rules=j`` computes; CPU and wall are the sums of those
    terms (the peak RSS is the longer run's)."""
    rounds = res["rounds"][:j]
    return {**res, "terms": j, "rounds": rounds, "prefix_of": res["terms"],
            "cpu_s": sum(r["cpu_s"] for r in rounds), "wall_s": sum(r["wall_s"] for r in rounds)}


def _same_value(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b), 1e-300)


def compare(rk: dict[str, Any], rm: dict[str, Any]) -> bool:
    """Print the side-by-side table; True when every term has the same cover, value and
    weight (values and weights within ``REL_TOL`` relative)."""
    k = rk["terms"]
    print(f"\nK = {k} terms, language {rm['language']}  (realkd vs rulemip)")
    print(f"{'term':>4} {'same cover':>10} {'rk lang':>7} {'realkd value':>18} "
          f"{'rulemip value':>18} {'rel diff':>9} {'rk nodes':>9} {'rm nodes':>9}  rule (rulemip)")
    ok = len(rk["rounds"]) == len(rm["rounds"]) == k
    for t, (a, b) in enumerate(zip(rk["rounds"], rm["rounds"], strict=False)):
        same = a["cover"] == b["cover"]
        rel = abs(a["value"] - b["value"]) / max(abs(a["value"]), 1e-300)
        ok = ok and same and _same_value(a["value"], b["value"]) and \
            _same_value(a["weight"], b["weight"])
        print(f"{t + 1:>4} {same!s:>10} {b['in_realkd_language']!s:>7} {a['value']:>18.12g} "
              f"{b['value']:>18.12g} {rel:>9.1e} {a['nodes']!s:>9} {b['nodes']!s:>9}  {b['rule']}")
    ratio = rk["cpu_s"] / max(rm["cpu_s"], 1e-9)
    print(f"CPU s: realkd {rk['cpu_s']:.1f}, rulemip {rm['cpu_s']:.2f} -> {ratio:.0f}x less; "
          f"wall s: {rk['wall_s']:.1f} vs {rm['wall_s']:.2f}; peak RSS MB: "
          f"{rk['peak_rss_mb']:.0f} vs {rm['peak_rss_mb']:.0f}; load at start "
          f"{rk['load_start']:.1f} / {rm['load_start']:.1f}")
    wdiff = max((abs(a["weight"] - b["weight"]) / max(abs(a["weight"]), 1e-300)
                 for a, b in zip(rk["rounds"], rm["rounds"], strict=False)), default=0.0)
    print(f"largest relative difference of the rule weights: {wdiff:.1e}")
    print(f"rulemip: certified {rm['certified']}, {rm['n_thresholds']} thresholds, "
          f"{rm['extra_propositions']} propositions outside realkd's language; "
          f"same rules and values: {ok}")
    return ok


def _run_side(python: str, side: str, terms: int, lang_name: str,
              out: Path) -> dict[str, Any]:
    cmd = [python, __file__, "--side", side, "--terms", str(terms), "--language", lang_name,
           "--save", str(out)]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return json.loads((out / f"{side}-{lang_name}-{terms}.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--side", choices=["realkd", "rulemip"])
    mode.add_argument("--compare", action="store_true")
    ap.add_argument("--terms", type=int, nargs="+", default=[4],
                    help="K, the number of terms (realkd counts the empty first rule)")
    ap.add_argument("--language", choices=["realkd", "matched"], default="matched",
                    help="matched: both sides on the same two-sided cuts (identical "
                         "problem); realkd: realkd's default propositions, rulemip on all "
                         "their cuts (a larger language)")
    ap.add_argument("--save", type=Path, help="write <side>-<K>.json into this directory")
    ap.add_argument("--load", type=Path, help="--compare: read saved results, run nothing")
    ap.add_argument("--prefixes", action="store_true",
                    help="--side realkd with --save: also save K = 1..K-1 from the first terms")
    ap.add_argument("--realkd-python", default="/work/venv-realkd/bin/python")
    args = ap.parse_args()
    if any(k < 1 for k in args.terms):
        print("error: --terms must be positive integers", file=sys.stderr)
        sys.exit(2)
    if args.side:
        for k in args.terms:
            res = (run_realkd if args.side == "realkd" else run_rulemip)(k, args.language)
            print(f"{args.side}, K = {k}: {res['cpu_s']:.2f} CPU s, {res['wall_s']:.2f} wall s, "
                  f"peak RSS {res['peak_rss_mb']:.0f} MB, load at start {res['load_start']:.2f}")
            if args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"{args.side}-{args.language}-{k}.json").write_text(json.dumps(res))
                if args.side == "realkd" and args.prefixes:
                    for j in range(1, k):
                        path = args.save / f"realkd-{args.language}-{j}.json"
                        path.write_text(json.dumps(_prefix(res, j)))
        return
    out = args.load or args.save or Path("realkd_anchor_results")
    ok = True
    for k in args.terms:
        if args.load:
            rk, rm = (json.loads((out / f"{s}-{args.language}-{k}.json").read_text())
                      for s in ("realkd", "rulemip"))
        else:
            rk = _run_side(args.realkd_python, "realkd", k, args.language, out)
            rm = _run_side(sys.executable, "rulemip", k, args.language, out)
        ok = compare(rk, rm) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
