r"""Seed cuts → continuous relaxation → integer outer approximation, written once.

Both exact searches over a convex oracle with a binary (or integer) feasible set — the
box-selection CIP (``krule/box_selection.py``) and exact tree pruning
(``pruning/exact.py``) — run the same three steps:

1. **the relaxation** (:func:`relaxation_bound`): outer approximation with LP masters on
   the continuous relaxation, started from the caller's seed cuts. Its bound is valid for
   the integer problem (the relaxation contains every integer point) and its cuts, taken
   at fractional points, are valid for the integer master (q is convex on the box);
2. **the integer master** (:func:`relaxation_then_integer`): the relaxation's bound as the
   lower-bound hint, its cuts (not incumbents), then the caller's seed cuts (feasible
   points: incumbents) and any heuristic;
3. the run of :class:`~rulemip.algorithms.convex.outer_approximation.OuterApproximation`.

Step 1 is asked of the formulation through its
:class:`~rulemip.formulations.protocol.RelaxationHook`, so a formulation decides how its
relaxation is seeded and how much of the budget it gets.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.convex.oa_options import OAOptions, OAResult
from rulemip.algorithms.convex.outer_approximation import ConvexOracle, OuterApproximation
from rulemip.budget import Budget
from rulemip.formulations.protocol import RelaxationBound, RelaxationHook
from rulemip.model.mip_model import MIPModel
from rulemip.solvers.base import SolverBackend

FloatArray = NDArray[np.float64]
#: a cut at a point: (z, q(z), ∇q(z))
Cut = tuple[FloatArray, float, FloatArray]


class _Recorder:
    """Oracle wrapper that keeps every (z, q(z), ∇q(z)) it evaluates."""

    def __init__(self, oracle: ConvexOracle) -> None:
        self.oracle = oracle
        self.records: list[Cut] = []

    def value_and_gradient(self, z: FloatArray) -> tuple[float, FloatArray]:
        v, g = self.oracle.value_and_gradient(z)
        self.records.append((np.asarray(z, dtype=float).copy(), float(v), g))
        return v, g


def relaxation_bound(oracle: ConvexOracle, feasible: MIPModel, options: OAOptions, *,
                     hint: float, seeds: Sequence[Cut | FloatArray] = ()) -> RelaxationBound:
    """Outer approximation with LP masters (``options`` with ``relax=True``) from
    ``seeds``: the bound ``max(hint, LP bound)`` (valid for the integer problem when
    ``hint`` is) and the points the run evaluated, with their cuts. A seed given as a
    point is evaluated like the run's own points (and recycled with them: the first
    point's value sets the scale of the master it is recycled into); a seed given as a
    cut ``(z, q(z), ∇q(z))`` is only added."""
    rec = _Recorder(oracle)
    lp = OuterApproximation(rec, feasible, "z", replace(options, relax=True),
                            lower_bound_hint=hint)
    for s in seeds:
        if isinstance(s, tuple):
            z, v, g = s
            lp.add_cut(v, g, z)
        else:
            lp.add_cut_at(s)
    res = lp.run()
    bound = max(hint, float(res.lower_bound)) if math.isfinite(res.lower_bound) else hint
    return RelaxationBound(bound, tuple(z for z, _, _ in rec.records), res.iterations,
                           cuts=tuple((v, g) for _, v, g in rec.records))


def relaxation_then_integer(hook: RelaxationHook | None, built: Any, oracle: ConvexOracle,
                            feasible: MIPModel, options: OAOptions, *, hint: float,
                            seed_cuts: Callable[[OuterApproximation], None],
                            backend: SolverBackend, budget: Budget, seed: int = 0,
                            threads: int | None = None,
                            heuristic: Callable[[FloatArray], Sequence[FloatArray]] | None
                            = None, relaxed_cuts_first: bool = True
                            ) -> tuple[OAResult, RelaxationBound | None]:
    """The three steps of the module docstring: ``hook.relaxation(built, …)`` (none when
    ``hook`` is ``None``), the integer master with the relaxation's bound and cuts and
    ``seed_cuts(oa)`` (the caller's feasible points; before the relaxation's cuts unless
    ``relaxed_cuts_first`` — the first cut's value scales the master, and the order of its
    rows steers its solver), then the run. Returns the run's result and the
    relaxation."""
    rel = None if hook is None else hook.relaxation(built, backend=backend, budget=budget,
                                                    seed=seed, threads=threads)
    lb = hint if rel is None else max(hint, rel.bound)
    oa = OuterApproximation(oracle, feasible, "z", options, lower_bound_hint=lb,
                            heuristic=heuristic)
    if not relaxed_cuts_first:
        seed_cuts(oa)
    if rel is not None:
        for k, z in enumerate(rel.points):
            v, g = rel.cuts[k] if k < len(rel.cuts) else oracle.value_and_gradient(z)
            oa.add_cut(float(v), g, z, incumbent=False)
    if relaxed_cuts_first:
        seed_cuts(oa)
    return oa.run(), rel


__all__ = ["Cut", "relaxation_bound", "relaxation_then_integer"]
