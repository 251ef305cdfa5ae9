"""Backend protocol, capabilities and the registry behind ``solver="auto"``.

A backend module (``highs.py``, ``scip.py``, ...) defines one class implementing
:class:`SolverBackend` and registers it with :func:`register`. Backends import their solver
package lazily inside methods, so listing and checking availability never fails.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.exceptions import (
    BackendUnavailableError,
    InvalidParameterError,
    UnsupportedCapabilityError,
)
from rulemip.model.standard_form import StandardForm
from rulemip.solvers.result import SolveOptions, SolveResult


class Capability(StrEnum):
    """What a model may need from a backend."""

    LP = "lp"  # continuous columns, linear rows
    INTEGER = "integer"
    QUADRATIC_OBJECTIVE = "quadratic_objective"  # convex QP / MIQP
    INDICATOR = "indicator"
    NONLINEAR_LOSS = "nonlinear_loss"  # SeparableLoss terms (logistic/Poisson/squared)
    PERSISTENT = "persistent"  # add rows / re-solve without rebuilding
    MIP_START = "mip_start"
    DUAL_BOUND = "dual_bound"  # reports a valid MIP lower bound


def required_capabilities(model: StandardForm) -> set[Capability]:
    """The capabilities a model needs.

    ``LP`` when it has a continuous column (every backend but pure-integer CP-SAT has it),
    ``INTEGER`` with an integer column, and one capability per quadratic objective, loss
    terms and indicators.
    """
    caps = set()
    if not bool(np.all(model.integrality)) or model.n_cols == 0:
        caps.add(Capability.LP)
    if model.is_mip:
        caps.add(Capability.INTEGER)
    if model.has_quadratic:
        caps.add(Capability.QUADRATIC_OBJECTIVE)
    if model.has_loss_terms:
        caps.add(Capability.NONLINEAR_LOSS)
    if model.indicators:
        caps.add(Capability.INDICATOR)
    return caps


@runtime_checkable
class PersistentSolver(Protocol):
    """A loaded model that can grow and be re-solved (outer approximation masters)."""

    def add_rows(self, A: sp.spmatrix, lower: NDArray[np.float64],
                 upper: NDArray[np.float64]) -> None:
        """Append rows ``lower <= A x <= upper`` (``A`` has one column per model column)."""

    def add_columns(self, c: NDArray[np.float64], lower: NDArray[np.float64],
                    upper: NDArray[np.float64], integer: NDArray[np.bool_],
                    A_cols: sp.spmatrix | None = None) -> None:
        """Append columns with objective ``c``, bounds and integrality; ``A_cols`` gives
        their coefficients in the existing rows (rows × new columns)."""

    def set_col_bounds(self, cols: NDArray[np.int64], lower: NDArray[np.float64],
                       upper: NDArray[np.float64]) -> None: ...

    def set_objective(self, c: NDArray[np.float64], offset: float = 0.0) -> None: ...

    def set_integrality(self, integer: NDArray[np.bool_]) -> None:
        """Relax (False) or restore (True) integrality column by column (LP masters)."""

    def solve(self, options: SolveOptions | None = None,
              start: NDArray[np.float64] | None = None) -> SolveResult: ...

    @property
    def n_rows(self) -> int: ...

    @property
    def n_cols(self) -> int: ...


class SolverBackend(Protocol):
    """One solver library behind one interface.

    A backend may also define ``unsupported_combinations``: capability sets it has
    individually but cannot combine (HiGHS: ``{INTEGER, QUADRATIC_OBJECTIVE}``, no MIQP);
    :func:`select_backend` honours it.
    """

    name: str
    capabilities: frozenset[Capability]
    install_hint: str

    def available(self) -> bool: ...

    def version(self) -> str: ...

    def solve(self, model: StandardForm, options: SolveOptions | None = None,
              start: NDArray[np.float64] | None = None) -> SolveResult: ...

    def persistent(self, model: StandardForm) -> PersistentSolver:
        """Load ``model`` for repeated solves (backends with ``PERSISTENT``)."""


# ---------------------------------------------------------------------- registry
# name -> (module path, class name); order is the preference of ``solver="auto"``
_BACKEND_MODULES: dict[str, tuple[str, str]] = {
    "highs": ("rulemip.solvers.highs", "HighsBackend"),
    "scip": ("rulemip.solvers.scip", "ScipBackend"),
    "cpsat": ("rulemip.solvers.cpsat", "CpSatBackend"),
    "cbc": ("rulemip.solvers.cbc", "CbcBackend"),
    "pyomo": ("rulemip.solvers.pyomo", "PyomoBackend"),
}
_INSTANCES: dict[str, SolverBackend] = {}


def backend_names() -> list[str]:
    """All backends rulemip knows (installed or not)."""
    return list(_BACKEND_MODULES)


def get_backend(name: str, **kwargs: Any) -> SolverBackend:
    """The backend called ``name``; raises with the install hint when it is missing.

    ``name`` may carry a sub-solver after a colon, ``"pyomo:appsi_highs"``: the part after
    the colon is passed to the backend class as ``solver=`` (only backends that wrap other
    solvers, such as ``pyomo``, accept one). Extra ``kwargs`` go to the backend class too.
    """
    base, colon, sub = name.partition(":") if isinstance(name, str) else (name, "", "")
    if base not in _BACKEND_MODULES or (colon and not sub):
        raise InvalidParameterError(
            f"`solver` must be 'auto' or one of {backend_names()} (optionally "
            f"'pyomo:NAME' for a Pyomo solver); got {name!r}.")
    module, cls = _BACKEND_MODULES[base]
    if sub:
        kwargs = {"solver": sub, **kwargs}
    if kwargs:
        try:
            backend: SolverBackend = getattr(importlib.import_module(module), cls)(**kwargs)
        except TypeError as exc:
            raise InvalidParameterError(
                f"solver backend {base!r} does not take {sorted(kwargs)} "
                f"(`solver` {name!r}): {exc}; only 'pyomo' takes a sub-solver "
                "('pyomo:NAME').") from exc
        if sub and len(kwargs) == 1:
            _INSTANCES.setdefault(name, backend)
            backend = _INSTANCES[name]
    else:
        if name not in _INSTANCES:
            _INSTANCES[name] = getattr(importlib.import_module(module), cls)()
        backend = _INSTANCES[name]
    if not backend.available():
        raise BackendUnavailableError(
            f"solver backend {name!r} is not installed; install it with "
            f"`{backend.install_hint}`.")
    return backend


def available_backends() -> list[str]:
    """Names of the backends that can be used in this environment."""
    out = []
    for name, (module, cls) in _BACKEND_MODULES.items():
        try:
            backend = getattr(importlib.import_module(module), cls)()
        except ImportError:
            continue
        if backend.available():
            out.append(name)
    return out


def select_backend(solver: str, needs: Iterable[Capability]) -> SolverBackend:
    """Resolve ``solver`` (a name or ``"auto"``) to a backend that has ``needs``.

    ``"auto"`` picks the first available backend in registry order with every needed
    capability; a named backend lacking one raises :class:`UnsupportedCapabilityError`.
    """
    need = set(needs)
    if solver != "auto":
        backend = get_backend(solver)
        missing = need - set(backend.capabilities)
        if missing:
            raise UnsupportedCapabilityError(
                f"solver {solver!r} lacks {sorted(c.value for c in missing)} needed by this "
                "model; choose another `solver` or 'auto'.")
        clash = _unsupported_combination(backend, need)
        if clash:
            raise UnsupportedCapabilityError(
                f"solver {solver!r} cannot combine {sorted(c.value for c in clash)} (e.g. "
                "HiGHS has no MIQP); choose another `solver` or 'auto'.")
        return backend
    for name in _BACKEND_MODULES:
        try:
            backend = get_backend(name)
        except (BackendUnavailableError, ImportError):
            continue
        if need <= set(backend.capabilities) and not _unsupported_combination(backend, need):
            return backend
    raise BackendUnavailableError(
        f"no installed solver backend has {sorted(c.value for c in need)}; install one with "
        "`pip install 'rulemip[solvers]'` (SCIP, OR-Tools, Pyomo) or `pip install highspy`.")


def _unsupported_combination(backend: SolverBackend,
                             need: set[Capability]) -> frozenset[Capability]:
    """The first capability set in the backend's optional ``unsupported_combinations``
    (capabilities it has, but not together) that ``need`` contains; empty if none."""
    for combo in getattr(backend, "unsupported_combinations", ()):
        if set(combo) <= need:
            return frozenset(combo)
    return frozenset()


def module_available(name: str) -> bool:
    """True when the Python module ``name`` can be imported (without importing it)."""
    return importlib.util.find_spec(name) is not None
