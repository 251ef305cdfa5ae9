r"""Frank–Wolfe (pairwise conditional gradient) for the pruning relaxation ([PRUNE] App. D).

The convex relaxation of the tree-pruning problem is

.. math::

    \min_{z \in P}\ f(z) = q(z) + \lambda a^\top z, \qquad
    q(z) = \tfrac12 y^\top\bigl(I + \gamma \textstyle\sum_i z_i M_i M_i^\top\bigr)^{-1} y,

with ``λ = 0`` for the budgeted problem and the polytope

.. math::

    P = \{z \in [0,1]^m : \textstyle\sum_{j \in \pi} z_j \le 1 \text{ for every
    root-to-leaf path } \pi\} \ \bigl(\cap \{a^\top z \le K\} \text{ when budgeted}\bigr).

``q`` is convex and smooth on ``[0,1]^m`` with
:math:`\nabla q(z)_i = -(\gamma/2)(M_i^\top r)^2`, ``r`` the residual of the ridge fit
(:class:`~rulemip.formulations.tree_pruning.TreePruningCIP`).

**Linear minimization oracle (LMO).**  Without the budget, :math:`P_0 = \{z \in [0,1]^m :
Rz \le 1\}` (``R`` the path–node incidence matrix) is integral: order the leaves in a
depth-first order; node ``i`` lies exactly on the paths of the leaves of its subtree, which
are consecutive in that order, so every column of ``R`` has the consecutive-ones property.
An interval matrix is totally unimodular, hence so is ``[R; I]``, and ``P_0`` — with an
integral right-hand side — has only integral vertices, i.e. ``P_0 = conv{antichains}``
(equivalently: the paths are the maximal cliques of the forest's comparability graph, a
perfect graph, and clique constraints of a perfect graph describe its stable-set
polytope; Chvátal 1975).  So :math:`\min_{s \in P_0} c^\top s` is attained at an antichain,
and the tree DP

.. math:: f_i = \min\bigl(c_i,\ \textstyle\sum_{j \in \mathrm{children}(i)} f_j\bigr)
          \quad (\text{empty sum} = 0)

is exact: an antichain of the subtree of ``i`` either is ``{i}`` or is a union of
antichains of the children's subtrees, which never conflict with each other
(:func:`antichain_min`, vectorized by depth level).

With the budget, :math:`P_0 \cap \{a^\top s \le K\}` is no longer integral.  Its LP is
solved exactly by Lagrangian relaxation of the one budget row:

.. math:: \varphi(\mu) = \min_{s \in P_0} (c + \mu a)^\top s - \mu K, \qquad \mu \ge 0,

is concave and piecewise linear, a valid lower bound of the LP for every ``μ ≥ 0`` (weak
duality), and ``max_μ φ = LP optimum`` (LP duality).  The maximizer is found exactly by
the breakpoint (Newton / Eisner–Severance) search: keep antichains ``s⁻`` with
``aᵀs⁻ > K`` and ``s⁺`` with ``aᵀs⁺ ≤ K`` whose lines ``cᵀs + μ(aᵀs − K)`` are tangent to φ,
evaluate φ where the two lines cross; either φ equals the lines there (that ``μ*``
maximizes φ, both antichains minimize the Lagrangian, and
``s = θ s⁻ + (1 − θ) s⁺`` with ``aᵀs = K`` is primal feasible with ``cᵀs = φ(μ*)``, hence
LP-optimal), or a new antichain with a strictly lower line replaces one end.  There are
finitely many antichains, so the search ends (it is also capped; the bound returned is the
largest φ evaluated, valid in every case).

**Pairwise Frank–Wolfe.**  The iterate is kept as a convex combination of LMO vertices
(atoms).  At ``z`` with gradient ``g``: ``s = LMO(g)``, ``v = argmax_{atoms} gᵀv``,
direction ``d = s − v``, step ``t ∈ [0, α_v]`` by an exact line search; atoms reaching
weight 0 are dropped.  Along the segment ``q(t) = ½ yᵀ(A + tB)⁻¹y`` with
``A = I + γ M_S diag(z_S) M_Sᵀ`` (``S = supp z``) and the low-rank
``B = L Δ Lᵀ``, ``L = √γ M_D``, ``Δ = diag(d_D)`` (``D = supp d``, at most the supports of
two vertices).  With ``u = LᵀA⁻¹y`` and ``C = LᵀA⁻¹L`` (``A⁻¹`` by Woodbury on S: one
``|S| × |S|`` Cholesky factorization per iteration), Woodbury in ``B`` gives

.. math:: q(t) = q(0) - \tfrac12 u^\top x(t),\quad x(t) = (I + t\Delta C)^{-1} t\Delta u,
          \quad q'(t) = -\tfrac12 (u - C x)^\top \Delta (u - C x),

(``det(A + tB) = det A · det(I + tΔC) > 0`` on the segment), so each trial point costs
one ``|D| × |D|`` solve, and the residual at the chosen step is
``r = A⁻¹y − A⁻¹L x``.  ``f'(t) = q'(t) + λaᵀd`` is non-decreasing (``f`` convex): its
root is bracketed and found by safeguarded (Illinois) regula falsi.

**Bounds.**  For convex ``f`` and any feasible ``z``,

.. math:: f^* \ge f(z) + \min_{s \in P} \nabla f(z)^\top (s - z)
          \ \ge\ f(z) + \varphi_{\text{best}} - \nabla f(z)^\top z,

so every iteration yields a valid lower bound (the Frank–Wolfe gap bound; also ``f ≥ 0``);
the best one is kept.  ``f(z)`` at the iterate is an upper bound of the relaxation's
optimum; the relaxation converges when the two are within the tolerance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
from numpy.typing import NDArray

from rulemip.budget import Budget
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.forest import Forest, pruning_gradient
from rulemip.formulations.tree_pruning import TreePruningCIP

__all__ = ["FWIteration", "FWResult", "ForestLMO", "RidgeSegment", "antichain_min",
           "frank_wolfe_bound", "frank_wolfe_relaxation"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def antichain_min(c: FloatArray, parent: IntArray,
                  forest: Forest | None = None) -> tuple[float, FloatArray]:
    r"""Exact :math:`\min_s c^\top s` over antichains of the forest ``parent`` (also over
    :math:`\{s \in [0,1]^m : \sum_{j\in\pi} s_j \le 1\}`, module docstring): the DP
    :meth:`rulemip.formulations.forest.Forest.min_antichain` (pass ``forest`` to reuse its
    precomputed levels).

    Returns
    -------
    (value, s) : the minimum and a 0/1 minimizer.
    """
    return (forest if forest is not None else Forest(parent)).min_antichain(c)


class ForestLMO:
    r"""Linear minimization oracle over the relaxed feasible set ``P`` (module docstring).

    Parameters
    ----------
    parent : (m,) parent index of each node (−1 for roots).
    a : (m,) non-negative node costs (only with ``budget``).
    budget : ``K`` of ``aᵀs ≤ K``; ``None`` for the penalized problem (no budget row).
    max_breakpoints : cap of the Lagrangian breakpoint search (the bound stays valid).
    """

    def __init__(self, parent: IntArray, a: FloatArray | None = None,
                 budget: float | None = None, max_breakpoints: int = 200) -> None:
        self.parent = np.asarray(parent, dtype=np.int64)
        self.forest = Forest(self.parent)
        self.budget = None if budget is None else float(budget)
        if self.budget is not None:
            if a is None or not self.budget >= 0:
                raise InvalidParameterError("a budgeted LMO needs costs `a` and `budget` >= 0.")
            self.a = np.asarray(a, dtype=float)
            if self.a.shape != self.parent.shape or np.any(self.a < 0):
                raise InvalidParameterError("`a` must be (m,) and non-negative.")
        self.max_breakpoints = int(max_breakpoints)
        self.last_breakpoints = 0
        self.last_exact = True

    def minimize(self, c: FloatArray) -> tuple[FloatArray, float]:
        r"""``(s, bound)``: a point ``s ∈ P`` minimizing ``cᵀs`` (exact unless the
        breakpoint cap was hit, then ``last_exact`` is False and ``s`` is feasible) and a
        valid lower bound ``bound ≤ min_{s∈P} cᵀs`` (equal to ``cᵀs`` when exact)."""
        c = np.asarray(c, dtype=float)
        val0, s0 = self.forest.min_antichain(c)
        self.last_breakpoints, self.last_exact = 0, True
        if self.budget is None:
            return s0, val0
        a, K = self.a, self.budget
        cost0 = float(a @ s0)
        if cost0 <= K:
            return s0, val0
        pos = a > 0
        # above mu_hi every node of positive cost has a positive weight: never selected
        mu_hi = float(np.max(np.maximum(-c[pos], 0.0) / a[pos])) * (1 + 1e-9) + 1e-12
        v_hi, s_hi = self.forest.min_antichain(c + mu_hi * a)
        lo = (float(c @ s0), cost0, s0)
        hi = (float(c @ s_hi), float(a @ s_hi), s_hi)
        best = max(val0, v_hi - mu_hi * K)
        tol = 1e-12 * max(1.0, float(np.abs(c).sum()))
        exact = False
        for it in range(1, self.max_breakpoints + 1):
            self.last_breakpoints = it
            mu = (hi[0] - lo[0]) / (lo[1] - hi[1])
            mu = max(mu, 0.0)
            line = lo[0] + mu * (lo[1] - K)
            v, s = self.forest.min_antichain(c + mu * a)
            phi = v - mu * K
            best = max(best, phi)
            if phi >= line - tol:
                exact = True
                break
            cs, cost = float(c @ s), float(a @ s)
            if cost > K:
                lo = (cs, cost, s)
            else:
                hi = (cs, cost, s)
                if cost == K:  # zero subgradient: s is optimal
                    self.last_exact = True
                    return s, max(best, cs)
        theta = (K - hi[1]) / (lo[1] - hi[1])
        s = theta * lo[2] + (1.0 - theta) * hi[2]
        self.last_exact = exact
        value = float(c @ s)
        return s, (min(best, value) if exact else best)


@dataclass(frozen=True)
class FWIteration:
    """One Frank–Wolfe iteration: upper value f(z), best lower bound so far, the FW gap
    ``∇f(z)ᵀ(z − s)``, the step, the number of atoms and the elapsed time."""

    value: float
    lower_bound: float
    fw_gap: float
    step: float
    n_atoms: int
    time: float


@dataclass(frozen=True)
class FWResult:
    """Result of :func:`frank_wolfe_relaxation`.

    Attributes
    ----------
    z : best (lowest f) feasible relaxed point.
    value : f(z) — an upper bound of the relaxation optimum.
    lower_bound : best Frank–Wolfe bound — a valid lower bound of the relaxation optimum
        (hence of the integer problem).
    converged : ``value − lower_bound ≤ max(abs_tol, rel_tol·|value|)``.
    iterations, termination ("converged", "time_limit", "max_iter", "stalled").
    history : one :class:`FWIteration` per iteration.
    """

    z: FloatArray
    value: float
    lower_bound: float
    converged: bool
    iterations: int
    termination: str
    history: tuple[FWIteration, ...] = field(default=())


class _Segment:
    """f on the segment z + t d (t ∈ [0, t_max]) by a rank-|D| update (module docstring)."""

    def __init__(self, base: TreePruningCIP, z: FloatArray, d: FloatArray,
                 lin: float) -> None:
        S = np.flatnonzero(z > 0)
        self.MS = base.M[:, S]
        if S.size:
            H = np.asarray((self.MS.T @ self.MS).toarray(), dtype=float)
            H[np.diag_indices_from(H)] += 1.0 / (base.gamma * z[S])
            self.chol: tuple[FloatArray, bool] | None = sla.cho_factor(
                H, lower=True, check_finite=False)
        else:
            self.chol = None
        self.Ay = self._ainv(base.y)
        D = np.flatnonzero(d != 0)
        self.delta = d[D]
        L = base.M[:, D] * math.sqrt(base.gamma)
        self.AL = self._ainv(np.asarray(L.toarray(), dtype=float))
        self.u = np.asarray(L.T @ self.Ay, dtype=float).ravel()
        C = np.asarray(L.T @ self.AL, dtype=float)
        self.C = 0.5 * (C + C.T)
        self.q0 = 0.5 * float(base.y @ self.Ay)
        self.lin = lin

    def _ainv(self, X: FloatArray) -> FloatArray:
        """``A⁻¹X`` for ``A = I + γ M_S diag(z_S) M_Sᵀ`` (Woodbury on the support S)."""
        if self.chol is None:
            return X
        return X - self.MS @ sla.cho_solve(self.chol, self.MS.T @ X, check_finite=False)

    def eval(self, t: float) -> tuple[float, float, FloatArray]:
        """(q(t), f'(t), x) with ``x = (I + tΔC)⁻¹ tΔu``."""
        r = self.delta.shape[0]
        X = np.eye(r) + t * self.delta[:, None] * self.C
        x = np.linalg.solve(X, t * self.delta * self.u) if r else np.zeros(0)
        Ltr = self.u - self.C @ x
        q = self.q0 - 0.5 * float(self.u @ x)
        dq = -0.5 * float(self.delta @ (Ltr * Ltr)) + self.lin
        return q, dq, x

    def residual(self, x: FloatArray) -> FloatArray:
        """Ridge residual ``r(t) = (A + tB)⁻¹y = A⁻¹y − A⁻¹L x``."""
        return np.asarray(self.Ay - self.AL @ x, dtype=float).ravel()

    def search(self, t_max: float) -> tuple[float, FloatArray]:
        """Exact minimizer of the convex f(z + t d) on [0, t_max] (root of f')."""
        _, d0, x0 = self.eval(0.0)
        if d0 >= 0:
            return 0.0, x0
        _, d1, x1 = self.eval(t_max)
        if d1 <= 0:
            return t_max, x1
        lo, hi, flo, fhi = 0.0, t_max, d0, d1
        side = 0
        t, x = lo, x0
        for _ in range(100):
            t = (lo * fhi - hi * flo) / (fhi - flo)
            if not lo < t < hi:
                t = 0.5 * (lo + hi)
            _, dt, x = self.eval(t)
            if abs(dt) <= 1e-14 * (abs(d0) + abs(d1)) or hi - lo <= 1e-13 * t_max:
                break
            if dt < 0:
                lo, flo = t, dt
                if side == -1:
                    fhi *= 0.5  # Illinois modification
                side = -1
            else:
                hi, fhi = t, dt
                if side == 1:
                    flo *= 0.5
                side = 1
        return t, x


#: q on a segment by a low-rank update with an exact line search (public for the pruning
#: engines' own Frank–Wolfe loops, e.g. :mod:`rulemip.algorithms.pruning.perspective`)
RidgeSegment = _Segment


def frank_wolfe_relaxation(base: TreePruningCIP, lmo: ForestLMO, *,
                           lin: FloatArray | None = None, z0: FloatArray | None = None,
                           max_iter: int = 1000,
                           rel_tol: float = 1e-6, abs_tol: float = 1e-9,
                           budget: Budget | None = None) -> FWResult:
    r"""Minimize ``f(z) = q(z) + linᵀz`` over the LMO's polytope by pairwise Frank–Wolfe.

    Parameters
    ----------
    base : the ``q`` oracle (``M``, ``y``, ``γ``).
    lmo : :class:`ForestLMO` of the feasible set.
    lin : (m,) linear term (``λ a`` for the penalized problem); zero if ``None``.
    z0 : a vertex of ``P`` to start from (default 0, always feasible).
    max_iter : iteration limit.
    budget : the fit's :class:`~rulemip.budget.Budget` (None: unlimited); every iteration
        asks it.
    rel_tol, abs_tol : stop when ``value − lower_bound ≤ max(abs_tol, rel_tol·|value|)``.

    Returns
    -------
    FWResult : upper ``value`` at ``z`` and a valid ``lower_bound`` (module docstring).
    """
    t0 = time.perf_counter()
    clock = Budget.coerce(budget, None)
    m = base.M.shape[1]
    c_lin = np.zeros(m) if lin is None else np.asarray(lin, dtype=float)
    if max_iter < 0:
        raise InvalidParameterError(f"`max_iter` must be >= 0; got {max_iter}.")
    start = np.zeros(m) if z0 is None else np.asarray(z0, dtype=float).copy()
    atoms: list[FloatArray] = [start]
    alpha = [1.0]
    z = start.copy()
    def state(r: FloatArray, z: FloatArray) -> tuple[float, FloatArray]:
        f = 0.5 * float(base.y @ r) + float(c_lin @ z)  # q(z) = ½ yᵀr
        g = pruning_gradient(base.Mt, r, base.gamma) + c_lin
        return f, g

    f, g = state(_Segment(base, z, np.zeros(m), 0.0).Ay, z)
    lb = 0.0 if np.all(c_lin >= 0) else -math.inf  # q ≥ 0
    history: list[FWIteration] = []
    termination = "max_iter"
    it = 0
    while True:
        s, lmo_bound = lmo.minimize(g)
        gz = float(g @ z)
        lb = max(lb, f + lmo_bound - gz)
        fw_gap = gz - float(g @ s)
        if f - lb <= max(abs_tol, rel_tol * abs(f)):
            history.append(FWIteration(f, lb, fw_gap, 0.0, len(atoms),
                                       time.perf_counter() - t0))
            termination = "converged"
            break
        if it >= max_iter:
            termination = "max_iter"
            break
        if clock.expired():
            termination = "time_limit"
            break
        it += 1
        scores = [float(g @ v) for v in atoms]
        k = int(np.argmax(scores))
        d = s - atoms[k]
        if float(g @ d) >= 0:
            termination = "stalled"
            break
        seg = _Segment(base, z, d, float(c_lin @ d))
        t, x = seg.search(alpha[k])
        z_new = z + t * d
        f_new, g_new = state(seg.residual(x), z_new)
        if not f_new <= f or t <= 0.0:
            history.append(FWIteration(f, lb, fw_gap, t, len(atoms),
                                       time.perf_counter() - t0))
            termination = "stalled"
            break
        # update the atoms: move weight t from atom k to s
        alpha[k] -= t
        for j, v in enumerate(atoms):
            if np.array_equal(v, s):
                alpha[j] += t
                break
        else:
            atoms.append(s)
            alpha.append(t)
        keep = [j for j, al in enumerate(alpha) if al > 1e-15]
        atoms = [atoms[j] for j in keep]
        alpha = [alpha[j] for j in keep]
        tot = sum(alpha)
        alpha = [al / tot for al in alpha]
        z = np.clip(sum(al * v for al, v in zip(alpha, atoms, strict=True)), 0.0, 1.0)
        if np.max(np.abs(z - z_new)) > 1e-9:  # drift: re-evaluate at the convex combination
            f_new, g_new = state(_Segment(base, z, np.zeros(m), 0.0).Ay, z)
        f, g = f_new, g_new
        history.append(FWIteration(f, lb, fw_gap, t, len(atoms), time.perf_counter() - t0))
    return FWResult(z=np.asarray(z, dtype=float), value=float(f), lower_bound=float(lb),
                    converged=termination == "converged", iterations=it,
                    termination=termination, history=tuple(history))


#: relative margin taken off every Frank–Wolfe bound of :func:`frank_wolfe_bound` against
#: round-off in f(z) + ∇f(z)ᵀ(s − z)
BOUND_MARGIN: float = 1e-9
#: bisection steps of :func:`frank_wolfe_bound`'s line search
BISECTION_STEPS: int = 10


def frank_wolfe_bound(value_and_gradient: Callable[[FloatArray], tuple[float, FloatArray]],
                      lmo: Callable[[FloatArray], FloatArray], z: FloatArray, *,
                      threshold: float | None = None, max_iter: int, unit: float = 1.0
                      ) -> tuple[float, FloatArray]:
    r"""Best Frank–Wolfe dual bound of a convex f over a polytope P, and the last iterate.

    Plain (vanilla) Frank–Wolfe from the feasible ``z``: ``s = lmo(∇f(z))`` minimizes
    :math:`\nabla f(z)^\top s` over P exactly, so by convexity
    :math:`\min_P f \ge f(z) + \nabla f(z)^\top (s - z)` at every iterate (the bound of the
    module docstring, less a relative :data:`BOUND_MARGIN`); the best bound is kept. The
    step on the segment ``z + t (s − z)``, ``t ∈ [0, 1]``, is the full step when f still
    decreases at t = 1, else :data:`BISECTION_STEPS` bisections on the sign of the
    directional derivative (f is convex on the segment). Stops after ``max_iter``
    iterations, once the bound reaches ``threshold``, once an iterate's value is below
    ``threshold`` (the minimum cannot reach it then; ``None``: no threshold), or when the
    Frank–Wolfe gap :math:`-\nabla f(z)^\top (s - z)` is at most ``1e-9 · max(unit, |f(z)|)``.

    ``unit`` is the scale of f below which the margin and the stopping test stop being
    relative (a caller whose f has no natural unit passes one, e.g. the risk unit of
    :func:`~rulemip.formulations.box_oracles.risk_unit`, so that scaling f changes no
    decision); the margin only ever lowers the bound.

    This is the node bound of the box branch and bound (:mod:`rulemip.algorithms.krule.box_bnb`);
    :func:`frank_wolfe_relaxation` is the pairwise variant with an exact line search for
    the pruning relaxation.
    """
    best = -np.inf
    val, g = value_and_gradient(z)
    for _ in range(max_iter):
        d = lmo(g) - z
        slope = float(g @ d)
        best = max(best, val + slope - BOUND_MARGIN * max(unit, abs(val)))
        if threshold is not None and (best >= threshold or val < threshold):
            break
        if -slope <= 1e-9 * max(unit, abs(val)):
            break
        a, b = 0.0, 1.0
        _, g_end = value_and_gradient(z + d)
        if float(g_end @ d) < 0.0:
            a = 1.0
        else:
            for _ in range(BISECTION_STEPS):
                m = 0.5 * (a + b)
                _, g_mid = value_and_gradient(z + m * d)
                if float(g_mid @ d) < 0.0:
                    a = m
                else:
                    b = m
        step = a if a == 1.0 else 0.5 * (a + b)
        z = z + step * d
        val, g = value_and_gradient(z)
    return best, z
