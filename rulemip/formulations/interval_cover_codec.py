"""Decoding and encoding of the interval-cover MIP (``docs/explanation/interval_cover.md``).

:class:`BuiltIntervalCover` is a built model with the cell reduction and group layout that
map its columns to rules; :class:`IntervalCoverCodec` (a base of
:class:`~rulemip.formulations.interval_cover.IntervalCoverMIP`) turns solution vectors into
rule ensembles (weights refitted on the original data) and rule ensembles — warm starts —
into feasible start vectors, and repairs tangent-cut master points (:meth:`polish`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from rulemip.data import Dataset
from rulemip.exceptions import FormulationError
from rulemip.formulations.cells import CellReduction
from rulemip.formulations.interval_cover_bounds import FixedRules
from rulemip.losses import get_loss
from rulemip.model import MIPModel
from rulemip.refit import fit_weights
from rulemip.rules import Condition, Rule, RuleEnsemble

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

_KEY_RADIX_LIMIT = 1e6  # keep symmetry-key coefficients well inside double precision


@dataclass
class BuiltIntervalCover:
    """A built model plus everything needed to decode and encode its solutions."""

    model: MIPModel
    dataset: Dataset
    reduction: CellReduction
    occupied: tuple[IntArray, ...]   # occupied groups per feature (sorted)
    local: IntArray                  # (n_cells, d) index of each cell's group in occupied[j]
    offsets: IntArray                # (d + 1,) start of feature j in the group axis
    n_rules: int
    linearization: str
    weight_bound: FloatArray         # B_t per rule
    intercept_bounds: tuple[float, float]
    f_bounds: tuple[FloatArray, FloatArray]
    bound_valid: bool
    reference_risk: float
    fixed: FixedRules | None
    notes: list[str] = field(default_factory=list)
    #: the unit s of the model: its labels, weights, boxes and predictions are those of the
    #: data over s (``interval_cover`` module docstring, "Units")
    response_scale: float = 1.0

    @property
    def objective_scale(self) -> float:
        """:math:`s^2`: the model's objective and bounds times this are :math:`R_\\lambda`
        on the data."""
        return self.response_scale ** 2

    @property
    def n_cells(self) -> int:
        return self.reduction.n_cells

    @property
    def safe_bound(self) -> float:
        """A bound valid by construction: the reduction constant over the total weight
        (every reduced loss term is ≥ 0), the fallback when a solver's bound is refuted;
        in the units of the data's risk."""
        return float(self.objective_scale * self.reduction.constant
                     / self.reduction.total_weight)

    def block(self, name: str) -> IntArray:
        return np.asarray(self.model.var(name).ids)

    def cover_matrix(self, r: FloatArray, p: FloatArray) -> FloatArray:
        """(n_cells, k) cover of each cell by each rule from rounded r, p (k, S)."""
        r = np.round(r)
        p = np.round(p)
        k = r.shape[0]
        Z = np.ones((self.n_cells, k))
        for j in range(len(self.occupied)):
            cols = self.offsets[j] + self.local[:, j]
            Z *= (r[:, cols] * p[:, cols]).T
        return Z


class IntervalCoverCodec:
    """Solution vectors ↔ rule ensembles for a built interval-cover model."""

    n_rules: int
    loss: str
    reg: float
    fit_intercept: bool
    symmetry_breaking: bool

    @staticmethod
    def symmetry_key(occupied_sizes: Sequence[int]) -> tuple[list[float], list[float]]:
        """Coefficients (per group column) of the rule key in r and p.

        ``key = Σ_j M_j (m_j L_j + U_j)`` with ``L_j = m_j − Σ_a r_{j,a}`` (first included
        group), ``U_j = Σ_a p_{j,a} − 1`` (last included group) and mixed-radix multipliers
        :math:`M_j = \\prod_{j' > j} m_{j'}^2` over the leading features whose product stays
        below 1e6: a lexicographic order of the intervals (constants dropped).
        """
        feats: list[int] = []
        prod = 1.0
        for j, mj in enumerate(occupied_sizes):
            if prod * mj * mj > _KEY_RADIX_LIMIT:
                break
            feats.append(j)
            prod *= mj * mj
        cr: list[float] = []
        cp: list[float] = []
        mult = {}
        acc = 1.0
        for j in reversed(feats):
            mult[j] = acc
            acc *= occupied_sizes[j] ** 2
        for j, mj in enumerate(occupied_sizes):
            M = mult.get(j, 0.0)
            cr.extend([-mj * M] * mj)
            cp.extend([M] * mj)
        return cr, cp

    # ------------------------------------------------------------------ decoding
    def rule_ranges(self, built: BuiltIntervalCover, x: FloatArray
                    ) -> list[list[tuple[int, int]]]:
        """Per rule and feature, the (first, last) occupied-group index it includes."""
        x = np.asarray(x, dtype=float)
        r = np.round(x[built.block("r")])
        p = np.round(x[built.block("p")])
        out = []
        for t in range(built.n_rules):
            per = []
            for j in range(len(built.occupied)):
                sl = slice(built.offsets[j], built.offsets[j + 1])
                inside = np.flatnonzero((r[t, sl] + p[t, sl]) > 1.5)
                if len(inside) == 0:
                    per.append((0, -1))
                else:
                    per.append((int(inside[0]), int(inside[-1])))
            out.append(per)
        return out

    def rules_from_ranges(self, built: BuiltIntervalCover,
                          ranges: list[list[tuple[int, int]]]) -> list[Rule]:
        """Rules ``lower < x <= upper`` with cut points as bounds (no vacuous bounds)."""
        ths = built.reduction.thresholds
        names = built.dataset.feature_names
        rules = []
        for per in ranges:
            conds = []
            for j, (a, b) in enumerate(per):
                occ = built.occupied[j]
                if b < a:
                    raise FormulationError("a rule with an empty interval cannot be decoded.")
                lower = -math.inf if a == 0 else float(ths[j][occ[a] - 1])
                upper = math.inf if b == len(occ) - 1 else float(ths[j][occ[b]])
                if math.isinf(lower) and math.isinf(upper):
                    continue
                conds.append(Condition(j, lower, upper, names[j]))
            rules.append(Rule(conds))
        return rules

    def decode(self, built: BuiltIntervalCover, x: FloatArray, *, refit: bool = True
               ) -> tuple[RuleEnsemble, float, float]:
        """Decode ``x`` into rules; returns ``(ensemble, risk, solver_weights_risk)``.

        With ``refit`` the weights are re-optimized for the decoded rules by
        :func:`rulemip.refit.fit_weights` on the original data (stagewise-fixed weights stay
        fixed); ``risk`` is the recomputed :math:`R_\\lambda` of the returned ensemble and
        ``solver_weights_risk`` the risk of the solver's own weights, both from the data.
        """
        ds = built.dataset
        x = np.asarray(x, dtype=float)
        unit = built.response_scale
        rules = self.rules_from_ranges(built, self.rule_ranges(built, x))
        beta = unit * x[built.block("beta")]
        b0 = unit * float(x[built.block("beta0")][0]) if self.fit_intercept else 0.0
        Q = np.column_stack([r.query(ds.X) for r in rules]).astype(float)
        lo = get_loss(self.loss)
        solver_risk = lo.risk(b0 + Q @ beta, ds.y, weights=beta, reg=self.reg,
                              sample_weight=ds.sample_weight)
        if not refit:
            ens = RuleEnsemble([r.with_weight(b) for r, b in zip(rules, beta, strict=True)],
                               b0, self.loss)
            return ens, solver_risk, solver_risk
        fixed = built.fixed
        if fixed is not None and fixed.weights is not None:
            kf = fixed.n_rules
            fw = unit * np.asarray(fixed.weights, dtype=float)
            fb0 = unit * float(fixed.intercept) if fixed.intercept is not None else 0.0
            offset = fb0 + Q[:, :kf] @ fw
            res = fit_weights(Q[:, kf:], ds.y, self.loss, self.reg, False, ds.sample_weight,
                              offset=offset)
            weights = np.concatenate([fw, res.weights])
            intercept = fb0
            f = offset + Q[:, kf:] @ res.weights
            risk = lo.risk(f, ds.y, weights=weights, reg=self.reg,
                           sample_weight=ds.sample_weight)
        else:
            res = fit_weights(Q, ds.y, self.loss, self.reg, self.fit_intercept,
                              ds.sample_weight)
            weights, intercept, risk = res.weights, res.intercept, res.risk
        if risk > solver_risk:  # refit is never worse in exact arithmetic; keep the better
            weights, intercept, risk = beta, b0, solver_risk
        ens = RuleEnsemble([r.with_weight(b) for r, b in zip(rules, weights, strict=True)],
                           intercept, self.loss)
        return ens, float(risk), float(solver_risk)

    def polish(self, built: BuiltIntervalCover, x: FloatArray) -> FloatArray | None:
        """The same covers with optimal weights (a feasible point at least as good as
        ``x``), or ``None`` when the refit weights leave the model's bounds."""
        x = np.asarray(x, dtype=float)
        rid, pid = built.block("r"), built.block("p")
        Z = built.cover_matrix(x[rid], x[pid])
        red = built.reduction
        fixed = built.fixed
        kf = 0 if fixed is None else fixed.n_rules
        if fixed is not None and fixed.weights is not None:
            fw = np.asarray(fixed.weights, dtype=float)
            fb0 = float(fixed.intercept) if fixed.intercept is not None else 0.0
            offset = fb0 + Z[:, :kf] @ fw
            res = fit_weights(Z[red.point_cell, kf:], red.y, self.loss, self.reg, False,
                              red.weight, offset=offset[red.point_cell])
            beta = np.concatenate([fw, res.weights])
            b0 = fb0
        else:
            res = fit_weights(Z[red.point_cell], red.y, self.loss, self.reg,
                              self.fit_intercept, red.weight)
            beta, b0 = res.weights, res.intercept
        return self._assemble(built, x[rid], x[pid], Z, beta, b0)

    def _assemble(self, built: BuiltIntervalCover, r: FloatArray, p: FloatArray,
                  Z: FloatArray, beta: FloatArray, b0: float) -> FloatArray | None:
        """A full column vector for covers ``Z`` and weights, or ``None`` if out of bounds."""
        model = built.model
        x = np.zeros(model.n_cols)
        x[built.block("r")] = np.round(r)
        x[built.block("p")] = np.round(p)
        x[built.block("z")] = Z
        x[built.block("beta")] = beta
        wv = Z * beta[None, :]
        x[built.block("w")] = wv
        if self.fit_intercept:
            x[built.block("beta0")] = b0
        x[built.block("f")] = b0 + wv.sum(axis=1)
        if "restricted" in model.variable_blocks:
            rho = np.zeros((built.n_rules, len(built.occupied)))
            for j in range(len(built.occupied)):
                rho[:, j] = np.maximum(1 - np.round(r[:, built.offsets[j]]),
                                       1 - np.round(p[:, built.offsets[j + 1] - 1]))
            x[model.var("restricted").ids] = rho
        sf = model.to_standard_form()
        tol = 1e-7 * max(1.0, float(np.max(np.abs(x))))
        if np.any(x < sf.col_lower - tol) or np.any(x > sf.col_upper + tol):
            return None
        return np.clip(x, sf.col_lower, sf.col_upper)

    # ------------------------------------------------------------------ encoding
    def encode(self, built: BuiltIntervalCover, ensemble: RuleEnsemble, *,
               refit: bool = True) -> FloatArray:
        """A start vector for ``built`` from any rule ensemble (warm starts,
        docs/explanation/interval_cover.md).

        Each rule's interval on feature ``j`` becomes the run of occupied groups whose rows
        it covers; a bound that is not one of the model's cut points splits a group, and
        then the group is included when the majority (by weight) of its rows is covered
        (*snapping*, recorded in ``built.notes``). A rule whose snapped box covers no cell
        becomes the all-covering box with weight 0; missing rules are padded likewise.
        Weights are refit for the snapped boxes (``refit``) or taken from the ensemble, and
        the rules are sorted by the symmetry key. Raises when the ensemble has more rules
        than the model.
        """
        k = built.n_rules
        kf = 0 if built.fixed is None else built.fixed.n_rules
        rules = list(ensemble.rules)
        if len(rules) > k - kf:
            raise FormulationError(
                f"the ensemble has {len(rules)} rules but the model has {k - kf} free rules; "
                "raise `n_rules` or drop rules.")
        ds, red = built.dataset, built.reduction
        d = ds.d
        S = int(built.offsets[-1])
        r = np.ones((k, S))
        p = np.ones((k, S))
        if built.fixed is not None and kf:
            r[:kf], p[:kf] = np.round(built.fixed.r), np.round(built.fixed.p)
        wts = np.zeros(k)
        snapped = 0
        rows = np.flatnonzero(red.cell_of_row >= 0)
        G = np.column_stack([np.searchsorted(np.asarray(red.thresholds[j]), ds.X[rows, j],
                                             side="left") for j in range(d)])
        wrow = ds.weights[rows]
        for i, rule in enumerate(rules):
            t = kf + i
            for cond in rule.conditions:
                j = cond.feature
                occ = built.occupied[j]
                gl = np.searchsorted(occ, G[:, j])
                inside = cond.evaluate(ds.X[rows])
                cov = np.bincount(gl, weights=wrow * inside, minlength=len(occ))
                tot = np.bincount(gl, weights=wrow, minlength=len(occ))
                incl = cov > 0.5 * tot
                if np.any((cov > 0) & (cov < tot)):
                    snapped += 1
                idx = np.flatnonzero(incl)
                sl = slice(built.offsets[j], built.offsets[j + 1])
                if len(idx) == 0:
                    r[t, sl], p[t, sl] = 0.0, 0.0
                    continue
                a, b = idx[0], idx[-1]
                rv = np.zeros(len(occ))
                rv[a:] = 1.0
                pv = np.zeros(len(occ))
                pv[: b + 1] = 1.0
                r[t, sl], p[t, sl] = rv, pv
            wts[t] = rule.weight / built.response_scale
        Z = built.cover_matrix(r, p)
        empty = Z.sum(axis=0) == 0
        empty[:kf] = False
        if empty.any():
            r[empty], p[empty] = 1.0, 1.0
            wts[empty] = 0.0
            built.notes.append(f"warm start: {int(empty.sum())} rule(s) covered no cell after "
                               "snapping and were replaced by the all-covering box, weight 0.")
        if snapped:
            built.notes.append(f"warm start: {snapped} interval(s) used a cut point outside "
                               "the model's thresholds and were snapped to groups.")
        # order the free rules by the symmetry key
        if self.symmetry_breaking and k - kf >= 2:
            cr, cp = self.symmetry_key(np.diff(built.offsets).tolist())
            key = r @ np.asarray(cr) + p @ np.asarray(cp)
            order = np.concatenate([np.arange(kf), kf + np.argsort(key[kf:], kind="stable")])
            r, p, wts = r[order], p[order], wts[order]
        Z = built.cover_matrix(r, p)
        b0 = float(ensemble.intercept) / built.response_scale if self.fit_intercept else 0.0
        fixed = built.fixed
        if fixed is not None and fixed.weights is not None:
            wts[:kf] = fixed.weights
            if self.fit_intercept and fixed.intercept is not None:
                b0 = float(fixed.intercept)
        x = None
        if refit:
            x = self._assemble_refit(built, r, p, Z)
        if x is None:
            beta = np.clip(wts, -built.weight_bound, built.weight_bound)
            lo, hi = built.intercept_bounds
            x = self._assemble(built, r, p, Z, beta, float(np.clip(b0, lo, hi)))
        if x is None:
            built.notes.append("warm start violates the model's proved bounds (its risk "
                               "exceeds the reference risk); given as a partial start.")
            x = np.full(built.model.n_cols, np.nan)
            x[built.block("r")] = r
            x[built.block("p")] = p
            x[built.block("z")] = Z
        return x

    def _assemble_refit(self, built: BuiltIntervalCover, r: FloatArray, p: FloatArray,
                        Z: FloatArray) -> FloatArray | None:
        x = np.zeros(built.model.n_cols)
        x[built.block("r")] = r
        x[built.block("p")] = p
        return self.polish(built, x)

