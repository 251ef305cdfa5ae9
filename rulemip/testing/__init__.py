"""rulemip.testing: test oracles and conformance suites (see docs/architecture.md):
brute-force optima (:mod:`~rulemip.testing.brute_force`), the backend and engine
conformance suites (:mod:`~rulemip.testing.conformance`); :func:`check_engine` runs an
engine's factory against brute force."""

from typing import Any

__all__ = ["check_engine"]


def __getattr__(name: str) -> Any:
    # lazy: the engine suite imports the algorithms, which the brute-force oracles do not
    if name == "check_engine":
        from rulemip.testing.conformance.engines import check_engine

        return check_engine
    raise AttributeError(f"module 'rulemip.testing' has no attribute {name!r}")
