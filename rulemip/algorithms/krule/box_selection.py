"""Solving the k-rule box-selection CIP: exact enumeration, outer approximation over the
box oracle, or branch and bound over boxes — the search hook of the ``"cip"`` and
``"cip-bnb"`` engines.

The formulation (cells, candidate boxes, the oracle :math:`R(z)`, the feasibility model,
decoding and encoding) is :class:`~rulemip.formulations.box_selection.BoxSelectionCIP`;
:class:`BoxSelectionSearch` adds the protocol's search and relaxation hooks
(:class:`~rulemip.formulations.protocol.OracleFormulation`), so the driver
(:func:`rulemip.algorithms.solve.driver.solve`) runs it on the one path of every engine: one
backend resolution, one budget, one decode, one status (:func:`rulemip.solvers.status.
promote`). The searches reach the solver only through the outer-approximation engine
(:mod:`rulemip.algorithms.convex.outer_approximation`), with the backend the driver resolved.
``docs/explanation/box_selection.md`` states the math.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_nonneg_float
from rulemip.algorithms.convex.oa_relaxation import relaxation_bound, relaxation_then_integer
from rulemip.algorithms.convex.outer_approximation import OAOptions, OuterApproximation
from rulemip.algorithms.krule.box_bnb import branch_and_bound
from rulemip.algorithms.local.box_swaps import local_search
from rulemip.algorithms.solve.driver import solve, status_of
from rulemip.algorithms.solve.registry import register_formulation
from rulemip.budget import Budget
from rulemip.data.dataset import Dataset
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_oracles import SquaredBoxOracle, enumerate_optimum, n_supports
from rulemip.formulations.box_selection import BoxSelectionCIP, BoxSelectionProblem
from rulemip.formulations.protocol import RelaxationBound, SearchOutcome
from rulemip.formulations.result import ExactResult
from rulemip.rules.ensemble import RuleEnsemble
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.base import PERSISTENT_MASTER_NEEDS, Capability, SolverBackend
from rulemip.solvers.result import TerminationReason, budget_limit

FloatArray = NDArray[np.float64]
Callback = Callable[[dict[str, Any]], Any]

_LOCAL_SEARCH_KICKS = 50  # kicks of the incumbent search (capped by local_search_time)
METHODS = ("auto", "oa", "enumerate", "bnb")

# The engine's time shares (docs/architecture.md, "Time shares"); each is a share of the
# time *and* of the work left when its step starts (``Budget.fraction``).
#: ``method="auto"``: share of the budget the support enumeration gets before outer
#: approximation takes over, seeded with its incumbent
ENUMERATION_SHARE: float = 0.5
#: ``method="auto"`` without a time limit (and no work limit): seconds of that enumeration
ENUMERATION_DEFAULT_SECONDS: float = 20.0
#: share of the budget the continuous relaxation's outer approximation (LP masters) gets
#: for its bound and cut points
RELAXATION_SHARE: float = 0.25
#: share of the time left the swap local search from the incumbent may use (at most
#: ``local_search_time`` seconds; under a work limit, this share of the work instead)
LOCAL_SEARCH_SHARE: float = 0.1


class BoxSelectionSearch(BoxSelectionCIP):
    """The box-selection CIP with its search (an
    :class:`~rulemip.formulations.protocol.OracleFormulation`).

    Parameters
    ----------
    language, loss, reg, max_thresholds : those of
        :class:`~rulemip.formulations.box_selection.BoxSelectionCIP`.
    method : ``"oa"`` (outer approximation), ``"enumerate"`` (exact enumeration of
        supports with monotonicity pruning — for few boxes; its bound does not weaken
        as the ridge goes to 0) or ``"auto"`` (enumerate when there are at most
        ``enumeration_limit`` supports — 100× fewer for logistic/Poisson, whose
        evaluations are refits — within half the time limit, 20 s without one, then
        OA seeded with the enumeration's incumbent; else OA), or ``"bnb"`` (squared loss
        only: best-first branch and bound over boxes with Frank–Wolfe bounds of the
        node relaxations, :mod:`rulemip.algorithms.krule.box_bnb`; its incumbent search
        uses ``local_search_time``). ``engine`` is ``"cip-bnb"`` for ``"bnb"``, else
        ``"cip"``.
    initial_cuts : OA seeding: ``"greedy"`` (z = 0 and the greedy path, default),
        ``"all"`` (also every single box, up to 200) or ``"none"`` (warm start only).
    relaxation_iters : if > 0 (default 200), first run OA on the continuous relaxation
        (LP masters, :meth:`relaxation`) for at most this many iterations; its cuts seed
        the integer master and its bound (a bound of the relaxation, hence of the
        problem) bounds ν below.
    combinatorial_bounds : bound ν below by the combinatorial bounds of
        :meth:`build` (default); off only to measure what they buy.
    local_search_time : cap in seconds (and at most a tenth of the remaining time)
        on the swap local search with 50 kicks (:mod:`rulemip.algorithms.local.box_swaps`)
        run from the best seeded point before OA starts; reproducible for a fixed
        ``seed`` whenever the cap is not reached. It improves the incumbent only (bounds
        are untouched). 0 disables it.
    oa_options : further :class:`~rulemip.algorithms.convex.outer_approximation.OAOptions`
        fields (e.g. ``{"adaptive_master_gap": False}``).
    problem : an already built problem to search (e.g. restricted to a working set of
        boxes by column generation); default :meth:`build` on the dataset.
    """

    def __init__(self, language: Language, *, loss: str = "squared", reg: float = 1e-3,
                 max_thresholds: int | None = None, method: str = "auto",
                 initial_cuts: str = "greedy",
                 enumeration_limit: int = 5_000_000, relaxation_iters: int = 200,
                 combinatorial_bounds: bool = True, local_search_time: float = 5.0,
                 oa_options: dict[str, Any] | None = None,
                 problem: BoxSelectionProblem | None = None) -> None:
        super().__init__(language, loss=loss, reg=reg, max_thresholds=max_thresholds)
        if method not in METHODS:
            raise InvalidParameterError(
                f"`method` must be 'auto', 'oa', 'enumerate' or 'bnb'; got {method!r}.")
        if initial_cuts not in ("all", "greedy", "none"):
            raise InvalidParameterError(
                f"`initial_cuts` must be 'all', 'greedy' or 'none'; got {initial_cuts!r}.")
        check_nonneg_float(local_search_time, "local_search_time")
        self.method = method
        self.engine = "cip-bnb" if method == "bnb" else "cip"
        self.initial_cuts = initial_cuts
        self.enumeration_limit = int(enumeration_limit)
        self.relaxation_iters = int(relaxation_iters)
        self.combinatorial_bounds = bool(combinatorial_bounds)
        self.local_search_time = float(local_search_time)
        self.oa_options = dict(oa_options or {})
        self.problem = problem

    @classmethod
    def of(cls, cip: BoxSelectionCIP, **options: Any) -> BoxSelectionSearch:
        """The search over the problem of ``cip`` (same data settings)."""
        return cls(cip.language, loss=cip.loss, reg=cip.reg,
                   max_thresholds=cip.max_thresholds, **options)

    # ------------------------------------------------------------------ the protocol
    def needs(self) -> set[Capability]:
        """A persistent MILP master when outer approximation may run; nothing for the
        enumeration and the branch and bound over boxes."""
        return set(PERSISTENT_MASTER_NEEDS) if self.method in ("auto", "oa") else set()

    def build_model(self, dataset: Dataset, *, backend: SolverBackend | None = None,
                    native: bool = True, warm_start: RuleEnsemble | None = None
                    ) -> BoxSelectionProblem:
        return self.problem if self.problem is not None else self.build(dataset)

    def search(self, built: BoxSelectionProblem, *, backend: SolverBackend, budget: Budget,
               mip_gap: float, start: FloatArray | None = None,
               warm_start: RuleEnsemble | None = None, seed: int = 0,
               threads: int | None = None, callback: Callback | None = None
               ) -> SearchOutcome:
        """Certified best k-rule ensemble of ``built`` (the class docstring's methods)."""
        check_nonneg_float(mip_gap, "mip_gap")
        prob = built
        notes: list[str] = [f"{prob.cells.n_cells} occupied cells, {prob.n_boxes} distinct "
                            "boxes"]
        limit_supports = self.enumeration_limit if self.loss == "squared" \
            else self.enumeration_limit // 100
        count = n_supports(prob.n_boxes, self.n_rules)
        method = self.method
        z_enum: FloatArray | None = None
        if method in ("auto", "bnb"):
            settled = self._settled_by_bound(prob, mip_gap, notes)
            if settled is not None:
                return settled
        if method == "enumerate":
            return self._enumerate(prob, budget, notes, count)
        if method == "bnb":
            return self._bnb(prob, budget, notes, start, mip_gap, seed)
        if method == "auto" and count <= limit_supports:
            # λ-robust but combinatorial: give it half the time (20 s without a limit;
            # under a work limit half the work, not seconds), then fall back to OA seeded
            # with its incumbent
            enum = self._enumerate(prob, budget.fraction(
                ENUMERATION_SHARE,
                default=None if budget.deterministic else ENUMERATION_DEFAULT_SECONDS),
                notes, count)
            if self._proves(prob, enum, mip_gap):
                return enum
            z_enum = enum.x
        if not self.combinatorial_bounds:
            prob.bound = -math.inf
        opts = OAOptions(budget=budget, abs_tol=1e-12,
                         rel_tol=mip_gap, solver=backend, threads=threads, seed=seed,
                         callback=callback, **self.oa_options)
        for name, val in prob.bound_parts.items():
            notes.append(f"combinatorial bound {name}: {val:.10g}"
                         + ("" if self.combinatorial_bounds else " (not used)"))

        def seed_cuts(oa: OuterApproximation) -> None:
            self._seed_cuts(prob, oa, start)
            if z_enum is not None:
                oa.add_cut_at(z_enum)
            self._improve_incumbent(prob, oa, budget, seed, notes)

        res, rel = relaxation_then_integer(
            self if self.relaxation_iters > 0 else None, prob, prob.oracle, prob.model,
            opts, hint=prob.bound, seed_cuts=seed_cuts, backend=backend, budget=budget,
            seed=seed, threads=threads)
        if rel is not None:
            notes.append(f"relaxation: {rel.iterations} LP masters, bound {rel.bound:.10g}")
        return SearchOutcome(
            x=res.z, lower_bound=res.lower_bound,
            finished=res.termination is TerminationReason.OPTIMAL, limit=res.limit,
            method="oa", backend=res.backend, backend_version=res.backend_version,
            iterations=res.iterations, objective=res.value, notes=(*notes, *res.notes),
            history=res.history, no_solution=res.termination)

    def relaxation(self, built: BoxSelectionProblem, *, backend: SolverBackend,
                   budget: Budget, seed: int = 0, threads: int | None = None
                   ) -> RelaxationBound:
        """OA with LP masters on the continuous relaxation (a quarter of the time left, at
        most ``relaxation_iters`` masters): a bound valid for the problem, at least the
        combinatorial one, and the relaxation's cut points."""
        prob = built
        # a quarter of the time left (and of the work left: the deterministic limit),
        # seeded by the point z = 0
        return relaxation_bound(
            prob.oracle, prob.model,
            OAOptions(budget=budget.fraction(RELAXATION_SHARE), rel_tol=1e-4, abs_tol=1e-12,
                      max_iter=max(self.relaxation_iters, 1), solver=backend,
                      threads=threads, seed=seed),
            hint=prob.bound, seeds=[np.zeros(prob.n_boxes)])

    # ------------------------------------------------------------------ the methods
    @staticmethod
    def _proves(prob: BoxSelectionProblem, outcome: SearchOutcome, mip_gap: float) -> bool:
        """Whether ``outcome`` would be reported optimal (to stop early; the driver
        decides the reported status)."""
        if outcome.x is None or not outcome.finished:
            return False
        _, risk = prob.decode(outcome.x)
        verdict = status_of(prob, outcome, risk, mip_gap=mip_gap, warn=False)
        return verdict.termination is TerminationReason.OPTIMAL

    def _settled_by_bound(self, prob: BoxSelectionProblem, mip_gap: float,
                          notes: list[str]) -> SearchOutcome | None:
        """Closed form when there are at most k occupied cells: every single-cell box is a
        candidate, together they fit every cell mean, so for squared loss their risk is
        the reduction constant (plus a ridge term) — the combinatorial bound. Returns the
        outcome if that closes the gap, else None (work linear in B)."""
        single = prob.boxes.cover.sum(axis=0) == 1  # cover is cells x boxes
        if prob.cells.n_cells > self.n_rules or int(single.sum()) != prob.cells.n_cells:
            return None
        z = single.astype(float)
        _, risk = prob.decode(z)
        outcome = SearchOutcome(x=z, lower_bound=min(prob.bound, risk), finished=True,
                                method="bound", iterations=0,
                                notes=(*notes, "settled by the combinatorial bound "
                                       "(no search)"))
        return outcome if self._proves(prob, outcome, mip_gap) else None

    def _improve_incumbent(self, prob: BoxSelectionProblem, oa: Any, budget: Budget,
                           seed: int, notes: list[str]) -> None:
        """Swap local search from OA's incumbent; the result becomes a cut (and incumbent)."""
        seconds = self.local_search_time
        if seconds <= 0 or prob.n_boxes == 0 or oa.incumbent is None:
            return
        remaining = budget.remaining()
        if remaining is not None:
            seconds = min(seconds, LOCAL_SEARCH_SHARE * remaining)
        before = oa.upper_bound
        # under a work limit the search's share is a tenth of the work left, not seconds
        # (so its incumbent is the same on every machine)
        found = local_search(prob.oracle, np.round(oa.incumbent), self.n_rules,
                             max_kicks=_LOCAL_SEARCH_KICKS, seed=seed, target=prob.bound,
                             budget=budget.fraction(LOCAL_SEARCH_SHARE) if budget.deterministic
                             else budget.within(seconds))
        if found.value < before:
            oa.add_cut_at(found.z)
        notes.append(f"local search: {before:.10g} -> {min(found.value, before):.10g} "
                     f"({found.evaluations} evaluations, {found.kicks} kicks, "
                     f"{found.wall_time:.2f} s)")

    def _bnb(self, prob: BoxSelectionProblem, budget: Budget, notes: list[str],
             start: FloatArray | None, mip_gap: float, seed: int) -> SearchOutcome:
        """Branch and bound over boxes (:mod:`rulemip.algorithms.krule.box_bnb`, squared loss)."""
        if not isinstance(prob.oracle, SquaredBoxOracle):
            raise InvalidParameterError(
                f"method='bnb' supports squared loss only; got loss={self.loss!r}.")
        remaining = budget.remaining()
        search = self.local_search_time if remaining is None else \
            min(self.local_search_time, LOCAL_SEARCH_SHARE * remaining)
        res = branch_and_bound(prob.oracle, prob.n_boxes, self.n_rules, budget=budget,
                               rel_tol=mip_gap, lower_bound_hint=prob.bound, incumbent=start,
                               search_time=search, seed=seed)
        notes.append(f"branch and bound: {res.nodes} nodes, {res.leaves} supports evaluated"
                     + ("" if res.complete else ", stopped by the time limit"))
        return SearchOutcome(x=res.z, lower_bound=max(res.lower_bound, prob.bound),
                             finished=res.complete,
                             limit=None if res.complete else budget_limit(budget), method="bnb",
                             iterations=res.nodes, objective=res.value, notes=tuple(notes))

    def _enumerate(self, prob: BoxSelectionProblem, budget: Budget, notes: list[str],
                   count: int) -> SearchOutcome:
        z, value, lb, complete = enumerate_optimum(prob.oracle, prob.n_boxes, self.n_rules,
                                                   budget)
        notes.append(f"exact enumeration of {count} supports"
                     + ("" if complete else " stopped by the time limit"))
        return SearchOutcome(x=z, lower_bound=max(lb, prob.bound) if complete else prob.bound,
                             finished=complete, limit=None if complete else budget_limit(budget),
                             method="enumeration", iterations=count, objective=value,
                             notes=tuple(notes))

    def _seed_cuts(self, prob: BoxSelectionProblem, oa: Any, start: FloatArray | None
                   ) -> None:
        """Cuts at the warm start, at z = 0, at every single box and along a greedy path."""
        B, k = prob.n_boxes, prob.n_rules
        if start is not None and np.asarray(start).sum() > 0:
            oa.add_cut_at(np.asarray(start, dtype=float))
        if self.initial_cuts == "none" or B == 0:
            if start is None:
                oa.add_cut_at(np.zeros(B))
            return
        v0, g0 = prob.oracle.value_and_gradient(np.zeros(B))
        oa.add_cut(v0, g0, np.zeros(B))
        if self.initial_cuts == "all":
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


def solve_box_selection(cip: BoxSelectionCIP, dataset: Dataset, *,
                        warm_start: RuleEnsemble | None = None,
                        solver: str | SolverBackend = "auto",
                        budget: Budget | None = None,
                        mip_gap: float = 1e-6, callback: Callback | None = None,
                        seed: int = 0, threads: int | None = None, **options: Any
                        ) -> ExactResult:
    """Certified best k-rule ensemble of ``cip`` on ``dataset`` through the driver
    (:func:`rulemip.algorithms.solve.driver.solve`); ``options`` are those of
    :class:`BoxSelectionSearch` (method, initial_cuts, relaxation_iters, …, problem).
    ``budget``: the time and work (None: unlimited)."""
    return solve(BoxSelectionSearch.of(cip, **options), dataset, solver=solver,
                 budget=budget,
                 mip_gap=mip_gap,
                 warm_start=warm_start, callback=callback, seed=seed, threads=threads)


def _cip(method: str) -> Callable[[KRuleProblem], BoxSelectionSearch]:
    def factory(problem: KRuleProblem) -> BoxSelectionSearch:
        return BoxSelectionSearch(problem.language, method=method, **problem.keywords())
    return factory


register_formulation("cip", _cip("auto"), needs_positive_reg=True,
                     needs=PERSISTENT_MASTER_NEEDS, oracle=True,
                     description="box-selection CIP: enumeration, then outer approximation")
register_formulation("cip-bnb", _cip("bnb"), needs_positive_reg=True, losses=("squared",),
                     needs=frozenset(), oracle=True,
                     description="box-selection CIP by branch and bound over boxes")


__all__ = ["METHODS", "BoxSelectionSearch", "solve_box_selection"]
