r"""The best k-rule ensemble as a convex integer program over candidate boxes (SPEC §2b).

Model
-----
Sets: reduced points p (one per occupied grid cell, SPEC §2a, two for logistic), candidate
boxes b ∈ B (runs of consecutive threshold groups per feature, at most
``max_rule_length`` restricted features, one per distinct cover of the cells; the
all-covering box only without intercept).

Variables: :math:`z_b \in \{0, 1, \dots, k\}`, the number of rules equal to box b.

Constraints: :math:`\sum_b z_b \le k` (``n_rules`` = *k* of [GAP]).

Objective: :math:`R(z)`, the least regularized risk :math:`R_\lambda` of an ensemble made of
:math:`z_b` copies of every box b (see :mod:`rulemip.formulations.box_oracles`), convex in
z, with gradient :math:`\partial R/\partial z_b = -(q_b^\top a)^2/(4\lambda W)`.
:math:`\gamma = 1/\lambda` in SPEC's notation; :math:`\lambda` is ``reg`` of the package
convention :math:`R_\lambda = (\sum_i w_i l_i + \lambda\|\beta\|^2)/W`.

It has the same optimum as the interval-cover MIP of SPEC §2 over the same thresholds
(every rule of that MIP is a box here; identical rules share a box with multiplicity).
The solve is outer approximation (:mod:`rulemip.algorithms.outer_approximation`,
[PRUNE] Alg. 1) seeded with cheap cuts, plus the combinatorial lower bounds of
``docs/explanation/box_selection.md``; decoding refits the weights on the original data
with :func:`rulemip.refit.fit_weights`, so the reported risk is recomputed, not trusted.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_nonneg_float, check_positive_int
from rulemip.data.dataset import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_oracles import (
    CandidateBoxes,
    ConvexBoxOracle,
    SquaredBoxOracle,
    enumerate_boxes,
    enumerate_optimum,
    levels_bound,
    n_supports,
    segmentation_bound,
)
from rulemip.formulations.box_search import local_search
from rulemip.formulations.cells import CellReduction, reduce_to_cells
from rulemip.formulations.result import ExactResult
from rulemip.losses import get_loss
from rulemip.model.mip_model import MIPModel
from rulemip.refit import fit_weights
from rulemip.rules.ensemble import RuleEnsemble, conditions_from_box
from rulemip.rules.rule import Rule
from rulemip.solvers.result import Limit, TerminationReason, relative_gap

FloatArray = NDArray[np.float64]


@dataclass
class BoxSelectionProblem:
    """Everything :meth:`BoxSelectionCIP.build` derives from a dataset.

    ``model`` is the feasibility model (block ``"z"`` of B integer columns in [0, k], row
    block ``"cardinality"``: Σ z ≤ k); ``oracle`` gives :math:`R(z)` and its gradient;
    ``bound`` is the best combinatorial lower bound on the optimal :math:`R_\\lambda` with
    the names and values of the bounds it came from in ``bound_parts``.
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

    @property
    def n_boxes(self) -> int:
        return self.boxes.n_boxes

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


_LOCAL_SEARCH_KICKS = 50  # kicks of the incumbent search (capped by local_search_time)


class BoxSelectionCIP:
    """Exact best k-rule ensemble over candidate thresholds (module docstring).

    Parameters
    ----------
    n_rules : k, the number of rules (*k* in [GAP]); the intercept is not counted.
    loss : ``"squared"``, ``"logistic"`` or ``"poisson"``.
    reg : ridge :math:`\\lambda > 0` of :math:`R_\\lambda` (``γ = 1/λ`` of SPEC §2b).
    fit_intercept : unpenalized background rule; without it the all-covering box is a rule.
    thresholds : cut points per feature; default :func:`rulemip.data.candidate_thresholds`
        with ``max_thresholds``.
    max_thresholds : at most this many quantile cut points per feature.
    max_rule_length : at most this many restricted features per rule.
    """

    def __init__(self, n_rules: int, loss: str = "squared", reg: float = 1e-3,
                 fit_intercept: bool = True, thresholds: Sequence[FloatArray] | None = None,
                 max_thresholds: int | None = None, max_rule_length: int | None = None
                 ) -> None:
        k = check_positive_int(n_rules, "n_rules")
        assert k is not None
        self.n_rules: int = k
        self.loss = get_loss(loss).name
        r = check_nonneg_float(reg, "reg")
        assert r is not None
        if r <= 0.0:
            raise InvalidParameterError(
                f"`reg` must be > 0 for the box-selection CIP (its objective is the "
                f"perspective λβ²/z); got {reg!r}. Use a tiny ridge such as 1e-6, or the "
                "interval-cover MIP for λ = 0.")
        self.reg = r
        self.fit_intercept = bool(fit_intercept)
        self.thresholds = None if thresholds is None else [np.asarray(t, dtype=float)
                                                           for t in thresholds]
        self.max_thresholds = check_positive_int(max_thresholds, "max_thresholds",
                                                 allow_none=True)
        self.max_rule_length = check_positive_int(max_rule_length, "max_rule_length",
                                                  allow_none=True)

    # ------------------------------------------------------------------ build
    def build(self, dataset: Dataset) -> BoxSelectionProblem:
        """Cells, candidate boxes, oracle, feasibility model and combinatorial bounds."""
        if not isinstance(dataset, Dataset):
            raise InvalidParameterError(
                "`dataset` must be a rulemip.data.Dataset; build one with Dataset.from_arrays.")
        ths = self.thresholds if self.thresholds is not None else \
            candidate_thresholds(dataset.X, self.max_thresholds)
        if len(ths) != dataset.d:
            raise InvalidParameterError(
                f"`thresholds` has {len(ths)} entries but the data has {dataset.d} features.")
        lo = get_loss(self.loss)
        y = lo.check_labels(np.asarray(dataset.y))
        cells = reduce_to_cells(dataset.X, y, ths, self.loss, dataset.sample_weight)
        n_groups = np.array([len(t) + 1 for t in cells.thresholds], dtype=np.int64)
        boxes = enumerate_boxes(cells.groups, n_groups, max_rule_length=self.max_rule_length,
                                drop_full=self.fit_intercept)
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
        parts = self._combinatorial_bounds(cells, k)
        return BoxSelectionProblem(dataset, cells, boxes, Q, oracle, model, k, self.reg,
                                   self.fit_intercept, self.loss, max(parts.values()), parts)

    @staticmethod
    def _combinatorial_bounds(cells: CellReduction, k: int) -> dict[str, float]:
        """Valid lower bounds on min :math:`R_\\lambda` (docs/explanation/box_selection.md):
        the reduction constant (losses ≥ 0 ... for squared/Poisson the data term is ≥ C),
        and for squared loss the best fit with ≤ 2^k levels, and on one feature the best
        fit with ≤ 2k+1 contiguous pieces. The ridge term is dropped (≥ 0)."""
        W = cells.total_weight
        parts = {"constant": cells.constant / W}
        if cells.loss != "squared":
            return parts
        v, w = cells.y, cells.weight
        n_levels = 2 ** min(k, 30)
        parts["levels"] = (levels_bound(v, w, n_levels) + cells.constant) / W
        if cells.groups.shape[1] == 1:
            order = np.argsort(cells.groups[:, 0], kind="stable")
            parts["segments"] = (segmentation_bound(v[order], w[order], 2 * k + 1)
                                 + cells.constant) / W
        return parts

    # ------------------------------------------------------------------ solve
    def solve(self, dataset: Dataset, *, warm_start: RuleEnsemble | None = None,
              solver: str = "highs", time_limit: float | None = None, mip_gap: float = 1e-6,
              callback: Callable[[dict[str, Any]], None] | None = None, seed: int = 0,
              threads: int | None = None, method: str = "auto",
              initial_cuts: str = "greedy", enumeration_limit: int = 5_000_000,
              relaxation_iters: int = 200, combinatorial_bounds: bool = True,
              local_search_time: float = 5.0,
              oa_options: dict[str, Any] | None = None) -> ExactResult:
        """Certified best k-rule ensemble (module docstring).

        Parameters
        ----------
        method : ``"oa"`` (outer approximation), ``"enumerate"`` (exact enumeration of
            supports with monotonicity pruning — for few boxes; its bound does not weaken
            as the ridge goes to 0) or ``"auto"`` (enumerate when there are at most
            ``enumeration_limit`` supports — 100× fewer for logistic/Poisson, whose
            evaluations are refits — within half the time limit, 20 s without one, then
            OA seeded with the enumeration's incumbent; else OA), or ``"bnb"`` (squared loss
            only: best-first branch and bound over boxes with Frank–Wolfe bounds of the
            node relaxations, :mod:`rulemip.formulations.box_bnb`; its incumbent search
            uses ``local_search_time``).
        initial_cuts : OA seeding: ``"greedy"`` (z = 0 and the greedy path, default),
            ``"all"`` (also every single box, up to 200) or ``"none"`` (warm start only).
        relaxation_iters : if > 0 (default 200), first run OA on the continuous relaxation
            (LP masters) for at most this many iterations; its cuts seed the integer master and its
            bound (a bound of the relaxation, hence of the problem) bounds ν below.
        combinatorial_bounds : bound ν below by the combinatorial bounds of
            :meth:`build` (default); off only to measure what they buy.
        local_search_time : cap in seconds (and at most a tenth of the remaining time limit)
            on the swap local search with 50 kicks (:mod:`rulemip.formulations.box_search`)
            run from the best seeded point before OA starts; reproducible for a fixed
            ``seed`` whenever the cap is not reached. It improves the incumbent only (bounds
            are untouched). 0 disables it.
        oa_options : further :class:`~rulemip.algorithms.outer_approximation.OAOptions`
            fields (e.g. ``{"adaptive_master_gap": False}``).
        """
        from rulemip.algorithms.outer_approximation import OAOptions, OuterApproximation

        t0 = time.perf_counter()
        check_nonneg_float(time_limit, "time_limit", allow_none=True)
        check_nonneg_float(mip_gap, "mip_gap")
        prob = self.build(dataset)
        notes: list[str] = [f"{prob.cells.n_cells} occupied cells, {prob.n_boxes} distinct "
                            "boxes"]
        remaining = None if time_limit is None else max(time_limit - (time.perf_counter() - t0),
                                                        0.0)
        if method not in ("auto", "oa", "enumerate", "bnb"):
            raise InvalidParameterError(
                f"`method` must be 'auto', 'oa', 'enumerate' or 'bnb'; got {method!r}.")
        limit_supports = enumeration_limit if self.loss == "squared" else enumeration_limit // 100
        count = n_supports(prob.n_boxes, self.n_rules)
        z_enum: FloatArray | None = None
        if method in ("auto", "bnb"):
            settled = self._settled_by_bound(prob, t0, mip_gap, notes)
            if settled is not None:
                return settled
        if method == "enumerate":
            return self._solve_enumerate(prob, t0, remaining, notes, count)[0]
        if method == "bnb":
            return self._solve_bnb(prob, t0, remaining, notes, warm_start, mip_gap,
                                   local_search_time, seed)
        if method == "auto" and count <= limit_supports:
            # λ-robust but combinatorial: give it half the time (20 s without a limit),
            # then fall back to OA seeded with its incumbent
            budget = 20.0 if remaining is None else remaining / 2.0
            res_enum, z_enum = self._solve_enumerate(prob, t0, budget, notes, count)
            if res_enum.termination is TerminationReason.OPTIMAL:
                return res_enum
            remaining = None if time_limit is None else \
                max(time_limit - (time.perf_counter() - t0), 0.0)
        if not combinatorial_bounds:
            prob.bound = -math.inf
        hint = prob.bound
        relaxed_cuts: list[tuple[float, FloatArray, FloatArray]] = []
        if relaxation_iters > 0:
            hint, relaxed_cuts = self._relaxation(prob, relaxation_iters, remaining, solver,
                                                  threads, seed, notes)
            remaining = None if time_limit is None else \
                max(time_limit - (time.perf_counter() - t0), 0.0)
        opts = OAOptions(time_limit=remaining, abs_tol=1e-12, rel_tol=mip_gap, solver=solver,
                         threads=threads, seed=seed, callback=callback, **(oa_options or {}))
        oa = OuterApproximation(prob.oracle, prob.model, "z", opts, lower_bound_hint=hint)
        for name, val in prob.bound_parts.items():
            notes.append(f"combinatorial bound {name}: {val:.10g}"
                         + ("" if combinatorial_bounds else " (not used)"))
        for v, g, z in relaxed_cuts:
            oa.add_cut(v, g, z, incumbent=False)
        self._seed_cuts(prob, oa, warm_start, initial_cuts)
        if z_enum is not None:
            oa.add_cut_at(z_enum)
        self._improve_incumbent(prob, oa, local_search_time, time_limit, t0, seed, notes)
        res = oa.run()
        ens: RuleEnsemble | None = None
        risk = math.inf
        if res.z is not None:
            ens, risk = prob.decode(res.z)
            if abs(risk - res.value) > 1e-7 * max(1.0, abs(risk)):
                notes.append(f"decoded risk {risk:.12g} differs from the oracle's "
                             f"{res.value:.12g}")
        lb = min(res.lower_bound, risk) if math.isfinite(risk) else res.lower_bound
        gap = relative_gap(risk, lb)
        term, limit = res.termination, res.limit
        if term is TerminationReason.OPTIMAL and gap > mip_gap + 1e-12:
            term, limit = TerminationReason.FEASIBLE, Limit.GAP
        return ExactResult(ensemble=ens, risk=risk, lower_bound=lb, gap=gap, termination=term,
                           limit=limit, wall_time=time.perf_counter() - t0,
                           iterations=res.iterations, engine="cip", backend=res.backend,
                           backend_version=res.backend_version, n_boxes=prob.n_boxes,
                           n_cells=prob.cells.n_cells, bound_valid=True,
                           notes=tuple(notes) + res.notes, history=res.history)

    def _settled_by_bound(self, prob: BoxSelectionProblem, t0: float, mip_gap: float,
                          notes: list[str]) -> ExactResult | None:
        """Closed form when there are at most k occupied cells: every single-cell box is a
        candidate, together they fit every cell mean, so for squared loss their risk is
        the reduction constant (plus a ridge term) — the combinatorial bound. Returns the
        certified result if the gap closes, else None (work linear in B)."""
        B, k = prob.n_boxes, self.n_rules
        single = prob.boxes.cover.sum(axis=0) == 1  # cover is cells x boxes
        if prob.cells.n_cells > k or int(single.sum()) != prob.cells.n_cells:
            return None
        ens, risk = prob.decode(single.astype(float))
        lb = min(prob.bound, risk)
        if relative_gap(risk, lb) > mip_gap:
            return None
        notes.append("settled by the combinatorial bound (no search)")
        return ExactResult(ensemble=ens, risk=risk, lower_bound=lb, gap=relative_gap(risk, lb),
                           termination=TerminationReason.OPTIMAL, limit=None,
                           wall_time=time.perf_counter() - t0, iterations=0, engine="cip",
                           backend="bound", backend_version="", n_boxes=B,
                           n_cells=prob.cells.n_cells, bound_valid=True, notes=tuple(notes))

    def _improve_incumbent(self, prob: BoxSelectionProblem, oa: Any, seconds: float,
                           time_limit: float | None, t0: float, seed: int,
                           notes: list[str]) -> None:
        """Swap local search from OA's incumbent; the result becomes a cut (and incumbent)."""
        check_nonneg_float(seconds, "local_search_time")
        if seconds <= 0 or prob.n_boxes == 0 or oa.incumbent is None:
            return
        if time_limit is not None:
            seconds = min(seconds, 0.1 * max(time_limit - (time.perf_counter() - t0), 0.0))
        before = oa.upper_bound
        found = local_search(prob.oracle, np.round(oa.incumbent), self.n_rules,
                             time_budget=seconds, max_kicks=_LOCAL_SEARCH_KICKS, seed=seed,
                             target=prob.bound)
        if found.value < before:
            oa.add_cut_at(found.z)
        notes.append(f"local search: {before:.10g} -> {min(found.value, before):.10g} "
                     f"({found.evaluations} evaluations, {found.kicks} kicks, "
                     f"{found.wall_time:.2f} s)")

    def _solve_bnb(self, prob: BoxSelectionProblem, t0: float, remaining: float | None,
                   notes: list[str], warm_start: RuleEnsemble | None, mip_gap: float,
                   local_search_time: float, seed: int) -> ExactResult:
        """Branch and bound over boxes (:mod:`rulemip.formulations.box_bnb`, squared loss)."""
        from rulemip.formulations.box_bnb import branch_and_bound

        if not isinstance(prob.oracle, SquaredBoxOracle):
            raise InvalidParameterError(
                f"method='bnb' supports squared loss only; got loss={self.loss!r}.")
        check_nonneg_float(local_search_time, "local_search_time")
        deadline = None if remaining is None else time.perf_counter() + remaining
        search = local_search_time if remaining is None else \
            min(local_search_time, 0.1 * remaining)
        z0 = prob.encode(warm_start) if warm_start is not None else None
        res = branch_and_bound(prob.oracle, prob.n_boxes, self.n_rules, deadline=deadline,
                               rel_tol=mip_gap, lower_bound_hint=prob.bound, incumbent=z0,
                               search_time=search, seed=seed)
        ens, risk = prob.decode(res.z)
        notes.append(f"branch and bound: {res.nodes} nodes, {res.leaves} supports evaluated"
                     + ("" if res.complete else ", stopped by the time limit"))
        if abs(risk - res.value) > 1e-7 * max(1.0, abs(risk)):
            notes.append(f"decoded risk {risk:.12g} differs from the oracle's "
                         f"{res.value:.12g}")
        lb = min(max(res.lower_bound, prob.bound), risk)
        gap = relative_gap(risk, lb)
        term = TerminationReason.OPTIMAL if res.complete else TerminationReason.FEASIBLE
        limit = None if res.complete else Limit.TIME
        if res.complete and gap > mip_gap + 1e-12:
            term, limit = TerminationReason.FEASIBLE, Limit.GAP
        return ExactResult(ensemble=ens, risk=risk, lower_bound=lb, gap=gap, termination=term,
                           limit=limit, wall_time=time.perf_counter() - t0,
                           iterations=res.nodes, engine="cip", backend="bnb",
                           backend_version="", n_boxes=prob.n_boxes,
                           n_cells=prob.cells.n_cells, bound_valid=True, notes=tuple(notes))

    def _solve_enumerate(self, prob: BoxSelectionProblem, t0: float, remaining: float | None,
                         notes: list[str], count: int) -> tuple[ExactResult, FloatArray]:
        deadline = None if remaining is None else time.perf_counter() + remaining
        z, value, lb, complete = enumerate_optimum(prob.oracle, prob.n_boxes, self.n_rules,
                                                   deadline)
        ens, risk = prob.decode(z)
        notes.append(f"exact enumeration of {count} supports"
                     + ("" if complete else " stopped by the time limit"))
        if abs(risk - value) > 1e-7 * max(1.0, abs(risk)):
            notes.append(f"decoded risk {risk:.12g} differs from the oracle's {value:.12g}")
        lb = max(lb, prob.bound) if complete else prob.bound
        lb = min(lb, risk)
        gap = relative_gap(risk, lb)
        term = TerminationReason.OPTIMAL if complete else TerminationReason.FEASIBLE
        limit = None if complete else Limit.TIME
        if complete and gap > 1e-6:
            term, limit = TerminationReason.FEASIBLE, Limit.GAP
        return ExactResult(ensemble=ens, risk=risk, lower_bound=lb, gap=gap, termination=term,
                           limit=limit, wall_time=time.perf_counter() - t0, iterations=count,
                           engine="cip", backend="enumeration", backend_version="",
                           n_boxes=prob.n_boxes, n_cells=prob.cells.n_cells,
                           bound_valid=True, notes=tuple(notes)), z

    def _relaxation(self, prob: BoxSelectionProblem, iters: int, remaining: float | None,
                    solver: str, threads: int | None, seed: int, notes: list[str]
                    ) -> tuple[float, list[tuple[float, FloatArray, FloatArray]]]:
        """OA on the continuous relaxation; returns (valid bound, cuts to recycle)."""
        from rulemip.algorithms.outer_approximation import OAOptions, OuterApproximation

        tl = None if remaining is None else remaining / 4.0
        ro = OuterApproximation(prob.oracle, prob.model, "z",
                                OAOptions(time_limit=tl, rel_tol=1e-4, abs_tol=1e-12,
                                          max_iter=iters, relax=True, solver=solver,
                                          threads=threads, seed=seed),
                                lower_bound_hint=prob.bound)
        B = prob.n_boxes
        ro.add_cut_at(np.zeros(B))
        res = ro.run()
        cuts = []
        for z in res.cut_points:
            v, g = prob.oracle.value_and_gradient(z)
            cuts.append((float(v), g, z))
        notes.append(f"relaxation: {res.iterations} LP masters, bound {res.lower_bound:.10g}")
        bound = max(prob.bound, res.lower_bound) if math.isfinite(res.lower_bound) \
            else prob.bound
        return bound, cuts

    def _seed_cuts(self, prob: BoxSelectionProblem, oa: Any,
                   warm_start: RuleEnsemble | None, initial_cuts: str) -> None:
        """Cuts at the warm start, at z = 0, at every single box and along a greedy path."""
        B, k = prob.n_boxes, prob.n_rules
        if initial_cuts not in ("all", "greedy", "none"):
            raise InvalidParameterError(
                f"`initial_cuts` must be 'all', 'greedy' or 'none'; got {initial_cuts!r}.")
        if warm_start is not None:
            zw = prob.encode(warm_start)
            if zw.sum() > 0:
                oa.add_cut_at(zw)
        if initial_cuts == "none" or B == 0:
            if warm_start is None:
                oa.add_cut_at(np.zeros(B))
            return
        v0, g0 = prob.oracle.value_and_gradient(np.zeros(B))
        oa.add_cut(v0, g0, np.zeros(B))
        if initial_cuts == "all":
            if isinstance(prob.oracle, SquaredBoxOracle):
                order = np.argsort(prob.oracle.single_box_values(), kind="stable")
            else:
                order = np.argsort(g0, kind="stable")
            for b in order[:min(B, 200)]:
                e = np.zeros(B)
                e[b] = 1.0
                oa.add_cut_at(e)
        # greedy path: add the box with the most negative gradient, k times
        z = np.zeros(B)
        g = g0
        for _ in range(k):
            b = int(np.argmin(g))
            z[b] += 1.0
            v, g = prob.oracle.value_and_gradient(z)
            oa.add_cut(v, g, z.copy())
