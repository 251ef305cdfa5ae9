r"""Proved bounds for the interval-cover MIP (docs/explanation/interval_cover.md; proofs in
``docs/explanation/interval_cover.md`` §3).

Every optimal solution has :math:`R_\lambda \le R_{ref}` for the objective :math:`R_{ref}`
of any feasible solution, hence each reduced point's loss is at most
:math:`W R_{ref} - C`: the cell predictions lie in sublevel sets of the loss
(:func:`sublevel_interval`). With ridge :math:`\lambda > 0`,
:math:`|\beta_t| \le \sqrt{(W R_{ref} - C)/\lambda}`; with :math:`\lambda = 0` and finite
prediction intervals, a *basic* optimal solution has
:math:`|\beta_t| \le r\, D(r-1) \max_c |f_c|` (:func:`max_det01`). These are the big-M
constants of the weight linearization.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rulemip.exceptions import FormulationError
from rulemip.formulations.cells import CellReduction
from rulemip.losses import get_loss
from rulemip.refit import fit_weights
from rulemip.rules.language import Language

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

DEFAULT_WEIGHT_BOX = 10.0


def max_det01(n: int) -> int:
    r"""An upper bound on :math:`|\det M|` over :math:`n\times n` 0/1 matrices.

    Hadamard's bound for 0/1 matrices, :math:`|\det M| \le (n+1)^{(n+1)/2} / 2^n`, rounded
    down (a determinant of an integer matrix is an integer); ``1`` for ``n = 0``.
    """
    if n <= 0:
        return 1
    return max(1, math.floor((n + 1) ** ((n + 1) / 2) / 2 ** n + 1e-9))


def sublevel_interval(loss: str, y: FloatArray, level: FloatArray
                      ) -> tuple[FloatArray, FloatArray]:
    r"""Outer bounds of :math:`\{f : l(f, y) \le C\}` elementwise (may be ±inf).

    Squared: :math:`y \pm \sqrt C`; logistic: :math:`y f \ge -\log(e^C - 1)`; Poisson:
    the two roots of :math:`l(f, y) = C` around :math:`\log y` by bisection (returning the
    outer end of the final bracket), :math:`f \le \log C` when :math:`y = 0`.
    """
    y = np.asarray(y, dtype=float)
    C = np.maximum(np.asarray(level, dtype=float), 0.0)
    n = y.shape[0]
    lo = np.full(n, -math.inf)
    hi = np.full(n, math.inf)
    if loss == "squared":
        s = np.sqrt(C)
        return y - s, y + s
    if loss == "logistic":
        # log(expm1(C)) without overflow: C + log(-expm1(-C))
        with np.errstate(divide="ignore"):
            t = np.where(C > 30, C + np.log1p(-np.exp(-np.minimum(C, 700))),
                         np.log(np.expm1(np.minimum(C, 30))))
        lo = np.where(y > 0, -t, -math.inf)
        hi = np.where(y < 0, t, math.inf)
        return lo, hi
    lossf = get_loss("poisson")
    pos = y > 0
    zero = ~pos
    with np.errstate(divide="ignore"):
        hi[zero] = np.where(C[zero] > 0, np.log(np.where(C[zero] > 0, C[zero], 1.0)), -math.inf)
    if pos.any():
        yp, Cp = y[pos], C[pos]
        centre = np.log(yp)
        # lower root: l(f) >= y log y - y f - y > C for f < (y log y - y - C)/y
        a = (yp * centre - yp - Cp) / yp - 1.0
        b = centre.copy()
        for _ in range(200):
            mid = 0.5 * (a + b)
            inside = lossf.value(mid, yp) <= Cp
            b = np.where(inside, mid, b)
            a = np.where(inside, a, mid)
        lo[pos] = a
        a2 = centre.copy()
        b2 = centre + 1.0
        for _ in range(2000):
            grow = lossf.value(b2, yp) <= Cp
            if not grow.any():
                break
            b2 = np.where(grow, centre + 2.0 * (b2 - centre), b2)
        for _ in range(200):
            mid = 0.5 * (a2 + b2)
            inside = lossf.value(mid, yp) <= Cp
            a2 = np.where(inside, mid, a2)
            b2 = np.where(inside, b2, mid)
        hi[pos] = b2
    return lo, hi




@dataclass(frozen=True)
class FixedRules:
    """Rules held fixed in a model (MIP-boosting, docs/explanation/interval_cover.md): the first
    ``len(r)`` rules.

    ``r``, ``p`` : (k_fixed, S) 0/1 group encodings of their intervals (S = total number of
    occupied groups over the features, in the layout of the built model); ``weights`` :
    their fixed weights, or ``None`` to leave the weights free (corrective);
    ``intercept`` : the fixed intercept, or ``None`` (free when ``fit_intercept``).
    """

    r: FloatArray
    p: FloatArray
    weights: FloatArray | None = None
    intercept: float | None = None

    @property
    def n_rules(self) -> int:
        return int(self.r.shape[0])


def prove_bounds(red: CellReduction, occupied: tuple[IntArray, ...], local: IntArray,
                 offsets: IntArray, fixed: FixedRules | None, reference_risk: float | None,
                 notes: list[str], *, language: Language, loss: str, reg: float,
                 weight_bound: float | None, unit: float = 1.0
                 ) -> tuple[FloatArray, tuple[float, float], tuple[FloatArray, FloatArray],
                            bool, float]:
    """Bounds on the weights, intercept and cell predictions that keep an optimum.

    Returns ``(B_t per rule, (β0 lower, β0 upper), (f lower, f upper), bound_valid,
    reference risk)`` for the models of ``language`` (its rule count k and intercept)
    under ``loss`` and the ridge ``reg``; the proofs are in
    ``docs/explanation/interval_cover.md`` §3.
    ``bound_valid`` is ``False`` when the weight box is not proved (then it is
    ``weight_bound`` or :data:`DEFAULT_WEIGHT_BOX`, and ``notes`` says so). Everything is
    in the units of ``red``'s labels; ``unit`` (their scale, ``y = unit · red.y``) only
    writes the notes in the units of the data.
    """
    k, m, lam = language.n_rules, red.n_cells, reg
    fit_intercept = language.fit_intercept
    W = red.total_weight
    kf = 0 if fixed is None else fixed.n_rules
    # reference: a feasible solution (free rules at weight 0)
    off = np.zeros(m)
    fixed_pen = 0.0
    if fixed is None or (kf == 0 and fixed.weights is None):
        Qp = np.zeros((red.n_points, 0))
        ref = fit_weights(Qp, red.y, loss, lam, fit_intercept, red.weight)
        R_ref = (ref.risk * red.weight.sum() + red.constant) / W
        b0_fixed = None
    else:
        Zf = cover_from_rp(fixed.r, fixed.p, occupied, local, offsets)
        if fixed.weights is not None:
            b0_fixed = (fixed.intercept if fixed.intercept is not None else 0.0) \
                if (fixed.intercept is not None or not fit_intercept) else None
            if b0_fixed is None:
                raise FormulationError(
                    "stagewise fixed rules with fit_intercept need a fixed intercept.")
            off = b0_fixed + Zf @ np.asarray(fixed.weights, dtype=float)
            fixed_pen = lam * float(np.sum(np.asarray(fixed.weights) ** 2))
            R_ref = red.risk(off, fixed.weights, lam)
        else:
            b0_fixed = None
            ref = fit_weights(Zf[red.point_cell], red.y, loss, lam, fit_intercept,
                              red.weight)
            R_ref = (ref.risk * red.weight.sum() + red.constant) / W
    if reference_risk is not None and math.isfinite(reference_risk):
        R_ref = min(R_ref, float(reference_risk))
    budget = W * R_ref * (1.0 + 1e-9) + 1e-12 - red.constant - fixed_pen
    budget = max(budget, 0.0)
    # per-point sublevel sets of the loss -> per-cell prediction bounds
    lo_p, hi_p = sublevel_interval(loss, red.y, budget / red.weight)
    f_lo = np.full(m, -math.inf)
    f_hi = np.full(m, math.inf)
    np.maximum.at(f_lo, red.point_cell, lo_p)
    np.minimum.at(f_hi, red.point_cell, hi_p)
    finite = bool(np.all(np.isfinite(f_lo)) and np.all(np.isfinite(f_hi)))
    n_free = k - kf if (fixed is not None and fixed.weights is not None) else k
    free_b0 = fit_intercept and b0_fixed is None
    r_free = n_free + int(free_b0)
    bound_valid = True
    F = float(np.max(np.maximum(np.abs(f_lo - off), np.abs(f_hi - off)))) if finite \
        else math.inf
    B = math.inf
    basic = False
    mu = 0.0
    if lam > 0:
        B = math.sqrt(budget / lam)
        if r_free == 1 and not free_b0 and finite:
            B = min(B, F)  # the one free rule covers some cell c: beta in [f_lo-off, f_hi-off]
    elif finite:
        if free_b0:
            # the intercept column absorbs a shift: represent f* - mu*1 instead of f*
            mu = 0.5 * (float(np.min(f_lo)) + float(np.max(f_hi)))
            F = 0.5 * (float(np.max(f_hi)) - float(np.min(f_lo)))
        B = r_free * max_det01(r_free - 1) * F
        basic = True
    if not math.isfinite(B):
        B = weight_bound if weight_bound is not None else DEFAULT_WEIGHT_BOX
        bound_valid = False
        notes.append(
            f"no bound on |beta| can be proved here (reg = 0 and the loss' minimizer may "
            f"diverge); the result is optimal only within |beta| <= {B * unit:g}.")
    elif weight_bound is not None and weight_bound < B:
        B = weight_bound
        bound_valid = False
        notes.append(f"weight_bound={B * unit:g} is below the proved bound; the result "
                     f"is optimal only within |beta| <= {B * unit:g}.")
    B = max(B, 1e-9)
    Bt = np.full(k, B)
    if fixed is not None and fixed.weights is not None and kf:
        Bt[:kf] = np.maximum(np.abs(np.asarray(fixed.weights, dtype=float)), 1e-9)
    spread = float(Bt[kf:].sum()) if fixed is not None and fixed.weights is not None \
        else float(Bt.sum())
    if fixed is not None and fixed.weights is not None:
        spread += float(np.abs(fixed.weights).sum())
    if free_b0:
        b0_lo = float(np.max(f_lo)) - spread
        b0_hi = float(np.min(f_hi)) + spread
        if basic:
            b0_lo, b0_hi = max(b0_lo, mu - B), min(b0_hi, mu + B)
        if not bound_valid:  # keep the box finite for the solver
            if not math.isfinite(b0_lo):
                b0_lo = -B
            if not math.isfinite(b0_hi):
                b0_hi = B
        if b0_lo > b0_hi:  # only by round-off
            b0_lo, b0_hi = b0_hi, b0_lo
    elif b0_fixed is not None and fit_intercept:
        b0_lo = b0_hi = float(b0_fixed)
    else:
        b0_lo = b0_hi = 0.0
    if fit_intercept:
        c_lo, c_hi = b0_lo - spread, b0_hi + spread
    else:
        c_lo, c_hi = -spread, spread
    if b0_fixed is not None and fixed is not None and fixed.weights is not None:
        c_lo, c_hi = (float(np.min(off)) - spread, float(np.max(off)) + spread)
    f_lo = np.maximum(f_lo, c_lo)
    f_hi = np.minimum(f_hi, c_hi)
    if not bound_valid:
        # the box may exclude the sublevel-set bounds' solutions; keep f consistent
        f_lo = np.full(m, c_lo)
        f_hi = np.full(m, c_hi)
    bad = f_lo > f_hi
    if bad.any():  # only by round-off in the bisection
        f_lo[bad], f_hi[bad] = f_hi[bad], f_lo[bad]
    return Bt, (b0_lo, b0_hi), (f_lo, f_hi), bound_valid, R_ref


def cover_from_rp(r: FloatArray, p: FloatArray, occupied: tuple[IntArray, ...],
                   local: IntArray, offsets: IntArray) -> FloatArray:
    r = np.round(np.asarray(r, dtype=float))
    p = np.round(np.asarray(p, dtype=float))
    Z = np.ones((local.shape[0], r.shape[0]))
    for j in range(len(occupied)):
        cols = offsets[j] + local[:, j]
        Z *= (r[:, cols] * p[:, cols]).T
    return Z


__all__ = ["DEFAULT_WEIGHT_BOX", "FixedRules", "cover_from_rp", "max_det01", "prove_bounds",
           "sublevel_interval"]
