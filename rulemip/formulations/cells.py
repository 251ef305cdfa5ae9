r"""Exact data reduction by grid cells (docs/explanation/box_selection.md §1).

Fix candidate cut points :math:`t_{j,1} < \dots < t_{j,g_j}` per feature. Two rows that fall
into the same threshold group on every feature (the same *cell* of the grid) are covered by
exactly the same boxes ``lower < x <= upper`` with bounds among the cut points, so every
rule ensemble over these thresholds predicts one value :math:`f_c` per cell :math:`c`.
For such :math:`f` the weighted loss sum splits into a part that depends on :math:`f_c`
through a few sufficient statistics and a constant:

* squared: :math:`\sum_{i\in c} w_i (f_c - y_i)^2 = W_c (f_c - \bar y_c)^2
  + \sum_{i \in c} w_i (y_i - \bar y_c)^2` — one point (weight :math:`W_c`, label
  :math:`\bar y_c`), constant = the within-cell sum of squares;
* Poisson: :math:`\sum_{i\in c} w_i (y_i\log y_i - y_i f_c - y_i + e^{f_c})
  = W_c\, l(f_c, \bar y_c) + \big(\sum_{i\in c} w_i y_i \log y_i - W_c \bar y_c\log\bar y_c\big)`
  — one point (weight :math:`W_c`, label :math:`\bar y_c`), constant as shown (≥ 0);
* logistic: :math:`\sum_{i\in c} w_i \log(1 + e^{-y_i f_c}) = W_c^{+} l(f_c, +1) +
  W_c^{-} l(f_c, -1)` — up to two points per cell (one per label present), constant 0.

Hence :math:`\sum_i w_i l(f_i, y_i) = \sum_p W_p\, l(f_{c(p)}, y_p) + C` exactly, and
:math:`R_\lambda` on the full data equals :math:`(\sum_p W_p l_p + C + \lambda\|\beta\|^2)/W`
with the same total weight :math:`W`. Every formulation over these thresholds may therefore
run on the reduced points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rulemip.data.thresholds import threshold_groups
from rulemip.exceptions import InvalidDataError
from rulemip.losses import Loss, get_loss

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class CellReduction:
    """The reduced data (see module docstring).

    Attributes
    ----------
    groups : (n_cells, d) threshold-group index of every occupied cell on every feature.
    cell_of_row : (n,) cell of each original row (-1 for rows of weight 0).
    point_cell : (m,) cell of each reduced point (m = n_cells, or ≤ 2·n_cells for logistic).
    y : (m,) label of each reduced point (cell mean for squared/Poisson, ±1 for logistic).
    weight : (m,) weight :math:`W_p` of each reduced point.
    constant : :math:`C` with :math:`\\sum_i w_i l_i = \\sum_p W_p l_p + C` for every
        prediction that is constant on cells.
    total_weight : :math:`W = \\sum_i w_i` (the risk's denominator).
    loss : the loss name.
    thresholds : the cut points per feature.
    """

    groups: IntArray
    cell_of_row: IntArray
    point_cell: IntArray
    y: FloatArray
    weight: FloatArray
    constant: float
    total_weight: float
    loss: str
    thresholds: tuple[FloatArray, ...]

    @property
    def n_cells(self) -> int:
        return int(self.groups.shape[0])

    @property
    def n_points(self) -> int:
        return int(self.y.shape[0])

    @property
    def cell_weight(self) -> FloatArray:
        """Total weight :math:`W_c` of each cell."""
        return np.asarray(np.bincount(self.point_cell, weights=self.weight, minlength=self.n_cells),
                          dtype=float)

    def risk(self, f_cells: FloatArray, weights: FloatArray | None = None,
             reg: float = 0.0) -> float:
        """:math:`R_\\lambda` on the *original* data of a prediction given per cell."""
        lo = get_loss(self.loss)
        f = np.asarray(f_cells, dtype=float)[self.point_cell]
        data = float(self.weight @ lo.value(f, self.y)) + self.constant
        pen = 0.0
        if weights is not None and reg:
            b = np.asarray(weights, dtype=float)
            pen = float(reg) * float(b @ b)
        return (data + pen) / self.total_weight


def reduce_to_cells(X: FloatArray, y: FloatArray, thresholds: Sequence[FloatArray],
                    loss: str | Loss = "squared",
                    sample_weight: FloatArray | None = None) -> CellReduction:
    """One weighted point per occupied cell (two for logistic), exact (module docstring).

    Parameters
    ----------
    X : (n, d) encoded features; y : (n,) labels in the loss' convention.
    thresholds : cut points per feature (as :func:`rulemip.data.candidate_thresholds`).
    loss : ``"squared"``, ``"logistic"`` or ``"poisson"``.
    sample_weight : optional non-negative row weights.
    """
    lo = get_loss(loss)
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, d = X.shape
    if len(thresholds) != d:
        raise InvalidDataError(
            f"`thresholds` has {len(thresholds)} entries but X has {d} features.")
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    ths = tuple(np.asarray(t, dtype=float) for t in thresholds)
    G = threshold_groups(X, ths)
    keep = w > 0
    cell_of_row = np.full(n, -1, dtype=np.int64)
    groups, inv = np.unique(G[keep], axis=0, return_inverse=True)
    inv = np.asarray(inv, dtype=np.int64).ravel()
    cell_of_row[keep] = inv
    wk, yk = w[keep], y[keep]
    n_cells = groups.shape[0]
    W_c = np.asarray(np.bincount(inv, weights=wk, minlength=n_cells), dtype=float)
    total = float(wk.sum())
    if lo.name == "logistic":
        pos = yk > 0
        Wp = np.bincount(inv[pos], weights=wk[pos], minlength=n_cells)
        Wn = np.bincount(inv[~pos], weights=wk[~pos], minlength=n_cells)
        cells = np.arange(n_cells, dtype=np.int64)
        point_cell = np.concatenate([cells[Wp > 0], cells[Wn > 0]])
        py = np.concatenate([np.ones(int((Wp > 0).sum())), -np.ones(int((Wn > 0).sum()))])
        pw = np.concatenate([Wp[Wp > 0], Wn[Wn > 0]])
        order = np.lexsort((-py, point_cell))
        return CellReduction(groups.astype(np.int64), cell_of_row, point_cell[order],
                             py[order], pw[order], 0.0, total, lo.name, ths)
    ybar = np.bincount(inv, weights=wk * yk, minlength=n_cells) / W_c
    if lo.name == "squared":
        const = float(np.sum(wk * (yk - ybar[inv]) ** 2))
    else:  # poisson
        def xlogx(v: FloatArray) -> FloatArray:
            return np.where(v > 0, v * np.log(np.where(v > 0, v, 1.0)), 0.0)
        const = float(np.sum(wk * xlogx(yk)) - np.sum(W_c * xlogx(ybar)))
        const = max(const, 0.0)  # ≥ 0 by Jensen; clip round-off
    return CellReduction(groups.astype(np.int64), cell_of_row,
                         np.arange(n_cells, dtype=np.int64), ybar, W_c, const, total,
                         lo.name, ths)
