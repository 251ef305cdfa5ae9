"""Fast paths of the rule search equal the simple one-cover-at-a-time computations.

- :func:`batch_refinements` (padded cumulative sums over many covers) returns bitwise the
  prefix sums of :meth:`SearchSpace.refinements` (one cover, cumulative-sum path);
- :func:`batch_group_refinements` (per-group bincounts) the same children, sums up to
  rounding;
- :func:`batch_greedy_bounds` bitwise :meth:`RoundObjective.bound`;
- :func:`find_rule` (chunked, batched) expands exactly the nodes of the sequential
  [OGB] Algorithm 2 written out below and returns the same query (greedy, beam); the
  depth-first branch-and-bound finds the same optimum.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rulemip.boosting import OrthonormalBasis, SearchSpace, find_rule, make_objective
from rulemip.boosting import space as S
from rulemip.boosting.batch import (
    batch_greedy_bounds,
    batch_group_refinements,
    batch_refinements,
)


def _instance(seed: int):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 50)), int(rng.integers(1, 5))
    X = rng.integers(0, int(rng.integers(1, 10)), size=(n, d)).astype(float)
    space = dataclasses.replace(SearchSpace.build(X), GROUPED_MAX=0)  # cumsum reference path
    covers = [np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
              for _ in range(int(rng.integers(1, 8)))]
    return rng, space, covers


def _objective(rng, n, name):
    basis = OrthonormalBasis(n)
    basis.add(np.ones(n))
    for _ in range(int(rng.integers(0, 4))):
        basis.add((rng.random(n) < 0.4).astype(float))
    w = rng.uniform(0.5, 2.0, n) if rng.random() < 0.3 else None
    return make_objective(name, rng.normal(size=n), rng.uniform(0.1, 2.0, n), weights=w,
                          reg=0.2, basis=basis)


@pytest.mark.parametrize("seed", range(40))
def test_batch_refinements_equal_one_cover(seed):
    rng, space, covers = _instance(seed)
    stats = rng.normal(size=(space.n, int(rng.integers(1, 6))))
    ref = batch_refinements(space.orders, space.groups_t, covers, stats,
                            max_elements=int(rng.integers(1, 400)))
    grp = batch_group_refinements(space.groups_flat, space.d, space.gmax, covers, stats,
                                  max_elements=int(rng.integers(1, 4000)))
    start = 0
    for b, idx in enumerate(covers):
        jj, a_up, a_lo, (prefix,) = space.refinements(idx, [stats])
        sl = slice(start, start + len(jj))
        assert ref.counts[b] == grp.counts[b] == len(jj)
        np.testing.assert_array_equal(ref.node[sl], b)
        np.testing.assert_array_equal(ref.feature[sl], jj)
        np.testing.assert_array_equal(ref.a_up[sl], a_up)
        np.testing.assert_array_equal(ref.a_lo[sl], a_lo)
        np.testing.assert_array_equal(ref.prefix[sl], prefix)          # bitwise
        np.testing.assert_array_equal(grp.feature[sl], jj)
        np.testing.assert_array_equal(grp.a_up[sl], a_up)
        np.testing.assert_array_equal(grp.a_lo[sl], a_lo)
        np.testing.assert_allclose(grp.prefix[sl], prefix, rtol=1e-12, atol=1e-12)
        # each prefix really is the sum over the box x_j <= t[a_up] within the cover
        for k in range(len(jj)):
            inside = idx[space.groups_t[jj[k], idx] <= a_up[k]]
            np.testing.assert_allclose(prefix[k], stats[inside].sum(axis=0), atol=1e-12)
        start += len(jj)
    assert start == len(ref.node) == len(grp.node)


def _closure_flags_brute(space, idx, feature, a_up, a_lo):
    """LCM's prefix-preserving test written out: the child keeps, on every feature
    ``j' < j``, the smallest and the largest threshold group of its parent's cover."""
    G = space.groups_t[:, idx]
    lo, hi = G.min(axis=1), G.max(axis=1)
    up_ok, lo_ok = [], []
    for j, au, al in zip(feature, a_up, a_lo, strict=True):
        for side, keep in ((up_ok, G[j] <= au), (lo_ok, G[j] > al)):
            Gc = G[:j, keep]
            side.append(bool(np.all(Gc.min(axis=1) == lo[:j]) and
                             np.all(Gc.max(axis=1) == hi[:j])))
    return np.array(up_ok, bool), np.array(lo_ok, bool)


@pytest.mark.parametrize("seed", range(40))
def test_closure_flags_equal_on_both_paths(seed):
    """The sorted path's and the group path's prefix-preserving flags equal the
    definition, cover by cover (first features restricted as in branch-and-bound)."""
    rng, space, covers = _instance(seed)
    stats = rng.normal(size=(space.n, 2))
    closures = np.stack([np.stack([space.groups_t[:, c].min(axis=1),
                                   space.groups_t[:, c].max(axis=1)]) for c in covers])
    first = rng.integers(0, space.d, size=len(covers)).astype(np.intp)
    ref = batch_refinements(space.orders, space.groups_t, covers, stats,
                            max_elements=int(rng.integers(1, 400)), first_feature=first,
                            closures=closures)
    grp = batch_group_refinements(space.groups_flat, space.d, space.gmax, covers, stats,
                                  max_elements=int(rng.integers(1, 4000)),
                                  first_feature=first, closures=closures)
    np.testing.assert_array_equal(ref.counts, grp.counts)
    np.testing.assert_array_equal(ref.feature, grp.feature)
    np.testing.assert_array_equal(ref.a_up, grp.a_up)
    start = 0
    for b, idx in enumerate(covers):
        sl = slice(start, start + ref.counts[b])
        up, lo = _closure_flags_brute(space, idx, ref.feature[sl], ref.a_up[sl], ref.a_lo[sl])
        np.testing.assert_array_equal(ref.up_ok[sl], up)
        np.testing.assert_array_equal(ref.lo_ok[sl], lo)
        np.testing.assert_array_equal(grp.up_ok[sl], up)
        np.testing.assert_array_equal(grp.lo_ok[sl], lo)
        start += ref.counts[b]


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("name", ["gb", "xgb", "ogb"])
def test_batch_greedy_bounds_equal_bound(seed, name):
    rng, space, covers = _instance(seed)
    obj = _objective(rng, space.n, name)
    assert obj._key_order is not None
    got = batch_greedy_bounds(obj._key_order, covers, obj.stats, obj.from_sums,
                              max_elements=int(rng.integers(1, 400)))
    np.testing.assert_array_equal(got, [obj.bound(idx) for idx in covers])


# ------------------------------------------------------------------ sequential reference
def _total(stats, idx):
    """Sum of the rows ``idx`` in index order (the search's cover totals are sequential
    sums, bitwise)."""
    return np.add.reduceat(stats[idx], [0], axis=0)[0]


def _reference_search(space, obj, search, max_len, allow_empty, width=5):
    """[OGB] Algorithm 2 one node at a time (the pre-batching implementation): levels in
    order of decreasing child value; a node is expanded iff (bnb) its cheap bound and its
    bound beat the incumbent at that moment; redundant covers skipped."""
    d, n = space.d, space.n
    w = math.inf if search == "bnb" else (1 if search == "greedy" else width)
    tighten = search != "bnb"
    stop_len = math.inf if (tighten or max_len is None) else max_len
    root = (np.arange(n), np.full(2 * d, -1), 0, math.inf)
    best_val = obj.value(root[0]) if allow_empty else -math.inf
    best = (root[0], root[1]) if allow_empty else None
    n_exp = n_ch = 0
    seen = {root[0].tobytes()}
    level = [root]
    while level:
        kids = []   # (value, bound, idx, box, length)
        for idx, box, length, cheap in level:
            if idx is not root[0]:
                if search == "bnb" and (cheap <= best_val or length >= stop_len):
                    continue
                if obj.bound(idx) <= best_val:
                    continue
            n_exp += 1
            jj, a_up, a_lo, pre = space.refinements(idx, [obj.stats] + (
                [obj.bound_stats] if obj.bound_stats is not None else []))
            own = []
            for upper in (True, False):
                for k in range(len(jj)):
                    j = int(jj[k])
                    a = int(a_up[k] if upper else a_lo[k])
                    slot = j + d if upper else j
                    if not tighten and box[slot] >= 0:
                        continue
                    nl = length + int(box[slot] < 0)
                    if max_len is not None and nl > max_len:
                        continue
                    s = pre[0][k] if upper else _total(obj.stats, idx) - pre[0][k]
                    v = float(obj.from_sums(s))
                    if obj.bound_stats is not None:
                        bs = pre[1][k] if upper else _total(obj.bound_stats, idx) - pre[1][k]
                        bd = float(obj.bound_from_sums(bs))
                    else:
                        bd = math.inf
                    nb = box.copy()
                    nb[slot] = a
                    gj = space.groups_t[j, idx]
                    own.append((v, bd, idx[gj <= a] if upper else idx[gj > a], nb, nl))
            if not own:
                continue
            n_ch += len(own)
            top = max(range(len(own)), key=lambda i: (own[i][0], -i))
            if own[top][0] > best_val:
                best_val, best = own[top][0], (own[top][2], own[top][3])
            kids += [c for c in own if c[1] > best_val]
        order = sorted(range(len(kids)), key=lambda i: -kids[i][0])   # stable
        level, boxes = [], set()
        for i in order:
            v, bd, idx, box, length = kids[i]
            if w == math.inf and (bd <= best_val or length >= stop_len):
                continue   # (the batched search re-checks the bound when it gets there)
            if box.tobytes() in boxes:
                continue
            boxes.add(box.tobytes())
            if idx.tobytes() in seen:
                continue
            seen.add(idx.tobytes())
            level.append((idx, box, length, bd))
            if len(level) >= w:
                break
    return best_val, best, n_exp, n_ch


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("search", ["greedy", "beam", "bnb"])
def test_find_rule_equals_sequential_search(seed, search):
    rng, space, _ = _instance(seed)
    name = ("gs", "gb", "xgb", "ogb")[seed % 4]
    obj = _objective(rng, space.n, name)
    for max_len in (None, 1, 2):
        for allow_empty in (False, True):
            val, best, n_exp, n_ch = _reference_search(space, obj, search, max_len, allow_empty)
            res = find_rule(space, obj, search=search, max_propositions=max_len,
                            allow_empty=allow_empty, grouped=False)
            if best is None:
                assert res is None
                continue
            assert res is not None
            if search == "bnb":
                # depth first in another order: the same optimum, other nodes
                assert res.value == pytest.approx(val, rel=1e-12, abs=1e-12)
                assert res.bound >= val * (1 - 1e-9) - 1e-12
                continue
            assert res.value == val                                   # bitwise
            q = np.zeros(space.n, bool)
            q[best[0]] = True
            np.testing.assert_array_equal(res.query, q)
            assert res.length == int(np.sum(best[1] >= 0))
            assert (res.n_expanded, res.n_children) == (n_exp, n_ch)   # same nodes
            grouped = find_rule(space, obj, search=search, max_propositions=max_len,
                                allow_empty=allow_empty, grouped=True)
            assert grouped is not None
            assert grouped.value == pytest.approx(val, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("allow_empty", [False, True])
def test_fallback_and_kernel_search_one_language(seed, allow_empty):
    """Issue 30, item 6: with cut points outside the data's range a box of one proposition
    covers every row. The compiled search counts it as a candidate when the empty query is
    not one; the set enumeration (``search="enumerate"``, also bnb's fallback) never
    reached it and reported ``optimal`` below it. Both now search one language: same value,
    same status, and a brute force over every box of at most two propositions per feature
    agrees."""
    import itertools

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(8, 2))
    ths = [np.array([-5.0, 0.0, 5.0]), np.sort(rng.normal(size=2))]
    space = SearchSpace.build(X, thresholds=ths)
    obj = make_objective("gs", rng.normal(size=8) + 1.0)
    out = {}
    for search in ("bnb", "enumerate"):
        out[search] = find_rule(space, obj, search=search, allow_empty=allow_empty)
    a, b = out["bnb"], out["enumerate"]
    assert a.status == b.status == "optimal"
    assert b.value == pytest.approx(a.value, rel=1e-12)
    assert b.bound >= b.value * (1 - 1e-12)
    best = -math.inf
    cuts = [[-math.inf, *t.tolist(), math.inf] for t in ths]
    for box in itertools.product(*[list(itertools.combinations(c, 2)) for c in cuts]):
        q = np.ones(8, dtype=bool)
        for j, (lo, hi) in enumerate(box):
            q &= (X[:, j] > lo) & (X[:, j] <= hi)
        empty_query = all(math.isinf(lo) and math.isinf(hi) for lo, hi in box)
        if q.any() and (allow_empty or not empty_query):
            best = max(best, float(obj.value(np.flatnonzero(q))))
    assert a.value == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_bnb_falls_back_to_the_enumeration_when_its_masks_do_not_fit(seed):
    """``search="bnb"`` runs the compiled range search when its prefix masks fit half the
    memory budget, else the set enumeration — the very search ``search="enumerate"``
    names: below that budget both return the same box, value, bound, status and node
    count (a valid bound even when the budget stops them); with room, both prove the
    same optimum."""
    from rulemip.boosting.boxsearch.range_search import mask_bytes

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    space = SearchSpace.build(X, 4)
    obj = make_objective("gs", rng.normal(size=40))
    tight = 2 * mask_bytes(space) - 1
    fallback = find_rule(space, obj, search="bnb", max_memory=tight)
    enumerated = find_rule(space, obj, search="enumerate", max_memory=tight)
    assert fallback is not None and enumerated is not None
    assert (fallback.value, fallback.bound, fallback.status, fallback.n_expanded) == (
        enumerated.value, enumerated.bound, enumerated.status, enumerated.n_expanded)
    assert np.array_equal(fallback.lower, enumerated.lower)
    assert np.array_equal(fallback.upper, enumerated.upper)
    compiled = find_rule(space, obj, search="bnb")
    roomy = find_rule(space, obj, search="enumerate")
    assert compiled is not None and roomy is not None
    assert compiled.certified and roomy.certified
    assert roomy.value == pytest.approx(compiled.value, rel=1e-12)
    assert enumerated.value <= compiled.value * (1 + 1e-12)
    assert enumerated.bound >= compiled.value * (1 - 1e-12)


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("grouped", [False, True])
def test_expansion_in_windows_equals_the_whole_expansion(seed, grouped, monkeypatch):
    """Windows of features (the budget asked between them) give exactly the whole
    expansion's children, in its order; stopped at once, exactly its children in the
    windows up to the first that has one."""
    rng, space, covers = _instance(seed)
    obj = _objective(rng, space.n, ("gs", "gb", "xgb", "ogb")[seed % 4])
    kernel = S._make_kernel(space, obj, grouped)
    nodes = [S._Node(idx, np.full(2 * space.d, -1, np.int64), 0, -math.inf)
             for idx in covers]
    whole = S._expand(space, obj, kernel, nodes, None, True)
    points = sum(len(c) for c in covers)
    monkeypatch.setattr(S, "WINDOW_ELEMENTS", points * int(rng.integers(1, space.d + 1)))
    width = max(1, S.WINDOW_ELEMENTS // points)
    fields = [f.name for f in dataclasses.fields(whole) if f.name != "parents"]
    ch, complete = S.expand_in_windows(space, obj, kernel, nodes, None, True, lambda: False)
    assert complete
    for f in fields:
        np.testing.assert_array_equal(getattr(ch, f), getattr(whole, f))   # bitwise
    first, complete = S.expand_in_windows(space, obj, kernel, nodes, None, True, lambda: True)
    # windows up to the first with a child
    end = space.d if not len(whole.feature) else \
        (int(whole.feature.min()) // width + 1) * width
    assert complete == (end >= space.d)
    keep = whole.feature < end
    for f in fields:
        np.testing.assert_array_equal(getattr(first, f), getattr(whole, f)[keep])


@pytest.mark.parametrize("seed", range(8))
def test_greedy_on_a_spent_budget_returns_the_best_proposition_of_its_first_window(
        seed, monkeypatch):
    from rulemip.budget import Budget

    rng = np.random.default_rng(100 + seed)
    n, d = 60, 4
    X = np.round(rng.normal(size=(n, d)), 1)
    space = SearchSpace.build(X)
    obj = make_objective("gb", rng.normal(size=n))
    monkeypatch.setattr(S, "WINDOW_ELEMENTS", 2 * n)         # two features a window
    res = find_rule(space, obj, search="greedy", budget=Budget.from_time_limit(0.0))
    assert res is not None and res.status == "time_limit" and res.length == 1
    # brute force over the single propositions: the best of features 0, 1 is returned,
    # and the bound covers every rule (the best proposition of all features too)
    best = {}
    for j in range(d):
        for t in space.thresholds[j]:
            for q in (X[:, j] <= t, X[:, j] > t):
                if q.any() and not q.all():
                    best[j] = max(best.get(j, -math.inf), float(obj.value(np.flatnonzero(q))))
    assert res.value == pytest.approx(max(best[0], best[1]), rel=1e-12)
    assert res.bound >= max(best.values()) * (1 - 1e-12)
    assert res.bound >= find_rule(space, obj, search="bnb").value * (1 - 1e-12)


def test_a_spent_work_limit_does_not_cut_the_scan_of_the_first_level(monkeypatch):
    """The windows stop at the *deadline* only: under a spent work limit the first level
    is scanned whole (a cut there would depend on the clock), so the rule is the best
    single proposition of every feature."""
    from rulemip.budget import Budget

    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(60, 4)), 1)
    space = SearchSpace.build(X)
    obj = make_objective("gb", rng.normal(size=60))
    monkeypatch.setattr(S, "WINDOW_ELEMENTS", 60)             # one feature a window
    spent = Budget.from_time_limit(None, work_limit=1)
    spent.charge(1)
    cut = find_rule(space, obj, search="greedy", budget=spent)
    whole = find_rule(space, obj, search="greedy", max_propositions=1)
    assert cut is not None and whole is not None and cut.status == "work_limit"
    assert cut.value == whole.value
