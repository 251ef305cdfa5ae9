"""Backend protocol, capabilities and the registry behind ``solver="auto"``.

A backend module (``highs.py``, ``scip.py``, ...) defines one class implementing
:class:`SolverBackend`; built-ins are listed in the registry below, other packages add theirs
with :func:`register` or the ``rulemip.backends`` entry-point group. Backends import their
solver package lazily inside methods, so listing and checking availability never fails.
:func:`resolve_backend` is the only place that turns a ``solver=`` argument into a backend
(``docs/howto/backends.md``).
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
    # logistic/Poisson loss terms whose linear predictor may leave ±EXP_LOSS_SAFE_RANGE
    WIDE_EXP_LOSS = "wide_exp_loss"


EXP_LOSS_SAFE_RANGE = 30.0
"""Largest absolute value of the linear predictor that a backend's own handling of the logistic
or Poisson loss is trusted with. Beyond it, terms such as :math:`e^{u-\theta}` span more
than 26 orders of magnitude over the variable box and SCIP's native relaxation was measured
to return a dual bound 5e-6 (relative) *above* the optimum (a logistic instance at
``reg=1e-6`` whose weight box reaches 3 090, prediction box 18 544;
docs/explanation/solving.md). Such models need :data:`Capability.WIDE_EXP_LOSS`, which only
the tangent-cut driver declares: its cuts are computed by rulemip in double precision at
each master point, so its bound is that of a MILP."""


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
    if _has_wide_exp_loss(model):
        caps.add(Capability.WIDE_EXP_LOSS)
    return caps


def _has_wide_exp_loss(model: StandardForm) -> bool:
    """A logistic/Poisson loss term whose column box leaves ±EXP_LOSS_SAFE_RANGE."""
    for term in model.loss_terms:
        if term.loss == "squared" or len(term.cols) == 0:
            continue
        lo = model.col_lower[term.cols]
        hi = model.col_upper[term.cols]
        if float(np.max(np.maximum(np.abs(lo), np.abs(hi)))) > EXP_LOSS_SAFE_RANGE:
            return True
    return False


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


class DeclaresCapabilities(Protocol):
    """The declarations a refusal is decided from (every backend has them)."""

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> frozenset[Capability]: ...

    @property
    def unsupported_combinations(self) -> tuple[frozenset[Capability], ...]: ...


class SolverBackend(Protocol):
    """One solver library behind one interface.

    Capabilities and refusals are declared here, once, and read by every caller through
    :func:`supports` / :func:`check_supported` / :func:`resolve_backend`:

    * ``capabilities`` — what the backend takes natively;
    * ``unsupported_combinations`` — capability sets it has individually but cannot
      combine (HiGHS: ``{INTEGER, QUADRATIC_OBJECTIVE}``, no MIQP); ``()`` when none.
    """

    name: str
    capabilities: frozenset[Capability]
    unsupported_combinations: tuple[frozenset[Capability], ...]
    install_hint: str

    def available(self) -> bool: ...

    def version(self) -> str: ...

    def solve(self, model: StandardForm, options: SolveOptions | None = None,
              start: NDArray[np.float64] | None = None) -> SolveResult: ...

    def persistent(self, model: StandardForm) -> PersistentSolver:
        """Load ``model`` for repeated solves (backends with ``PERSISTENT``)."""


# ---------------------------------------------------------------------- registry
#: entry-point group through which an installed package contributes backends: each entry
#: point ``name = "package.module:BackendClass"`` is registered under ``name``
ENTRY_POINT_GROUP = "rulemip.backends"

# name -> (module path, class name); order is the preference of ``solver="auto"``
_BACKEND_MODULES: dict[str, tuple[str, str]] = {
    "highs": ("rulemip.solvers.highs", "HighsBackend"),
    "scip": ("rulemip.solvers.scip", "ScipBackend"),
    "cpsat": ("rulemip.solvers.cpsat", "CpSatBackend"),
    "cbc": ("rulemip.solvers.cbc", "CbcBackend"),
    "pyomo": ("rulemip.solvers.pyomo", "PyomoBackend"),
}
_INSTANCES: dict[str, SolverBackend] = {}
_ENTRY_POINTS_LOADED = False

#: the default backend per problem class (used by ``solver="auto"`` before registry order):
#: LPs and MILPs go to HiGHS; models with loss terms or a quadratic objective with
#: integers (MIQP) go to SCIP, which takes them natively; without SCIP such models are
#: solved by tangent-cut outer approximation on the first persistent MILP backend.
DEFAULT_BACKENDS: dict[str, str] = {"milp": "highs", "nonlinear": "scip"}


def register(name: str, target: str | type, *, replace: bool = False) -> None:
    """Make a backend available as ``solver=name``.

    ``target`` is the backend class or ``"package.module:ClassName"`` (imported lazily, on
    first use). Built-in names cannot be replaced unless ``replace=True``. Third-party
    packages register through the :data:`ENTRY_POINT_GROUP` entry-point group instead of
    calling this at import time.
    """
    if not isinstance(name, str) or not name or ":" in name or name == "auto":
        raise InvalidParameterError(
            f"a backend name must be a non-empty string without ':' other than 'auto'; "
            f"got {name!r}.")
    if name in _BACKEND_MODULES and not replace:
        raise InvalidParameterError(
            f"solver backend {name!r} is already registered; pass replace=True to override.")
    if isinstance(target, str):
        module, colon, cls = target.partition(":")
        if not colon or not module or not cls:
            raise InvalidParameterError(
                f"`target` must be a class or 'package.module:ClassName'; got {target!r}.")
        _BACKEND_MODULES[name] = (module, cls)
    else:
        _BACKEND_MODULES[name] = (target.__module__, target.__qualname__)
    _INSTANCES.pop(name, None)


def _load_entry_points() -> None:
    """Register the backends of installed plugins (once)."""
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _BACKEND_MODULES:
            register(ep.name, ep.value)


def backend_names() -> list[str]:
    """All backends rulemip knows (installed or not), built-ins first, then plugins."""
    _load_entry_points()
    return list(_BACKEND_MODULES)


def get_backend(name: str, **kwargs: Any) -> SolverBackend:
    """The backend called ``name``; raises with the install hint when it is missing.

    ``name`` may carry a sub-solver after a colon, ``"pyomo:appsi_highs"``: the part after
    the colon is passed to the backend class as ``solver=`` (only backends that wrap other
    solvers, such as ``pyomo``, accept one). Extra ``kwargs`` go to the backend class too.
    """
    _load_entry_points()
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
    for name in backend_names():
        module, cls = _BACKEND_MODULES[name]
        try:
            backend = getattr(importlib.import_module(module), cls)()
        except ImportError:
            continue
        if backend.available():
            out.append(name)
    return out


# ---------------------------------------------------------------------- capabilities
#: how a refusal names a capability (one table for every backend's message)
CAPABILITY_TEXT: dict[Capability, str] = {
    Capability.LP: "continuous columns (the backend is integer-only)",
    Capability.INTEGER: "integer columns",
    Capability.QUADRATIC_OBJECTIVE: "a quadratic objective",
    Capability.INDICATOR: "indicator constraints",
    Capability.NONLINEAR_LOSS: "separable loss terms (logistic/Poisson/squared)",
    Capability.PERSISTENT: "persistent models (outer-approximation masters)",
    Capability.MIP_START: "MIP starts",
    Capability.DUAL_BOUND: "a MIP dual bound",
    Capability.WIDE_EXP_LOSS: (f"logistic/Poisson loss with predictions beyond "
                               f"±{EXP_LOSS_SAFE_RANGE:g} (solved by tangent cuts instead)"),
}
_COMBINATION_TEXT = {
    frozenset({Capability.INTEGER, Capability.QUADRATIC_OBJECTIVE}):
        "a quadratic objective with integer variables (MIQP)",
}

#: what outer approximation over box multiplicities (the k-rule CIP, tree pruning) needs
#: from its master: a MILP that grows by rows and re-solves warm
PERSISTENT_MASTER_NEEDS = frozenset({Capability.LP, Capability.INTEGER,
                                     Capability.PERSISTENT})


def linear_master_needs(needs: Iterable[Capability]) -> frozenset[Capability]:
    """What the master of tangent-cut outer approximation needs for a model needing
    ``needs``: its linear part (loss terms and the quadratic become cuts on continuous
    epigraph columns)."""
    return frozenset((set(needs) - {Capability.NONLINEAR_LOSS, Capability.WIDE_EXP_LOSS,
                                    Capability.QUADRATIC_OBJECTIVE}) | {Capability.LP})


def unsupported(backend: DeclaresCapabilities, needs: Iterable[Capability]) -> str | None:
    """Why ``backend`` cannot take a model needing ``needs`` natively (``None``: it can).

    Reads only the declared ``capabilities`` and ``unsupported_combinations``.
    """
    need = set(needs)
    missing = need - set(backend.capabilities)
    if missing:
        return ", ".join(CAPABILITY_TEXT[c] for c in sorted(missing))
    for combo in backend.unsupported_combinations:
        if set(combo) <= need:
            return _COMBINATION_TEXT.get(frozenset(combo), " with ".join(
                CAPABILITY_TEXT[c] for c in sorted(combo)))
    return None


def supports(backend: DeclaresCapabilities, needs: Iterable[Capability]) -> bool:
    """True when ``backend`` takes a model needing ``needs`` as it is."""
    return unsupported(backend, needs) is None


def check_supported(backend: DeclaresCapabilities, model: StandardForm, remedy: str = "") -> None:
    """Raise :class:`UnsupportedCapabilityError` when ``backend`` cannot take ``model``
    (what every backend's ``solve``/``persistent`` calls first)."""
    why = unsupported(backend, required_capabilities(model))
    if why is not None:
        raise UnsupportedCapabilityError(
            f"solver {backend.name!r} cannot handle {why}; "
            + (remedy or "use solver='scip', or the outer-approximation (tangent-cut) "
               "driver with a MILP backend."))


def resolve_backend(solver: str | SolverBackend, needs: Iterable[Capability], *,
                    outer_approximation: bool = True) -> tuple[SolverBackend, bool]:
    """The one backend resolver: ``(backend, native)`` for a model needing ``needs``.

    ``native`` says whether the backend takes the model as it is; otherwise (only with
    ``outer_approximation=True``) it serves as the master of tangent-cut outer
    approximation, which needs :func:`linear_master_needs`. A backend that can do neither
    is refused here, before any work, with :class:`UnsupportedCapabilityError`.

    ``"auto"`` tries the default backend of the problem class (:data:`DEFAULT_BACKENDS`)
    first, then registry order: a native backend, else a persistent master, else any
    master.
    """
    need = set(needs)
    master_need = linear_master_needs(need) if outer_approximation else None
    if not isinstance(solver, str):
        return solver, _refuse_or_native(solver, need, master_need)
    if solver != "auto":
        backend = get_backend(solver)
        return backend, _refuse_or_native(backend, need, master_need)
    nonlinear = Capability.NONLINEAR_LOSS in need or {
        Capability.INTEGER, Capability.QUADRATIC_OBJECTIVE} <= need
    preferred = DEFAULT_BACKENDS["nonlinear" if nonlinear else "milp"]
    order = [preferred] + [n for n in backend_names() if n != preferred]
    masters: list[SolverBackend] = []
    for name in order:
        try:
            backend = get_backend(name)
        except (BackendUnavailableError, ImportError):
            continue
        if supports(backend, need):
            return backend, True
        if master_need is not None and supports(backend, master_need):
            masters.append(backend)
    persistent = [b for b in masters if Capability.PERSISTENT in b.capabilities]
    if persistent or masters:
        return (persistent or masters)[0], False
    raise BackendUnavailableError(
        f"no installed solver backend can take a model with "
        f"{sorted(c.value for c in need)}; install one with `pip install highspy` or "
        "`pip install 'rulemip[solvers]'` (SCIP, OR-Tools, Pyomo).")


def _refuse_or_native(backend: SolverBackend, need: set[Capability],
                      master_need: frozenset[Capability] | None) -> bool:
    why = unsupported(backend, need)
    if why is None:
        return True
    if master_need is not None:
        lacking = unsupported(backend, master_need)
        if lacking is None:
            return False
        why = f"{why}, and as an outer-approximation master it lacks {lacking}"
    raise UnsupportedCapabilityError(
        f"solver {backend.name!r} cannot handle {why}; choose another `solver` (e.g. "
        "'scip' natively, or 'highs' with outer approximation) or 'auto'.")


def select_backend(solver: str, needs: Iterable[Capability]) -> SolverBackend:
    """A backend taking a model needing ``needs`` natively (no outer approximation):
    :func:`resolve_backend` with ``outer_approximation=False``."""
    return resolve_backend(solver, needs, outer_approximation=False)[0]


def module_available(name: str) -> bool:
    """True when the Python module ``name`` can be imported (without importing it)."""
    return importlib.util.find_spec(name) is not None
