r"""A global lower bound for two rules (squared loss) by branch and bound over both boxes.

The relaxation of the box-selection problem is worthless at a weak ridge and the levels
bound ignores the features (docs/explanation/weak_ridge_bounds.md). This search keeps the
features: a node fixes, for each of the two boxes :math:`a, b` and each feature, a range
for the box's lower and for its upper threshold group (the one-rule kernel's node,
:mod:`rulemip.boosting.boxsearch.kernel`, twice). Every row then has a status per box — inside
the node's *inner* box (in every box of the node), outside its *outer* box (in none), or
undecided — and nine status classes :math:`(s_a, s_b)`.

Node bound: the largest of three valid lower bounds on :math:`\sum_i w_i (y_i - f_i)^2 +
\lambda(\beta_a^2 + \beta_b^2)` over every two-rule model
:math:`f = \beta_0 + \beta_a 1_a + \beta_b 1_b` whose boxes lie in the node:

1. *decided rows, additive*: the ridge least squares of the additive model on the rows
   decided in both boxes (their four pattern groups), the others dropped (≥ 0);
2. *pivot on a* (free levels, ridge dropped): the four values of a two-rule model are
   :math:`l_{00}, l_{10}, l_{01}, l_{11}`; treating them as free only lowers the minimum,
   and the minimum of a sum is at least the sum of the minima over a partition of the rows:

   * rows inside :math:`a`: levels :math:`l_{11}, l_{10}` by :math:`b`'s status — the
     one-rule problem on those rows, solved exactly: the rows undecided in :math:`b` join
     either level; :math:`\max S_1^2/N_1 + S_2^2/N_2` is convex in the summed statistics,
     so its maximum over the zonotope of choices is at a vertex, a prefix or suffix of the
     undecided rows in :math:`y` order (docs/explanation/box_search.md);
   * rows outside :math:`a`: the same with :math:`l_{01}, l_{00}`;
   * rows undecided in :math:`a`: the best 2-level fit of those inside :math:`b`, of those
     outside :math:`b`, and the best 4-level fit of those undecided in both;
3. *pivot on b*: the same with the boxes' roles exchanged.

At the root every row is undecided and bound 2 is the 4-levels bound; when every row is
decided, bound 1 is the risk of the node's model. Best first over a pool of node slots of
bounded memory; the global bound is the least open bound (or the incumbent when every node
is pruned: then the incumbent is proved optimal over two-rule ensembles of the language).
With ``max_rule_length`` L a decided node whose model has a rule restricting more than L
features (its *outer* box, the node's box with the fewest restricted features, covers the
same rows as every box of the node) holds no model of the language: it is dropped, never
an incumbent, and the bound speaks about the language of length L. Without it boxes are
not limited in length, and the bound holds for any ``max_rule_length`` (issue 30, item 1:
an incumbent of any length below the restricted optimum was returned as "optimal").
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.typing import NDArray

from rulemip.boosting.boxsearch.kernel import _heap_pop, _heap_push
from rulemip.boosting.boxsearch.pool import Pace
from rulemip.budget import Budget
from rulemip.formulations.cells import CellReduction
from rulemip.formulations.levels import _levels_dc

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# node layout: node[b, j, 0..3] = lo_min, lo_max, hi_min, hi_max for box b, feature j
_OUT, _IN, _UND = 0, 1, 2

# explicit signatures of the helpers called with constant arguments (a box index, the
# number of levels): without them numba compiles one copy per literal value, which
# doubled their compile time; they compile when this module is imported
_F, _I = "float64[::1]", "int64[::1]"
_SIG_TWO_GROUP_BEST = f"float64({_F}, {_F}, {_I}, int64, float64, float64, float64, float64)"
_SIG_TWO_LEVELS = f"float64({_F}, {_F}, {_I}, int64)"
_SIG_LEVELS_OF = f"float64({_F}, {_F}, {_I}, int64, int64)"
_SIG_PIVOT_BOUND = f"float64({_F}, {_F}, int8[:, ::1], int64, float64, {_I})"


@njit(cache=True)
def _statuses(node: np.ndarray, g: np.ndarray, st: np.ndarray) -> None:
    m, d = g.shape
    for b in range(2):
        for i in range(m):
            outer = True
            inner = True
            for j in range(d):
                v = g[i, j]
                if v < node[b, j, 0] or v > node[b, j, 3]:
                    outer = False
                    break
                if v < node[b, j, 1] or v > node[b, j, 2]:
                    inner = False
            st[b, i] = _IN if (outer and inner) else (_UND if outer else _OUT)


@njit(_SIG_TWO_GROUP_BEST, cache=True)
def _two_group_best(y: np.ndarray, w: np.ndarray, sel: np.ndarray, cnt: int, n_in: float,
                    s_in: float, n_out: float, s_out: float) -> float:
    """max over the undecided rows ``sel[:cnt]`` (in y order) joining group in or out of
    S_in²/N_in + S_out²/N_out; prefixes and suffixes of sel are the zonotope's vertices."""
    n_u = 0.0
    s_u = 0.0
    for t in range(cnt):
        i = sel[t]
        n_u += w[i]
        s_u += w[i] * y[i]
    best = -np.inf
    pn = 0.0
    ps = 0.0
    for t in range(cnt + 1):
        # bottom-t rows to one group, the rest to the other, both ways
        for side in range(2):
            if side == 0:
                n1, s1 = n_in + pn, s_in + ps
                n2, s2 = n_out + n_u - pn, s_out + s_u - ps
            else:
                n1, s1 = n_in + n_u - pn, s_in + s_u - ps
                n2, s2 = n_out + pn, s_out + ps
            val = 0.0
            if n1 > 0.0:
                val += s1 * s1 / n1
            if n2 > 0.0:
                val += s2 * s2 / n2
            if val > best:
                best = val
        if t < cnt:
            i = sel[t]
            pn += w[i]
            ps += w[i] * y[i]
    return best


@njit(_SIG_TWO_LEVELS, cache=True)
def _two_levels(y: np.ndarray, w: np.ndarray, sel: np.ndarray, cnt: int) -> float:
    """Least weighted SSE of the rows ``sel[:cnt]`` (in y order) with at most 2 levels:
    the one-rule zonotope maximum with no decided row (every split point, one scan)."""
    q = 0.0
    for t in range(cnt):
        i = sel[t]
        q += w[i] * y[i] * y[i]
    out = q - _two_group_best(y, w, sel, cnt, 0.0, 0.0, 0.0, 0.0)
    return out if out > 0.0 else 0.0


@njit(_SIG_LEVELS_OF, cache=True)
def _levels_of(y: np.ndarray, w: np.ndarray, sel: np.ndarray, cnt: int, L: int) -> float:
    """Least weighted SSE of the rows ``sel[:cnt]`` (in y order) with at most L levels."""
    if cnt <= L:
        return 0.0
    vs = np.empty(cnt)
    ws = np.empty(cnt)
    for t in range(cnt):
        vs[t] = y[sel[t]]
        ws[t] = w[sel[t]]
    return _levels_dc(vs, ws, L)


@njit(_SIG_PIVOT_BOUND, cache=True)
def _pivot_bound(y: np.ndarray, w: np.ndarray, st: np.ndarray, p: int, both_und: float,
                 sel: np.ndarray) -> float:
    """Bound 2 (module docstring) with box ``p`` as the pivot; ``both_und`` is the 4-levels
    bound of the rows undecided in both boxes (shared by the two pivots); ``sel`` is
    scratch space of one int per row."""
    q = 1 - p
    m = y.shape[0]
    total = 0.0
    gain = 0.0
    for side in (_IN, _OUT):
        n_in = 0.0
        s_in = 0.0
        n_out = 0.0
        s_out = 0.0
        cnt = 0
        for i in range(m):
            if st[p, i] == side:
                total += w[i] * y[i] * y[i]
                if st[q, i] == _IN:
                    n_in += w[i]
                    s_in += w[i] * y[i]
                elif st[q, i] == _OUT:
                    n_out += w[i]
                    s_out += w[i] * y[i]
                else:
                    sel[cnt] = i
                    cnt += 1
        gain += _two_group_best(y, w, sel, cnt, n_in, s_in, n_out, s_out)
    # rows undecided in the pivot: 2 levels inside / outside the other box
    extra = both_und
    for other in (_IN, _OUT):
        cnt = 0
        for i in range(m):
            if st[p, i] == _UND and st[q, i] == other:
                sel[cnt] = i
                cnt += 1
        extra += _two_levels(y, w, sel, cnt)
    # decided-in-pivot rows: Σ w y² − gain; undecided-in-pivot rows: their levels bounds
    return total - gain + extra


@njit(cache=True)
def _additive_bound(y: np.ndarray, w: np.ndarray, st: np.ndarray, reg: float,
                    intercept: bool) -> float:
    """Ridge least squares of β0 + βa·a + βb·b on the rows decided in both boxes."""
    N = np.zeros(4)
    S = np.zeros(4)
    Q = np.zeros(4)
    for i in range(y.shape[0]):
        sa = st[0, i]
        sb = st[1, i]
        if sa == _UND or sb == _UND:
            continue
        gidx = sa + 2 * sb
        N[gidx] += w[i]
        S[gidx] += w[i] * y[i]
        Q[gidx] += w[i] * y[i] * y[i]
    within = 0.0
    for gidx in range(4):
        if N[gidx] > 0.0:
            within += Q[gidx] - S[gidx] * S[gidx] / N[gidx]
    # least squares of the group means with design rows sqrt(N_g)·[1, a_g, b_g] and the
    # ridge rows sqrt(λ)·e_a, sqrt(λ)·e_b: normal equations M β = r (3×3, positive
    # definite for λ > 0 unless the intercept column is 0: then β0 = 0), solved by
    # Cholesky; the residual is summed at the solution (no LAPACK call: compiling
    # np.linalg.lstsq took most of this module's compile time)
    M = np.zeros((3, 3))
    rhs = np.zeros(3)
    for gidx in range(4):
        if N[gidx] <= 0.0:
            continue
        x0 = 1.0 if intercept else 0.0
        xs = (x0, float(gidx % 2), float(gidx // 2))
        for a in range(3):
            rhs[a] += S[gidx] * xs[a]
            for b in range(3):
                M[a, b] += N[gidx] * xs[a] * xs[b]
    M[1, 1] += reg
    M[2, 2] += reg
    beta = _spd_solve(M, rhs, 0 if M[0, 0] > 0.0 else 1)
    res = reg * (beta[1] * beta[1] + beta[2] * beta[2])
    for gidx in range(4):
        if N[gidx] <= 0.0:
            continue
        fit = (beta[0] if intercept else 0.0) + beta[1] * (gidx % 2) + beta[2] * (gidx // 2)
        r = S[gidx] / np.sqrt(N[gidx]) - np.sqrt(N[gidx]) * fit
        res += r * r
    return max(within, 0.0) + res


@njit(cache=True)
def _spd_solve(M: np.ndarray, rhs: np.ndarray, first: int) -> np.ndarray:
    """The solution of ``M[first:, first:] x = rhs[first:]`` (``M`` symmetric positive
    definite there) by Cholesky, with 0 in the first ``first`` entries."""
    n = M.shape[0]
    L = np.zeros((n, n))
    for i in range(first, n):
        for j in range(first, i + 1):
            acc = M[i, j]
            for k in range(first, j):
                acc -= L[i, k] * L[j, k]
            if i == j:
                L[i, i] = np.sqrt(acc) if acc > 0.0 else 1e-300
            else:
                L[i, j] = acc / L[j, j]
    z = np.zeros(n)
    for i in range(first, n):
        acc = rhs[i]
        for k in range(first, i):
            acc -= L[i, k] * z[k]
        z[i] = acc / L[i, i]
    x = np.zeros(n)
    for i in range(n - 1, first - 1, -1):
        acc = z[i]
        for k in range(i + 1, n):
            acc -= L[k, i] * x[k]
        x[i] = acc / L[i, i]
    return x


@njit(cache=True)
def _node_bound(node: np.ndarray, g: np.ndarray, y: np.ndarray, w: np.ndarray, reg: float,
                intercept: bool, st: np.ndarray) -> tuple[float, bool]:
    _statuses(node, g, st)
    m = y.shape[0]
    sel = np.empty(m, dtype=np.int64)
    cnt = 0
    decided = True
    for i in range(m):
        if st[0, i] == _UND or st[1, i] == _UND:
            decided = False
            if st[0, i] == _UND and st[1, i] == _UND:
                sel[cnt] = i
                cnt += 1
    v = _additive_bound(y, w, st, reg, intercept)
    if not decided:
        both = _levels_of(y, w, sel, cnt, 4)
        v = max(v, _pivot_bound(y, w, st, 0, both, sel), _pivot_bound(y, w, st, 1, both, sel))
    return v, decided


@njit(cache=True)
def _choose_split(node: np.ndarray, g: np.ndarray, w: np.ndarray, st: np.ndarray
                  ) -> tuple[int, int, int, int]:
    """(box, feature, end, cut) of the range with the most undecided weight: end 0 splits
    the lower-threshold range [lo_min, lo_max] at cut (children [lo_min, cut] and
    [cut+1, lo_max]), end 1 the upper one [hi_min, hi_max]."""
    m, d = g.shape
    best_w = 0.0
    bb, bj, be, bc = -1, -1, -1, -1
    for b in range(2):
        for j in range(d):
            for e in range(2):
                a0 = node[b, j, 0] if e == 0 else node[b, j, 2]
                a1 = node[b, j, 1] if e == 0 else node[b, j, 3]
                if a1 <= a0:
                    continue
                # rows of this box that are undecided because of this range
                tot = 0.0
                hist = np.zeros(a1 - a0 + 1)
                for i in range(m):
                    if st[b, i] != _UND:
                        continue
                    v = g[i, j]
                    if e == 0:
                        if a0 <= v < a1:
                            hist[v - a0] += w[i]
                            tot += w[i]
                    else:
                        if a0 < v <= a1:
                            hist[v - a0] += w[i]
                            tot += w[i]
                if tot > best_w:
                    # weighted median cut, kept inside [a0, a1 - 1]
                    acc = 0.0
                    cut = a0
                    for h in range(a1 - a0 + 1):
                        acc += hist[h]
                        if acc >= 0.5 * tot:
                            cut = a0 + h
                            break
                    if cut >= a1:
                        cut = a1 - 1
                    if e == 1 and cut < a0:
                        cut = a0
                    best_w = tot
                    bb, bj, be, bc = b, j, e, cut
    # box < 0 only for a node with no undecided row, which is a model and never expanded
    return bb, bj, be, bc


@njit(cache=True)
def _within_length(node: np.ndarray, G: np.ndarray, st: np.ndarray, max_len: int) -> bool:
    """A decided node's model is in the language of rules restricting at most ``max_len``
    features (< 0: any): for each box covering a row, its outer box — the node's box with
    the fewest restricted features, covering the same rows — restricts at most max_len."""
    if max_len < 0:
        return True
    for b in range(2):
        covers = False
        for i in range(st.shape[1]):
            if st[b, i] == _IN:
                covers = True
                break
        if not covers:      # a box covering no row: a model with a rule fewer
            continue
        restricted = 0
        for j in range(G.shape[0]):
            if node[b, j, 0] > 0 or node[b, j, 3] < G[j] - 1:
                restricted += 1
        if restricted > max_len:
            return False
    return True


@njit(cache=True)
def _copy_node(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for two nodes (2, d, 4), element by element: numba compiles the
    whole-array assignment ``pool[s] = c`` with its shape-error message formatting, which
    took most of this module's compile time."""
    for b in range(src.shape[0]):
        for j in range(src.shape[1]):
            for e in range(src.shape[2]):
                dst[b, j, e] = src[b, j, e]


@njit(cache=True)
def _run(pool: np.ndarray, key: np.ndarray, heap: np.ndarray, free: np.ndarray,
         state: np.ndarray, g: np.ndarray, y: np.ndarray, w: np.ndarray, reg: float,
         intercept: bool, max_steps: int, best_nodes: np.ndarray, G: np.ndarray,
         max_len: int) -> None:
    """Expand up to ``max_steps`` nodes. state = [n_heap, n_free, ub, nodes, decided]."""
    n_heap = int(state[0])
    n_free = int(state[1])
    ub = state[2]
    st = np.empty((2, y.shape[0]), dtype=np.int8)
    tol = 1e-9 * max(1.0, abs(ub))
    for _ in range(max_steps):
        if n_heap == 0:
            break
        if -key[heap[0]] >= ub - tol:
            break
        slot = _heap_pop(heap, n_heap, key)
        n_heap -= 1
        node = pool[slot].copy()
        parent = -key[slot]
        free[n_free] = slot
        n_free += 1
        _statuses(node, g, st)
        b, j, e, cut = _choose_split(node, g, w, st)
        if b < 0:
            continue
        for child in range(2):
            c = node.copy()
            if e == 0:
                if child == 0:
                    c[b, j, 1] = cut
                else:
                    c[b, j, 0] = cut + 1
            else:
                if child == 0:
                    c[b, j, 3] = cut
                else:
                    c[b, j, 2] = cut + 1
            val, decided = _node_bound(c, g, y, w, reg, intercept, st)
            state[3] += 1.0
            if val < parent:
                val = parent
            if decided:
                state[4] += 1.0
                if not _within_length(c, G, st, max_len):
                    continue    # no model of the language in this node
                if val < ub:
                    ub = val
                    _copy_node(best_nodes, c)
                    tol = 1e-9 * max(1.0, abs(ub))
                continue
            if val >= ub - tol:
                continue
            if n_free == 0:
                state[5] = 1.0    # pool full: the node stays counted in the bound
                if val < state[6]:
                    state[6] = val
                continue
            n_free -= 1
            s = free[n_free]
            _copy_node(pool[s], c)
            key[s] = -val
            n_heap = _heap_push(heap, n_heap, key, s)
    state[0] = n_heap
    state[1] = n_free
    state[2] = ub


@dataclass(frozen=True)
class TwoRuleBoundResult:
    """Result of :func:`two_rule_bound` (risks normalized like :math:`R_\\lambda`)."""

    bound: float        # valid lower bound on the two-rule optimum
    incumbent: float    # the upper bound used (the caller's, or a better decided node's)
    proved: bool        # every node pruned: the incumbent is optimal over two rules
    nodes: int
    open_nodes: int
    seconds: float
    pool_full: bool
    #: the boxes ((lower, upper) per rule, ``lower < x <= upper``) of a model the search
    #: found below ``upper``; None when it found none
    boxes: tuple[tuple[FloatArray, FloatArray], ...] | None = None


def _decode_node(node: IntArray, thresholds: tuple[FloatArray, ...], g: IntArray
                 ) -> tuple[tuple[FloatArray, FloatArray], ...]:
    """The outer boxes of a node whose rows are all decided (every box of such a node
    covers the same rows, and the outer box restricts the fewest features): group g of
    feature j is ``t[g-1] < x <= t[g]``; a box covering no row is left out (a model with
    a rule fewer)."""
    st = np.empty((2, g.shape[0]), dtype=np.int8)
    _statuses(node, g, st)
    out = []
    for b in range(node.shape[0]):
        if not np.any(st[b] == _IN):
            continue
        lower = np.full(len(thresholds), -np.inf)
        upper = np.full(len(thresholds), np.inf)
        for j, t in enumerate(thresholds):
            lo, hi = int(node[b, j, 0]), int(node[b, j, 3])
            if lo > 0:
                lower[j] = float(t[lo - 1])
            if hi < len(t):
                upper[j] = float(t[hi])
        out.append((lower, upper))
    return tuple(out)


def two_rule_bound(cells: CellReduction, reg: float, fit_intercept: bool, upper: float,
                   budget: Budget | None = None, max_memory: int = 256 << 20,
                   chunk: int = 2000, max_rule_length: int | None = None) -> TwoRuleBoundResult:
    """Branch and bound over pairs of boxes (module docstring) until every node is pruned
    against ``upper`` (a two-rule model's :math:`R_\\lambda`), the budget ends or the pool of
    ``max_memory`` bytes is full (then the nodes that did not fit still count in the bound).
    With ``max_rule_length`` the bound and any model found are for rules restricting at
    most that many features. Squared loss only."""
    if cells.loss != "squared":
        raise ValueError("two_rule_bound is for squared loss")
    W = float(cells.total_weight)
    order = np.argsort(cells.y, kind="stable")
    y = np.ascontiguousarray(cells.y[order] - np.average(cells.y, weights=cells.weight))
    w = np.ascontiguousarray(cells.weight[order].astype(float))
    g = np.ascontiguousarray(cells.groups[cells.point_cell][order].astype(np.int64))
    # centring y changes the additive model's risk only through β0 (unpenalized); without
    # an intercept it would change the problem, so keep raw values then
    if not fit_intercept:
        y = np.ascontiguousarray(cells.y[order].astype(float))
    d = g.shape[1]
    G = np.array([len(t) + 1 for t in cells.thresholds], dtype=np.int64)
    node_bytes = 2 * d * 4 * 8 + 8 + 8 + 8
    cap = max(16, int(max_memory // node_bytes))
    pool = np.zeros((cap, 2, d, 4), dtype=np.int64)
    key = np.zeros(cap)
    heap = np.zeros(cap, dtype=np.int64)
    free = np.arange(cap, dtype=np.int64)[::-1].copy()
    best_nodes = np.zeros((2, d, 4), dtype=np.int64)
    ub_sum = float(upper) * W - cells.constant
    root = np.zeros((2, d, 4), dtype=np.int64)
    for b in range(2):
        for j in range(d):
            root[b, j] = (0, G[j] - 1, 0, G[j] - 1)
    st = np.empty((2, len(y)), dtype=np.int8)
    max_len = -1 if max_rule_length is None else int(max_rule_length)
    t0 = time.perf_counter()
    root_val, _ = _node_bound(root, g, y, w, float(reg), bool(fit_intercept), st)
    # state = [n_heap, n_free, ub, nodes, decided, pool_full, least dropped bound]
    state = np.array([0.0, float(cap), ub_sum, 1.0, 0.0, 0.0, np.inf])
    n_free = cap - 1
    s = free[n_free]
    pool[s] = root
    key[s] = -root_val
    heap[0] = s
    state[0], state[1] = 1.0, float(n_free)
    # steps per call paced to about CALL_SECONDS (a step costs microseconds on a small
    # table and milliseconds on 100 000 rows: 2 000 steps ran minutes past a budget); the
    # state lives in the arrays, so the calls' sizes do not change the search
    pace = Pace()
    while True:
        steps = min(chunk, pace.evals)
        work = None if budget is None else budget.work_left()
        if work is not None:            # a node is a unit of work: stop at the same node
            steps = max(1, min(steps, work // 2))   # a step evaluates two children
        nodes_before = int(state[3])
        t_call = time.perf_counter()
        _run(pool, key, heap, free, state, g, y, w, float(reg), bool(fit_intercept),
             steps, best_nodes, G, max_len)
        pace.update(time.perf_counter() - t_call)
        if budget is not None:
            budget.charge(max(int(state[3]) - nodes_before, 1))
        n_heap = int(state[0])
        if n_heap == 0 or -key[heap[0]] >= state[2] - 1e-9 * max(1.0, abs(state[2])):
            break
        if budget is not None and budget.expired():
            break
    n_heap = int(state[0])
    ub = float(state[2])
    open_min = -key[heap[0]] if n_heap else np.inf
    lb = min(ub, open_min, float(state[6]))
    proved = n_heap == 0 or open_min >= ub - 1e-9 * max(1.0, abs(ub))
    proved = proved and not np.isfinite(state[6])
    better = ub < ub_sum - 1e-9 * max(1.0, abs(ub_sum))
    found = _decode_node(best_nodes, cells.thresholds, g) if better else None
    return TwoRuleBoundResult((lb + cells.constant) / W, (ub + cells.constant) / W, bool(proved),
                        int(state[3]), n_heap, time.perf_counter() - t0, bool(state[5]),
                        found)
