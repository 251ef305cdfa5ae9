r"""The best k-rule ensemble as a convex integer program over candidate boxes
(docs/explanation/box_selection.md).

Model
-----
Sets: reduced points p (one per occupied grid cell, docs/explanation/box_selection.md §1, two for
logistic), candidate
boxes b ∈ B (runs of consecutive threshold groups per feature, at most
``max_rule_length`` restricted features, one per distinct cover of the cells; the
all-covering box only without intercept).

Variables: :math:`z_b \in \{0, 1, \dots, k\}`, the number of rules equal to box b.

Constraints: :math:`\sum_b z_b \le k` (``n_rules`` = *k* of [GAP]).

Objective: :math:`R(z)`, the least regularized risk :math:`R_\lambda` of an ensemble made of
:math:`z_b` copies of every box b (see :mod:`rulemip.formulations.box_oracles`), convex in
z, with gradient :math:`\partial R/\partial z_b = -(q_b^\top a)^2/(4\lambda W)`.
:math:`\gamma = 1/\lambda` in the notation of docs/explanation/notation.md; :math:`\lambda` is
``reg`` of the package
convention :math:`R_\lambda = (\sum_i w_i l_i + \lambda\|\beta\|^2)/W`.

It has the same optimum as the interval-cover MIP of docs/explanation/interval_cover.md over the
same thresholds
(every rule of that MIP is a box here; identical rules share a box with multiplicity).
The solve is outer approximation (:mod:`rulemip.algorithms.convex.outer_approximation`,
[PRUNE] Alg. 1) seeded with cheap cuts, plus the combinatorial lower bounds of
``docs/explanation/box_selection.md``; decoding refits the weights on the original data
with :func:`rulemip.refit.fit_weights`, so the reported risk is recomputed, not trusted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_nonneg_float, check_positive_int
from rulemip.budget import Budget
from rulemip.data.dataset import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_oracles import (
    CandidateBoxes,
    ConvexBoxOracle,
    SquaredBoxOracle,
    enumerate_boxes,
    segmentation_bound,
)
from rulemip.formulations.cells import CellReduction, reduce_to_cells
from rulemip.formulations.levels import levels_bound, levels_work, logistic_levels_bound
from rulemip.losses import get_loss
from rulemip.model.mip_model import MIPModel
from rulemip.refit import fit_weights
from rulemip.rules.ensemble import RuleEnsemble, conditions_from_box
from rulemip.rules.language import Language, checked_language
from rulemip.rules.rule import Rule
from rulemip.solvers.base import PERSISTENT_MASTER_NEEDS, Capability, SolverBackend

FloatArray = NDArray[np.float64]

#: the 2^k-levels bound (divide-and-conquer DP over the sorted cells, about L·m·log₂ m
#: operations, compiled; rulemip.formulations.levels) is computed only up to this much work
#: (≈ 1 s): friedman1 with 5 000 cells at k = 10 is 6.6e7
LEVELS_MAX_WORK = 1_000_000_000


@dataclass
class BoxSelectionProblem:
    """Everything :meth:`BoxSelectionCIP.build` derives from a dataset.

    ``model`` is the feasibility model (block ``"z"`` of B integer columns in [0, k], row
    block ``"cardinality"``: Σ z ≤ k); ``oracle`` gives :math:`R(z)` and its gradient;
    ``bound`` is the best combinatorial lower bound on the optimal :math:`R_\\lambda` with
    the names and values of the bounds it came from in ``bound_parts``. It is the
    :class:`~rulemip.formulations.protocol.BuiltModel` of :class:`BoxSelectionCIP`.
    """

    dataset: Dataset
    cells: CellReduction
    boxes: CandidateBoxes
    Q: FloatArray
    oracle: SquaredBoxOracle | ConvexBoxOracle
    model: MIPModel
    n_rules: int
    reg: float
    fit_intercept: bool
    loss: str
    bound: float
    bound_parts: dict[str, float]
    notes: list[str] = field(default_factory=list)
    #: every bound this problem reports is proved (no stated weight box)
    bound_valid: bool = True

    @property
    def n_boxes(self) -> int:
        return self.boxes.n_boxes

    @property
    def n_cells(self) -> int:
        return self.cells.n_cells

    def block(self, name: str) -> NDArray[np.int64]:
        """Columns of block ``"z"`` (the box multiplicities, in box order)."""
        return np.asarray(self.model.var(name).ids, dtype=np.int64).ravel()

    @property
    def safe_bound(self) -> float:
        """A bound valid by construction (the reduction constant: losses are ≥ 0 after
        it), the fallback when a solver's bound is refuted."""
        return self.bound_parts["constant"]

    # ------------------------------------------------------------------ decoding
    def box_bounds(self, b: int) -> tuple[list[float], list[float]]:
        """``(lower, upper)`` threshold values of box b (±inf where unrestricted)."""
        lo: list[float] = []
        hi: list[float] = []
        for j, t in enumerate(self.cells.thresholds):
            a, u = int(self.boxes.lower[b, j]), int(self.boxes.upper[b, j])
            lo.append(float(t[a - 1]) if a > 0 else -math.inf)
            hi.append(float(t[u]) if u < len(t) else math.inf)
        return lo, hi

    def decode(self, z: FloatArray) -> tuple[RuleEnsemble, float]:
        """The ensemble "``z_b`` copies of box b" with weights refitted on the original data
        (copies of a box get equal shares of its weight — the ridge optimum) and its
        recomputed :math:`R_\\lambda`."""
        zi = np.rint(np.asarray(z, dtype=float)).astype(np.int64)
        chosen = [int(b) for b in np.flatnonzero(zi > 0) for _ in range(int(zi[b]))]
        ds = self.dataset
        bodies = []
        for b in chosen:
            lo, hi = self.box_bounds(b)
            bodies.append(conditions_from_box(lo, hi, ds.encoder, ds.feature_names))
        Qfull = np.column_stack([Rule(c).query(ds.X) for c in bodies]).astype(float) \
            if bodies else np.zeros((ds.n, 0))
        res = fit_weights(Qfull, ds.y, self.loss, self.reg, self.fit_intercept,
                          sample_weight=ds.sample_weight)
        rules = [Rule(c, float(wt)) for c, wt in zip(bodies, res.weights, strict=True)]
        ens = RuleEnsemble(rules, res.intercept if self.fit_intercept else 0.0, self.loss,
                           ds.encoder, ds.classes)
        return ens, float(res.risk)

    def encode(self, ensemble: RuleEnsemble) -> FloatArray:
        """Multiplicities z of a rule ensemble (e.g. from boosting) on the candidate boxes.

        Each rule's bounds are snapped to the nearest candidate cut point of its feature; a
        rule whose snapped box covers no cell (or every cell, with an intercept) is
        skipped; at most ``n_rules`` rules are kept (in order).
        """
        z = np.zeros(self.n_boxes)
        index = self.boxes.key_index()
        groups = self.cells.groups
        for rule in ensemble.rules:
            if z.sum() >= self.n_rules:
                break
            inside = np.ones(self.cells.n_cells, dtype=bool)
            for c in rule.conditions:
                t = self.cells.thresholds[c.feature]
                g = groups[:, c.feature]
                if math.isfinite(c.lower) and len(t):
                    a = int(np.argmin(np.abs(t - c.lower))) + 1
                    inside &= g >= a
                if math.isfinite(c.upper) and len(t):
                    u = int(np.argmin(np.abs(t - c.upper)))
                    inside &= g <= u
            key = np.packbits(inside[:, None], axis=0)[:, 0].tobytes()
            b = index.get(key)
            if b is not None:
                z[b] += 1
        return z


class BoxSelectionCIP:
    """Exact best k-rule ensemble over candidate thresholds (module docstring).

    It is a :class:`~rulemip.formulations.protocol.Formulation` whose built model is a
    :class:`BoxSelectionProblem` (the oracle, not a model a backend could take): the
    searches over it (enumeration, outer approximation, branch and bound over boxes,
    column generation) add the protocol's search hook one layer up, in
    :mod:`rulemip.algorithms.krule.box_selection` and
    :mod:`rulemip.algorithms.krule.column_generation`.

    Parameters
    ----------
    language : the models searched (:class:`~rulemip.rules.language.Language`): k rules
        (*k* in [GAP]; the intercept is not counted), the cut points per feature (None:
        :func:`rulemip.data.candidate_thresholds` with ``max_thresholds``), at most
        ``max_rule_length`` restricted features per rule, and the intercept
        (an unpenalized background rule; without it the all-covering box is a rule).
    loss : ``"squared"``, ``"logistic"`` or ``"poisson"``.
    reg : ridge :math:`\\lambda > 0` of :math:`R_\\lambda` (``γ = 1/λ`` of
        docs/explanation/box_selection.md).
    max_thresholds : at most this many quantile cut points per feature (language without
        thresholds).
    """

    def __init__(self, language: Language, *, loss: str = "squared", reg: float = 1e-3,
                 max_thresholds: int | None = None) -> None:
        lang = checked_language(language)
        #: the models searched (its parts also as the attributes below)
        self.language = lang
        self.n_rules: int = lang.n_rules
        self.loss = get_loss(loss).name
        r = check_nonneg_float(reg, "reg")
        assert r is not None
        if r <= 0.0:
            raise InvalidParameterError(
                f"`reg` must be > 0 for the box-selection CIP (its objective is the "
                f"perspective λβ²/z); got {reg!r}. Use a tiny ridge such as 1e-6, or the "
                "interval-cover MIP for λ = 0.")
        self.reg = r
        self.fit_intercept = lang.fit_intercept
        self.thresholds = None if lang.thresholds is None else list(lang.thresholds)
        self.max_thresholds = check_positive_int(max_thresholds, "max_thresholds",
                                                 allow_none=True)
        self.max_rule_length = lang.max_rule_length
        #: the combinatorial bounds of the last cells asked (cells, k, bounds)
        self._bounds_cache: tuple[CellReduction, int, dict[str, float]] | None = None

    engine = "cip"

    # ------------------------------------------------------------------ the protocol
    def needs(self) -> set[Capability]:
        """A persistent MILP master for outer approximation over the oracle."""
        return set(PERSISTENT_MASTER_NEEDS)

    def build_model(self, dataset: Dataset, *, backend: SolverBackend | None = None,
                    native: bool = True, warm_start: RuleEnsemble | None = None
                    ) -> BoxSelectionProblem:
        """:meth:`build` (the backend does not change the problem)."""
        return self.build(dataset)

    def encode_start(self, built: Any, ensemble: RuleEnsemble) -> FloatArray | None:
        """Box multiplicities of ``ensemble`` (:meth:`BoxSelectionProblem.encode`)."""
        return built.encode(ensemble)

    def decode_solution(self, built: Any, x: FloatArray
                        ) -> tuple[RuleEnsemble, float, list[str]]:
        """The ensemble of multiplicities ``x`` refitted on the data and its risk
        (:meth:`BoxSelectionProblem.decode`)."""
        ensemble, risk = built.decode(x)
        return ensemble, risk, []

    def polish(self, built: Any, x: FloatArray) -> FloatArray | None:
        """No master point to repair: the searches evaluate the oracle at integer points."""
        return None

    # ------------------------------------------------------------------ build
    def build(self, dataset: Dataset) -> BoxSelectionProblem:
        """Cells, candidate boxes, oracle, feasibility model and combinatorial bounds."""
        cells = self.reduce(dataset)
        n_groups = np.array([len(t) + 1 for t in cells.thresholds], dtype=np.int64)
        boxes = enumerate_boxes(cells.groups, n_groups, max_rule_length=self.max_rule_length,
                                drop_full=self.fit_intercept)
        return self.problem_over(dataset, cells, boxes)

    def reduce(self, dataset: Dataset) -> CellReduction:
        """The cell reduction of ``dataset`` over this problem's thresholds."""
        if not isinstance(dataset, Dataset):
            raise InvalidParameterError(
                "`dataset` must be a rulemip.data.Dataset; build one with Dataset.from_arrays.")
        ths = self.thresholds if self.thresholds is not None else \
            candidate_thresholds(dataset.X, self.max_thresholds)
        if len(ths) != dataset.d:
            raise InvalidParameterError(
                f"`thresholds` has {len(ths)} entries but the data has {dataset.d} features.")
        y = get_loss(self.loss).check_labels(np.asarray(dataset.y))
        return reduce_to_cells(dataset.X, y, ths, self.loss, dataset.sample_weight)

    def problem_over(self, dataset: Dataset, cells: CellReduction, boxes: CandidateBoxes,
                     *, combinatorial: bool = True,
                     budget: Budget | None = None) -> BoxSelectionProblem:
        """The CIP restricted to the candidate ``boxes`` (all of them: :meth:`build`; a
        working set: column generation). The combinatorial bounds depend on the cells
        only, so they bound the unrestricted problem too; ``combinatorial=False`` keeps
        only the reduction constant (for a caller that has a proof of its own). They are
        computed once per ``cells`` (column generation asks for a problem per working
        set), the logistic levels bound within ``budget`` (None: unlimited)."""
        Q = boxes.cover[cells.point_cell].astype(float)
        args = (Q, cells.y, cells.weight, self.reg, self.fit_intercept, cells.constant,
                cells.total_weight)
        oracle: SquaredBoxOracle | ConvexBoxOracle
        if self.loss == "squared":
            oracle = SquaredBoxOracle(*args)
        else:
            oracle = ConvexBoxOracle(*args, loss=self.loss)
        k = self.n_rules
        model = MIPModel("box_selection")
        zb = model.add_variables("z", boxes.n_boxes, lb=0.0, ub=float(k), integer=True)
        model.add_constraints("cardinality", rows=[{int(c): 1.0 for c in zb.ids}],
                              upper=float(k))
        parts = self._bounds_of(cells, k, budget) if combinatorial else \
            {"constant": cells.constant / cells.total_weight}
        return BoxSelectionProblem(dataset, cells, boxes, Q, oracle, model, k, self.reg,
                                   self.fit_intercept, self.loss, max(parts.values()), parts)

    def _bounds_of(self, cells: CellReduction, k: int, budget: Budget | None
                   ) -> dict[str, float]:
        """:meth:`_combinatorial_bounds` of ``cells``, kept for the last cells asked."""
        cached = self._bounds_cache
        if cached is not None and cached[0] is cells and cached[1] == k:
            return dict(cached[2])
        parts = self._combinatorial_bounds(cells, k, budget)
        self._bounds_cache = (cells, k, dict(parts))
        return parts

    def _combinatorial_bounds(self, cells: CellReduction, k: int,
                              budget: Budget | None = None) -> dict[str, float]:
        """Valid lower bounds on min :math:`R_\\lambda` (docs/explanation/box_selection.md):
        the reduction constant (losses ≥ 0 ... for squared/Poisson the data term is ≥ C);
        for squared loss the best fit with ≤ 2^k levels (ridge dropped, ≥ 0), and on one
        feature the best fit with ≤ 2k+1 contiguous pieces; for logistic loss the levels
        bound with the ridge kept (:func:`rulemip.formulations.levels.logistic_levels_bound`:
        every value of a k-rule model lies in an interval whose width the ridge prices)."""
        W = cells.total_weight
        parts = {"constant": cells.constant / W}
        if cells.loss == "logistic":
            pos = cells.y > 0
            w_pos = np.bincount(cells.point_cell[pos], weights=cells.weight[pos],
                                minlength=cells.n_cells).astype(float)
            w_neg = np.bincount(cells.point_cell[~pos], weights=cells.weight[~pos],
                                minlength=cells.n_cells).astype(float)
            parts["levels"] = (logistic_levels_bound(w_pos, w_neg, k, self.reg,
                                                     self.fit_intercept, budget=budget)
                               + cells.constant) / W
            return parts
        if cells.loss != "squared":
            return parts
        v, w = cells.y, cells.weight
        n_levels = 2 ** min(k, 30)
        m = len(v)
        # the DP is O(levels · m log m) time: computed only where that is bounded (a
        # skipped bound is simply not used; the others stay valid)
        if levels_work(m, n_levels) <= LEVELS_MAX_WORK:
            parts["levels"] = (levels_bound(v, w, n_levels) + cells.constant) / W
        if cells.groups.shape[1] == 1:
            order = np.argsort(cells.groups[:, 0], kind="stable")
            parts["segments"] = (segmentation_bound(v[order], w[order], 2 * k + 1)
                                 + cells.constant) / W
        return parts
