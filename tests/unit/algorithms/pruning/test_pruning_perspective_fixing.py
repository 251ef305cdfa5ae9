"""Reduced-cost fixing of the perspective branch and bound (issue 39): the all-nodes
"with i selected" dynamic program equals one dynamic program per node, a fixing never
excludes a selection below the bound it reports (every selection enumerated), the
restricted problem keeps the conflicts and q of the selections it keeps, and a search
restricted after the root still finds the brute-force optimum."""

import itertools
import math

import numpy as np
import pytest

from rulemip.algorithms.pruning.perspective import (
    FREE,
    IN,
    OUT,
    ForestArrays,
    PerspectiveProblem,
    knapsack_dp,
    knapsack_with_each,
    node_relaxation,
)
from rulemip.algorithms.pruning.perspective_bnb import perspective_bnb
from rulemip.budget import Budget

from .test_knapsack_conflicts import _forest as _random_forest
from .test_pruning_perspective import _boosted, _duplicated, _optimum


def test_with_each_is_one_dynamic_program_per_node():
    rng = np.random.default_rng(0)
    for _ in range(300):
        m = int(rng.integers(1, 14))
        forest = ForestArrays.of(_random_forest(rng, m))
        profit = rng.random(m) * (rng.random(m) < 0.8)
        cost = rng.integers(0, 3, m)
        C = int(rng.integers(0, 5))
        status = rng.choice(np.array([FREE, IN, OUT], dtype=np.int8), size=m,
                            p=[0.75, 0.1, 0.15])
        got = knapsack_with_each(profit, cost, C, forest, status)
        for i in range(m):
            if status[i] != FREE:
                assert got[i] == -math.inf
                continue
            fixed = status.copy()
            fixed[i] = IN
            want = knapsack_dp(profit, cost, C, forest, fixed)[0]
            assert got[i] == pytest.approx(want, rel=1e-12) or got[i] == want == -math.inf


def _selections(p, K):
    """Every selection (antichain of the forest, cost ≤ K) of the problem ``p``."""
    anc = [set() for _ in range(p.m)]
    for i in range(p.m):
        a = int(p.parent[i])
        while a >= 0:
            anc[i].add(a)
            a = int(p.parent[a])
    for k in range(K + 1):
        for S in itertools.combinations(range(p.m), k):
            if p.cost[list(S)].sum() <= K and not any(a in anc[b] or b in anc[a]
                                                       for a, b in itertools.combinations(S, 2)):
                yield np.array(S, dtype=np.int64)


def _obeys(S, status):
    z = np.zeros(status.shape[0], dtype=bool)
    z[S] = True
    return bool(np.all(z[status == IN]) and not np.any(z[status == OUT]))


@pytest.mark.parametrize("make", [_boosted, _duplicated])
@pytest.mark.parametrize("reg", (1.0, 10.0, 100.0))
def test_fixing_never_excludes_a_selection_below_its_bound(make, reg):
    nodes, y = make()
    K = 3
    p = PerspectiveProblem(nodes, y, K, "rule", 1.0 / reg)
    selections = [(S, p.cip.value(np.isin(np.arange(p.m), S).astype(float)))
                  for S in _selections(p, K)]
    values = np.array([v for _, v in selections])
    rng = np.random.default_rng(0)
    fixed_any = 0
    for start in (0, 1):
        status = np.zeros(p.m, dtype=np.int8) if start == 0 else p.propagate(
            np.zeros(p.m, dtype=np.int8), int(np.argmax(p.cip.Mty ** 2)))
        rel = node_relaxation(p, status, [np.flatnonzero(status == IN)], np.ones(1),
                              threshold=math.inf, rel_tol=1e-8, max_iter=300,
                              budget=Budget.unlimited())
        for alpha in (rel.alpha, y, rng.normal(size=y.shape)):
            lo = p.dual_bound(alpha, status)[0]
            for threshold in np.linspace(lo - 0.1 * abs(lo), values.max(), 7):
                fixed, least = p.fix_by_bound(alpha, status, float(threshold))
                assert np.all(fixed[status != FREE] == status[status != FREE])
                for S, v in selections:
                    if _obeys(S, status) and not _obeys(S, fixed):
                        assert v >= least - 1e-9 * max(1.0, abs(least))
                        assert least >= threshold
                fixed_any += int(np.sum(fixed != status))
    assert fixed_any > 0  # the test exercises fixings


@pytest.mark.parametrize("compress", [None, False])
def test_restricted_problem_keeps_conflicts_and_values(compress):
    """Restricted with its rows compressed (None: small enough) or not (beyond
    COMPRESS_MAX_FLOPS the QR is skipped): the same selections, q and relaxation."""
    nodes, y = _boosted(seed=3, trees=4)
    p = PerspectiveProblem(nodes, y, 3, "rule", 0.1)
    rng = np.random.default_rng(3)
    for _ in range(5):
        keep = rng.random(p.m) < 0.5
        sub = p.restricted(keep, compress=compress)
        idx = np.flatnonzero(keep)
        full = {tuple(idx[S]) for S in _selections(sub, 3)}
        want = {tuple(S) for S in _selections(p, 3) if np.all(keep[S])}
        assert full == want
        for S in list(_selections(sub, 3))[:40]:
            z_sub = np.isin(np.arange(sub.m), S).astype(float)
            z = np.isin(np.arange(p.m), idx[S]).astype(float)
            assert sub.value(z_sub) == pytest.approx(p.value(z), rel=1e-12)
        # the same relaxation (rows compressed: 40 rows, fewer kept nodes), and a dual
        # vector carried over bounds at least as well
        if compress is None:
            assert sub.row_basis is not None
            assert sub.row_basis.shape == (p.cip.M.shape[0], sub.m)
        else:
            assert sub.row_basis is None and sub.cip.M.shape == (p.cip.M.shape[0], sub.m)
        out = np.where(keep, np.int8(FREE), np.int8(OUT))
        full_rel, sub_rel = (
            node_relaxation(q, st, [np.zeros(0, dtype=np.int64)], np.ones(1),
                            threshold=math.inf, rel_tol=1e-10, max_iter=3000,
                            budget=Budget.unlimited())
            for q, st in ((p, out), (sub, np.zeros(sub.m, dtype=np.int8))))
        assert sub_rel.lower_bound == pytest.approx(full_rel.lower_bound, rel=1e-6)
        for alpha in (y, rng.normal(size=y.shape)):
            assert (sub.dual_bound(sub.dual_of(alpha))[0]
                    >= p.dual_bound(alpha, out)[0] - 1e-9 * abs(p.dual_bound(alpha, out)[0]))


@pytest.mark.parametrize("seed,trees,reg", [(0, 4, 100.0), (1, 4, 10.0), (2, 4, 10.0)])
def test_search_restricted_after_the_root_finds_the_optimum(seed, trees, reg):
    nodes, y = _boosted(seed=seed, trees=trees)
    p = PerspectiveProblem(nodes, y, 3, "rule", 1.0 / reg)
    opt = _optimum(p, 3)
    res = perspective_bnb(nodes, y, 3, gamma=1.0 / reg, mip_gap=1e-9)
    assert any("restricted" in note for note in res.notes)
    assert res.finished and res.value == pytest.approx(opt, rel=1e-7)
    assert opt * (1 - 1e-6) <= res.lower_bound <= opt + 1e-9 * max(1.0, opt)
    assert res.z.shape == (nodes.n_nodes,)


def test_rows_are_compressed_only_within_the_flop_cap(monkeypatch):
    from rulemip.algorithms.pruning import perspective

    nodes, y = _boosted(seed=3, trees=4)
    p = PerspectiveProblem(nodes, y, 3, "rule", 0.1)
    keep = np.random.default_rng(0).random(p.m) < 0.3
    n, k = p.cip.M.shape[0], int(keep.sum())
    assert k < n
    monkeypatch.setattr(perspective, "COMPRESS_MAX_FLOPS", n * k * k)
    assert p.restricted(keep).row_basis is not None
    monkeypatch.setattr(perspective, "COMPRESS_MAX_FLOPS", n * k * k - 1)
    assert p.restricted(keep).row_basis is None
