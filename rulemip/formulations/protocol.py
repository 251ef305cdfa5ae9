"""The formulation contract: what the driver (:func:`rulemip.algorithms.driver.solve`)
needs from a model of a rule-ensemble problem.

A formulation turns a dataset into a :class:`~rulemip.model.MIPModel`, a solution vector
back into a :class:`~rulemip.rules.RuleEnsemble` whose risk is recomputed from the data, and
a rule ensemble (a warm start) into a start vector. Everything else — choosing the backend,
native solve or tangent-cut outer approximation, the time budget, the status — is the
driver's. ``docs/howto/add_formulation.md`` adds one in a single file.

The model may hold loss terms and a quadratic ridge; backends that cannot take them natively
are driven by tangent cuts (:mod:`rulemip.algorithms.tangent_cuts`), so a formulation never
names a backend. Convex integer programs solved by outer approximation over an oracle (the
k-rule CIP) expose the oracle on their built problem instead (``oracle.value_and_gradient``)
and are run by a registered method (:func:`rulemip.algorithms.driver.register_method`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from rulemip.data.dataset import Dataset
from rulemip.model.mip_model import MIPModel
from rulemip.rules.ensemble import RuleEnsemble
from rulemip.solvers.base import Capability, SolverBackend

FloatArray = NDArray[np.float64]


@runtime_checkable
class BuiltModel(Protocol):
    """A built model plus what decoding needs.

    Attributes
    ----------
    model : the model handed to the backend.
    dataset : the data the model was built on (decoding recomputes the risk on it).
    bound_valid : ``False`` when the model restricts the problem by something not proved
        (e.g. a stated weight box), so its bound is no global certificate.
    notes : remarks made while building (carried into the result).
    safe_bound : a lower bound valid by construction (e.g. 0 for a nonnegative loss), used
        when a solver's bound is refuted by the recomputed risk.
    n_cells : occupied cells of the data reduction (0 if none).
    """

    model: MIPModel
    dataset: Dataset
    bound_valid: bool
    notes: list[str]

    def block(self, name: str) -> NDArray[np.int64]:
        """Column indices of the variable block ``name`` of :attr:`model`.

        A formulation's block names are part of its documented model (the interval-cover
        MIP's table in ``docs/explanation/interval_cover.md``: ``"beta"`` for the rule
        weights :math:`\beta_t` in rule order, ``"beta0"`` for the intercept), so a
        formulation that wraps another may add rows on them."""
        ...

    @property
    def safe_bound(self) -> float: ...

    @property
    def n_cells(self) -> int: ...


@runtime_checkable
class Formulation(Protocol):
    """A rule-ensemble problem as a MIP (module docstring).

    ``engine`` names it in results; :meth:`needs` lists the capabilities its model will
    need, known before building so that a backend is chosen — or refused — before any work.
    ``built`` is whatever :meth:`build_model` returned (typed ``Any`` so that a formulation
    may take its own built class).
    """

    engine: str

    def needs(self) -> set[Capability]:
        """Capabilities the built model needs from a backend solving it natively."""
        ...

    def build_model(self, dataset: Dataset, *, backend: SolverBackend, native: bool,
                    warm_start: RuleEnsemble | None) -> BuiltModel:
        """Build for ``backend`` (``native``: it takes loss terms / MIQP as they are)."""
        ...

    def encode_start(self, built: Any, ensemble: RuleEnsemble) -> FloatArray | None:
        """A feasible start vector for ``ensemble`` (``None`` if it cannot be encoded)."""
        ...

    def decode_solution(self, built: Any, x: FloatArray
                        ) -> tuple[RuleEnsemble, float, list[str]]:
        """``(ensemble, risk, notes)``: the rules of ``x`` and their regularized risk
        :math:`R_\\lambda` *recomputed from the data* (the driver's upper bound)."""
        ...

    def polish(self, built: Any, x: FloatArray) -> FloatArray | None:
        """Repair a master's point into a point feasible for *this* formulation's model
        (every row it added included), or ``None`` when it cannot (tangent cuts)."""
        ...


__all__ = ["BuiltModel", "Formulation"]
