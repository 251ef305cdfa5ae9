"""Solver backends behind one protocol, and the result contract (docs/architecture.md)."""

from rulemip.solvers.base import (
    Capability,
    PersistentSolver,
    SolverBackend,
    available_backends,
    backend_names,
    get_backend,
    required_capabilities,
    select_backend,
)
from rulemip.solvers.result import (
    Limit,
    ObjectiveBounds,
    SolveOptions,
    SolveResult,
    TerminationReason,
    relative_gap,
)

__all__ = ["Capability", "Limit", "ObjectiveBounds", "PersistentSolver", "SolveOptions",
           "SolveResult", "SolverBackend", "TerminationReason", "available_backends",
           "backend_names", "get_backend", "relative_gap", "required_capabilities",
           "select_backend"]
