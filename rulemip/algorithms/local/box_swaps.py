r"""Primal heuristic for the box-selection CIP: swap local search with random kicks.

The CIP of docs/explanation/box_selection.md minimizes the convex :math:`R(z)` over multiplicities
:math:`z \in \{0..k\}^B`, :math:`\sum_b z_b \le k`. Outer approximation proves bounds but
finds good incumbents slowly when the ridge is small (its cuts overestimate the gain of a
new box by a factor of about :math:`1 + \text{box weight}/\lambda`), and an incumbent is
what a gap study certifies boosting against: the certified gap's lower end is
:math:`R_b - UB`. This module improves incumbents by exact evaluations only, so it never
affects a bound:

* **fill**: :math:`R` is non-increasing in every :math:`z_b` (a new copy may take weight 0),
  so a support with :math:`\sum z < k` is first completed greedily;
* **swap** (best improvement): move one unit from a selected box :math:`b` to a box
  :math:`c`, i.e. :math:`z - e_b + e_c`. The candidates :math:`c` are screened by the
  gradient at :math:`z - e_b` (the tangent's prediction of the gain, exact up to the
  curvature) and the best ``n_candidates`` of them are evaluated exactly;
* **kicks** (iterated local search): from the best support, move ``kick_size`` random units
  to random boxes and descend again; keep the result if it is better. Kicks run until the
  budget or ``max_kicks`` is spent and are reproducible for a fixed ``seed``.

Every accepted point is strictly better (by more than a relative ``1e-12``), so the
search terminates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from rulemip.budget import Budget
from rulemip.exceptions import InvalidParameterError

__all__ = ["LocalSearchResult", "local_search"]

FloatArray = NDArray[np.float64]


class _Oracle(Protocol):
    def value_and_gradient(self, z: FloatArray) -> tuple[float, FloatArray]: ...


@dataclass(frozen=True)
class LocalSearchResult:
    """Best support found, its exact value :math:`R(z)`, and the effort spent."""

    z: FloatArray
    value: float
    evaluations: int
    kicks: int
    improvements: int
    wall_time: float


class _Search:
    def __init__(self, oracle: _Oracle, n_boxes: int, k: int, n_candidates: int,
                 clock: Budget) -> None:
        self.oracle = oracle
        self.B = n_boxes
        self.k = k
        self.n_candidates = n_candidates
        self.clock = clock
        self.evaluations = 0

    def timed_out(self) -> bool:
        return self.clock.expired()

    def evaluate(self, z: FloatArray) -> tuple[float, FloatArray]:
        self.evaluations += 1
        self.clock.charge()             # an evaluation is a unit of work
        value, grad = self.oracle.value_and_gradient(z)
        return float(value), grad

    @staticmethod
    def better(a: float, b: float) -> bool:
        # relative to the risk itself, no absolute unit: the same moves at every scale of y
        return a < b - 1e-12 * abs(b)

    def fill(self, z: FloatArray) -> tuple[FloatArray, float]:
        """Complete ``z`` to ``k`` units, each time adding the box of steepest descent."""
        value, grad = self.evaluate(z)
        while z.sum() < self.k - 0.5:
            z = z.copy()
            z[int(np.argmin(grad))] += 1.0
            value, grad = self.evaluate(z)
        return z, value

    def descend(self, z: FloatArray, value: float) -> tuple[FloatArray, float]:
        """Best-improvement swaps until none improves (or time runs out)."""
        while not self.timed_out():
            best_z, best_v = z, value
            for b in np.flatnonzero(z > 0.5):
                reduced = z.copy()
                reduced[b] -= 1.0
                _, grad = self.evaluate(reduced)
                grad = grad.copy()
                grad[b] = np.inf  # moving a unit back where it was changes nothing
                m = min(self.n_candidates, self.B - 1)
                cand = np.argpartition(grad, m - 1)[:m] if m < self.B else np.arange(self.B)
                for c in cand:
                    if c == b:
                        continue
                    if self.timed_out():  # one evaluation may cost milliseconds on many boxes
                        break
                    trial = reduced.copy()
                    trial[c] += 1.0
                    v, _ = self.evaluate(trial)
                    if self.better(v, best_v):
                        best_z, best_v = trial, v
                if self.timed_out():
                    break
            if best_z is z:
                break
            z, value = best_z, best_v
        return z, value


def local_search(oracle: _Oracle, z0: FloatArray, n_rules: int, *,
                 max_kicks: int | None = None,
                 kick_size: int = 2, n_candidates: int | None = None,
                 seed: int = 0, target: float = -np.inf,
                 budget: Budget | None = None) -> LocalSearchResult:
    """Improve the support ``z0`` of the box-selection CIP by exact evaluations.

    Parameters
    ----------
    oracle : object with ``value_and_gradient(z) -> (R(z), ∇R(z))`` (the CIP oracles of
        :mod:`rulemip.formulations.box_oracles`).
    z0 : starting multiplicities (non-negative integers, ``sum(z0) <= n_rules``).
    n_rules : k, the bound on ``sum(z)``.
    max_kicks : at most this many kicks (default: unlimited within a bounded ``budget``,
        none without one — no fixed wall-clock share).
    kick_size : units moved at random by one kick.
    n_candidates : boxes evaluated exactly per removed unit (default ``max(16, B // 8)``).
    seed : seed of the kicks.
    target : a proved lower bound on the optimum; kicks stop once ``value`` reaches it
        (nothing can improve then), so an instance settled by its bound costs no kicks.
    budget : the fit's :class:`~rulemip.budget.Budget`; the search ends at its deadline
        or when its work limit is spent (one unit per evaluation), whichever is first.

    Returns
    -------
    LocalSearchResult
        ``value`` is the exact :math:`R(z)` of the returned ``z``, never worse than that of
        ``z0`` completed to ``n_rules`` units.
    """
    z0 = np.asarray(z0, dtype=float).ravel()
    B = z0.shape[0]
    if not (isinstance(n_rules, int | np.integer) and n_rules >= 1):
        raise InvalidParameterError(f"`n_rules` must be a positive integer; got {n_rules!r}.")
    if np.any(z0 < 0) or np.any(np.abs(z0 - np.round(z0)) > 1e-9) or z0.sum() > n_rules + 1e-9:
        raise InvalidParameterError(
            "`z0` must hold non-negative integers summing to at most `n_rules`.")
    if kick_size < 1:
        raise InvalidParameterError(f"`kick_size` must be >= 1; got {kick_size!r}.")
    t0 = time.perf_counter()  # wall time for the report; the deadline is ``clock``'s
    clock = Budget.coerce(budget, None)
    n_cand = max(16, B // 8) if n_candidates is None else int(n_candidates)
    search = _Search(oracle, B, int(n_rules), max(1, n_cand), clock)
    if B == 0:
        v, _ = search.evaluate(z0)
        return LocalSearchResult(z0, v, search.evaluations, 0, 0, time.perf_counter() - t0)
    z, value = search.fill(np.round(z0))
    z, value = search.descend(z, value)
    rng = np.random.default_rng(seed)
    kicks = improvements = 0
    limit = max_kicks if max_kicks is not None else (0 if not clock.bounded else None)
    while (limit is None or kicks < limit) and not search.timed_out() and B > 1 \
            and value > target:
        kicks += 1
        trial = z.copy()
        for _ in range(kick_size):
            selected = np.flatnonzero(trial > 0.5)
            trial[rng.choice(selected)] -= 1.0
            trial[rng.integers(B)] += 1.0
        v, _ = search.evaluate(trial)
        trial, v = search.descend(trial, v)
        if search.better(v, value):
            z, value = trial, v
            improvements += 1
    return LocalSearchResult(z, value, search.evaluations, kicks, improvements,
                             time.perf_counter() - t0)
