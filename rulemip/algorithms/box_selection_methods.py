"""Solving the k-rule box-selection CIP: exact enumeration, outer approximation over the
box oracle, or branch and bound over boxes.

The formulation (cells, candidate boxes, the oracle :math:`R(z)`, the feasibility model,
decoding and encoding) is :class:`~rulemip.formulations.box_selection.BoxSelectionCIP`; the
methods that solve it live here, above it in the layers, and reach the solver only through
the outer-approximation engine (:mod:`rulemip.algorithms.outer_approximation`). Statuses are
decided by :func:`rulemip.solvers.status.promote`. ``docs/explanation/box_selection.md``
states the math.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_nonneg_float
from rulemip.algorithms.box_bnb import branch_and_bound
from rulemip.algorithms.box_search import local_search
from rulemip.algorithms.outer_approximation import OAOptions, OuterApproximation
from rulemip.data.dataset import Dataset
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_oracles import SquaredBoxOracle, enumerate_optimum, n_supports
from rulemip.formulations.box_selection import BoxSelectionCIP, BoxSelectionProblem
from rulemip.formulations.result import ExactResult
from rulemip.rules.ensemble import RuleEnsemble
from rulemip.solvers.base import PERSISTENT_MASTER_NEEDS, resolve_backend
from rulemip.solvers.result import Limit, TerminationReason
from rulemip.solvers.status import promote

FloatArray = NDArray[np.float64]

_LOCAL_SEARCH_KICKS = 50  # kicks of the incumbent search (capped by local_search_time)


def solve_box_selection(cip: BoxSelectionCIP, dataset: Dataset, **options: Any
                        ) -> ExactResult:
    """Certified best k-rule ensemble of ``cip`` on ``dataset``; ``options`` are those of
    :meth:`_BoxSelectionRun.solve` (method, solver, time_limit, mip_gap, warm_start, …)."""
    return _BoxSelectionRun(cip).solve(dataset, **options)


class _BoxSelectionRun:
    """One solve of a :class:`BoxSelectionCIP` (the methods below share its settings)."""

    def __init__(self, cip: BoxSelectionCIP) -> None:
        self.cip = cip
        self.n_rules = cip.n_rules
        self.loss = cip.loss
        self.build = cip.build

    # ------------------------------------------------------------------ solve
    def solve(self, dataset: Dataset, *, warm_start: RuleEnsemble | None = None,
              solver: str = "highs", time_limit: float | None = None, mip_gap: float = 1e-6,
              callback: Callable[[dict[str, Any]], None] | None = None, seed: int = 0,
              threads: int | None = None, method: str = "auto",
              initial_cuts: str = "greedy", enumeration_limit: int = 5_000_000,
              relaxation_iters: int = 200, combinatorial_bounds: bool = True,
              local_search_time: float = 5.0,
              oa_options: dict[str, Any] | None = None,
              problem: BoxSelectionProblem | None = None) -> ExactResult:
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
            node relaxations, :mod:`rulemip.algorithms.box_bnb`; its incumbent search
            uses ``local_search_time``).
        initial_cuts : OA seeding: ``"greedy"`` (z = 0 and the greedy path, default),
            ``"all"`` (also every single box, up to 200) or ``"none"`` (warm start only).
        relaxation_iters : if > 0 (default 200), first run OA on the continuous relaxation
            (LP masters) for at most this many iterations; its cuts seed the integer master and its
            bound (a bound of the relaxation, hence of the problem) bounds ν below.
        combinatorial_bounds : bound ν below by the combinatorial bounds of
            :meth:`build` (default); off only to measure what they buy.
        local_search_time : cap in seconds (and at most a tenth of the remaining time limit)
            on the swap local search with 50 kicks (:mod:`rulemip.algorithms.box_search`)
            run from the best seeded point before OA starts; reproducible for a fixed
            ``seed`` whenever the cap is not reached. It improves the incumbent only (bounds
            are untouched). 0 disables it.
        oa_options : further :class:`~rulemip.algorithms.outer_approximation.OAOptions`
            fields (e.g. ``{"adaptive_master_gap": False}``).
        problem : an already built problem to solve (e.g. restricted to a working set of
            boxes by column generation); default ``cip.build(dataset)``.
        """
        t0 = time.perf_counter()
        check_nonneg_float(time_limit, "time_limit", allow_none=True)
        check_nonneg_float(mip_gap, "mip_gap")
        if method not in ("auto", "oa", "enumerate", "bnb"):
            raise InvalidParameterError(
                f"`method` must be 'auto', 'oa', 'enumerate' or 'bnb'; got {method!r}.")
        if method in ("auto", "oa"):
            # outer approximation may be needed: refuse a master that cannot serve before
            # any work (not after an enumeration ran out of time)
            resolve_backend(solver, PERSISTENT_MASTER_NEEDS, outer_approximation=False)
        prob = problem if problem is not None else self.build(dataset)
        notes: list[str] = [f"{prob.cells.n_cells} occupied cells, {prob.n_boxes} distinct "
                            "boxes"]
        remaining = None if time_limit is None else max(time_limit - (time.perf_counter() - t0),
                                                        0.0)
        limit_supports = enumeration_limit if self.loss == "squared" else enumeration_limit // 100
        count = n_supports(prob.n_boxes, self.n_rules)
        z_enum: FloatArray | None = None
        if method in ("auto", "bnb"):
            settled = self._settled_by_bound(prob, t0, mip_gap, notes)
            if settled is not None:
                return settled
        if method == "enumerate":
            return self._solve_enumerate(prob, t0, remaining, notes, count, mip_gap)[0]
        if method == "bnb":
            return self._solve_bnb(prob, t0, remaining, notes, warm_start, mip_gap,
                                   local_search_time, seed)
        if method == "auto" and count <= limit_supports:
            # λ-robust but combinatorial: give it half the time (20 s without a limit),
            # then fall back to OA seeded with its incumbent
            budget = 20.0 if remaining is None else remaining / 2.0
            res_enum, z_enum = self._solve_enumerate(prob, t0, budget, notes, count,
                                                     mip_gap)
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
        verdict = promote(risk, res.lower_bound,
                          finished=res.termination is TerminationReason.OPTIMAL,
                          mip_gap=mip_gap, limit=res.limit, fallback_bound=prob.safe_bound,
                          no_solution=res.termination)
        return ExactResult(ensemble=ens, risk=risk, lower_bound=verdict.lower_bound,
                           gap=verdict.gap,
                           termination=verdict.termination, limit=verdict.limit,
                           wall_time=time.perf_counter() - t0,
                           iterations=res.iterations, engine="cip", backend=res.backend,
                           backend_version=res.backend_version, n_boxes=prob.n_boxes,
                           n_cells=prob.cells.n_cells, bound_valid=True,
                           notes=tuple(notes) + res.notes + verdict.notes, history=res.history)

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
        verdict = promote(risk, min(prob.bound, risk), finished=True, mip_gap=mip_gap,
                          limit=None, fallback_bound=prob.safe_bound)
        if verdict.termination is not TerminationReason.OPTIMAL:
            return None
        notes.append("settled by the combinatorial bound (no search)")
        return ExactResult(ensemble=ens, risk=risk, lower_bound=verdict.lower_bound,
                           gap=verdict.gap, termination=TerminationReason.OPTIMAL, limit=None,
                           wall_time=time.perf_counter() - t0, iterations=0, engine="cip",
                           backend="bound", backend_version="", n_boxes=B,
                           n_cells=prob.cells.n_cells, bound_valid=True,
                           notes=tuple(notes) + verdict.notes)

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
        """Branch and bound over boxes (:mod:`rulemip.algorithms.box_bnb`, squared loss)."""
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
        verdict = promote(risk, max(res.lower_bound, prob.bound), finished=res.complete,
                          mip_gap=mip_gap, limit=None if res.complete else Limit.TIME,
                          fallback_bound=prob.safe_bound)
        return ExactResult(ensemble=ens, risk=risk, lower_bound=verdict.lower_bound,
                           gap=verdict.gap,
                           termination=verdict.termination, limit=verdict.limit,
                           wall_time=time.perf_counter() - t0,
                           iterations=res.nodes, engine="cip", backend="bnb",
                           backend_version="", n_boxes=prob.n_boxes,
                           n_cells=prob.cells.n_cells, bound_valid=True,
                           notes=tuple(notes) + verdict.notes)

    def _solve_enumerate(self, prob: BoxSelectionProblem, t0: float, remaining: float | None,
                         notes: list[str], count: int, mip_gap: float = 1e-6
                         ) -> tuple[ExactResult, FloatArray]:
        deadline = None if remaining is None else time.perf_counter() + remaining
        z, value, lb, complete = enumerate_optimum(prob.oracle, prob.n_boxes, self.n_rules,
                                                   deadline)
        ens, risk = prob.decode(z)
        notes.append(f"exact enumeration of {count} supports"
                     + ("" if complete else " stopped by the time limit"))
        if abs(risk - value) > 1e-7 * max(1.0, abs(risk)):
            notes.append(f"decoded risk {risk:.12g} differs from the oracle's {value:.12g}")
        verdict = promote(risk, max(lb, prob.bound) if complete else prob.bound,
                          finished=complete, mip_gap=mip_gap,
                          limit=None if complete else Limit.TIME,
                          fallback_bound=prob.safe_bound)
        return ExactResult(ensemble=ens, risk=risk, lower_bound=verdict.lower_bound,
                           gap=verdict.gap,
                           termination=verdict.termination, limit=verdict.limit,
                           wall_time=time.perf_counter() - t0, iterations=count,
                           engine="cip", backend="enumeration", backend_version="",
                           n_boxes=prob.n_boxes, n_cells=prob.cells.n_cells,
                           bound_valid=True, notes=tuple(notes) + verdict.notes), z

    def _relaxation(self, prob: BoxSelectionProblem, iters: int, remaining: float | None,
                    solver: str, threads: int | None, seed: int, notes: list[str]
                    ) -> tuple[float, list[tuple[float, FloatArray, FloatArray]]]:
        """OA on the continuous relaxation; returns (valid bound, cuts to recycle)."""
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
