r"""Several starting models, each ended 1-swap optimal, the best kept; then kicks until
the budget is spent (squared loss; docs/explanation/local_optimality.md).

Starts: any ensembles of the problem's language (boosting presets, the engine's incumbent)
and :func:`threshold_tree_rules` — the leaves of a least-squares regression tree with
``k + 1`` leaves grown on the candidate thresholds only. Such a tree *is* a k-rule
ensemble: its leaves partition the rows, so with an intercept any k of the k + 1 leaf
indicators plus the intercept span the same piecewise-constant functions (the dropped
leaf's value becomes the intercept).

Each start is improved by :func:`rulemip.algorithms.local.rule_swaps.swap_descent`. When every
start is 1-swap optimal and time is left, a *kick* replaces one random rule of the best
model by a random box of the language and descends again; the result is kept when its
risk is lower (and it is 1-swap optimal). When the exact searches were too slow to prove
any start within its share, kicks descend by beam searches only for half the time left,
and a last exact descent from the best model tries the proof with the rest. Kicks only
improve the incumbent; they prove nothing about the bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.local.rule_swaps import SwapOutcome, refit_ensemble, swap_descent
from rulemip.boosting.space import SearchSpace
from rulemip.budget import Budget
from rulemip.rules.ensemble import RuleEnsemble, conditions_from_box
from rulemip.rules.problem import KRuleProblem
from rulemip.rules.rule import Rule

__all__ = ["MultiStartOutcome", "best_local_model", "threshold_tree_rules"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class MultiStartOutcome:
    """The best model found, where it started, its descent's outcome, and per start the
    (source, start risk, final risk, 1-swap optimal) tuples; ``kicks`` tried and kept."""

    best: SwapOutcome
    source: str
    starts: tuple[tuple[str, float, float, bool], ...]
    kicks: int
    kicks_kept: int


def threshold_tree_rules(problem: KRuleProblem, n_leaves: int, *,
                         budget: Budget | None = None) -> list[Rule]:
    """Leaves of a best-first least-squares tree with at most ``n_leaves`` leaves whose
    splits are the problem's candidate thresholds (weighted SSE reduction, ties to the
    lower index); the leaf with most weight is dropped (it is the intercept's), so at most
    ``n_leaves - 1`` rules. Leaves restricting the problem's rule length of features are
    not split further. Growing stops when ``budget`` expires (checked per feature of each
    split search: 1.1 s of splits on friedman1 5 000 × 10 ran past a spent budget); the
    leaves grown so far are returned."""
    dataset, thresholds = problem.dataset, problem.thresholds
    max_rule_length = problem.max_rule_length
    X = np.asarray(dataset.X, dtype=float)
    y = np.asarray(dataset.y, dtype=float)
    w = dataset.weights
    d = X.shape[1]
    # a leaf: (rows, lower, upper)
    leaves = [(np.ones(len(y), dtype=bool), np.full(d, -np.inf), np.full(d, np.inf))]

    def best_split(rows: NDArray[np.bool_], lo: FloatArray, hi: FloatArray
                   ) -> tuple[float, int, float]:
        best = (0.0, -1, 0.0)
        restricted = int(np.sum(np.isfinite(lo) | np.isfinite(hi)))
        wy, ww = w[rows] * y[rows], w[rows]
        total_s, total_w = float(wy.sum()), float(ww.sum())
        if total_w <= 0:
            return best
        for j in range(d):
            if budget is not None and budget.expired():
                return (0.0, -1, 0.0)
            if max_rule_length is not None and restricted >= max_rule_length and \
                    not (np.isfinite(lo[j]) or np.isfinite(hi[j])):
                continue
            ts = np.asarray(thresholds[j], dtype=float)
            ts = ts[(lo[j] < ts) & (ts < hi[j])]
            if not len(ts):
                continue
            # the sums left of every threshold from cumulative sums along the sorted
            # feature: O(n log n + m) a feature, not O(n m) (with every midpoint of
            # 100 000 rows, 10^10 operations a feature ran a minute past the budget)
            xj = X[rows, j]
            order = np.argsort(xj, kind="stable")
            cw = np.concatenate([[0.0], np.cumsum(ww[order])])
            cs = np.concatenate([[0.0], np.cumsum(wy[order])])
            pos = np.searchsorted(xj[order], ts, side="right")   # rows with x_j <= t
            wl, sl = cw[pos], cs[pos]
            wr = total_w - wl
            ok = (wl > 0) & (wr > 0)
            gain = np.full(len(ts), -np.inf)
            gain[ok] = sl[ok] ** 2 / wl[ok] + (total_s - sl[ok]) ** 2 / wr[ok] \
                - total_s * total_s / total_w
            # the threshold order's rule (a gain replaces the best only when it beats it
            # by the tolerance): only a gain above every earlier one of the feature can
            # (a lower one lost to, or tied with, that earlier one)
            prev = np.concatenate([[-np.inf], np.maximum.accumulate(gain)[:-1]])
            for i in np.flatnonzero(gain > prev):
                if gain[i] > best[0] * (1 + 1e-12) + 1e-15:
                    best = (float(gain[i]), j, float(ts[i]))
        return best

    while len(leaves) < n_leaves:
        splits = [best_split(*leaf) for leaf in leaves]
        i = int(np.argmax([s[0] for s in splits]))
        gain, j, t = splits[i]
        if j < 0 or gain <= 0:
            break
        rows, lo, hi = leaves.pop(i)
        lo_left, hi_left = lo.copy(), hi.copy()
        hi_left[j] = t
        lo_right, hi_right = lo.copy(), hi.copy()
        lo_right[j] = t
        leaves.append((rows & (X[:, j] <= t), lo_left, hi_left))
        leaves.append((rows & (X[:, j] > t), lo_right, hi_right))
    if len(leaves) <= 1:
        return []
    heaviest = int(np.argmax([float(w[rows].sum()) for rows, _, _ in leaves]))
    return [Rule(conditions_from_box(lo, hi, dataset.encoder), 1.0)
            for i, (_, lo, hi) in enumerate(leaves) if i != heaviest]


def _random_box(space: SearchSpace, rng: np.random.Generator, problem: KRuleProblem) -> Rule:
    """A random box of one or two features (one when the problem's rules have one) with
    candidate-threshold bounds."""
    thresholds = [t for t in space.thresholds]
    usable = [j for j in range(len(thresholds)) if len(thresholds[j])]
    d = len(thresholds)
    lo, hi = np.full(d, -np.inf), np.full(d, np.inf)
    n_feat = 1 if problem.max_rule_length == 1 or len(usable) < 2 \
        else int(rng.integers(1, 3))
    for j in rng.choice(usable, size=n_feat, replace=False):
        t = thresholds[j]
        if rng.random() < 0.5:
            lo[j] = t[int(rng.integers(len(t)))]
        else:
            hi[j] = t[int(rng.integers(len(t)))]
    return Rule(conditions_from_box(lo, hi), 1.0)


def best_local_model(problem: KRuleProblem, starts: Sequence[tuple[str, RuleEnsemble]], *,
                     budget: Budget, kicks: bool = True, seed: int = 0,
                     descent_share: float = 0.5, heuristic_share: float = 0.5
                     ) -> MultiStartOutcome | None:
    """Descend every start to 1-swap optimality (best start first, each given an equal
    share of the time left — of ``descent_share`` of it when ``kicks`` follow), keep the
    best; with ``kicks`` spend the rest of ``budget`` on kicks from the best model (module
    docstring; beam-only kicks within ``heuristic_share`` of it when no start was proved).
    None without starts. The fit's plan passes its shares
    (:data:`rulemip.algorithms.fit_plan.SHARES`)."""
    if not starts:
        return None
    dataset, n_rules = problem.dataset, problem.n_rules
    reg, fit_intercept = problem.reg, problem.fit_intercept
    space = SearchSpace.build(dataset.X, thresholds=problem.thresholds)
    scored = []
    for name, ens in starts:
        model, risk = refit_ensemble(dataset, list(ens.rules)[:n_rules], reg=reg,
                                     fit_intercept=fit_intercept, template=ens)
        scored.append((risk, name, model))
    scored.sort(key=lambda s: s[0])
    best: SwapOutcome | None = None
    source = ""
    record: list[tuple[str, float, float, bool]] = []
    for i, (risk, name, model) in enumerate(scored):
        if budget.expired():
            break
        # with kicks to follow, the starts' descents get half the time (and work): a box
        # search too slow to prove anything must not leave the kicks nothing
        part = (descent_share if kicks else 1.0) / (len(scored) - i)
        share = budget.fraction(part)
        out = swap_descent(problem, model, space=space, budget=share)
        record.append((name, risk, out.risk, out.one_swap_optimal))
        if best is None or out.risk < best.risk - 1e-12 * max(1.0, abs(best.risk)) or \
                (out.risk <= best.risk and out.one_swap_optimal and not best.one_swap_optimal):
            best, source = out, name
    if best is None:
        return None
    rng = np.random.default_rng(seed)
    tried = kept = 0
    # the exact searches could not prove the best start (too slow for the budget): kick
    # with beam-only descents for half the time left, then one exact descent (the proof)
    heuristic = kicks and not best.one_swap_optimal and budget.bounded
    phase = budget.fraction(heuristic_share) if heuristic else budget
    while kicks and (best.one_swap_optimal or heuristic) and not phase.expired() and \
            phase.bounded and best.ensemble.rules:
        tried += 1
        phase.charge()                      # a kick is a unit of work (plus its searches)
        rules = list(best.ensemble.rules)
        rules[int(rng.integers(len(rules)))] = _random_box(space, rng, problem)
        model, _ = refit_ensemble(dataset, rules, reg=reg, fit_intercept=fit_intercept,
                                  template=best.ensemble)
        out = swap_descent(problem, model, space=space, budget=phase, exact=not heuristic)
        if (out.one_swap_optimal or heuristic) and \
                out.risk < best.risk - 1e-9 * max(1.0, abs(best.risk)):
            best, source = out, f"{source} + kick"
            kept += 1
    if heuristic and not budget.expired():
        out = swap_descent(problem, best.ensemble, space=space, budget=budget)
        if out.risk <= best.risk:
            best = out
    if not math.isfinite(best.risk):
        return None
    return MultiStartOutcome(best, source, tuple(record), tried, kept)
