"""The compiled exact box search (rulemip.boosting.boxsearch.kernel / range_search) against brute
force: exact optima for every objective, admissible and exact node bounds, agreement with a
plain-numpy reference evaluation node by node, valid results under every limit."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rulemip.boosting.boxsearch import kernel as K
from rulemip.boosting.boxsearch.range_search import box_search, kernel_problem
from rulemip.boosting.objectives import (
    OrthonormalBasis,
    make_objective,
    ridge_gain_objective,
)
from rulemip.boosting.space import SearchSpace


def _space(seed: int, n: int = 16, d: int = 3, cuts: int = 3) -> tuple[SearchSpace, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, cuts + 2, size=(n, d)).astype(float) + rng.normal(0, 1e-3, (n, d))
    return SearchSpace.build(X, cuts), rng.normal(size=n)


def _objectives(g: np.ndarray, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed + 100)
    n = len(g)
    h = rng.uniform(0.1, 2.0, n)
    basis = OrthonormalBasis(n)
    basis.add((rng.random(n) < 0.5).astype(float))
    with_intercept = OrthonormalBasis(n)      # a constant column: exact c_int W² term
    with_intercept.add(np.ones(n))
    with_intercept.add((rng.random(n) < 0.3).astype(float))
    first_round = OrthonormalBasis(n)
    first_round.add(np.ones(n))
    return {
        "ogb-int": make_objective("ogb", g, basis=with_intercept),
        "ogb-first": make_objective("ogb", g, basis=first_round),
        "gs": make_objective("gs", g),
        "gb": make_objective("gb", g),
        "xgb": make_objective("xgb", g, h, reg=0.3),
        "ogb": make_objective("ogb", g, basis=basis),
        "ridge": ridge_gain_objective(g, reg=0.5, fit_intercept=True),
        "ridge-0": ridge_gain_objective(g, reg=0.0, fit_intercept=True),
        "ridge-noint": ridge_gain_objective(g, reg=1e-3, fit_intercept=False),
    }


def _boxes(space: SearchSpace):
    """Every box: per feature a pair a <= b of groups, as (a, b) arrays."""
    per = [[(a, b) for a in range(len(t) + 1) for b in range(a, len(t) + 1)]
           for t in space.thresholds]
    for combo in itertools.product(*per):
        yield np.array([c[0] for c in combo]), np.array([c[1] for c in combo])


def _brute(space: SearchSpace, obj, allow_empty: bool, max_len: int | None) -> float:
    m = np.array([len(t) for t in space.thresholds])
    best = -math.inf
    for a, b in _boxes(space):
        length = int((a > 0).sum() + (b < m).sum())
        if (length == 0 and not allow_empty) or (max_len is not None and length > max_len):
            continue
        q = np.all((a <= space.groups_t.T) & (b >= space.groups_t.T), axis=1)
        best = max(best, obj.value(q))
    return best


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", ["gs", "gb", "xgb", "ogb", "ogb-int", "ogb-first", "ridge",
                                  "ridge-0", "ridge-noint"])
@pytest.mark.parametrize("allow_empty,max_len", [(False, None), (True, None), (False, 1),
                                                 (False, 2)])
def test_exact_against_brute_force(seed, name, allow_empty, max_len):
    space, g = _space(seed)
    obj = _objectives(g, seed)[name]
    want = _brute(space, obj, allow_empty, max_len)
    res = box_search(space, obj, allow_empty=allow_empty, max_propositions=max_len)
    assert res is not None
    assert res.value == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert res.status == "optimal" and res.certified
    assert res.bound >= want - 1e-12 and res.bound <= want * (1 + 1e-9) + 1e-12
    # the returned box really covers what it says and respects the length
    inside = np.all((res.lower < space.X) & (res.upper >= space.X), axis=1)
    np.testing.assert_array_equal(inside, res.query)
    assert res.length == int(np.isfinite(res.lower).sum() + np.isfinite(res.upper).sum())
    if max_len is not None:
        assert res.length <= max_len
    if not allow_empty:
        assert res.length >= 1


# ------------------------------------------------------------------ node by node
def _reference_evaluate(R, G, m, S, params, mode, allow_empty, max_len):
    """Plain numpy evaluation of one node (what box_kernel.evaluate computes)."""
    R = R.copy()
    d = R.shape[1]
    forced = int((R[0] > 0).sum() + (R[3] < m).sum())
    if np.any(R[0] > R[3]) or (max_len >= 0 and forced > max_len):
        return -1.0, R, None
    outer = np.all((R[0] <= G) & (R[3] >= G), axis=1)
    best_cnt, split = 0, (-1, 0, 0)
    alt = False
    for j in range(d):
        if R[1, j] > R[0, j]:
            cnt = int((outer & (G[:, j] <= R[1, j] - 1)).sum())
            if cnt == 0:
                alt = True
                R[1, j] = R[0, j]
            elif cnt > best_cnt:
                best_cnt, split = cnt, (j, 0, 0)
        if R[3, j] > R[2, j]:
            cnt = int((outer & (G[:, j] > R[2, j])).sum())
            if cnt == 0:
                R[2, j] = R[3, j]
            elif cnt > best_cnt:
                best_cnt, split = cnt, (j, 1, 0)
    if split[0] >= 0:
        j, side = split[0], split[1]
        lo, hi = (R[0, j], R[1, j] - 1) if side == 0 else (R[2, j], R[3, j] - 1)
        base = 0 if side == 0 else int((outer & (G[:, j] <= R[2, j])).sum())
        half = (best_cnt + 1) // 2
        cut = next(s for s in range(lo, hi + 1)
                   if int((outer & (G[:, j] <= s)).sum()) - base >= half or s == hi)
        split = (j, side, cut)
    inner = outer & np.all((R[1] <= G) & (R[2] >= G), axis=1)
    und = np.flatnonzero(outer & ~inner)
    c0, c1, c2, tiny, eps, gnorm, _, cint = params[:8]

    def ratio(s, c0, c1, c2, tiny):
        D = c0 + c1 * s[1] + c2 * s[1] ** 2
        return abs(s[0]) / math.sqrt(D) if tiny < D else 0.0

    def F(s):
        if mode == K.MODE_RATIO:
            return ratio(s, c0, c1, c2, tiny)
        par = cint * s[1] ** 2 + float(np.sum(s[2:] ** 2))
        return abs(s[0]) / (math.sqrt(max(s[1] - par, 0.0)) + eps)

    def scan(c0, c1, c2, tiny):
        vals = [ratio(s_in, c0, c1, c2, tiny)]
        for k in range(1, len(und) + 1):
            vals.append(ratio(s_in + S[und[:k]].sum(axis=0), c0, c1, c2, tiny))
            vals.append(ratio(s_in + S[und[k:]].sum(axis=0), c0, c1, c2, tiny))
        vals.append(ratio(s_in + S[und].sum(axis=0), c0, c1, c2, tiny))
        return max(vals)

    s_in = S[inner].sum(axis=0)
    v_out = F(s_in + S[und].sum(axis=0))
    if split[0] < 0:
        trivial = not np.any(R[0] > 0) and not np.any(R[3] < m)
        if trivial and not allow_empty and not alt:
            return -1.0, R, split
        return v_out, R, split
    if mode == K.MODE_OGB:
        def one_signed(col, base):
            return max(base + col[col > 0].sum(), -(base + col[col < 0].sum()))

        A = max(one_signed(S[und, 0], s_in[0]), 0.0)
        if A <= 0:
            return 0.0, R, split
        b2 = A * gnorm / (A + eps * gnorm) * (1 + 1e-9) if math.isfinite(gnorm) else A / eps
        C = sum(one_signed(S[und, k], s_in[k]) ** 2 for k in range(2, S.shape[1]))
        w_in, w_out = s_in[1], s_in[1] + S[und, 1].sum()
        w0 = params[8]
        if w0 > 0:                # the size bound (equal weights)
            lev = (S[:, 2:] ** 2).sum(axis=1) / w0 ** 2
            t_in, tau_max = float((w0 * lev[inner]).sum()), float(lev[und].max(initial=0.0))
            vals = []
            for order in (und, und[::-1]):
                for p in range(len(und) + 1):
                    g = s_in[0] + S[order[:p], 0].sum()
                    g = g if order is und else -g
                    wp = w_in + p * w0
                    r_lo = max(wp * (1 - cint * wp - t_in - p * w0 * tau_max),
                               wp - cint * wp * wp - C)
                    vals.append(max(g, 0.0) / (math.sqrt(max(r_lo, 0.0)) + eps))
            b2 = min(b2, max(vals) * (1 + 1e-9))
        c0b = eps ** 2 - C
        if min(c0b + w - cint * w * w for w in (w_in, w_out)) > 0:
            b2 = min(b2, scan(c0b, 1.0, -cint, 0.0) * (1 + 1e-9))
        return min(b2, _reference_chord(S, inner, und, params, C)), R, split
    return max(F(s_in), v_out, scan(c0, c1, c2, tiny)), R, split


def _chord_terms(S, inner, und, params):
    """The chord bound's pieces (box_bounds._chord_bound): the constant ``K``, the
    statistic ``h`` of the inner cover and of every undecided row, the chord coefficients
    and the rounding slack."""
    eps, cint = params[4], params[7]
    s_in = S[inner].sum(axis=0)
    lo = s_in[2:] + np.minimum(S[und, 2:], 0.0).sum(axis=0)
    hi = s_in[2:] + np.maximum(S[und, 2:], 0.0).sum(axis=0)
    w_in, w_out = s_in[1], s_in[1] + S[und, 1].sum()
    alpha = 1.0 - cint * (w_in + w_out)
    coef = lo + hi
    k0 = eps * eps + cint * w_in * w_out + float(np.sum(lo * hi))
    slack = 1e-10 * (w_out * (1.0 + cint * w_out) + float(np.sum((abs(lo) + abs(hi)) ** 2))
                     + 1.0)
    h_in = alpha * w_in - float(coef @ s_in[2:])
    h = alpha * S[und, 1] - S[und, 2:] @ coef
    return k0, h_in, h, coef, float(np.sum(lo * hi)), slack


def _zonotope_max(g0, h0, g, h):
    """max of (g0 + G)² / (h0 + H) over the 2-d zonotope (g0, h0) + Σ [0, 1] (g_i, h_i),
    by its vertices: the half-plane sets {i : <u, (g_i, h_i)> > 0} for the directions u
    next to the normal of every generator (independent of the kernel's sort)."""
    best = max(g0 * g0 / h0, (g0 + g.sum()) ** 2 / (h0 + h.sum()))
    for gi, hi in zip(g, h, strict=True):
        for rot in (1e-7, -1e-7):
            base = math.atan2(gi, -hi) + rot       # normal of the generator, turned
            for u in ((math.cos(base), math.sin(base)), (-math.cos(base), -math.sin(base))):
                sel = u[0] * g + u[1] * h > 0
                best = max(best, (g0 + g[sel].sum()) ** 2 / (h0 + h[sel].sum()))
    return best


def _reference_chord(S, inner, und, params, C):
    """Orthogonal boosting's chord bound (iv) in plain numpy."""
    eps, cint, w0 = params[4], params[7], params[8]
    k0, h_in, h, coef, klh, slack = _chord_terms(S, inner, und, params)
    g = S[und, 0]
    s_in = S[inner].sum(axis=0)
    den0 = k0 + h_in + h[h < 0].sum() - slack
    per_p = math.inf
    if w0 > 0:
        lev = (S[:, 2:] ** 2).sum(axis=1) / w0 ** 2
        t_in, tau_max = float((w0 * lev[inner]).sum()), float(lev[und].max(initial=0.0))
        top = np.concatenate([[0.0], np.cumsum(np.sort(S[und, 2:] @ coef)[::-1])])
        vals = []
        for order, sign in ((und, 1.0), (und[::-1], -1.0)):
            for p in range(len(und) + 1):
                gp = sign * (s_in[0] + S[order[:p], 0].sum())
                wp = s_in[1] + p * w0
                base = wp - cint * wp * wp
                r_lo = max(wp * (1 - cint * wp - t_in - p * w0 * tau_max), base - C,
                           base + klh - slack - float(coef @ s_in[2:]) - top[p])
                vals.append(max(gp, 0.0) / (math.sqrt(max(r_lo, 0.0)) + eps))
        per_p = max(vals) * (1 + 1e-9)
    if not den0 > 0:
        return per_p
    return min(per_p, math.sqrt(_zonotope_max(s_in[0], k0 + h_in - slack, g, h)) * (1 + 1e-9))


class _Kernel:
    """The kernel's arrays for one objective on one space, and one node evaluation."""

    def __init__(self, space, obj, allow_empty: bool) -> None:
        self.prob = kernel_problem(obj)
        self.m = np.array([len(t) for t in space.thresholds], np.int64)
        self.G = np.ascontiguousarray(space.groups_t.T[self.prob.perm], dtype=np.int32)
        self.LE, self.off, self.valid = K.build_masks(self.G, self.m)
        self.iparams = np.array([self.prob.mode, int(allow_empty), -1, 1, 64, -1], np.int64)

    def evaluate(self, R):
        """(bound, collapsed ranges, split) of node ``R`` (left unchanged)."""
        Rk = R.copy()
        W, c = len(self.valid), self.prob.S.shape[1]
        split = np.empty(3, np.int32)
        prob = (self.LE, self.off, self.m, self.valid, self.prob.S, self.prob.params,
                self.iparams)
        work = (np.empty(W, np.uint64), np.empty(W, np.uint64), np.empty(c), np.empty(3 * c),
                np.empty(5))
        b = K.evaluate(Rk, prob, work, split, -np.inf)
        return b, Rk, split


def _random_node(rng, m):
    d = len(m)
    R = np.zeros((4, d), np.int32)
    for j in range(d):
        a = np.sort(rng.integers(0, m[j] + 1, 2))
        b = np.sort(rng.integers(0, m[j] + 1, 2))
        R[0, j], R[1, j] = a
        R[2, j], R[3, j] = b
    return R


@pytest.mark.parametrize("name", ["gs", "gb", "xgb", "ogb", "ogb-int", "ogb-first", "ridge",
                                  "ridge-noint"])
def test_kernel_matches_reference_node_by_node(name):
    space, g = _space(7, n=14, d=3, cuts=3)
    obj = _objectives(g, 7)[name]
    kern = _Kernel(space, obj, allow_empty=False)
    prob, m, G = kern.prob, kern.m, kern.G
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(300):
        R = _random_node(rng, m)
        b, Rk, split = kern.evaluate(R)
        ref_b, ref_R, ref_split = _reference_evaluate(R, G, m, prob.S, prob.params, prob.mode,
                                                      False, -1)
        assert b == pytest.approx(ref_b, rel=1e-9, abs=1e-12)
        if ref_b < 0:
            continue
        checked += 1
        np.testing.assert_array_equal(Rk, ref_R)
        assert split[0] == ref_split[0]
        if split[0] >= 0:
            assert tuple(split) == tuple(ref_split)
    assert checked > 100


@pytest.mark.parametrize("name", ["gs", "gb", "xgb", "ridge", "ridge-0", "ridge-noint", "ogb",
                                  "ogb-int", "ogb-first"])
def test_node_bound_is_admissible_and_exact_over_row_sets(name):
    """The node bound is >= the value of every box of the node; for the ratio family it
    equals the maximum over every row set between the inner and the outer cover."""
    space, g = _space(3, n=12, d=2, cuts=3)
    obj = _objectives(g, 3)[name]
    kern = _Kernel(space, obj, allow_empty=True)
    prob, m, G = kern.prob, kern.m, kern.G
    Gt = space.groups_t.T
    rng = np.random.default_rng(1)
    for _ in range(150):
        R = _random_node(rng, m)
        b, Rk, _split = kern.evaluate(R)
        if b < 0:
            continue
        best_box = -math.inf
        for a in itertools.product(*[range(R[0, j], R[1, j] + 1) for j in range(2)]):
            for bb in itertools.product(*[range(R[2, j], R[3, j] + 1) for j in range(2)]):
                q = np.all((Gt >= np.array(a)) & (Gt <= np.array(bb)), axis=1)
                best_box = max(best_box, obj.value(q))
        assert b >= best_box - 1e-9 * max(1.0, abs(best_box))
        if prob.mode != K.MODE_RATIO:
            continue
        outer = np.all((Rk[0] <= G) & (Rk[3] >= G), axis=1)
        inner = outer & np.all((Rk[1] <= G) & (Rk[2] >= G), axis=1)
        und = np.flatnonzero(outer & ~inner)
        if len(und) > 10:
            continue
        best_set = -math.inf
        for mask in range(1 << len(und)):
            sel = inner.copy()
            sel[und[[k for k in range(len(und)) if mask >> k & 1]]] = True
            rows = prob.perm[sel]
            q = np.zeros(space.n, bool)
            q[rows] = True
            best_set = max(best_set, obj.value(q))
        assert b == pytest.approx(best_set, rel=1e-9, abs=1e-12)


# ------------------------------------------------------------------ limits
def test_limits_return_valid_bounds():
    space, g = _space(11, n=40, d=4, cuts=4)
    obj = ridge_gain_objective(g, reg=0.1)
    want = _brute(space, obj, False, None)
    res = box_search(space, obj, node_limit=3)
    assert res is not None and res.status == "node_limit" and not res.certified
    assert res.value <= want + 1e-12 <= res.bound + 2e-12
    full = box_search(space, obj)
    assert full.value == pytest.approx(want, rel=1e-9)


def test_tiny_memory_budget_searches_depth_first_and_stays_exact():
    space, g = _space(5, n=60, d=4, cuts=5)
    obj = make_objective("gb", g)
    want = box_search(space, obj).value
    small = box_search(space, obj, max_memory=64 * 1024)
    assert small.status == "optimal"
    assert small.value == pytest.approx(want, rel=1e-12)
    assert small.peak_frontier_bytes <= 64 * 1024


def test_invariant_under_positive_rescaling():
    space, g = _space(9, n=30, d=3, cuts=4)
    obj = ridge_gain_objective(g, reg=0.2)
    res = box_search(space, obj)
    scaled = SearchSpace.build(space.X * np.array([1e-30, 7.0, 1e30]), 4)
    res2 = box_search(scaled, obj)
    np.testing.assert_array_equal(res.query, res2.query)
    assert res.value == res2.value


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("max_len", [1, 2])
def test_length_in_features_against_brute_force(seed, max_len):
    """``max_rule_length`` counts restricted features: a feature bounded on both sides
    counts once (the default; ``length_counts="features"`` says the same)."""
    space, g = _space(seed, n=20, d=3, cuts=3)
    obj = ridge_gain_objective(g - g.mean(), reg=0.2)
    m = np.array([len(t) for t in space.thresholds])
    want = -math.inf
    for a, b in _boxes(space):
        n_feat = int(((a > 0) | (b < m)).sum())
        if n_feat == 0 or n_feat > max_len:
            continue
        q = np.all((a <= space.groups_t.T) & (b >= space.groups_t.T), axis=1)
        want = max(want, obj.value(q))
    for res in (box_search(space, obj, max_rule_length=max_len),
                box_search(space, obj, max_rule_length=max_len, length_counts="features")):
        assert res.value == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert res.n_features <= max_len


@pytest.mark.parametrize("seed", range(3))
def test_both_caps_against_brute_force(seed):
    """``max_rule_length`` (features) and ``max_propositions`` together: the language is
    the boxes within both caps (one feature bounded on both sides is 1 feature and 2
    propositions)."""
    space, g = _space(seed, n=20, d=3, cuts=3)
    obj = ridge_gain_objective(g - g.mean(), reg=0.2)
    m = np.array([len(t) for t in space.thresholds])
    for feats, props in ((1, 1), (1, 2), (2, 2), (2, 3)):
        want = -math.inf
        for a, b in _boxes(space):
            n_feat = int(((a > 0) | (b < m)).sum())
            n_prop = int((a > 0).sum() + (b < m).sum())
            if n_feat == 0 or n_feat > feats or n_prop > props:
                continue
            q = np.all((a <= space.groups_t.T) & (b >= space.groups_t.T), axis=1)
            want = max(want, obj.value(q))
        res = box_search(space, obj, max_rule_length=feats, max_propositions=props)
        assert res.value == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert res.n_features <= feats and res.length <= props
        assert res.certified
