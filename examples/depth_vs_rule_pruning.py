"""Depth weighting versus rule weighting when pruning a tree ensemble ([PRUNE] Fig. 7).

One gradient-boosting ensemble is fitted on Friedman-1 data and pruned twice by
:class:`rulemip.TreeRuleExtractor` with ``engine="path"`` (a regularization path of the
penalized problem, one model per lambda):

* ``attribute="rule"``: every rule costs 1, so the path trades the number of rules;
* ``attribute="depth"``: a rule costs its depth, so deep rules are expensive.

For every number of rules reached by both paths, the script prints the mean depth of the
rules (the least-risk model of that size on each path) and saves a figure of mean depth
versus number of rules. Depth weighting gives shallower rule sets at equal size.

Run:  python examples/depth_vs_rule_pruning.py [--small] [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.ensemble import GradientBoostingRegressor

import rulemip


def by_size(model: rulemip.TreeRuleExtractor) -> dict[int, tuple[float, float]]:
    """Number of rules -> (mean depth, training risk) of the least-risk path model."""
    out: dict[int, tuple[float, float]] = {}
    depth = model.nodes_.depth
    for pm in model.path_.models:
        support = np.asarray(pm.support, dtype=np.int64)
        k = len(support)
        if k == 0:
            continue
        cand = (float(depth[support].mean()), float(pm.train_risk))
        if k not in out or cand[1] < out[k][1]:
            out[k] = cand
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true", help="smaller data and ensemble "
                        "(used by the tests)")
    parser.add_argument("--out", default=None, help="directory of the figure")
    args = parser.parse_args(argv)

    n, trees, n_lambdas = (150, 8, 15) if args.small else (1000, 50, 40)
    X, y = make_friedman1(n_samples=n, noise=1.0, random_state=0)
    ensemble = GradientBoostingRegressor(n_estimators=trees, max_depth=3, learning_rate=0.2,
                                         random_state=0).fit(X, y)
    sizes = {}
    for attribute in ("rule", "depth"):
        model = rulemip.TreeRuleExtractor(ensemble, prefit=True, attribute=attribute,
                                          engine="path", n_rules=10**6, reg=1.0,
                                          n_lambdas=n_lambdas, time_limit=120)
        model.fit(X, y)
        sizes[attribute] = by_size(model)

    common = sorted(set(sizes["rule"]) & set(sizes["depth"]))
    print(f"{trees} trees of depth 3 on Friedman-1 (n = {n}); mean rule depth by size")
    print("rules  depth(rule weighting)  depth(depth weighting)")
    for k in common:
        print(f"{k:5d}  {sizes['rule'][k][0]:21.3f}  {sizes['depth'][k][0]:22.3f}")
    if common:
        gap = np.mean([sizes["rule"][k][0] - sizes["depth"][k][0] for k in common])
        print(f"mean depth difference (rule - depth weighting): {gap:+.3f}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for attribute, style in (("rule", "o-"), ("depth", "s--")):
        ks = sorted(sizes[attribute])
        ax.plot(ks, [sizes[attribute][k][0] for k in ks], style,
                label=f"{attribute} weighting")
    ax.set_xlabel("number of rules")
    ax.set_ylabel("mean rule depth")
    ax.set_title("Depth vs rule weighting ([PRUNE] Fig. 7)")
    ax.legend()
    fig.tight_layout()
    out = Path(args.out or tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    path = out / "depth_vs_rule_pruning.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"figure written to {path}")


if __name__ == "__main__":
    main()
