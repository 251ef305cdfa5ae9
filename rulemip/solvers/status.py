r"""The one place where a solve's status is decided ("optimal only when the gap closed").

Every exact engine ends the same way: it has an incumbent whose regularized risk
:math:`R_\lambda` was *recomputed from the data* (an upper bound, UB) and a lower bound (LB)
that its search claims to have proved. :func:`promote` turns that into the reported status:

* A bound that the recomputed risk refutes — :math:`\mathrm{UB} < \mathrm{LB} - \tau\max(1,
  |\mathrm{UB}|)` with :data:`REFUTATION_TOL` :math:`\tau` — is not a proof (the backend
  worked with tolerances, e.g. tangent cuts or nonlinear constraints satisfied to 1e-6). The
  bound is replaced by the caller's ``fallback_bound`` (valid by construction, e.g. 0 for a
  nonnegative loss or a combinatorial bound), the result says so in its notes, a
  :class:`RefutedBoundWarning` is emitted, and the status is never ``OPTIMAL``.
* Otherwise LB is clipped to UB (a valid bound that the incumbent meets within
  :math:`\tau` is the incumbent's value) and the gap is :func:`~rulemip.solvers.relative_gap`.
* ``OPTIMAL`` iff the search finished (``finished``: the solver reported optimality within its
  gap, an enumeration or branch and bound was exhaustive, outer approximation converged), the
  bound is valid, and the gap is at most ``max(mip_gap, GAP_FLOOR)``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass

from rulemip.exceptions import HeuristicBoundWarning
from rulemip.solvers.result import GAP_DENOMINATOR_FLOOR, Limit, TerminationReason, relative_gap

REFUTATION_TOL = 1e-7
"""Relative slack by which a recomputed risk may lie below a proved bound (rounding,
inexact refits)."""

GAP_FLOOR = 1e-6
"""A requested ``mip_gap`` below this is treated as this: every backend stops at relative
tolerances of about 1e-6 on its own (feasibility, tangent cuts), so "optimal" means a
relative gap of at most ``max(mip_gap, 1e-6)`` under a valid bound."""


#: Feasibility tolerance (absolute, per row) with which each backend's dual bound is
#: computed, as rulemip runs it (docs/explanation/solving.md, "Bounds within tolerances"):
#: HiGHS with ``mip_feasibility_tolerance = 1e-7`` (its primal feasibility tolerance;
#: :mod:`rulemip.solvers.highs`), CBC with its default primal tolerance 1e-7 (OR-Tools
#: cannot change it), SCIP with ``numerics/feastol = 1e-8`` on models with epigraph
#: columns (1e-6, its default, otherwise), CP-SAT in exact integer arithmetic.
BOUND_TOLERANCES: dict[str, float] = {"highs": 1e-7, "cbc": 1e-7, "scip": 1e-8, "cpsat": 0.0}
DEFAULT_BOUND_TOLERANCE = 1e-6
"""For a backend not in :data:`BOUND_TOLERANCES` (Pyomo's solvers; SCIP without
epigraph columns)."""


def bound_slack(backend: str, objective_weight: float, *, epigraph: bool = True,
                tolerance: float | None = None) -> float:
    r"""How far a backend's dual bound may lie above the true optimum because the rows of
    its last relaxation hold only within its feasibility tolerance :math:`\varepsilon`:
    :math:`\varepsilon\,W` with ``objective_weight`` :math:`W` the 1-norm of the
    objective's coefficients (each epigraph row :math:`\theta_i \ge \ldots` of a loss
    term carries the weight :math:`w_i` of :math:`\theta_i` as its multiplier, so a
    violation of :math:`\varepsilon` on every row moves the objective by at most
    :math:`\varepsilon \sum_i w_i`). ``backend`` may carry a suffix (``"cbc+tangent_cuts"``).
    Measured (issue 22, Poisson at ``reg=1e-6``, brute-forced optima): HiGHS at its default
    tolerance 1e-6 claimed a bound 7.3e-7 above the optimum, CBC one 9.3e-8 above.
    ``tolerance`` (a backend's ``bound_tolerance``, e.g. Pyomo's, which depends on the
    solver it calls) overrides the table."""
    name = backend.split("+")[0].split(":")[0]
    tol = BOUND_TOLERANCES.get(name, DEFAULT_BOUND_TOLERANCE)
    if name == "scip" and not epigraph:
        tol = DEFAULT_BOUND_TOLERANCE
    if tolerance is not None:
        tol = float(tolerance)
    return tol * max(float(objective_weight), 0.0)


class RefutedBoundWarning(HeuristicBoundWarning):
    """A solver's lower bound lies above the recomputed risk of a feasible ensemble."""


@dataclass(frozen=True)
class Verdict:
    """What :func:`promote` decided."""

    termination: TerminationReason
    limit: Limit | None
    lower_bound: float
    gap: float
    bound_valid: bool
    notes: tuple[str, ...] = ()

    @property
    def refuted(self) -> bool:
        return any(n.startswith("bound refuted") for n in self.notes)


def promote(risk: float, lower_bound: float, *, finished: bool, mip_gap: float,
            limit: Limit | None = None, bound_valid: bool = True,
            fallback_bound: float = -math.inf,
            no_solution: TerminationReason = TerminationReason.NO_SOLUTION_FOUND,
            warn: bool = True) -> Verdict:
    """Status, limit, bound and gap of an incumbent with recomputed ``risk`` (module doc).

    Parameters
    ----------
    risk : :math:`R_\\lambda` of the incumbent recomputed from the data (``inf``: none).
    lower_bound : the bound the search claims (``-inf``: none).
    finished : the search ended by itself rather than at a limit.
    mip_gap : requested relative gap.
    limit : the limit that stopped the search, if any.
    bound_valid : ``False`` when the bound rests on something unproved (then never
        ``OPTIMAL``).
    fallback_bound : a bound valid by construction, used when ``lower_bound`` is refuted.
    no_solution : termination reported when there is no incumbent.
    warn : emit :class:`RefutedBoundWarning` on a refuted bound.
    """
    lb = float(lower_bound)
    notes: list[str] = []
    if not math.isfinite(risk):
        term = no_solution if no_solution is not TerminationReason.OPTIMAL \
            else TerminationReason.ERROR
        return Verdict(term, limit, lb, math.inf, bound_valid)
    # an unproved bound (e.g. valid only within a stated weight box) may well lie above a
    # refitted risk; only a bound claimed valid can be refuted
    refuted = bound_valid and math.isfinite(lb) \
        and risk < lb - REFUTATION_TOL * max(1.0, abs(risk))
    if refuted:
        safe = min(float(fallback_bound), risk)
        notes.append(f"bound refuted: the recomputed risk {risk:.12g} lies below the "
                     f"claimed lower bound {lb:.12g} (numerical trouble in the solver); "
                     f"the bound falls back to {safe:.12g}, valid by construction, and "
                     "optimality is not claimed.")
        if warn:
            warnings.warn(notes[-1], RefutedBoundWarning, stacklevel=3)
        lb = safe
    else:
        lb = min(lb, risk)
    gap = relative_gap(risk, lb)
    tol = max(float(mip_gap), GAP_FLOOR)
    if finished and bound_valid and not refuted and gap <= tol:
        return Verdict(TerminationReason.OPTIMAL, None, lb, gap, bound_valid, tuple(notes))
    if finished:
        if gap <= tol and not bound_valid:
            notes.append("gap closed, but the bound is not proved: not a global optimality "
                         "certificate.")
        out_limit = limit if limit is not None else (Limit.GAP if gap > tol else None)
        return Verdict(TerminationReason.FEASIBLE, out_limit, lb, gap, bound_valid,
                       tuple(notes))
    return Verdict(TerminationReason.FEASIBLE, limit if limit is not None else Limit.OTHER,
                   lb, gap, bound_valid, tuple(notes))


def tolerance_as_gap(rel_tol: float, abs_tol: float, value: float) -> float:
    """The stopping rule ``U − LB ≤ abs_tol + rel_tol·|U|`` written as a relative gap at
    ``U = value`` (``rel_tol`` alone when ``value`` is not finite), the ``mip_gap`` at which
    a cutting-plane loop's result is promoted."""
    if not math.isfinite(value):
        return float(rel_tol)
    return float(rel_tol) + float(abs_tol) / max(abs(float(value)), GAP_DENOMINATOR_FLOOR)


def loop_verdict(upper_bound: float, lower_bound: float, *, converged: bool,
                 limit: Limit | None, rel_tol: float, abs_tol: float,
                 fallback_bound: float = -math.inf) -> Verdict:
    """The status of what an outer-approximation loop found — its incumbent's value
    ``upper_bound``, the bound it proved, whether it ``converged`` (its own stopping test)
    and the ``limit`` that stopped it — decided by :func:`promote` at the loop's own
    tolerance (:func:`tolerance_as_gap`). A loop stopped by a rule of its own (a stalled
    bound, a master point without a violated cut: not converged, no limit) names no limit.
    The loop reports; this rule decides (``OAResult.termination``), the same for every
    loop."""
    verdict = promote(upper_bound, lower_bound, finished=converged,
                      mip_gap=tolerance_as_gap(rel_tol, abs_tol, upper_bound), limit=limit,
                      fallback_bound=fallback_bound)
    if not converged and limit is None:
        return dataclasses.replace(verdict, limit=None)
    return verdict


__all__ = ["BOUND_TOLERANCES", "DEFAULT_BOUND_TOLERANCE", "GAP_FLOOR", "REFUTATION_TOL",
           "RefutedBoundWarning", "Verdict", "bound_slack", "loop_verdict", "promote",
           "tolerance_as_gap"]
