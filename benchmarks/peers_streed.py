"""Peers side by side: optimal regression trees with k + 1 leaves (STreeD) against rulemip's
k-rule ensembles on the same candidate thresholds (issue 29 item 5; results in
``docs/benchmarks/exact.md``, section "Peers: optimal regression trees (STreeD)").

Rerun (from the repository root; STreeD is the optional ``bench`` extra,
``pip install pystreed``)::

    python benchmarks/peers_streed.py --quick    # diabetes k = 1, 2; rulemip 10 s each
    python benchmarks/peers_streed.py            # diabetes k = 1, 2, 3; rulemip 60 s each
    python benchmarks/peers_streed.py --full     # and friedman1 5 000 x 10
    python benchmarks/peers_streed.py --tables friedman1 --ks 1 2 --time-limit 30

The binarization is rulemip's: ``candidate_thresholds(X, 8)`` gives the cut points of every
feature, and each cut point t of feature j is one indicator column ``x_j <= t``, so STreeD's
splits are exactly the thresholds rulemip's rules may use. STreeD (``STreeDRegressor``,
``optimization_task="regression"``: piecewise-constant leaves, squared error, no complexity
cost) is asked for the tree of least training squared error with at most ``max_num_nodes=k``
branching nodes (k + 1 leaves) and ``max_depth=k`` (every shape of k branching nodes).

Why the two are comparable: a tree with k + 1 leaves is an intercept (one leaf's value)
plus k disjoint rules (the other leaves, each weighted by its value minus the intercept);
the rule of a leaf restricts the features on its path. So when every leaf restricts at
most ``max_rule_length`` features, the tree is a point of rulemip's k-rule problem and the
k-rule optimum is at most the tree's risk. For k > ``max_rule_length`` a tree of depth k
may have longer leaves; the script then also runs STreeD at ``max_depth=max_rule_length``,
the tree the inequality applies to. At ``reg`` > 0 the tree is scored as that ensemble:
training mean squared error plus ``reg * sum(beta**2) / n`` with the intercept leaf chosen to
make the penalty least (column "risk at reg").

Columns: training MSE = (1/n) sum (y - f)^2 (rulemip's risk at reg 0); "risk at reg" is
rulemip's objective R = (1/n)(sum (y - f)^2 + reg ||beta||^2); "bound" is rulemip's
certified lower bound on the k-rule optimum (STreeD's proof is over trees only, so its
bound column is empty); "wall s" is the wall time of the fit. Before the rulemip rows one
short fit compiles the numba kernels; its time is printed and not counted in a row.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from typing import Any

import numpy as np

from rulemip.data.thresholds import candidate_thresholds

INSTALL_HINT = ("pystreed is not installed: STreeD rows skipped "
                "(`pip install pystreed`, or `pip install -e .[bench]`)")


def load_table(name: str, friedman_noise: float = 1.0) -> tuple[np.ndarray, np.ndarray,
                                                               list[str]]:
    """``diabetes``: scikit-learn's diabetes (442 x 10); ``friedman1``: scikit-learn's
    ``make_friedman1(n_samples=5000, noise=friedman_noise, random_state=0)`` (10 features;
    noise 1 as in the other benchmarks of ``docs/benchmarks/exact.md``)."""
    from sklearn.datasets import load_diabetes, make_friedman1

    if name == "diabetes":
        data = load_diabetes()
        return np.asarray(data.data, float), np.asarray(data.target, float), \
            list(data.feature_names)
    if name == "friedman1":
        X, y = make_friedman1(n_samples=5000, n_features=10, noise=friedman_noise,
                              random_state=0)
        return X, y, [f"x{j}" for j in range(X.shape[1])]
    raise ValueError(f"unknown table {name!r}")


def binarize(X: np.ndarray, max_thresholds: int | None
             ) -> tuple[np.ndarray, list[tuple[int, float]]]:
    """Indicator columns ``x_j <= t`` for every candidate threshold t of every feature j,
    and the (j, t) of each column."""
    thresholds = candidate_thresholds(X, max_thresholds)
    columns = [(j, float(t)) for j, ts in enumerate(thresholds) for t in ts]
    B = np.column_stack([(X[:, j] <= t) for j, t in columns]).astype(np.intc)
    return B, columns


def tree_leaves(node: Any, columns: list[tuple[int, float]],
                path: tuple[tuple[int, float, bool], ...] = ()
                ) -> list[tuple[tuple[tuple[int, float, bool], ...], float, int]]:
    """Leaves of a fitted STreeD tree: (conditions, value, rows); a condition is
    (feature, threshold, satisfied) with satisfied meaning ``x_feature <= threshold``
    (STreeD's right child is the branch where the binary column is 1)."""
    if node.is_leaf_node():
        return [(path, float(node.label), int(node.num_instances))]
    j, t = columns[node.feature]
    return (tree_leaves(node.left_child, columns, (*path, (j, t, False)))
            + tree_leaves(node.right_child, columns, (*path, (j, t, True))))


def leaf_text(conditions: tuple[tuple[int, float, bool], ...], names: list[str]) -> str:
    """A leaf's path as one rule: conditions on one feature merged into an interval."""
    lo: dict[int, float] = {}
    hi: dict[int, float] = {}
    for j, t, le in conditions:
        if le:
            hi[j] = min(hi.get(j, np.inf), t)
        else:
            lo[j] = max(lo.get(j, -np.inf), t)
    parts = []
    for j in sorted(set(lo) | set(hi)):
        a, b = lo.get(j), hi.get(j)
        if a is not None and b is not None:
            parts.append(f"{a:.4g} < {names[j]} <= {b:.4g}")
        elif b is not None:
            parts.append(f"{names[j]} <= {b:.4g}")
        else:
            parts.append(f"{names[j]} > {a:.4g}")
    return " AND ".join(parts) if parts else "TRUE"


def rule_text(rule: Any, names: list[str]) -> str:
    """A rulemip rule's conditions with the table's feature names."""
    parts = []
    for c in rule.conditions:
        name = names[c.feature]
        if np.isfinite(c.lower) and np.isfinite(c.upper):
            parts.append(f"{c.lower:.4g} < {name} <= {c.upper:.4g}")
        elif np.isfinite(c.upper):
            parts.append(f"{name} <= {c.upper:.4g}")
        else:
            parts.append(f"{name} > {c.lower:.4g}")
    return " AND ".join(parts) if parts else "TRUE"


def streed_row(table: str, B: np.ndarray, y: np.ndarray, columns: list[tuple[int, float]],
               names: list[str], k: int, depth: int, reg: float, time_limit: float
               ) -> dict[str, Any]:
    """The optimal tree with at most k branching nodes and depth at most ``depth``."""
    from pystreed import STreeDRegressor

    est = STreeDRegressor(optimization_task="regression", max_depth=depth,
                          max_num_nodes=k, time_limit=time_limit)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(B, y)
    wall = time.perf_counter() - t0
    row: dict[str, Any] = {"table": table, "k": k, "model": f"STreeD tree, depth <= {depth}",
                           "wall": wall}
    if not est.is_fitted():
        return {**row, "status": "no tree", "mse": np.nan, "risk": np.nan}
    res = est.fit_result
    mse = float(np.mean((y - est.predict(B)) ** 2))
    leaves = tree_leaves(est.get_tree(), columns)
    values = np.array([v for _, v, _ in leaves])
    # the tree as intercept + k rules: intercept = one leaf's value, the least penalty
    penalty = min(float(np.sum((values - v0) ** 2)) for v0 in values)
    lengths = [len({j for j, _, _ in cond}) for cond, _, _ in leaves]
    return {**row, "status": "optimal (trees)" if res.is_optimal() else "not proved",
            "mse": mse, "risk": mse + reg * penalty / len(y), "bound": None,
            "size": f"{len(leaves)} leaves", "max_length": max(lengths),
            "depth": int(res.tree_depth()), "solver_score": float(res.score()),
            "rules": [f"{leaf_text(c, names)} -> {v:.4g} ({m} rows)" for c, v, m in leaves]}


def rulemip_row(table: str, X: np.ndarray, y: np.ndarray, names: list[str], k: int,
                max_rule_length: int | None, reg: float, max_thresholds: int | None,
                time_limit: float) -> dict[str, Any]:
    """``ExactRuleEnsembleRegressor(n_rules=k, max_rule_length, reg, time_limit)`` with
    every other parameter at its default; its certificate as one row."""
    from rulemip.estimators import ExactRuleEnsembleRegressor

    est = ExactRuleEnsembleRegressor(n_rules=k, max_rule_length=max_rule_length, reg=reg,
                                     max_thresholds=max_thresholds, time_limit=time_limit)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    wall = time.perf_counter() - t0
    cert = est.certificate_
    limit = est.result_.limit
    rules = list(est.rules_.rules)
    return {"table": table, "k": k, "time_limit": time_limit,
            "model": f"rulemip {est.engine_}, length <= {max_rule_length}",
            "status": str(cert.status) + (f" ({limit.value} limit)" if limit is not None
                                          else ""),
            "mse": float(np.mean((y - est.predict(X)) ** 2)), "risk": float(cert.risk),
            "bound": float(cert.lower_bound), "gap": float(cert.gap), "wall": wall,
            "size": f"{len(rules)} rules", "max_length": max(
                (len(r.conditions) for r in rules), default=0),
            "rules": [f"{rule_text(r, names)} -> {r.weight:+.4g}" for r in rules]
            + [f"intercept {float(getattr(est.rules_, 'intercept', np.nan)):.4g}"]}


def warm_up(X: np.ndarray, y: np.ndarray, k: int, max_rule_length: int | None, reg: float,
            max_thresholds: int | None) -> float:
    """One short fit that compiles the numba kernels (not a row)."""
    from rulemip.estimators import ExactRuleEnsembleRegressor

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ExactRuleEnsembleRegressor(n_rules=k, max_rule_length=max_rule_length, reg=reg,
                                   max_thresholds=max_thresholds, time_limit=2.0,
                                   preset=None).fit(X[:120], y[:120])
    return time.perf_counter() - t0


def _f(v: Any, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "—"
    return f"{v:.{digits}f}"


def print_table(rows: list[dict[str, Any]], reg: float) -> None:
    print(f"| table | k | model | size | max length | status | training MSE "
          f"| risk at reg {reg:g} | bound | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['table']} | {r['k']} | {r['model']} | {r.get('size', '—')} "
              f"| {r.get('max_length', '—')} | {r['status']} | {_f(r['mse'])} "
              f"| {_f(r['risk'])} | {_f(r.get('bound'))} | {_f(r['wall'], 3)} |")


def print_relation(rows: list[dict[str, Any]], max_rule_length: int | None) -> None:
    """Per (table, k): the k-rule risk against the best tree whose leaves are rules of the
    language (at most ``max_rule_length`` features)."""
    cap = np.inf if max_rule_length is None else max_rule_length
    for key in dict.fromkeys((r["table"], r["k"]) for r in rows):
        ours = [r for r in rows if (r["table"], r["k"]) == key and
                r["model"].startswith("rulemip")]
        trees = [r for r in rows if (r["table"], r["k"]) == key and
                 r["model"].startswith("STreeD") and r.get("max_length", np.inf) <= cap
                 and np.isfinite(r["risk"])]
        if not ours or not trees:
            continue
        o, t = ours[0], min(trees, key=lambda r: r["risk"])
        verdict = ("k-rule <= tree" if o["risk"] <= t["risk"] + 1e-9 * abs(t["risk"])
                   else "k-rule ABOVE the tree: the fit missed the optimum")
        print(f"* {key[0]} k = {key[1]}: rulemip {o['risk']:.2f} ({o['status']}) against "
              f"the tree {t['risk']:.2f} ({t['model']}, {t['size']}): {verdict}, "
              f"difference {t['risk'] - o['risk']:.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="diabetes k = 1, 2 only; rulemip 10 s per fit")
    p.add_argument("--full", action="store_true", help="also friedman1 5 000 x 10")
    p.add_argument("--tables", nargs="*", choices=["diabetes", "friedman1"],
                   help="tables to run (overrides --quick/--full's choice)")
    p.add_argument("--ks", type=int, nargs="*", help="numbers of rules (default 1 2 3)")
    p.add_argument("--time-limit", type=float, help="rulemip's seconds per fit "
                   "(default 60, 10 with --quick); STreeD gets the same limit")
    p.add_argument("--max-rule-length", type=int, default=2)
    p.add_argument("--reg", type=float, default=1e-3)
    p.add_argument("--max-thresholds", type=int, default=8)
    p.add_argument("--friedman-noise", type=float, default=1.0)
    p.add_argument("--no-rulemip", action="store_true", help="STreeD rows only")
    p.add_argument("--show-rules", action="store_true", help="print every model's rules")
    p.add_argument("--jsonl", help="append every row to this file")
    a = p.parse_args()

    tables = a.tables or (["diabetes", "friedman1"] if a.full else ["diabetes"])
    ks = a.ks or ([1, 2] if a.quick else [1, 2, 3])
    time_limit = a.time_limit or (10.0 if a.quick else 60.0)
    L = a.max_rule_length
    try:
        import pystreed  # noqa: F401
        have_streed = True
    except ImportError:
        have_streed = False
        print(INSTALL_HINT)

    rows: list[dict[str, Any]] = []
    for table in tables:
        X, y, names = load_table(table, a.friedman_noise)
        B, columns = binarize(X, a.max_thresholds)
        print(f"{table}: {X.shape[0]} x {X.shape[1]}, {B.shape[1]} indicator columns "
              f"(candidate_thresholds(X, {a.max_thresholds}))")
        for k in ks:
            if have_streed:
                depths = [k] + ([L] if L is not None and k > L else [])
                for depth in depths:
                    rows.append(streed_row(table, B, y, columns, names, k, depth, a.reg,
                                           time_limit))
            if not a.no_rulemip:
                if not any(r["model"].startswith("rulemip") for r in rows):
                    w = warm_up(X, y, k, L, a.reg, a.max_thresholds)
                    print(f"(rulemip warm-up, numba compilation: {w:.1f} s, not counted)")
                rows.append(rulemip_row(table, X, y, names, k, L, a.reg, a.max_thresholds,
                                        time_limit))
            print(f"  {table} k = {k} done", flush=True)
    print()
    print_table(rows, a.reg)
    print()
    print_relation(rows, L)
    if a.show_rules:
        for r in rows:
            print(f"\n{r['table']} k = {r['k']}, {r['model']}:")
            for text in r.get("rules", []):
                print(f"    {text}")
    if a.jsonl:
        with open(a.jsonl, "a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
