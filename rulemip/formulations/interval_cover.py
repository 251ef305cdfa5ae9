r"""The interval-cover MIP for the best k-rule ensemble ([GAP] §4.1,
docs/explanation/interval_cover.md).

Model (after the exact cell reduction of docs/explanation/box_selection.md §1;
``docs/explanation/interval_cover.md``
has the proofs). Sets: rules :math:`t \in T = \{1..k\}`, features :math:`j \in J`, occupied
cells :math:`c \in C` (one per occupied grid cell), reduced loss points :math:`p \in P` with
cell :math:`c(p)`, label :math:`y_p`, weight :math:`W_p`, and for every feature the occupied
threshold groups :math:`a = 0..m_j - 1` in increasing order; :math:`a_j(c)` is the group of
cell :math:`c` on feature :math:`j`. Variables:

* :math:`r_{t,j,a}, p_{t,j,a} \in \{0,1\}` — group ``a`` passes the lower / upper bound of
  rule ``t`` on feature ``j`` (ties and bins share them: the encoding lives on groups);
  :math:`s_{t,j,a} = r_{t,j,a} + p_{t,j,a} - 1` (membership, kept as an expression);
* :math:`z_{c,t} \in \{0,1\}` — rule ``t`` covers cell ``c``;
* :math:`\beta_t \in [-B_t, B_t]`, :math:`\beta_0` free (only with ``fit_intercept``),
  :math:`w_{c,t} = z_{c,t}\beta_t`, :math:`f_c = \beta_0 + \sum_t w_{c,t}`.

Constraints: :math:`r_{t,j,a} \ge r_{t,j,a-1}`, :math:`p_{t,j,a} \le p_{t,j,a-1}`,
:math:`r + p \ge 1` (i.e. :math:`s \ge 0`); :math:`z_{c,t} \le s_{t,j,a_j(c)}` for all
``j`` and :math:`z_{c,t} \ge \sum_j s_{t,j,a_j(c)} - (d-1)`; :math:`\sum_c z_{c,t} \ge 1`;
:math:`z = 0 \Rightarrow w = 0`, :math:`z = 1 \Rightarrow w = \beta` as indicator
constraints, or by big-M with the proved bound :math:`B_t`; optionally at most
``max_rule_length`` restricted features per rule; rules ordered by a lexicographic key of
their intervals (symmetry breaking).

Objective: :math:`\frac1W\big(\sum_p W_p\, l(f_{c(p)}, y_p) + C + \lambda\sum_t
\beta_t^2\big)` — exactly :math:`R_\lambda` on the original data. The loss part is a
:class:`~rulemip.model.SeparableLoss` term (SCIP takes it natively; MILP backends go
through :mod:`rulemip.algorithms.convex.tangent_cuts`), the ridge part a diagonal quadratic.

Units (squared loss). The model is built on :math:`y/s` with :math:`s` the root of the
weighted second moment of :math:`y` (:func:`response_scale`), the
weights, their box and the predictions with it: :math:`R_\lambda(\beta; y) =
s^2 R_\lambda(\beta/s; y/s)` for the squared loss with a ridge, so the optimal rules are
the same, the model's objective and bounds are :math:`R_\lambda/s^2`
(:attr:`BuiltIntervalCover.objective_scale` is :math:`s^2`) and its weights
:math:`\beta/s`. The solver's tolerances, the big-M switch (:data:`BIGM_LIMIT`) and the
proved boxes then do not move with the units of :math:`y`; decoding scales the weights
back and recomputes the risk on the original data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_choice, check_nonneg_float, check_positive_int
from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds, threshold_groups
from rulemip.exceptions import FormulationError, InvalidParameterError
from rulemip.formulations.cells import CellReduction, reduce_to_cells
from rulemip.formulations.interval_cover_bounds import (
    FixedRules,
    max_det01,
    prove_bounds,
    sublevel_interval,
)
from rulemip.formulations.interval_cover_codec import BuiltIntervalCover, IntervalCoverCodec
from rulemip.losses import get_loss
from rulemip.model import MIPModel
from rulemip.rules import RuleEnsemble
from rulemip.rules.language import Language, checked_language
from rulemip.solvers.base import Capability, SolverBackend

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

LINEARIZATIONS = ("auto", "indicator", "bigm")
BIGM_LIMIT = 1e4  # "auto" uses big-M up to this proved weight bound (in units of y/s)


def response_scale(dataset: Dataset, loss: str) -> float:
    r"""The unit :math:`s` of the squared-loss model (module docstring, "Units"):
    :math:`\sqrt{\sum_i w_i y_i^2 / \sum_i w_i}`, so that :math:`y/s` has unit second
    moment and data that differ by a factor only give the same model (to round-off);
    1 for the other losses (their labels are classes or counts) and for an all-zero
    ``y``."""
    if loss != "squared":
        return 1.0
    w = np.asarray(dataset.weights, dtype=float)
    y = np.asarray(dataset.y, dtype=float)
    total = float(w.sum())
    if total <= 0:
        return 1.0
    # the second moment via the largest |y| first: no overflow / underflow of y**2
    top = float(np.max(np.abs(y)))
    if not (math.isfinite(top) and top > 0):
        return 1.0
    rms = top * math.sqrt(float(np.dot(w, (y / top) ** 2)) / total)
    return rms if rms > 0 and math.isfinite(rms) else 1.0


def _scaled_fixed(fixed: FixedRules | None, s: float) -> FixedRules | None:
    """``fixed`` with its weights and intercept in units of ``y/s``."""
    if fixed is None or s == 1.0:
        return fixed
    return FixedRules(fixed.r, fixed.p,
                      None if fixed.weights is None else np.asarray(fixed.weights, float) / s,
                      None if fixed.intercept is None else float(fixed.intercept) / s)


#: what the big-M model asks of a backend to be taken natively, with a ridge (the engine
#: registry's declared ``needs``: it checks a solver as for a positive ``reg``, as its
#: probe did; :meth:`IntervalCoverMIP.capabilities` is the exact set of one model)
BIGM_NEEDS = frozenset({Capability.LP, Capability.INTEGER, Capability.NONLINEAR_LOSS,
                        Capability.QUADRATIC_OBJECTIVE})


class IntervalCoverMIP(IntervalCoverCodec):
    """The interval-cover MIP of [GAP] §4.1 (module docstring; docs/explanation/interval_cover.md).

    Parameters
    ----------
    language : Language
        The models searched (:class:`~rulemip.rules.language.Language`): *k* rules (the
        intercept is not counted), the cut points per feature (None:
        ``candidate_thresholds(X, max_thresholds)``), at most ``max_rule_length``
        restricted features per rule, and a free, unpenalized :math:`\\beta_0` or none.
    loss : {"squared", "logistic", "poisson"}
    reg : float
        Ridge :math:`\\lambda \\ge 0` of :math:`R_\\lambda`.
    max_thresholds : int or None
        Quantile bins per feature when the language has no thresholds (None: all
        midpoints).
    linearization : {"auto", "indicator", "bigm"}
        ``w = zβ`` by indicator constraints (backends with ``INDICATOR``) or big-M;
        ``"auto"`` picks per backend and bound (:meth:`build_for`).
    weight_bound : float, optional
        A box :math:`|\\beta_t| \\le` ``weight_bound`` used when no bound can be proved
        (``reg = 0`` with a loss whose minimizer may diverge); a box tighter than the proved
        bound makes the result "optimal within the box" (``bound_valid=False``).
    symmetry_breaking : bool
        Order the rules by a lexicographic key of their intervals.
    contiguity_cuts : bool
        Add [GAP]'s contiguity inequalities (implied by the r/p encoding) as rows.
    cell_reduction : bool
        Run on the occupied cells (docs/explanation/box_selection.md §1) instead of the rows.
    """

    def __init__(self, language: Language, *, loss: str = "squared", reg: float = 0.0,
                 max_thresholds: int | None = None, linearization: str = "auto",
                 weight_bound: float | None = None, symmetry_breaking: bool = True,
                 contiguity_cuts: bool = False, cell_reduction: bool = True) -> None:
        lang = checked_language(language)
        #: the models searched (its parts also as the attributes below)
        self.language = lang
        self.n_rules = lang.n_rules
        self.loss = get_loss(loss).name
        self.reg = float(check_nonneg_float(reg, "reg") or 0.0)
        self.fit_intercept = lang.fit_intercept
        self.thresholds = None if lang.thresholds is None else [
            np.unique(t) for t in lang.thresholds]
        self.max_thresholds = check_positive_int(max_thresholds, "max_thresholds",
                                                 allow_none=True)
        self.max_rule_length = lang.max_rule_length
        self.linearization = check_choice(linearization, "linearization", LINEARIZATIONS)
        self.weight_bound = check_nonneg_float(weight_bound, "weight_bound", allow_none=True,
                                               strictly_positive=True)
        self.symmetry_breaking = bool(symmetry_breaking)
        self.contiguity_cuts = bool(contiguity_cuts)
        self.cell_reduction = bool(cell_reduction)

    # ------------------------------------------------------------------ capabilities
    def capabilities(self, linearization: str = "indicator") -> set[Capability]:
        """What a backend needs to take the model natively (else: tangent cuts)."""
        caps = {Capability.LP, Capability.INTEGER, Capability.NONLINEAR_LOSS}
        if self.reg > 0:
            caps.add(Capability.QUADRATIC_OBJECTIVE)
        if linearization == "indicator":
            caps.add(Capability.INDICATOR)
        return caps

    def thresholds_for(self, dataset: Dataset) -> list[FloatArray]:
        if self.thresholds is not None:
            if len(self.thresholds) != dataset.d:
                raise InvalidParameterError(
                    f"`thresholds` must give one array of cut points per feature "
                    f"({dataset.d}); got {len(self.thresholds)}.")
            return list(self.thresholds)
        return candidate_thresholds(dataset.X, self.max_thresholds)

    # ------------------------------------------------------------------ building
    def _reduce(self, dataset: Dataset, ths: list[FloatArray], scale: float = 1.0
                ) -> CellReduction:
        y = np.asarray(dataset.y, dtype=float) / scale if scale != 1.0 else dataset.y
        red = reduce_to_cells(dataset.X, y, ths, self.loss, dataset.sample_weight)
        if self.cell_reduction:
            return red
        # one "cell" per row of positive weight (groups still shared through r, p)
        rows = np.flatnonzero(dataset.weights > 0)
        G = threshold_groups(dataset.X, ths)[rows]
        cell_of_row = np.full(dataset.n, -1, dtype=np.int64)
        cell_of_row[rows] = np.arange(len(rows))
        return CellReduction(G.astype(np.int64), cell_of_row,
                             np.arange(len(rows), dtype=np.int64),
                             np.asarray(y[rows], dtype=float),
                             np.asarray(dataset.weights[rows], dtype=float), 0.0,
                             float(dataset.weights[rows].sum()), self.loss, tuple(ths))

    def build(self, dataset: Dataset, *, linearization: str = "indicator",
              fixed: FixedRules | None = None, reference_risk: float | None = None,
              budget: Budget | None = None) -> BuiltIntervalCover:
        """Build the model for ``dataset``.

        ``fixed`` holds the first rules fixed (MIP-boosting); ``reference_risk`` is the
        risk :math:`R_\\lambda` of any feasible solution (e.g. a warm start), which tightens
        the proved bounds (every optimum has :math:`R_\\lambda \\le` it). Both are in the
        units of the data; the model is in those of :math:`y/s` (module docstring, "Units").
        With ``budget``, :class:`~rulemip.budget.BudgetExpired` is raised between the blocks
        of rows once it is spent (a model of 6 million rows took tens of seconds).
        """
        if linearization not in ("indicator", "bigm"):
            raise InvalidParameterError(
                f"`linearization` must be 'indicator' or 'bigm'; got {linearization!r}.")
        if not isinstance(dataset, Dataset):
            raise InvalidParameterError("`dataset` must be a rulemip.data.Dataset.")
        get_loss(self.loss).check_labels(np.asarray(dataset.y))
        ths = self.thresholds_for(dataset)
        unit = response_scale(dataset, self.loss)
        fixed = _scaled_fixed(fixed, unit)
        if reference_risk is not None:
            reference_risk = float(reference_risk) / unit ** 2
        check = _checker(budget)
        check()   # before the cell reduction (0.3 s on 100 000 rows × 20)
        red = self._reduce(dataset, ths, unit)
        check()
        k, d, m = self.n_rules, dataset.d, red.n_cells
        occupied = tuple(np.unique(red.groups[:, j]) for j in range(d))
        local = np.column_stack([np.searchsorted(occupied[j], red.groups[:, j])
                                 for j in range(d)]).astype(np.int64)
        sizes = np.array([len(o) for o in occupied], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        S = int(offsets[-1])
        kf = 0 if fixed is None else fixed.n_rules
        if kf > k:
            raise FormulationError(f"{kf} fixed rules do not fit in n_rules={k}.")
        if fixed is not None and fixed.r.shape != (kf, S):
            raise FormulationError(
                f"fixed rules must be encoded on {S} groups; got shape {fixed.r.shape}.")

        notes: list[str] = []
        bounds = prove_bounds(red, occupied, local, offsets, fixed, reference_risk, notes,
                              language=self.language, loss=self.loss, reg=self.reg,
                              weight_bound=None if self.weight_bound is None
                              else self.weight_bound / unit, unit=unit)
        Bt, (b0_lo, b0_hi), (f_lo, f_hi), bound_valid, R_ref = bounds

        model = MIPModel(f"interval_cover_k{k}")
        r = model.add_variables("r", (k, S), binary=True)
        p = model.add_variables("p", (k, S), binary=True)
        z = model.add_variables("z", (m, k), binary=True)
        beta = model.add_variables("beta", (k,), lb=-Bt, ub=Bt)
        has_b0 = self.fit_intercept
        if has_b0:
            model.add_variables("beta0", (1,), lb=b0_lo, ub=b0_hi)
        w = model.add_variables("w", (m, k), lb=-np.repeat(Bt[None, :], m, 0),
                                ub=np.repeat(Bt[None, :], m, 0))
        fv = model.add_variables("f", (m,), lb=f_lo, ub=f_hi)
        rid, pid, zid = r.ids, p.ids, z.ids
        check()
        self._add_structure(model, rid, pid, zid, occupied, local, offsets, kf, check)
        check()
        # f_c = beta0 + sum_t w_{c,t}
        rows_i = np.repeat(np.arange(m), k + 1 + int(has_b0))
        cols = [fv.ids[:, None], w.ids]
        vals = [np.ones((m, 1)), -np.ones((m, k))]
        if has_b0:
            cols.append(np.full((m, 1), model.var("beta0").ids[0]))
            vals.append(-np.ones((m, 1)))
        _add_coo(model, "prediction", rows_i, np.hstack(cols).ravel(),
                 np.hstack(vals).ravel(), m, 0.0, 0.0)
        self._add_linking(model, linearization, zid, beta.ids, w.ids, Bt, check)
        check()
        # objective: (1/W)(sum_p W_p l(f_c(p), y_p) + C + lambda ||beta||^2)
        W = red.total_weight
        model.add_loss(self.loss, fv.ids[red.point_cell], red.y, red.weight, scale=1.0 / W)
        if self.reg > 0:
            model.add_square(beta.ids, self.reg / W)
        model.offset = red.constant / W
        built = BuiltIntervalCover(model, dataset, red, occupied, local, offsets, k,
                                   linearization, Bt, (b0_lo, b0_hi), (f_lo, f_hi),
                                   bound_valid, R_ref, fixed, notes, unit)
        if fixed is not None:
            self._fix(built, fixed)
        return built

    def _add_structure(self, model: MIPModel, rid: IntArray, pid: IntArray, zid: IntArray,
                       occupied: tuple[IntArray, ...], local: IntArray, offsets: IntArray,
                       n_fixed: int, check: Any = None) -> None:
        check = check or (lambda: None)
        k, d, m = rid.shape[0], len(occupied), zid.shape[0]
        # monotone r (non-decreasing) and p (non-increasing) along each feature's groups
        mono_r, mono_p = [], []
        for j in range(d):
            a = np.arange(offsets[j] + 1, offsets[j + 1])
            if len(a):
                mono_r.append((rid[:, a], rid[:, a - 1]))
                mono_p.append((pid[:, a - 1], pid[:, a]))
        for name, pairs in (("r_monotone", mono_r), ("p_monotone", mono_p)):
            if pairs:
                hi = np.concatenate([x.ravel() for x, _ in pairs])
                lo = np.concatenate([y.ravel() for _, y in pairs])
                nr = len(hi)
                _add_coo(model, name, np.repeat(np.arange(nr), 2),
                         np.column_stack([hi, lo]).ravel(),
                         np.tile([1.0, -1.0], nr), nr, 0.0, math.inf)
        # s = r + p - 1 >= 0
        nr = rid.size
        _add_coo(model, "s_nonneg", np.repeat(np.arange(nr), 2),
                 np.column_stack([rid.ravel(), pid.ravel()]).ravel(), np.ones(2 * nr), nr,
                 1.0, math.inf)
        # z_{c,t} <= s_{t,j,a_j(c)}  ->  z - r - p <= -1
        gcol = offsets[:d][None, :] + local  # (m, d) group column of each cell
        rr = rid[:, gcol].transpose(1, 0, 2)                           # (m, k, d)
        pp = pid[:, gcol].transpose(1, 0, 2)
        # one block per rule (m·d rows each; the whole block was 6 million rows on
        # 100 000 cells × 20 features × 3 rules, seconds without the clock)
        nr = m * d
        for t in range(k):
            check()
            _add_coo(model, f"z_upper[{t}]", np.repeat(np.arange(nr), 3),
                     np.column_stack([np.repeat(zid[:, t], d), rr[:, t].ravel(),
                                      pp[:, t].ravel()]).ravel(),
                     np.tile([1.0, -1.0, -1.0], nr), nr, -math.inf, -1.0)
        check()
        # z_{c,t} >= sum_j s - (d - 1)  ->  z - sum_j (r + p) >= 1 - 2d, one block per rule
        per = 1 + 2 * d
        vals = np.tile(np.concatenate([[1.0], -np.ones(2 * d)]), m)
        for t in range(k):
            cols = np.concatenate([zid[:, t, None], rr[:, t], pp[:, t]], axis=1)
            _add_coo(model, f"z_lower[{t}]", np.repeat(np.arange(m), per), cols.ravel(), vals,
                     m, 1.0 - 2.0 * d, math.inf)
            check()
        # every rule covers at least one cell
        _add_coo(model, "cover", np.repeat(np.arange(k), m), zid.T.ravel(),
                 np.ones(m * k), k, 1.0, math.inf)
        if self.max_rule_length is not None and self.max_rule_length < d:
            # rho_{t,j} >= 1 - r_{t,j,first}, rho >= 1 - p_{t,j,last}; sum_j rho <= L
            rho = model.add_variables("restricted", (k, d), binary=True).ids
            first = offsets[:d]
            last = offsets[1:] - 1
            nr = k * d
            _add_coo(model, "restricted_lower", np.repeat(np.arange(nr), 2),
                     np.column_stack([rho.ravel(), rid[:, first].ravel()]).ravel(),
                     np.ones(2 * nr), nr, 1.0, math.inf)
            _add_coo(model, "restricted_upper", np.repeat(np.arange(nr), 2),
                     np.column_stack([rho.ravel(), pid[:, last].ravel()]).ravel(),
                     np.ones(2 * nr), nr, 1.0, math.inf)
            _add_coo(model, "max_rule_length", np.repeat(np.arange(k), d), rho.ravel(),
                     np.ones(nr), k, -math.inf, float(self.max_rule_length))
        if self.contiguity_cuts:
            self._add_contiguity(model, rid, pid, offsets)
        if self.symmetry_breaking and k - n_fixed >= 2:
            self._add_symmetry(model, rid, pid, offsets, n_fixed)

    @staticmethod
    def _add_contiguity(model: MIPModel, rid: IntArray, pid: IntArray, offsets: IntArray
                        ) -> None:
        """[GAP]'s cut ``s_a >= s_{a-1} + s_{a+1} - 1`` (implied by the r/p encoding).

        Its companion ``s_a <= s_{a-1} + s_{a+1}`` is *not* added: it forbids intervals of a
        single group (e.g. boosting's one-point rules on D(k, Δ)), so it is not valid.
        With ``s = r + p - 1`` the cut reads
        ``(r+p)_a - (r+p)_{a-1} - (r+p)_{a+1} >= -2``.
        """
        rows = []
        k = rid.shape[0]
        for j in range(len(offsets) - 1):
            for a in range(offsets[j] + 1, offsets[j + 1] - 1):
                for t in range(k):
                    row = {int(rid[t, a]): 1.0, int(pid[t, a]): 1.0}
                    for b in (a - 1, a + 1):
                        row[int(rid[t, b])] = row.get(int(rid[t, b]), 0.0) - 1.0
                        row[int(pid[t, b])] = row.get(int(pid[t, b]), 0.0) - 1.0
                    rows.append(row)
        if rows:
            model.add_constraints("contiguity", rows=rows, lower=-2.0)

    def _add_symmetry(self, model: MIPModel, rid: IntArray, pid: IntArray, offsets: IntArray,
                      n_fixed: int) -> None:
        sizes = np.diff(offsets).tolist()
        cr, cp = self.symmetry_key(sizes)
        rows = []
        for t in range(n_fixed, rid.shape[0] - 1):
            row: dict[int, float] = {}
            for coefs, ids in ((cr, rid), (cp, pid)):
                for a, v in enumerate(coefs):
                    if v:
                        row[int(ids[t, a])] = v
                        row[int(ids[t + 1, a])] = -v
            rows.append(row)
        model.add_constraints("symmetry", rows=rows, upper=0.0)

    @staticmethod
    def _add_linking(model: MIPModel, linearization: str, zid: IntArray, bid: IntArray,
                     wid: IntArray, Bt: FloatArray, check: Any = None) -> None:
        check = check or (lambda: None)
        m, k = zid.shape
        if linearization == "indicator":
            for c in range(m):
                if c % _CELLS_PER_CHECK == 0:   # 2·k indicators per cell, a Python loop
                    check()
                for t in range(k):
                    zc, wc, bc = int(zid[c, t]), int(wid[c, t]), int(bid[t])
                    model.add_indicator(zc, 0, {wc: 1.0}, "==", 0.0, f"w_off[{c},{t}]")
                    model.add_indicator(zc, 1, {wc: 1.0, bc: -1.0}, "==", 0.0,
                                        f"w_on[{c},{t}]")
            return
        # big-M: |w| <= B z, |w - beta| <= B (1 - z)
        nr = m * k
        B = np.repeat(Bt[None, :], m, 0).ravel()
        zf, wf = zid.ravel(), wid.ravel()
        bf = np.repeat(bid[None, :], m, 0).ravel()
        ri2 = np.repeat(np.arange(nr), 2)
        _add_coo(model, "w_le_Bz", ri2, np.column_stack([wf, zf]).ravel(),
                 np.column_stack([np.ones(nr), -B]).ravel(), nr, -math.inf, 0.0)
        _add_coo(model, "w_ge_-Bz", ri2, np.column_stack([wf, zf]).ravel(),
                 np.column_stack([np.ones(nr), B]).ravel(), nr, 0.0, math.inf)
        ri3 = np.repeat(np.arange(nr), 3)
        c3 = np.column_stack([wf, bf, zf]).ravel()
        _add_coo(model, "w_le_beta", ri3, c3,
                 np.column_stack([np.ones(nr), -np.ones(nr), B]).ravel(), nr, -math.inf, B)
        _add_coo(model, "w_ge_beta", ri3, c3,
                 np.column_stack([np.ones(nr), -np.ones(nr), -B]).ravel(), nr, -B, math.inf)

    def _fix(self, built: BuiltIntervalCover, fixed: FixedRules) -> None:
        model = built.model
        kf = fixed.n_rules
        rid, pid = built.block("r"), built.block("p")
        model.set_bounds(rid[:kf].ravel(), np.round(fixed.r).ravel(), np.round(fixed.r).ravel())
        model.set_bounds(pid[:kf].ravel(), np.round(fixed.p).ravel(), np.round(fixed.p).ravel())
        Z = built.cover_matrix(fixed.r, fixed.p)
        zid = built.block("z")
        model.set_bounds(zid[:, :kf].ravel(), Z.ravel(), Z.ravel())
        if fixed.weights is not None:
            wts = np.asarray(fixed.weights, dtype=float)
            model.set_bounds(built.block("beta")[:kf], wts, wts)
            wv = (Z * wts[None, :]).ravel()
            model.set_bounds(built.block("w")[:, :kf].ravel(), wv, wv)
            if self.fit_intercept and fixed.intercept is not None:
                b0 = built.block("beta0")
                model.set_bounds(b0, [fixed.intercept], [fixed.intercept])

    def build_for(self, dataset: Dataset, backend: SolverBackend, native: bool, *,
                  fixed: FixedRules | None = None, reference_risk: float | None = None,
                  budget: Budget | None = None) -> BuiltIntervalCover:
        """Build the variant for ``backend``: ``linearization="auto"`` takes big-M when the
        weight box is proved and at most :data:`BIGM_LIMIT` (measured faster than SCIP's
        indicator constraints: 17 s vs 28 s on 20 points, k = 3), indicator constraints on
        backends that have them otherwise (unproved or huge boxes), big-M elsewhere."""
        has_ind = native and Capability.INDICATOR in backend.capabilities
        lin = self.linearization
        if lin == "indicator" and not has_ind:
            lin = "bigm"
        if lin != "auto":
            return self.build(dataset, linearization=lin, fixed=fixed,
                              reference_risk=reference_risk, budget=budget)
        built = self.build(dataset, linearization="bigm", fixed=fixed,
                           reference_risk=reference_risk, budget=budget)
        if has_ind and (not built.bound_valid or float(np.max(built.weight_bound)) > BIGM_LIMIT):
            built = self.build(dataset, linearization="indicator", fixed=fixed,
                               reference_risk=reference_risk, budget=budget)
        return built

    # ------------------------------------------------------------------ the protocol
    #: the name of this formulation in results (:class:`~rulemip.formulations.protocol.Formulation`)
    engine = "mip"
    #: :meth:`build_model` takes the fit's ``budget`` (the driver passes it)
    budgeted_build = True

    def needs(self) -> set[Capability]:
        """Capabilities of the big-M model (what a backend must take natively)."""
        return self.capabilities("bigm")

    def build_model(self, dataset: Dataset, *, backend: SolverBackend, native: bool,
                    warm_start: RuleEnsemble | None = None, budget: Budget | None = None
                    ) -> BuiltIntervalCover:
        """:meth:`build_for` with the weight box proved against the warm start's risk
        (a probe model encodes the warm start to get it), within ``budget``
        (:class:`~rulemip.budget.BudgetExpired` once it is spent)."""
        ref = None
        probe = None
        if warm_start is not None:
            probe = self.build(dataset, linearization="bigm", budget=budget)
            x_probe = self.encode(probe, warm_start)
            if not np.isnan(x_probe).any():
                ref = probe.objective_scale * \
                    probe.model.to_standard_form().objective_value(x_probe)
        built = self.build_for(dataset, backend, native, reference_risk=ref, budget=budget)
        if probe is not None:
            built.notes.extend(n for n in probe.notes if n.startswith("warm start"))
        return built

    def encode_start(self, built: BuiltIntervalCover, ensemble: RuleEnsemble
                     ) -> FloatArray | None:
        """:meth:`encode`, or ``None`` when the ensemble has no feasible encoding."""
        x = self.encode(built, ensemble)
        return None if np.isnan(x).any() else x

    def decode_solution(self, built: BuiltIntervalCover, x: FloatArray
                        ) -> tuple[RuleEnsemble, float, list[str]]:
        """:meth:`decode` with refitted weights, and notes on what refitting changed."""
        ens, risk, solver_risk = self.decode(built, x)
        notes = []
        if risk < solver_risk - 1e-9 * max(1.0, abs(solver_risk)):
            notes.append(f"refitting the decoded rules' weights lowered the risk from "
                         f"{solver_risk:.10g} to {risk:.10g}.")
        return ens, float(risk), notes


# ---------------------------------------------------------------------- helpers
#: cells of the indicator linearization between two clock checks of the build
_CELLS_PER_CHECK = 2000


def _checker(budget: Budget | None) -> Any:
    """A function raising :class:`~rulemip.budget.BudgetExpired` once ``budget`` is spent
    (a no-op without one)."""
    if budget is None:
        return lambda: None
    return lambda: budget.check("building the interval-cover MIP")


def _add_coo(model: MIPModel, name: str, rows: IntArray, cols: IntArray, vals: FloatArray,
             n_rows: int, lower: Any, upper: Any) -> None:
    import scipy.sparse as sp

    A = sp.coo_matrix((np.asarray(vals, dtype=float),
                       (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
                      shape=(n_rows, model.n_cols))
    model.add_constraints(name, matrix=A, lower=lower, upper=upper)


__all__ = ["BIGM_NEEDS", "BuiltIntervalCover", "FixedRules", "IntervalCoverMIP", "max_det01",
           "response_scale", "sublevel_interval"]
