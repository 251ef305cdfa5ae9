r"""Sweep branch and bound in cell space: a k-rule bound that survives a vanishing ridge.

Problem (squared loss, the box-selection CIP of ``docs/explanation/box_selection.md``):
choose at most k candidate boxes S and weights β minimizing

.. math:: R(S) = \frac{1}{W}\Big(\min_{\beta_0, \beta}\sum_c W_c\big(\bar y_c - \beta_0
          - \textstyle\sum_{b\in S}\beta_b q_{cb}\big)^2 + \lambda\,\Omega(\beta) + C\Big)

over occupied cells c (weights :math:`W_c`, means :math:`\bar y_c`, within-cell constant
C), where :math:`\Omega(\beta) = \sum_b \beta_b^2/z_b` with multiplicities
:math:`z_b \ge 1`, :math:`\sum z_b \le k`. A support of s ≥ σ boxes has
:math:`z_b \le k - s + 1 \le k - \sigma + 1`, so
:math:`\Omega(\beta) \ge \|\beta\|^2/(k - \sigma + 1)`.

The sweep bound
---------------
Order the cells lexicographically by their threshold groups and give every box its *key*,
the first cell it covers; sort the boxes by key (the single-cell box last among equal
keys). Enumerate supports as increasing index sequences (each subset once). A node
:math:`(F, i)` holds every support :math:`F \cup T` with T drawn from the boxes at
positions ≥ i; all of those cover only cells with index ≥ :math:`m_i` (the key of box i).
On the *closed* cells :math:`c < m_i` the prediction of any such support is therefore
:math:`\beta_0 + \sum_{b\in F}\beta_b q_{cb}`, and dropping the loss of the open cells and
the penalty of T's weights (both ≥ 0),

.. math:: R(F \cup T) \ge \frac{1}{W}\Big(\min_{\beta_0,\beta_F} \sum_{c < m_i}
          W_c\big(\bar y_c - \beta_0 - \textstyle\sum_{b \in F}\beta_b q_{cb}\big)^2
          + \frac{\lambda}{k - |F| + 1}\|\beta_F\|^2 + C\Big).

No term depends on λ being large: at λ = 0 it is a weighted least-squares residual on the
closed cells. It is evaluated for all children of a node at once by batched Householder
QR of the row-masked (and, for λ > 0, ridge-augmented) design: with
:math:`A = \mathcal Q\mathcal R` exactly, :math:`\mathrm{col}(A) \subseteq
\mathrm{col}(\mathcal Q)`, so the computed residual is never above the true one even
when A is rank deficient (the bound stays valid, at worst weaker). A margin covers
round-off: 1e-9 of the bound plus 1e-12 of :math:`\|t\|^2/W` (the weighted second moment
of the cell means, the magnitude the residual is computed from by projection), so it
scales with y² like every risk and the search proves at the same relative gap for every
scale of y; the former margin :math:`10^{-9}\max(1, |R|)` had an absolute unit: at a
risk of 4.3e-9 (y·1e-4) it lowered every node bound by a fifth, so the search pruned less
(77 nodes where the unscaled instance takes 52; now 52 at both scales).

**Closure.** If at most :math:`r = k - |F|` cells are open, the support F plus the
single-cell boxes of the open cells (all at positions ≥ i by the ordering) fits every open
cell exactly, so the node's bound is attained up to the ridge: it becomes a candidate
incumbent.

Search: best first while at most ``max_open`` nodes are open, then depth first below the
popped node (memory ``max_open`` + :math:`O(kB)` nodes); children are pruned against the
incumbent within ``rel_tol``; the incumbent starts from the swap local search of
:mod:`rulemip.algorithms.local.box_swaps` and every visited support is evaluated exactly.
The offered point of a visited support fixes its multiplicities, so with λ > 0 the
support's own bound (all cells closed, ridge :math:`\lambda/(k-|F|+1)`) also enters the
reported bound. When the time limit stops the search, the bound is the least bound of the
open, pruned and visited nodes — still valid.

Size and clock
--------------
The children of a node are bounded in chunks of at most :data:`CHUNK_BYTES` of
temporaries, and the fit's :class:`~rulemip.budget.Budget` is asked between chunks: a node
interrupted by the limit goes back to the open nodes with its own bound, so a limit returns
the incumbent and a valid bound after at most one chunk. The engine enumerates every
distinct candidate box, so its memory grows with their number B (over C occupied cells and
n rows): the enumeration's widest step, the oracle's n × B design, the cover and the
bound's C × B design, the open nodes and one chunk (:func:`cell_bnb_bytes`, with B bounded
by :func:`~rulemip.formulations.sizes.count_boxes` and C by min(n, Π(g_j + 1))).
:func:`check_cell_bnb_fits` refuses, before any work, a problem whose bound exceeds
:data:`CELL_BNB_MAX_BYTES` (a constant, so the answer does not depend on the machine).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_nonneg_float
from rulemip.algorithms.local.box_swaps import local_search
from rulemip.algorithms.solve.driver import solve
from rulemip.algorithms.solve.registry import register_formulation
from rulemip.budget import Budget
from rulemip.data.dataset import Dataset
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_selection import BoxSelectionCIP, BoxSelectionProblem
from rulemip.formulations.cells import CellReduction
from rulemip.formulations.protocol import SearchOutcome
from rulemip.formulations.result import ExactResult
from rulemip.formulations.sizes import count_boxes, prefix_box_counts
from rulemip.rules import RuleEnsemble
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.base import Capability, SolverBackend
from rulemip.solvers.result import budget_limit

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["CELL_BNB_MAX_BYTES", "CellSweepBound", "SweepResult", "cell_bnb_bytes",
           "check_cell_bnb_fits", "solve_cell_bnb", "sweep_branch_and_bound"]

_MARGIN = 1e-9  # relative round-off margin of a node bound
#: round-off of a residual computed by projection, relative to the second moment it is
#: computed from (``‖t‖²/W``): the node bound's margin besides :data:`_MARGIN`
_ROUNDOFF = 1e-12
#: share of the time left after building the cells that the starting local search may use
LOCAL_SEARCH_SHARE = 0.1
_ORACLE_REG = 1e-12  # ridge of the incumbent oracle when reg = 0 (its values are then ≥ truth)
#: the size guard (:func:`check_cell_bnb_fits`): the most bytes the engine may need
CELL_BNB_MAX_BYTES = 2 * 2**30
#: temporaries of one chunk of the batched node bound (:meth:`CellSweepBound.residuals`)
CHUNK_BYTES = 32 * 2**20
_NODE_BYTES = 200  # a node on the heap or the dive stack (tuple, floats, support tuple)
_MAX_OPEN = 200_000


def cell_bnb_bytes(language: Language, n_samples: int | None = None) -> float:
    r"""An upper bound on the bytes ``engine="cell-bnb"`` allocates for ``language``
    (module docstring).

    With :math:`B` the candidate boxes (:func:`count_boxes`, before duplicates are
    removed), :math:`C \le \min(n, \prod_j (g_j + 1))` the occupied cells, d features,
    :math:`I_j = (g_j + 1)(g_j + 2)/2` intervals of feature j and :math:`B_j` the boxes
    over the first j features (:func:`prefix_box_counts`), the enumeration's step j holds
    :math:`(B_{j-1} + 1) I_j` partial boxes, each a C-cell cover and its packed copy and
    bounds (:math:`2C + 16(j + 4)` bytes); afterwards the oracle's design (8n per box), the
    covers and the bound's design (11C), the boxes' bounds (16d), the nodes (at most
    ``max_open`` + kB) and one chunk remain."""
    thresholds = language.thresholds or ()
    prefix = prefix_box_counts(language)
    groups = [len(t) + 1 for t in thresholds]
    d = len(groups)
    n_cells = float(np.prod(np.asarray(groups, dtype=float))) if groups else 1.0
    if n_samples is not None:
        n_cells = min(n_cells, float(n_samples))
    n = float(n_samples) if n_samples is not None else n_cells
    enum = 0.0
    for j in range(d):
        before = float(prefix[j]) + 1.0
        intervals = groups[j] * (groups[j] + 1) / 2
        enum = max(enum, before * intervals * (2 * n_cells + 16 * (j + 4)))
    B = float(prefix[-1])
    steady = B * (8 * n + 11 * n_cells + 16 * d + 16) \
        + _NODE_BYTES * (_MAX_OPEN + language.n_rules * B) + CHUNK_BYTES
    return enum + steady


def check_cell_bnb_fits(problem: KRuleProblem) -> None:
    """Refuse, before any work, a problem whose memory bound (:func:`cell_bnb_bytes`)
    exceeds :data:`CELL_BNB_MAX_BYTES`, naming the engines that can serve (the size guard
    registered with the engine)."""
    need = cell_bnb_bytes(problem.language, problem.dataset.X.shape[0])
    if need <= CELL_BNB_MAX_BYTES:
        return
    thresholds = problem.thresholds
    n_boxes = count_boxes(problem.language)
    raise InvalidParameterError(
        f"`engine='cell-bnb'` enumerates every candidate box, and these thresholds give up "
        f"to {n_boxes:.3g} of them over {len(thresholds)} features: it could need "
        f"{need / 2**30:.3g} GiB (more than {CELL_BNB_MAX_BYTES / 2**30:.3g} GiB). It is "
        "meant for 2-3 features with a handful of cut points. Use engine='auto' (column "
        "generation prices boxes without enumerating them, or the MIP at reg = 0), "
        "engine='cg' or engine='mip', or fewer boxes: a smaller `max_thresholds`, a "
        "`max_rule_length`, or fewer features.")


class CellSweepBound:
    r"""Cells in sweep order, boxes sorted by key, and the batched node bound.

    Parameters
    ----------
    cover : (C, B) bool, whether box b covers cell c.
    cells : the cell reduction: its threshold groups (C, d) define the sweep order, its
        cell means :math:`\bar y_c` and weights :math:`W_c`, constant C and total
        weight W the risk.
    reg : λ ≥ 0.
    language : its rule count k and intercept (unpenalized β₀).
    """

    def __init__(self, cover: NDArray[np.bool_], cells: CellReduction, reg: float,
                 language: Language) -> None:
        groups, y, weight = cells.groups, cells.y, cells.weight
        constant, total_weight = cells.constant, cells.total_weight
        fit_intercept = language.fit_intercept
        cell_order = np.lexsort(groups.T[::-1]) if groups.size else np.arange(len(y))
        cov = np.asarray(cover, dtype=bool)[cell_order]
        self.n_cells, n_boxes = cov.shape
        first = np.where(cov.any(axis=0), cov.argmax(axis=0), self.n_cells)
        single = cov.sum(axis=0) == 1
        self.box_order = np.lexsort((single, first))  # by key, single-cell box last
        self.cover = cov[:, self.box_order]
        self.key = np.append(first[self.box_order], self.n_cells).astype(np.int64)
        self.single_of_cell = np.full(self.n_cells, -1, dtype=np.int64)
        s_sorted = single[self.box_order]
        self.single_of_cell[self.key[:-1][s_sorted]] = np.flatnonzero(s_sorted)
        sw = np.sqrt(np.asarray(weight, dtype=float)[cell_order])
        self.A = self.cover.astype(float) * sw[:, None]
        self.t = np.asarray(y, dtype=float)[cell_order] * sw
        self.ones = sw if fit_intercept else None
        self.reg = float(reg)
        self.k = language.n_rules
        self.constant = float(constant)
        self.W = float(total_weight)
        self.n_boxes = n_boxes
        #: the absolute part of the node bound's round-off margin (module docstring)
        self.roundoff = _ROUNDOFF * float(self.t @ self.t) / self.W

    def residuals(self, F: Sequence[int], children: IntArray, closed: IntArray
                  ) -> FloatArray:
        r"""Lower bounds on the weighted residual of ``F ∪ {j}`` (every j in ``children``)
        restricted to the first ``closed[j]`` cells, with ridge
        :math:`\lambda/(k - |F|)` on the box weights (supports in the subtree have at
        least |F| + 1 boxes) (module docstring); normalized as risks :math:`(\cdot + C)/W`.

        One batched QR of F's (masked, ridge-augmented) design per distinct ``closed``
        value, then a rank-one update per child: with :math:`\tilde q_j` the part of the
        child's augmented column outside :math:`\mathrm{col}(\mathcal Q)`,
        :math:`\rho(F \cup j) = \rho(F) - (\tilde q_j^\top \tilde t)^2/\|\tilde q_j\|^2`
        (exact for full rank; smaller, hence still a lower bound, otherwise)."""
        C, s = self.n_cells, len(F)
        eps_root = math.sqrt(self.reg / max(self.k - s, 1))
        ms, group = np.unique(closed, return_inverse=True)
        G = len(ms)
        mask = (np.arange(C)[None, :] < ms[:, None]).astype(float)  # (G, C)
        cols = [self.A[:, list(F)]] + ([self.ones[:, None]] if self.ones is not None else [])
        AF = np.concatenate(cols, axis=1)  # (C, p)
        p = AF.shape[1]
        rows = C + s + 1  # cells, F's ridge rows, the child's ridge row
        A = np.zeros((G, rows, p))
        A[:, :C, :] = AF[None] * mask[:, :, None]
        A[:, C + np.arange(s), np.arange(s)] = eps_root
        t = np.zeros((G, rows))
        t[:, :C] = self.t[None] * mask
        if p:
            q, _ = np.linalg.qr(A, mode="reduced")
            t_res = t - np.einsum("grp,gp->gr", q, np.einsum("grp,gr->gp", q, t))
        else:
            q, t_res = np.zeros((G, rows, 0)), t
        rho_F = np.einsum("gr,gr->g", t_res, t_res)
        col = np.zeros((len(children), rows))
        col[:, :C] = self.A[:, children].T * mask[group]
        col[:, C + s] = eps_root
        qg = q[group]
        col -= np.einsum("nrp,np->nr", qg, np.einsum("nrp,nr->np", qg, col))
        num = np.einsum("nr,nr->n", col, t_res[group]) ** 2
        den = np.einsum("nr,nr->n", col, col)
        gain = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
        res = np.maximum(rho_F[group] - gain, 0.0)
        val = (res + self.constant) / self.W
        return val - _MARGIN * np.abs(val) - self.roundoff

    def chunk_size(self, depth: int) -> int:
        """Children per chunk of :meth:`residuals` for a support of ``depth`` boxes: its
        temporaries stay within :data:`CHUNK_BYTES`. Per child and row (cells plus ridge
        rows) they hold the masked column, its projection and two einsum results, the
        gathered basis (p ≤ depth + 1 columns) and, when every child has its own number of
        closed cells, that group's design, basis, mask and target: at most
        ``3·depth + 11`` floats."""
        per_child = 8 * (self.n_cells + depth + 2) * (3 * depth + 11)
        return max(1, CHUNK_BYTES // per_child)

    def child_bounds(self, F: tuple[int, ...], children: IntArray, floor: float,
                     clock: Budget) -> FloatArray | None:
        """The bounds of the children ``F ∪ {j}`` (:meth:`residuals`, raised to the
        parent's ``floor``), chunk by chunk; ``None`` when ``clock`` expires between two
        chunks (the caller keeps the node open)."""
        step = self.chunk_size(len(F))
        out = np.empty(len(children))
        depth = len(F) + 1
        for lo in range(0, len(children), step):
            if lo and clock.expired():
                return None
            part = children[lo:lo + step]
            out[lo:lo + step] = self.residuals(F, part, self.closed_cells(part, depth))
        return np.maximum(out, floor)

    def closed_cells(self, positions: IntArray, depth: int) -> IntArray:
        """Cells closed for a child at ``positions`` (next free position + 1) of a support
        of size ``depth``: all of them when the child has no budget left."""
        if depth >= self.k:
            return np.full(len(positions), self.n_cells, dtype=np.int64)
        return self.key[positions + 1]


@dataclass(frozen=True)
class SweepResult:
    """Best support (sorted positions mapped back to box indices), its multiplicities
    z, its exact value, a proved lower bound and the effort."""

    z: FloatArray
    value: float
    lower_bound: float
    complete: bool
    nodes: int
    wall_time: float


def _support_point(sb: CellSweepBound, positions: Sequence[int], k: int) -> FloatArray:
    """Multiplicities over the original box indices: one copy of every box, the spare
    units on the first box (R is non-increasing in z, so spare units never hurt)."""
    z = np.zeros(sb.n_boxes)
    idx = sb.box_order[list(positions)]
    z[idx] = 1.0
    if len(idx):
        z[idx[0]] += k - len(idx)
    return z


def sweep_branch_and_bound(sb: CellSweepBound, value: Callable[[FloatArray], float],
                           incumbent: FloatArray, incumbent_value: float, *,
                           rel_tol: float = 1e-6, budget: Budget | None = None,
                           max_open: int = _MAX_OPEN,
                           callback: Callable[[dict[str, Any]], None] | None = None
                           ) -> SweepResult:
    """Sweep branch and bound (module docstring). ``value(z)`` is the exact risk of
    multiplicities z over the original box order.

    Best first (least bound) while at most ``max_open`` nodes are open — the reported
    bound then rises steadily; beyond that, the children of the popped node are searched
    depth first to the end before the next pop (memory ``max_open + O(kB)`` nodes).
    ``budget`` is the fit's :class:`~rulemip.budget.Budget` (None: unlimited), asked
    before every node and between the chunks of a node's children
    (:meth:`CellSweepBound.child_bounds`)."""
    t0 = time.perf_counter()  # wall time for the report; the deadline is ``clock``'s
    clock = Budget.coerce(budget, None)
    k, B = sb.k, sb.n_boxes
    best_z, best = np.asarray(incumbent, dtype=float), float(incumbent_value)

    def prune_level() -> float:  # the relative gap of rulemip.solvers.relative_gap
        return best - rel_tol * max(abs(best), 1e-10)

    def offer(positions: tuple[int, ...]) -> None:
        nonlocal best, best_z
        z = _support_point(sb, positions, k)
        v = value(z)
        if v < best:
            best, best_z = v, z
            if callback is not None:
                callback({"nodes": nodes, "upper_bound": best, "open": len(heap) + len(dive)})

    Node = tuple[float, tuple[int, ...], int]
    counter = itertools.count()
    heap: list[tuple[float, int, tuple[int, ...], int]] = [(sb.constant / sb.W, 0, (), 0)]
    dive: list[Node] = []
    pruned_min, visited_min, nodes, complete = math.inf, math.inf, 0, True
    full = np.array([sb.n_cells], dtype=np.int64)
    while heap or dive:
        if clock.expired():
            complete = False
            break
        if dive:
            bound, F, i = dive.pop()
        else:
            bound, _, F, i = heapq.heappop(heap)
        if bound >= prune_level():
            pruned_min = min(pruned_min, bound)
            continue
        nodes += 1
        clock.charge()                      # a node is a unit of work
        if F:
            offer(F)
            if sb.reg > 0 and len(F) < k:
                # the offered point fixes the multiplicities; bound every other choice
                visited_min = min(visited_min, float(sb.residuals(
                    F[:-1], np.array(F[-1:], dtype=np.int64), full)[0]))
        r = k - len(F)
        open_cells = np.arange(sb.key[i], sb.n_cells) if i < B else np.zeros(0, np.int64)
        if 0 < len(open_cells) <= r and np.all(sb.single_of_cell[open_cells] >= i):
            offer((*F, *sb.single_of_cell[open_cells].tolist()))
        if bound >= prune_level():
            pruned_min = min(pruned_min, bound)
            continue
        if r == 0 or i >= B:
            continue
        children = np.arange(i, B, dtype=np.int64)
        bounds = sb.child_bounds(F, children, bound, clock)
        if bounds is None:  # the limit came between two chunks: the node stays open
            heapq.heappush(heap, (bound, next(counter), F, i))
            complete = False
            break
        keep = bounds < prune_level()
        if not keep.all():
            pruned_min = min(pruned_min, float(bounds[~keep].min()))
        order = children[keep][np.argsort(-bounds[keep], kind="stable")]
        if dive or len(heap) >= max_open:
            dive.extend((float(bounds[j - i]), (*F, int(j)), int(j) + 1) for j in order)
        else:
            for j in order:
                heapq.heappush(heap, (float(bounds[j - i]), next(counter), (*F, int(j)),
                                      int(j) + 1))
    open_min = min([h[0] for h in heap] + [d[0] for d in dive], default=math.inf)
    lb = min(best, pruned_min, open_min, visited_min)
    return SweepResult(best_z, best, lb, complete, nodes, time.perf_counter() - t0)


class CellSweepSearch(BoxSelectionCIP):
    """The box-selection problem searched by the cell-sweep branch and bound (an
    :class:`~rulemip.formulations.protocol.OracleFormulation`, engine ``"cell-bnb"``).

    Squared loss; valid for every ``reg`` ≥ 0, including 0 (module docstring). At
    ``reg = 0`` the incumbent oracle uses a ridge of 1e-12 (its values are then ≥ the
    truth) and decoding refits with the true ridge. It needs no solver. ``language``,
    ``reg`` and ``max_thresholds`` are those of
    :class:`~rulemip.formulations.box_selection.BoxSelectionCIP`.
    """

    engine = "cell-bnb"

    def __init__(self, language: Language, *, loss: str = "squared", reg: float = 0.0,
                 max_thresholds: int | None = None) -> None:
        if loss != "squared":
            raise InvalidParameterError(
                f"the cell-bnb engine (solve_cell_bnb) is for squared loss; got loss={loss!r}. "
                "Use engine='cip'.")
        lam = check_nonneg_float(reg, "reg")
        assert lam is not None
        super().__init__(language, loss=loss, reg=lam if lam > 0 else _ORACLE_REG,
                         max_thresholds=max_thresholds)
        self.true_reg = lam

    def needs(self) -> set[Capability]:
        """Nothing: the sweep bound and the local search evaluate the oracle only."""
        return set()

    def build_model(self, dataset: Dataset, *, backend: SolverBackend | None = None,
                    native: bool = True, warm_start: RuleEnsemble | None = None
                    ) -> BoxSelectionProblem:
        prob = self.build(dataset)
        prob.reg = self.true_reg  # decoding refits with the true ridge (0 allowed)
        return prob

    def search(self, built: BoxSelectionProblem, *, backend: SolverBackend, budget: Budget,
               mip_gap: float, start: FloatArray | None = None,
               warm_start: RuleEnsemble | None = None, seed: int = 0,
               threads: int | None = None,
               callback: Callable[[dict[str, Any]], Any] | None = None) -> SearchOutcome:
        """Local search from the start (a tenth of the budget), then the sweep branch and
        bound (:func:`sweep_branch_and_bound`) to ``mip_gap``."""
        check_nonneg_float(mip_gap, "mip_gap")
        prob = built
        cells = prob.cells

        def value(z: FloatArray) -> float:
            return float(prob.oracle.value_and_gradient(z)[0])

        z0 = start if start is not None else np.zeros(prob.n_boxes)
        ls = local_search(prob.oracle, z0, self.n_rules, max_kicks=max(prob.n_boxes, 1), seed=seed,
                          target=prob.bound + mip_gap * abs(prob.bound),
                          budget=budget.fraction(LOCAL_SEARCH_SHARE))
        if budget.expired():  # building the problem took the time: no sweep structures
            return SearchOutcome(
                x=ls.z, lower_bound=prob.bound, finished=False, limit=budget_limit(budget),
                method="sweep bnb", iterations=0,
                notes=(f"{cells.n_cells} occupied cells, {prob.n_boxes} distinct boxes",
                       "the time limit came before the sweep branch and bound started"))
        sb = CellSweepBound(prob.boxes.cover, cells, self.true_reg, self.language)
        res = sweep_branch_and_bound(sb, value, ls.z, ls.value, rel_tol=mip_gap,
                                     budget=budget, callback=callback)
        notes = (f"{cells.n_cells} occupied cells, {prob.n_boxes} distinct boxes",
                 f"local search: {ls.value:.10g} ({ls.kicks} kicks, {ls.wall_time:.2f} s)",
                 f"sweep branch and bound: {res.nodes} nodes"
                 + ("" if res.complete else ", stopped by the time limit"))
        return SearchOutcome(x=res.z, lower_bound=max(res.lower_bound, prob.bound),
                             finished=res.complete,
                             limit=None if res.complete else budget_limit(budget),
                             method="sweep bnb",
                             iterations=res.nodes, notes=notes)


def solve_cell_bnb(problem: KRuleProblem, *, mip_gap: float = 1e-6,
                   warm_start: RuleEnsemble | None = None,
                   seed: int = 0, callback: Callable[[dict[str, Any]], None] | None = None,
                   budget: Budget | None = None) -> ExactResult:
    """Certified best ensemble of ``problem`` (squared loss) by the sweep branch and
    bound, through the driver (:func:`rulemip.algorithms.solve.driver.solve` with
    :class:`CellSweepSearch`).

    Meant for few occupied cells (2–3 features with a handful of cut points) and a weak
    ridge, where the perspective bounds of ``engine="cip"``/``"cip-bnb"`` stall. Returns an
    :class:`~rulemip.formulations.result.ExactResult` (``engine="cell-bnb"``, no backend)
    whose risk is recomputed on the data; ``OPTIMAL`` only when the relative gap closed
    to ``mip_gap``. ``budget`` is the fit's :class:`~rulemip.budget.Budget`; building the
    cells counts against it. A problem beyond the size guard is refused before any work
    (:func:`check_cell_bnb_fits`).
    """
    check_nonneg_float(mip_gap, "mip_gap")
    formulation = CellSweepSearch(problem.language, **problem.keywords())
    check_cell_bnb_fits(problem)
    return solve(formulation, problem.dataset, solver="auto", budget=budget,
                 mip_gap=mip_gap, warm_start=warm_start, callback=callback, seed=seed)


register_formulation("cell-bnb", lambda p: CellSweepSearch(p.language, **p.keywords()),
                     losses=("squared",),
                     fits=check_cell_bnb_fits, needs=frozenset(), oracle=True,
                     description="cell-sweep branch and bound: a bound valid at reg = 0 "
                                 "exactly (docs/explanation/cell_sweep_bound.md)")
