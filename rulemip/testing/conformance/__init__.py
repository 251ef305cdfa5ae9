"""Conformance suites (plain functions, reusable from any test runner): every solver
backend against models with known optima (:mod:`~rulemip.testing.conformance.backends`),
every exact engine against brute force (:mod:`~rulemip.testing.conformance.engines`,
:func:`~rulemip.testing.conformance.engines.check_engine`)."""

from rulemip.testing.conformance.backends import (
    CASES,
    ConformanceCase,
    backend_claims,
    brute_force_integer_optimum,
    check_case,
    check_persistent_rows,
    general_integer_model,
    indicator_model,
    infeasible_model,
    knapsack_model,
    logistic_model,
    lp_model,
    market_split,
    miqp_model,
    mixed_loss_model,
    qp_model,
    random_milp,
    unbounded_model,
)
from rulemip.testing.conformance.engines import EngineCheck, check_engine, engine_kind

__all__ = ["CASES", "ConformanceCase", "EngineCheck", "backend_claims",
           "brute_force_integer_optimum", "check_case", "check_engine",
           "check_persistent_rows", "engine_kind", "general_integer_model", "indicator_model",
           "infeasible_model", "knapsack_model", "logistic_model", "lp_model",
           "market_split", "miqp_model", "mixed_loss_model", "qp_model", "random_milp",
           "unbounded_model"]
