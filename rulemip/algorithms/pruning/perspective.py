r"""The perspective relaxation of CIP (2) through its dual, with the hierarchy inside
(docs/explanation/tree_pruning.md, "The perspective bound").

For binary z, :math:`q(z) = \max_\alpha\ \alpha^\top y - \tfrac12\|\alpha\|^2
- \tfrac{\gamma}{2}\sum_i z_i (M_i^\top\alpha)^2` (the dual of the ridge fit on the
support), linear in z. Hence for **every** α and every set Z of feasible selections

.. math::  \min_{z\in Z} q(z) \;\ge\; L_Z(\alpha) = \alpha^\top y - \tfrac12\|\alpha\|^2
           - \tfrac{\gamma}{2}\max_{z\in Z}\sum_i z_i (M_i^\top\alpha)^2 ,

and the inner maximum over the selections — antichains of the node forest (the
node/descendant rule (1a)), the budget (1b), and at a branch-and-bound node the fixings —
is the knapsack with a conflict forest, solved exactly by the dynamic program of
:mod:`rulemip.algorithms.pruning.knapsack_conflicts` (here compiled:
:func:`knapsack_dp`). :math:`\max_\alpha L_Z(\alpha)` equals the minimum of the convex
q over the convex hull of Z (minimax: q is convex in z, concave in α), which is the
perspective relaxation with the conflict and budget rows replaced by their integer hull.

:func:`node_relaxation` maximizes :math:`L_Z` by pairwise Frank–Wolfe on the primal side
(iterates are convex combinations of selections in Z, the line search the exact one of
:mod:`rulemip.algorithms.convex.frank_wolfe`): at the iterate z with ridge residual
:math:`r(z)`, the Frank–Wolfe gap bound is :math:`L_Z(r(z))`, which is what is kept — it
is evaluated from its formula, so any α the iteration produces yields a valid bound even
when the residual is inexact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from numpy.typing import NDArray

from rulemip.algorithms.convex.frank_wolfe import BOUND_MARGIN, RidgeSegment
from rulemip.budget import Budget
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.forest import Forest
from rulemip.formulations.node_matrix import NodeMatrix
from rulemip.formulations.tree_pruning import TreePruningCIP

__all__ = ["COMPRESS_MAX_FLOPS", "FREE", "IN", "OUT", "NodeRelaxation", "PerspectiveProblem",
           "knapsack_dp", "knapsack_with_each", "node_relaxation"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
#: the status of a node in a branch-and-bound node: free, fixed selected, fixed out
FREE, IN, OUT = 0, 1, -1
#: a restricted problem's rows are compressed (a thin QR of the n × K kept columns) only
#: up to n·K² of this: about 0.2–0.5 s of one core, a step that cannot ask the clock
COMPRESS_MAX_FLOPS = 1.5e9


@njit(cache=True)
def _combine(ids: IntArray, f: FloatArray, split: IntArray, acc: FloatArray,
             new: FloatArray) -> None:  # pragma: no cover - compiled
    """``acc(c) = max Σ_j f_j(c_j)`` over ``Σ_j c_j ≤ c`` for the nodes ``ids``, recording
    the share ``split[j, c]`` of each (children before their parent)."""
    C = acc.shape[0] - 1
    acc[:] = 0.0
    for e in range(ids.shape[0]):
        j = ids[e]
        for c in range(C + 1):
            best, bt = -np.inf, 0
            for t in range(c + 1):
                v = acc[c - t] + f[j, t]
                if v > best:
                    best, bt = v, t
            new[c] = best
            split[j, c] = bt
        acc[:] = new


@njit(cache=True)
def _tables(profit: FloatArray, cost: IntArray, status: NDArray[np.int8], C: int,
            post: IntArray, child_ptr: IntArray, child_idx: IntArray
            ) -> tuple[FloatArray, IntArray, NDArray[np.bool_], NDArray[np.bool_]
                       ]:  # pragma: no cover - compiled
    """The recurrence bottom-up: ``f[i, c]`` the best profit in the subtree of i within
    capacity c obeying the fixings, ``split`` and ``take`` to trace it back, ``forced[i]``
    a node fixed IN at or below i."""
    m = profit.shape[0]
    f = np.empty((m, C + 1))
    split = np.zeros((m, C + 1), dtype=np.int64)
    take = np.zeros((m, C + 1), dtype=np.bool_)
    forced = np.zeros(m, dtype=np.bool_)  # a node fixed IN at or below
    acc = np.empty(C + 1)
    new = np.empty(C + 1)

    for k in range(post.shape[0]):
        i = post[k]
        kids = child_idx[child_ptr[i]:child_ptr[i + 1]]
        _combine(kids, f, split, acc, new)
        below = False
        for e in range(kids.shape[0]):
            below = below or forced[kids[e]]
        forced[i] = below or status[i] == 1
        for c in range(C + 1):
            if status[i] == 1:
                ok = c >= cost[i] and not below
                f[i, c] = profit[i] if ok else -np.inf
                take[i, c] = ok
            elif status[i] == -1 or below or c < cost[i] or not profit[i] > acc[c]:
                f[i, c] = acc[c]
            else:
                f[i, c] = profit[i]
                take[i, c] = True
    return f, split, take, forced


@njit(cache=True)
def _dp(profit: FloatArray, cost: IntArray, status: NDArray[np.int8], capacity: int,
        post: IntArray, child_ptr: IntArray, child_idx: IntArray, roots: IntArray
        ) -> tuple[float, NDArray[np.bool_]]:  # pragma: no cover - compiled
    C = capacity
    m = profit.shape[0]
    f, split, take, _ = _tables(profit, cost, status, C, post, child_ptr, child_idx)
    acc = np.empty(C + 1)
    new = np.empty(C + 1)
    _combine(roots, f, split, acc, new)
    total = acc[C]
    z = np.zeros(m, dtype=np.bool_)
    if total == -np.inf:
        return total, z
    stack_node = np.empty(m, dtype=np.int64)
    stack_cap = np.empty(m, dtype=np.int64)
    top = 0
    c = C
    for e in range(roots.shape[0] - 1, -1, -1):
        j = roots[e]
        t = split[j, c]
        stack_node[top], stack_cap[top] = j, t
        top += 1
        c -= t
    while top > 0:
        top -= 1
        i, c = stack_node[top], stack_cap[top]
        if take[i, c]:
            z[i] = True
            continue
        for e in range(child_ptr[i + 1] - 1, child_ptr[i] - 1, -1):
            j = child_idx[e]
            t = split[j, c]
            stack_node[top], stack_cap[top] = j, t
            top += 1
            c -= t
    return total, z


@njit(cache=True)
def _maxplus(a: FloatArray, b: FloatArray, out: FloatArray) -> None:  # pragma: no cover
    """``out(c) = max_{t ≤ c} a(c − t) + b(t)`` (capacities shared by two parts)."""
    for c in range(out.shape[0]):
        best = -np.inf
        for t in range(c + 1):
            v = a[c - t] + b[t]
            if v > best:
                best = v
        out[c] = best


@njit(cache=True)
def _with_each(profit: FloatArray, cost: IntArray, status: NDArray[np.int8], C: int,
               post: IntArray, child_ptr: IntArray, child_idx: IntArray, roots: IntArray
               ) -> FloatArray:  # pragma: no cover - compiled
    """``best[i]`` = the recurrence's maximum over the selections that contain i (and obey
    the fixings), for every free node i at once; ``-inf`` where there is none (a node
    fixed IN at, above or below it, or too costly). Top-down:
    ``g[i, c]`` is the best profit outside i's subtree and i's ancestors within capacity c
    — the other roots' (or the parent's g and the siblings') tables combined, through
    prefix and suffix products of the max-plus convolution."""
    m = profit.shape[0]
    f, _, _, forced = _tables(profit, cost, status, C, post, child_ptr, child_idx)
    g = np.empty((m, C + 1))
    best = np.full(m, -np.inf)
    above = np.zeros(m, dtype=np.bool_)  # a node fixed IN above
    tmp = np.empty(C + 1)
    # the roots: outside a root is every other root
    k = roots.shape[0]
    pre = np.zeros((k + 1, C + 1))
    suf = np.zeros((k + 1, C + 1))
    for e in range(k):
        _maxplus(pre[e], f[roots[e]], pre[e + 1])
    for e in range(k - 1, -1, -1):
        _maxplus(suf[e + 1], f[roots[e]], suf[e])
    for e in range(k):
        _maxplus(pre[e], suf[e + 1], g[roots[e]])
    for q in range(post.shape[0] - 1, -1, -1):  # parents before their children
        i = post[q]
        if status[i] == 0 and not forced[i] and not above[i] and cost[i] <= C:
            best[i] = profit[i] + g[i, C - cost[i]]
        lo, hi = child_ptr[i], child_ptr[i + 1]
        for e in range(lo, hi):
            above[child_idx[e]] = above[i] or status[i] == 1
        d = hi - lo
        if d == 0:
            continue
        pre = np.empty((d + 1, C + 1))
        suf = np.empty((d + 1, C + 1))
        pre[0] = g[i]  # outside i, then the siblings before
        suf[d] = 0.0
        for e in range(d):
            _maxplus(pre[e], f[child_idx[lo + e]], pre[e + 1])
        for e in range(d - 1, -1, -1):
            _maxplus(suf[e + 1], f[child_idx[lo + e]], suf[e])
        for e in range(d):
            _maxplus(pre[e], suf[e + 1], tmp)
            g[child_idx[lo + e]] = tmp
    return best


@dataclass(frozen=True)
class ForestArrays:
    """The node forest as flat arrays for :func:`knapsack_dp`: post-order, children in
    CSR form, roots."""

    post: IntArray
    child_ptr: IntArray
    child_idx: IntArray
    roots: IntArray

    @classmethod
    def of(cls, parent: IntArray) -> ForestArrays:
        forest = Forest(parent)
        m = forest.n_nodes
        order = np.argsort(np.where(forest.parent < 0, m, forest.parent), kind="stable")
        counts = np.bincount(forest.parent[forest.parent >= 0], minlength=m)
        ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        idx = order[: int(ptr[-1])].astype(np.int64)
        return cls(np.asarray(forest.post_order, dtype=np.int64), ptr, idx,
                   np.asarray(forest.roots, dtype=np.int64))


def knapsack_dp(profit: FloatArray, cost: IntArray, capacity: int, forest: ForestArrays,
                status: NDArray[np.int8] | None = None) -> tuple[float, NDArray[np.bool_]]:
    r""":math:`\max \sum_i p_i z_i` over antichains z of the forest with
    :math:`\sum_i a_i z_i \le C`, nodes of ``status`` IN selected and OUT not — the
    recurrence of :func:`~rulemip.algorithms.pruning.knapsack_conflicts.forest_knapsack`
    (``f_i(c) = max(p_i·1{a_i ≤ c}, children combined)``), compiled, with fixings.
    Returns ``(value, z)``; value ``-inf`` (and z = 0) when no selection obeys the
    fixings. Costs are non-negative integers."""
    m = profit.shape[0]
    st = np.zeros(m, dtype=np.int8) if status is None else np.asarray(status, dtype=np.int8)
    return _dp(np.asarray(profit, dtype=float), np.asarray(cost, dtype=np.int64), st,
               int(capacity), forest.post, forest.child_ptr, forest.child_idx, forest.roots)


def knapsack_with_each(profit: FloatArray, cost: IntArray, capacity: int,
                       forest: ForestArrays, status: NDArray[np.int8] | None = None
                       ) -> FloatArray:
    r"""For every free node i, :func:`knapsack_dp`'s maximum over the selections that
    contain i (the value with i fixed IN, :meth:`PerspectiveProblem.propagate`);
    ``-inf`` for nodes that are not free, above or below a node fixed IN, costlier than
    the capacity, or when no selection obeys the fixings. One top-down pass after the
    bottom-up one, O(m·C²) like a single dynamic program."""
    m = profit.shape[0]
    st = np.zeros(m, dtype=np.int8) if status is None else np.asarray(status, dtype=np.int8)
    return _with_each(np.asarray(profit, dtype=float), np.asarray(cost, dtype=np.int64), st,
                      int(capacity), forest.post, forest.child_ptr, forest.child_idx,
                      forest.roots)


class PerspectiveProblem:
    """CIP (2) with what the dual bound needs: the oracle, integer costs, the capacity
    and the forest arrays (module docstring). ``nodes`` is the node matrix it was built
    from (``None`` for a :meth:`restricted` problem)."""

    def __init__(self, nodes: NodeMatrix, y: FloatArray, max_cost: float, attribute: str,
                 gamma: float) -> None:
        a = nodes.attribute(attribute)  # type: ignore[arg-type]
        if np.any(a < 0) or not np.allclose(a, np.round(a)):
            raise InvalidParameterError("the perspective bound needs non-negative integer "
                                        "node costs.")
        self.nodes: NodeMatrix | None = nodes
        self._setup(TreePruningCIP(nodes.M, y, gamma), np.round(a).astype(np.int64),
                    math.floor(float(max_cost) + 1e-9), np.asarray(nodes.parent, np.int64))

    def _setup(self, cip: TreePruningCIP, cost: IntArray, capacity: int,
               parent: IntArray, offset: float = 0.0) -> None:
        self.cip = cip
        #: q of this problem = ``cip``'s q + offset (a :meth:`restricted` problem's rows
        #: are compressed)
        self.offset = float(offset)
        #: Q of the compression (n × K), or None: a dual vector α of the original problem
        #: is ``Qᵀα`` here, with a bound at least as high (the part of α outside Q's
        #: range is best at ``y − QQᵀy``, which the offset accounts for)
        self.row_basis: FloatArray | None = None
        self.cost = cost
        self.capacity = int(capacity)
        self.parent = parent
        self.forest = ForestArrays.of(parent)
        self.gamma = cip.gamma
        self.m = int(parent.shape[0])

    def value(self, z: FloatArray) -> float:
        """q(z) (the offset included)."""
        return self.cip.value(z) + self.offset

    def restricted(self, keep: NDArray[np.bool_], compress: bool | None = None
                   ) -> PerspectiveProblem:
        """The problem over the nodes ``keep`` only (the others fixed out for good): the
        columns and costs of those nodes, each node's parent its nearest kept ancestor —
        so two kept nodes conflict exactly when they did — and the same γ and capacity.
        Its selections are the original ones that avoid the dropped nodes, with the same q
        (node i of the restricted problem is ``np.flatnonzero(keep)[i]``). When fewer
        nodes than rows are kept, the rows are compressed: with ``M_K = QR`` (thin QR),
        ``½‖y − M_K w‖² = ½‖Qᵀy − Rw‖² + ½‖y − QQᵀy‖²`` for every w, so the problem
        with columns R, response Qᵀy and :attr:`offset` ``½‖y − QQᵀy‖²`` has the same
        q at every z ∈ [0, 1]^K (the ridge and perspective terms do not involve the rows),
        hence the same relaxation and bounds, at a cost in K instead of n rows.

        ``compress``: compress the rows (None: when n·K² ≤ :data:`COMPRESS_MAX_FLOPS`;
        the QR is one step that cannot ask the clock, 3 s at 100 000 rows and 700 nodes —
        beyond the cap the restricted problem keeps its n rows)."""
        idx = np.flatnonzero(keep)
        new_of = np.full(self.m, -1, dtype=np.int64)
        new_of[idx] = np.arange(idx.shape[0])
        parent = np.full(idx.shape[0], -1, dtype=np.int64)
        for k, i in enumerate(idx):
            a = int(self.parent[i])
            while a >= 0 and new_of[a] < 0:
                a = int(self.parent[a])
            parent[k] = new_of[a] if a >= 0 else -1
        sub = object.__new__(PerspectiveProblem)
        sub.nodes = None
        M, y, offset = self.cip.M[:, idx], self.cip.y, self.offset
        n_rows, k = M.shape
        if compress is None:
            compress = k < n_rows and n_rows * k * k <= COMPRESS_MAX_FLOPS
        if compress and k < n_rows:
            Q, R = np.linalg.qr(M.toarray())
            yq = Q.T @ y
            M, y, offset = sp.csc_matrix(R), yq, offset + 0.5 * float(np.sum((y - Q @ yq) ** 2))
        sub._setup(TreePruningCIP(M, y, self.gamma), self.cost[idx], self.capacity, parent,
                   offset)
        if M.shape[0] < self.cip.M.shape[0]:
            sub.row_basis = Q
        return sub

    def dual_of(self, alpha: FloatArray) -> FloatArray:
        """A dual vector of the problem this one was restricted from, in this one's rows
        (:attr:`row_basis`)."""
        return alpha if self.row_basis is None else self.row_basis.T @ alpha

    def dual_bound(self, alpha: FloatArray, status: NDArray[np.int8] | None = None
                   ) -> tuple[float, NDArray[np.bool_]]:
        r"""``(L_Z(α) less a relative margin, the maximizing selection)`` for Z the
        selections obeying ``status`` (module docstring); ``+inf`` when Z is empty."""
        bound, s, _ = self.dual_bound_and_gains(alpha, status)
        return bound, s

    def dual_bound_and_gains(self, alpha: FloatArray, status: NDArray[np.int8] | None = None
                             ) -> tuple[float, NDArray[np.bool_], FloatArray]:
        """:meth:`dual_bound` and the profits ``c_i(α) = (M_iᵀα)²`` of its inner problem."""
        c = np.asarray(self.cip.Mt @ alpha).ravel() ** 2
        best, s = knapsack_dp(c, self.cost, self.capacity, self.forest, status)
        if best == -np.inf:
            return math.inf, s, c
        value = (float(alpha @ self.cip.y) - 0.5 * float(alpha @ alpha)
                 - 0.5 * self.gamma * best + self.offset)
        return value - BOUND_MARGIN * max(1.0, abs(value)), s, c

    def fix_by_bound(self, alpha: FloatArray, status: NDArray[np.int8], threshold: float
                     ) -> tuple[NDArray[np.int8], float]:
        r"""Reduced-cost fixing at α: a copy of ``status`` in which

        * every free node i whose bound :math:`L_{Z\cap\{z_i=1\}}(\alpha)` (Claim 2 over
          the selections that contain i, :func:`knapsack_with_each`) reaches ``threshold``
          is fixed OUT, and then
        * every free node i of the maximizing selection whose bound
          :math:`L_{Z\cap\{z_i=0\}}(\alpha)` (one dynamic program with i out) reaches
          ``threshold`` is fixed IN (:meth:`propagate`) — nodes outside the maximizer
          cannot: without them the maximum is unchanged;

        and the least bound of the selections so excluded (``inf`` when none is): no
        selection obeying ``status`` but not the result is below it."""
        c = np.asarray(self.cip.Mt @ alpha).ravel() ** 2
        best = knapsack_with_each(c, self.cost, self.capacity, self.forest, status)
        base = float(alpha @ self.cip.y) - 0.5 * float(alpha @ alpha) + self.offset

        def bound(total: FloatArray) -> FloatArray:
            value = base - 0.5 * self.gamma * total  # +inf where there is no selection
            finite = np.isfinite(value)
            value[finite] -= BOUND_MARGIN * np.maximum(1.0, np.abs(value[finite]))
            return value

        value = bound(best)
        fix = (status == FREE) & (value >= threshold)
        out = status.copy()
        out[fix] = OUT
        least = float(value[fix].min()) if fix.any() else math.inf
        _, s = knapsack_dp(c, self.cost, self.capacity, self.forest, out)
        for i in np.flatnonzero(s & (out == FREE)):
            without = out.copy()
            without[i] = OUT
            v = float(bound(np.array([knapsack_dp(c, self.cost, self.capacity, self.forest,
                                                  without)[0]]))[0])
            if v >= threshold and out[i] == FREE:
                out = self.propagate(out, int(i))
                least = min(least, v)
        return out, least

    def propagate(self, status: NDArray[np.int8], i: int) -> NDArray[np.int8]:
        """A copy of ``status`` with node ``i`` fixed IN and its ancestors and descendants
        fixed OUT (the node/descendant rule)."""
        out = status.copy()
        ptr, kids = self.forest.child_ptr, self.forest.child_idx
        stack = list(kids[ptr[i]:ptr[i + 1]])
        while stack:
            j = int(stack.pop())
            out[j] = OUT
            stack.extend(kids[ptr[j]:ptr[j + 1]])
        p = int(self.parent[i])
        while p >= 0:
            out[p] = OUT
            p = int(self.parent[p])
        out[i] = IN
        return out


@dataclass
class NodeRelaxation:
    """What :func:`node_relaxation` returns: the best bound and its α, the last iterate
    ``z`` (a convex combination of ``atoms`` with ``weights``) and its value q(z) (an upper
    bound of the relaxation), iterations, and why it stopped."""

    lower_bound: float
    alpha: FloatArray
    z: FloatArray
    value: float
    atoms: list[IntArray]
    weights: FloatArray
    iterations: int = 0
    stop: str = ""


def _padded(atoms: list[IntArray], m: int) -> IntArray:
    """The atoms (node index arrays) as rows of one array, padded with ``m``."""
    width = max(1, max((S.shape[0] for S in atoms), default=0))
    P = np.full((len(atoms), width), m, dtype=np.int64)
    for j, S in enumerate(atoms):
        P[j, : S.shape[0]] = S
    return P


def _mix(P: IntArray, w: FloatArray, m: int) -> FloatArray:
    """``Σ_j w_j 1_{atom j}`` for the padded atoms ``P``."""
    return np.asarray(np.bincount(P.ravel(), weights=np.repeat(w, P.shape[1]),
                                  minlength=m + 1)[:m], dtype=float)


def node_relaxation(problem: PerspectiveProblem, status: NDArray[np.int8],
                    atoms: list[IntArray], weights: FloatArray, *, threshold: float,
                    rel_tol: float, max_iter: int, budget: Budget, gap_share: float = 0.0,
                    lower_bound: float = -math.inf, alpha: FloatArray | None = None
                    ) -> NodeRelaxation:
    r"""Maximize :math:`L_Z(\alpha)` for Z = the selections obeying ``status`` by pairwise
    Frank–Wolfe from the convex combination of ``atoms`` (supports, each in Z; at least
    one) with ``weights``.

    Stops once the bound reaches ``threshold`` (the node is pruned), when the relative
    Frank–Wolfe gap ``q(z) − bound`` is at most ``rel_tol·q(z)`` or ``gap_share`` times
    the distance ``threshold − bound`` (a bound that cannot prune the node need not be
    more accurate than a share of what separates it from pruning) and q(z) — an upper
    bound of the relaxation's value, z being in conv Z — is below ``threshold`` (more
    iterations cannot prune the node; while q(z) ≥ threshold they may, whatever the gap),
    after ``max_iter`` iterations, or when ``budget`` runs out (every iteration charges one
    work unit). The
    returned bound is the best :math:`L_Z` seen (at least ``lower_bound``, attained at
    ``alpha``)."""
    cip = problem.cip
    m = problem.m
    w = np.asarray(weights, dtype=float)
    w = w / w.sum()
    P = _padded(atoms, m)  # one row per atom, padded with the sentinel column m
    z = _mix(P, w, m)
    r = RidgeSegment(cip, z, np.zeros(m), 0.0).Ay
    best_alpha = r if alpha is None else alpha
    it, stop = 0, "max_iter"
    value = 0.5 * float(cip.y @ r) + problem.offset
    while True:
        bound, s, c = problem.dual_bound_and_gains(r, status)
        if bound > lower_bound:
            lower_bound, best_alpha = bound, r
        if lower_bound >= threshold:
            stop = "pruned"
            break
        if value < threshold and value - lower_bound <= max(
                rel_tol * max(abs(value), 1e-12), gap_share * (threshold - lower_bound)):
            stop = "converged"
            break
        if it >= max_iter:
            break
        if budget.expired():
            stop = "limit"
            break
        budget.charge(1)
        it += 1
        scores = np.append(c, 0.0)[P].sum(axis=1)  # c = -∇q(z)·2/γ
        k = int(np.argmin(scores))  # the away atom: least gain
        S_new = np.flatnonzero(s)
        if float(c[S_new].sum()) <= scores[k] * (1 + 1e-12):
            stop = "converged"
            break
        d = np.zeros(m)
        d[S_new] += 1.0
        d[P[k][P[k] < m]] -= 1.0
        seg = RidgeSegment(cip, z, d, 0.0)
        t, x = seg.search(float(w[k]))
        if t <= 0.0:
            stop = "stalled"
            break
        r = seg.residual(x)
        value = 0.5 * float(cip.y @ r) + problem.offset
        w[k] -= t
        if S_new.shape[0] > P.shape[1]:
            P = np.hstack([P, np.full((P.shape[0], S_new.shape[0] - P.shape[1]), m)])
        row = np.full(P.shape[1], m)
        row[: S_new.shape[0]] = S_new
        same = np.flatnonzero((row == P).all(axis=1))
        if same.size:
            w[same[0]] += t
        else:
            P = np.vstack([P, row])
            w = np.append(w, t)
        keep = w > 1e-12
        P, w = P[keep], w[keep] / w[keep].sum()
        z = _mix(P, w, m)
    atoms = [row[row < m] for row in P]
    return NodeRelaxation(lower_bound, best_alpha, z, value, atoms, w, it, stop)
