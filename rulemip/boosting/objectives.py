r"""Rule-boosting objectives, their prefix values and their bounds (docs/explanation/boosting.md,
[OGB] §2–3).

Notation (docs/explanation/notation.md): ``g`` and ``h`` are the gradient and Hessian diagonal of
the per-point
loss :math:`l` at the current ensemble, ``w`` optional point weights (default 1, so that
:math:`\langle u, v\rangle_w = \sum_i w_i u_i v_i` is the ordinary inner product),
:math:`\lambda` = ``reg`` in the convention of :math:`R_\lambda` (docs/explanation/notation.md).
For a query
vector :math:`q \in \{0,1\}^n`:

- gradient sum        :math:`\mathrm{obj}_{gs}(q) = |\langle g, q\rangle_w|`
- gradient boosting   :math:`\mathrm{obj}_{gb}(q) = |\langle g, q\rangle_w| / \|q\|_w`
- extreme boosting    :math:`\mathrm{obj}_{xgb}(q) = |\langle g, q\rangle_w|
  / \sqrt{\langle h, q\rangle_w + 2\lambda}`
- orthogonal boosting :math:`\mathrm{obj}_{ogb}(q) = |\langle g_\perp, q\rangle_w|
  / (\|q_\perp\|_w + \varepsilon)`, :math:`v_\perp = v - O O^T_w v` for the orthonormal
  basis ``O`` of the selected queries (and of the background column when the model has an
  intercept).

**The 2λ in obj_xgb.** [OGB] eq. (5)/(6) write :math:`\lambda` where the second-order
model of :math:`n R_\lambda(f + \beta q) = \sum_i l(f_i + \beta q_i) + \lambda\beta^2 +
\text{const}` has curvature :math:`h^T q + 2\lambda`; its minimizer is
:math:`\beta = -g^Tq/(h^Tq + 2\lambda)` and the decrease it predicts is
:math:`(g^Tq)^2 / (2(h^Tq + 2\lambda))`. So the paper's :math:`\lambda` is ``2 * reg``;
we keep one convention (docs/explanation/notation.md) and use ``2 * reg`` in the objective
and in the update (:func:`rulemip.boosting.weights.xgb_weight`). For squared loss and
``reg = 0`` this is the exact line search and ``obj_xgb`` ranks queries like ``obj_gb``.

Every objective here is a function of **additive statistics**: the value of a query is
``F(sum of stats[i] over covered i)`` for a per-point statistic matrix ``stats``
(gs: ``w g``; gb: ``w g, w``; xgb: ``w g, w h``; ogb: ``w g_perp, w, w o_1..w o_t``).
Hence the values of all prefixes of an ordered sub-selection :math:`\sigma` (the *prefix
value problem*, [OGB] eq. (10)) are ``F(cumsum(stats[sigma]))`` — vectorized, O(c·l) for
``c`` statistics. For ogb this is exactly Algorithm 3 / Prop. 3 (with ``i`` — not ``i²`` —
under the root, docs/explanation/boosting.md): :math:`\|q^{(i)}_\perp\|^2 = \|q^{(i)}\|^2 - \sum_k
N_{k,i}^2`,
:math:`N_{k,i} = \sum_{j \le i} w_{\sigma(j)} o_{k,\sigma(j)}`.

**Bounds** ``bnd(q) >= max{obj(q') : q' <= q}`` (selectability-unaware, [OGB] eq. (9)):

- gs: exact and admissible — the larger of the sums of the positive and of the negative
  entries of ``w g`` in the cover.
- gb: exact and admissible by prefix greedy over the order of ``g`` (both directions).
- xgb: exact and admissible by prefix greedy over the order of ``g / h`` (Boley et al.
  2021).
- ogb: prefix greedy over the order of ``g_perp`` — a **heuristic**, not admissible
  ([OGB] §3.3, App. B). Branch-and-bound records the nodes it prunes by their cheap
  admissible bound, so its reported bound stays valid (:mod:`rulemip.boosting.bnb`).

The search also uses *cheap* admissible child bounds that are themselves functions of
additive statistics (so they come for free with the children's values): gs — its exact
bound; gb — :math:`\min(\sqrt{\sum_I w g^2},\ \max(P, N)/\sqrt{w_{\min}})` (Cauchy–Schwarz
and :math:`\|q'\|_w \ge \sqrt{w_{\min}}`); xgb — :math:`\min(\sqrt{\sum_I w g^2/h},\
\max(P, N)/\sqrt{\min_i w_i h_i + 2\lambda})`; ogb — :math:`AG/(A + \varepsilon G)` with
:math:`A = \max(P, N)` of ``w g_perp`` and :math:`G = \|g_\perp\|_w`: since
:math:`g_\perp \perp_w O`, :math:`|\langle g_\perp, q'\rangle_w| = |\langle g_\perp,
q'_\perp\rangle_w| \le G\|q'_\perp\|_w`, so the value :math:`a/(\|q'_\perp\| +
\varepsilon) \le aG/(a + \varepsilon G)`, increasing in :math:`a \le A`. Proofs:
docs/explanation/boosting.md ("Bounds and certificate").
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_choice
from rulemip.exceptions import InvalidParameterError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

OBJECTIVES: tuple[str, ...] = ("gs", "gb", "xgb", "ogb")

_H_FLOOR = 1e-300  # Hessians of saturated logistic points underflow to 0


# ---------------------------------------------------------------------------- basis
class OrthonormalBasis:
    r"""Orthonormal basis :math:`O = [o_1, \dots, o_t]` of the selected query space.

    Orthonormal in :math:`\langle\cdot,\cdot\rangle_w`. Maintained by Gram–Schmidt
    (:math:`o_t = q_{t\perp}/\|q_{t\perp}\|`, [OGB] Alg. 1) with one re-orthogonalization
    pass, which keeps :math:`O^T_w O = I` to machine precision over many rounds.
    """

    def __init__(self, n: int, weights: FloatArray | None = None) -> None:
        self.n = int(n)
        self.weights = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
        self._cols: list[FloatArray] = []

    @property
    def columns(self) -> FloatArray:
        """The basis as an ``(n, t)`` array."""
        if not self._cols:
            return np.zeros((self.n, 0))
        return np.column_stack(self._cols)

    def __len__(self) -> int:
        return len(self._cols)

    def project_out(self, v: FloatArray) -> FloatArray:
        """:math:`v_\\perp = v - O O^T_w v` (two Gram–Schmidt passes)."""
        out = np.asarray(v, dtype=float).copy()
        if not self._cols:
            return out
        basis_cols = self.columns
        for _ in range(2):
            out -= basis_cols @ (basis_cols.T @ (self.weights * out))
        return out

    def add(self, q: FloatArray, tol: float = 1e-10) -> bool:
        """Append :math:`q_\\perp/\\|q_\\perp\\|`; returns False (nothing added) when ``q``
        lies in the current span (:math:`\\|q_\\perp\\| \\le` ``tol``·‖q‖)."""
        q = np.asarray(q, dtype=float)
        qp = self.project_out(q)
        norm = float(np.sqrt(np.dot(self.weights * qp, qp)))
        scale = float(np.sqrt(np.dot(self.weights * q, q)))
        if norm <= tol * max(scale, 1e-300):
            return False
        self._cols.append(qp / norm)
        return True


# ---------------------------------------------------------------------------- objectives
@dataclass
class RoundObjective(abc.ABC):
    """An objective frozen at one boosting round (fixed ``g``, ``h``, ``O``).

    Attributes
    ----------
    stats : (n, c) per-point statistics; a query's value is ``from_sums`` of their sum.
    bound_stats : (n, b) statistics of the cheap admissible child bound, or ``None``.
    bound_key : (n,) sort key of the prefix-greedy bound, or ``None`` when the exact bound
        is itself a function of ``bound_stats`` (gs).
    """

    name: ClassVar[str] = "abstract"
    #: True when :meth:`bound` is admissible (so branch-and-bound is exact).
    admissible: ClassVar[bool] = True

    stats: FloatArray
    bound_stats: FloatArray | None = None
    bound_key: FloatArray | None = None
    _key_rank: IntArray | None = field(default=None, repr=False)
    _key_order: IntArray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.bound_key is not None:
            order = np.argsort(self.bound_key, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            self._key_order, self._key_rank = order, rank

    # -- to be provided by subclasses
    @abc.abstractmethod
    def from_sums(self, sums: FloatArray) -> FloatArray:
        """Objective values from summed statistics (last axis = statistics)."""

    @abc.abstractmethod
    def bound_from_sums(self, sums: FloatArray) -> FloatArray:
        """Cheap admissible child bound from summed ``bound_stats``."""

    # -- derived
    @property
    def n(self) -> int:
        return int(self.stats.shape[0])

    def value(self, query: NDArray[np.bool_] | IntArray) -> float:
        """Objective of one query (boolean vector or index array of covered points)."""
        return float(self.from_sums(self.stats[query].sum(axis=0)))

    def prefix_values(self, order: IntArray) -> FloatArray:
        r"""Values of all prefixes :math:`q^{(i)} = e_{\sigma(1)} + \dots + e_{\sigma(i)}`,
        :math:`i = 1..l`, of the ordered sub-selection ``order`` (vectorized cumsum)."""
        order = np.asarray(order, dtype=np.intp)
        if len(order) == 0:
            return np.zeros(0)
        return self.from_sums(np.cumsum(self.stats[order], axis=0))

    def _greedy_bound(self, sigma: IntArray) -> float:
        """Max over all prefixes and all suffixes of ``sigma`` (both sort directions)."""
        C = np.cumsum(self.stats[sigma], axis=0)
        total = C[-1]
        suffix = total - np.vstack([np.zeros((1, C.shape[1])), C[:-1]])
        return float(max(self.from_sums(C).max(), self.from_sums(suffix).max()))

    def bound(self, idx: IntArray) -> float:
        """``bnd`` of the query covering the sorted index array ``idx`` (module doc)."""
        if len(idx) == 0:
            return 0.0
        if self.bound_key is None:
            assert self.bound_stats is not None
            return float(self.bound_from_sums(self.bound_stats[idx].sum(axis=0)))
        assert self._key_rank is not None and self._key_order is not None
        m = len(idx)
        if 8 * m >= self.n:
            mask = np.zeros(self.n, dtype=bool)
            mask[idx] = True
            sigma = self._key_order[mask[self._key_order]]
        else:
            sigma = idx[np.argsort(self._key_rank[idx])]
        return self._greedy_bound(sigma)


def _abs(x: FloatArray) -> FloatArray:
    return np.asarray(np.abs(x), dtype=float)


@dataclass
class GradientSum(RoundObjective):
    r""":math:`|\langle g, q\rangle_w|`; statistic ``w g``; exact bound ``max(P, N)``."""

    name: ClassVar[str] = "gs"

    def from_sums(self, sums: FloatArray) -> FloatArray:
        return _abs(sums[..., 0])

    def bound_from_sums(self, sums: FloatArray) -> FloatArray:
        return np.asarray(np.maximum(sums[..., 0], -sums[..., 1]), dtype=float)


@dataclass
class GradientBoosting(RoundObjective):
    r""":math:`|\langle g, q\rangle_w| / \|q\|_w`; statistics ``w g, w``."""

    name: ClassVar[str] = "gb"
    w_min: float = 1.0

    def from_sums(self, sums: FloatArray) -> FloatArray:
        norm = np.sqrt(np.maximum(sums[..., 1], 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(norm > 0, _abs(sums[..., 0]) / np.where(norm > 0, norm, 1.0), 0.0)
        return np.asarray(out, dtype=float)

    def bound_from_sums(self, sums: FloatArray) -> FloatArray:
        pn = np.maximum(sums[..., 0], -sums[..., 1]) / np.sqrt(self.w_min)
        return np.asarray(np.minimum(np.sqrt(np.maximum(sums[..., 2], 0.0)), pn), dtype=float)


@dataclass
class ExtremeBoosting(RoundObjective):
    r""":math:`|\langle g, q\rangle_w| / \sqrt{\langle h, q\rangle_w + 2\lambda}`;
    statistics ``w g, w h``."""

    name: ClassVar[str] = "xgb"
    lam2: float = 0.0  # 2 * reg (module docstring)
    wh_min: float = 0.0

    def from_sums(self, sums: FloatArray) -> FloatArray:
        den = np.sqrt(np.maximum(sums[..., 1] + self.lam2, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(den > 0, _abs(sums[..., 0]) / np.where(den > 0, den, 1.0), 0.0)
        return np.asarray(out, dtype=float)

    def bound_from_sums(self, sums: FloatArray) -> FloatArray:
        cs = np.sqrt(np.maximum(sums[..., 2], 0.0))
        floor = self.wh_min + self.lam2
        if floor > 0:
            cs = np.minimum(cs, np.maximum(sums[..., 0], -sums[..., 1]) / np.sqrt(floor))
        return np.asarray(cs, dtype=float)


@dataclass
class OrthogonalBoosting(RoundObjective):
    r""":math:`|\langle g_\perp, q\rangle_w| / (\|q_\perp\|_w + \varepsilon)`; statistics
    ``w g_perp, w, w o_1, ..., w o_t`` (incremental prefix values, [OGB] Prop. 3)."""

    name: ClassVar[str] = "ogb"
    admissible: ClassVar[bool] = False
    epsilon: float = 1e-3

    def from_sums(self, sums: FloatArray) -> FloatArray:
        par = np.sum(sums[..., 2:] ** 2, axis=-1) if sums.shape[-1] > 2 else 0.0
        perp = np.sqrt(np.maximum(sums[..., 1] - par, 0.0))
        return np.asarray(_abs(sums[..., 0]) / (perp + self.epsilon), dtype=float)

    #: the w-norm of ``g_perp`` (the Cauchy–Schwarz factor of the cheap bound)
    g_norm: float = math.inf

    def bound_from_sums(self, sums: FloatArray) -> FloatArray:
        r"""Admissible: with :math:`A = \max(P, N)` of ``w g_perp`` over the cover and
        :math:`G = \|g_\perp\|_w`, every sub-query has value at most
        :math:`AG/(A + \varepsilon G)` (module docstring)."""
        A = np.maximum(np.maximum(sums[..., 0], -sums[..., 1]), 0.0)
        G = self.g_norm
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(A > 0, A * G / (A + self.epsilon * G), 0.0) if math.isfinite(G) \
                else A / self.epsilon
        return np.asarray(out * (1.0 + 1e-9), dtype=float)


@dataclass
class RidgeGain(RoundObjective):
    r"""The exact risk reduction of adding one rule to a squared-loss model with a ridge:
    :math:`|S_q| / \sqrt{D(W_q)}` with :math:`S_q = \langle r, q\rangle_w` (r the
    residuals) and :math:`D(W) = \lambda + W - W^2/W_{tot}` when the intercept is refitted
    (the weighted variance of the centered column; :math:`D(W) = \lambda + W` without
    intercept, ``total = inf``). Adding rule q lowers :math:`\sum w r^2` by exactly
    :math:`S_q^2/D(W_q)` (docs/explanation/column_generation.md, "one rule").

    The full bound is the prefix greedy over the order of r: exact over subsets because
    :math:`h = \sqrt{D}` is concave and positive (docs/explanation/boosting.md, gb, with
    ``W`` → ``h(W)``). Statistics ``w r, w``; cheap bound ``max(P, N)/sqrt(D_min)``.
    """

    name: ClassVar[str] = "ridge-gain"
    lam: float = 0.0
    total: float = math.inf
    w_min: float = 1.0

    def _den(self, W: FloatArray) -> FloatArray:
        W = np.asarray(W, dtype=float)
        centered = W - W * W / self.total if math.isfinite(self.total) else W
        return np.asarray(self.lam + np.maximum(centered, 0.0), dtype=float)

    def from_sums(self, sums: FloatArray) -> FloatArray:
        den = self._den(sums[..., 1])
        # D <= 0 only for the all-covering query with an intercept and no ridge: it adds
        # nothing to the intercept (its S is 0 up to rounding)
        tiny = 1e-12 * max(1.0, self.total if math.isfinite(self.total) else 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(den > tiny, _abs(sums[..., 0]) / np.sqrt(np.where(den > tiny,
                                                                             den, 1.0)), 0.0)
        return np.asarray(out, dtype=float)

    def bound_from_sums(self, sums: FloatArray) -> FloatArray:
        # D is concave in W: over sub-queries (W between w_min and the cover's W) it is
        # smallest at an end
        lo = np.minimum(self._den(np.full(np.shape(sums[..., 2]), self.w_min)),
                        self._den(sums[..., 2]))
        pn = np.maximum(sums[..., 0], -sums[..., 1])
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(lo > 0, pn / np.sqrt(np.where(lo > 0, lo, 1.0)), np.inf)
        return np.asarray(out, dtype=float)


def ridge_gain_objective(residual: FloatArray, *, weights: FloatArray | None = None,
                         reg: float = 0.0, fit_intercept: bool = True) -> RidgeGain:
    """:class:`RidgeGain` at the residuals ``residual`` (centered when ``fit_intercept``)."""
    r = np.asarray(residual, dtype=float)
    w = np.ones(len(r)) if weights is None else np.asarray(weights, dtype=float)
    wr = w * r
    return RidgeGain(np.column_stack([wr, w]),
                     np.column_stack([np.maximum(wr, 0.0), np.minimum(wr, 0.0), w]), r,
                     lam=float(reg), total=float(w.sum()) if fit_intercept else math.inf,
                     w_min=float(max(w[w > 0].min(initial=1.0), 1e-300)))


def make_objective(name: str, g: FloatArray, h: FloatArray | None = None, *,
                   weights: FloatArray | None = None, reg: float = 0.0,
                   epsilon: float = 1e-3, basis: OrthonormalBasis | None = None
                   ) -> RoundObjective:
    """Build the round objective ``name`` (``"gs"``, ``"gb"``, ``"xgb"``, ``"ogb"``).

    Parameters
    ----------
    g, h : gradient and Hessian diagonal of the per-point loss at the current model
        (``h`` only for xgb).
    weights : point weights ``w`` (default ones).
    reg : :math:`\\lambda` of :math:`R_\\lambda` (convention of docs/explanation/notation.md; xgb
        uses ``2 * reg``).
    epsilon : :math:`\\varepsilon > 0` of obj_ogb.
    basis : orthonormal basis of the selected queries (ogb; ``None`` = empty).
    """
    check_choice(name, "objective", OBJECTIVES)
    g = np.asarray(g, dtype=float)
    n = len(g)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    wg = w * g
    pos, neg = np.maximum(wg, 0.0), np.minimum(wg, 0.0)
    if name == "gs":
        return GradientSum(wg[:, None], np.column_stack([pos, neg]))
    if name == "gb":
        return GradientBoosting(np.column_stack([wg, w]), np.column_stack([pos, neg, w * g * g]),
                                g, w_min=float(max(w.min(), 1e-300)))
    if name == "xgb":
        if h is None:
            raise InvalidParameterError("objective 'xgb' needs the Hessian `h`.")
        hh = np.maximum(np.asarray(h, dtype=float), _H_FLOOR)
        return ExtremeBoosting(np.column_stack([wg, w * hh]),
                               np.column_stack([pos, neg, w * g * g / hh]), g / hh,
                               lam2=2.0 * float(reg), wh_min=float((w * hh).min()))
    if not epsilon > 0:
        raise InvalidParameterError(f"`epsilon` must be > 0 for objective 'ogb'; got {epsilon!r}.")
    basis = basis if basis is not None else OrthonormalBasis(n, w)
    gp = basis.project_out(g)
    basis_cols = basis.columns
    stats = np.column_stack([w * gp, w, w[:, None] * basis_cols])
    wgp = w * gp
    # the Cauchy-Schwarz factor needs g_perp orthogonal to the basis in the objective's
    # inner product: a basis orthonormal in other weights leaves only A / epsilon
    same_weights = basis.weights.shape == w.shape and np.array_equal(basis.weights, w)
    return OrthogonalBoosting(stats, np.column_stack([np.maximum(wgp, 0.0),
                                                      np.minimum(wgp, 0.0)]),
                              gp, epsilon=float(epsilon),
                              g_norm=float(np.sqrt(np.dot(wgp, gp))) if same_weights
                              else math.inf)


# ---------------------------------------------------------------------------- prefix values
def ogb_prefix_values(g_perp: FloatArray, basis_cols: FloatArray, order: IntArray, epsilon: float
                      ) -> FloatArray:
    r"""Incremental ogb prefix values ([OGB] Algorithm 3, Prop. 3), unit weights.

    :math:`v_i = |G_i| / (\sqrt{i - \sum_k N_{k,i}^2} + \varepsilon)` with
    :math:`G_i = \sum_{j \le i} g_{\perp,\sigma(j)}`, :math:`N_{k,i} = \sum_{j \le i}
    o_{k,\sigma(j)}`: O(t·l) after gathering the ``l`` rows — never O(n) per prefix.
    ``basis_cols`` is the ``(n, t)`` orthonormal basis, ``g_perp`` the projected gradient.
    """
    order = np.asarray(order, dtype=np.intp)
    G = np.cumsum(np.asarray(g_perp, dtype=float)[order])
    N = np.cumsum(np.asarray(basis_cols, dtype=float)[order], axis=0)
    i = np.arange(1, len(order) + 1, dtype=float)
    perp = np.sqrt(np.maximum(i - np.sum(N * N, axis=1), 0.0))
    return np.asarray(np.abs(G) / (perp + epsilon), dtype=float)


def ogb_prefix_values_naive(g_perp: FloatArray, basis_cols: FloatArray, order: IntArray,
                            epsilon: float) -> FloatArray:
    r"""The same values by explicit projection of every prefix
    :math:`q^{(i)}_\perp = q^{(i)} - O(O^T q^{(i)})` — O(n·t) per prefix, O(n·t·l) in all.
    The reference the incremental version is tested and benchmarked against."""
    order = np.asarray(order, dtype=np.intp)
    n = len(g_perp)
    basis_cols = np.asarray(basis_cols, dtype=float)
    out = np.empty(len(order))
    q = np.zeros(n)
    for i, idx in enumerate(order):
        q[idx] = 1.0
        qp = q - basis_cols @ (basis_cols.T @ q)
        out[i] = abs(float(g_perp @ q)) / (float(np.linalg.norm(qp)) + epsilon)
    return out
