"""``ExactResult``: what an exact k-rule engine returns (the CIP of
docs/explanation/box_selection.md and the
interval-cover MIP of docs/explanation/interval_cover.md share it).

``risk`` is the regularized risk :math:`R_\\lambda` of the decoded ensemble recomputed from
the data (the upper bound), ``lower_bound`` a valid lower bound on :math:`\\min R_\\lambda`
over all ensembles the formulation can express, and ``gap`` rulemip's relative gap
``(UB − LB)/max(|UB|, 1e-10)``. ``termination`` is ``OPTIMAL`` only when that gap closed
under a bound that is valid (``bound_valid``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from rulemip.rules.ensemble import RuleEnsemble
from rulemip.solvers.result import Limit, TerminationReason


class SolveStatus(ABC):
    """What every exact fit reports, whatever its family: ``termination`` and ``limit``
    (why it ended), the valid ``lower_bound`` and the relative ``gap`` of its
    :attr:`upper_bound`, decided once by :func:`rulemip.solvers.status.promote`, plus a
    per-family :attr:`payload` (:class:`ExactResult`: the rule ensemble;
    :class:`PruningResult`: the engine's own record). The fields are the subclasses'
    dataclass fields."""

    termination: TerminationReason
    limit: Limit | None
    lower_bound: float
    gap: float
    wall_time: float
    notes: tuple[str, ...]

    @property
    @abstractmethod
    def upper_bound(self) -> float:
        """The family's incumbent value (the recomputed risk or objective)."""

    @property
    @abstractmethod
    def payload(self) -> Any:
        """The family's own result (the rule ensemble, the pruning engine's record)."""

    @property
    def is_optimal(self) -> bool:
        return self.termination is TerminationReason.OPTIMAL


@dataclass(frozen=True)
class ExactResult(SolveStatus):
    """Result of an exact rule-ensemble solve (see module docstring).

    Attributes
    ----------
    ensemble : the decoded rules (``None`` when no feasible point was found).
    risk : :math:`R_\\lambda` of ``ensemble`` recomputed from the data (UB; ``inf`` if none).
    lower_bound : valid lower bound on the optimal :math:`R_\\lambda` (``-inf`` if none).
    gap : relative gap by :func:`rulemip.solvers.relative_gap`.
    termination, limit : why the solve ended (``limit`` names the limit hit, if any).
    wall_time : seconds; iterations : OA iterations (CIP) or B&B nodes (MIP).
    engine : the registered engine that ran (``"cip"``, ``"cip-bnb"``, ``"cg"``,
        ``"cell-bnb"``, ``"mip"``, or a registered one's name).
    method : how the engine searched (``"enumeration"``, ``"oa"``, ``"bnb"``, ``"bound"``,
        ``"pricing"``, ``"native"``, ``"tangent cuts"``, …).
    backend, backend_version : the solver backend that solved the model or the masters
        (``""`` when none ran: enumeration, branch and bound over boxes, a closed form).
    n_boxes : candidate boxes (distinct query vectors) of the built model, 0 for a
        formulation without boxes; n_cells : occupied grid cells.
    bound_valid : ``False`` if the bound rests on anything not proved (then never OPTIMAL).
    notes : human-readable remarks; history : per-iteration progress dicts.
    """

    ensemble: RuleEnsemble | None
    risk: float
    lower_bound: float
    gap: float
    termination: TerminationReason
    limit: Limit | None = None
    wall_time: float = 0.0
    iterations: int = 0
    engine: str = "cip"
    backend: str = ""
    backend_version: str = ""
    n_boxes: int = 0
    n_cells: int = 0
    bound_valid: bool = True
    notes: tuple[str, ...] = ()
    history: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    method: str = ""

    @property
    def upper_bound(self) -> float:
        """The risk of the returned ensemble (the upper bound)."""
        return self.risk

    @property
    def payload(self) -> RuleEnsemble | None:
        """The family's payload: the decoded ensemble."""
        return self.ensemble

    def to_dict(self) -> dict[str, Any]:
        def num(v: float) -> Any:
            return v if math.isfinite(v) else str(v)

        return {"ensemble": None if self.ensemble is None else self.ensemble.to_dict(),
                "risk": num(self.risk), "lower_bound": num(self.lower_bound),
                "gap": num(self.gap), "termination": self.termination.value,
                "limit": None if self.limit is None else self.limit.value,
                "wall_time": self.wall_time, "iterations": self.iterations,
                "engine": self.engine, "method": self.method, "backend": self.backend,
                "backend_version": self.backend_version, "n_boxes": self.n_boxes,
                "n_cells": self.n_cells, "bound_valid": self.bound_valid,
                "notes": list(self.notes)}


@dataclass(frozen=True)
class PruningResult(SolveStatus):
    """Result of a tree-pruning fit (``TreeRuleExtractor.result_``), one type for every
    engine, with the status fields of :class:`ExactResult`.

    Attributes
    ----------
    value : the pruning objective :math:`q(z)` of the returned selection (docs/explanation/
        tree_pruning.md, CIP (2)).
    lower_bound : a valid lower bound on the optimal :math:`q` (``-inf``: the engine gives
        none — the regularization path).
    gap, termination, limit : as in :class:`ExactResult`, decided by
        :func:`rulemip.solvers.status.promote` (``OPTIMAL`` only for a closed gap under a
        valid bound).
    wall_time : seconds of the engine; engine : ``"exact"``, ``"path"`` or
        ``"relax_round"``.
    detail : the engine's own record (``OAResult``, ``PathResult`` or
        ``RelaxRoundResult``) with its iterations, history and relaxation.
    """

    value: float
    lower_bound: float
    gap: float
    termination: TerminationReason
    limit: Limit | None = None
    wall_time: float = 0.0
    engine: str = "exact"
    bound_valid: bool = True
    notes: tuple[str, ...] = ()
    detail: Any = None

    @property
    def upper_bound(self) -> float:
        """:math:`q` of the returned selection (the upper bound)."""
        return self.value

    @property
    def payload(self) -> Any:
        """The family's payload: the engine's own record (:attr:`detail`)."""
        return self.detail
