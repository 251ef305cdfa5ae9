"""Every built-in engine passes the engine conformance suite
(:func:`rulemip.testing.check_engine`: brute-force optima, valid bounds, the language, work
limits, certificates), the suite covers every registered engine, and it fails an engine
that breaks a promise."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from rulemip.algorithms.krule.box_selection import BoxSelectionSearch
from rulemip.exceptions import InvalidParameterError
from rulemip.rules.problem import KRuleProblem
from rulemip.testing import check_engine
from rulemip.testing.conformance.engines import KRULE_CASES, registered_factories

#: the engines rulemip registers itself (a test asserts it is every registered one)
BUILTIN = {*(("k-rule", name) for name in ("cip", "cip-bnb", "mip", "cg", "cell-bnb",
                                           "kbox")),
           *(("pruning", name) for name in ("exact", "path", "relax_round", "mip",
                                            "perspective"))}


@pytest.mark.parametrize(("kind", "name"), sorted(BUILTIN))
def test_every_builtin_engine_conforms(kind: str, name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # limits and refuted bounds warn; the suite checks
        report = check_engine(registered_factories()[(kind, name)])
    assert report.kind == kind
    assert report.solved >= 2, report  # every engine solves most of the instances


def test_the_suite_covers_every_registered_engine() -> None:
    """Every engine registered by rulemip itself is in :data:`BUILTIN` (examples and tests
    may register their own: those are not rulemip's)."""
    builtin = {key for key, factory in registered_factories().items()
               if getattr(factory, "__module__", "").startswith("rulemip.")}
    assert builtin == BUILTIN


class _Overclaiming(BoxSelectionSearch):
    """Returns the model without rules with a bound just above the optimum: below its own
    risk, so the driver cannot refute it; only the optimum can."""

    def search(self, built, **kw):  # type: ignore[no-untyped-def]
        honest = super().search(built, **kw)
        assert honest.x is not None
        return replace(honest, x=np.zeros_like(honest.x), finished=False,
                       lower_bound=honest.objective * 1.01 + 1e-6)


def test_an_engine_with_a_bound_above_the_optimum_fails() -> None:
    def factory(problem: KRuleProblem) -> BoxSelectionSearch:
        return _Overclaiming(problem.language, **problem.keywords())

    with pytest.raises(AssertionError, match="above the optimum"):
        check_engine(factory)


def test_a_typed_refusal_up_front_passes() -> None:
    def refusing(problem: KRuleProblem) -> BoxSelectionSearch:
        raise InvalidParameterError("this engine serves no problem of this suite")

    report = check_engine(refusing)
    assert report.refused == len(KRULE_CASES) and report.solved == 0


def test_an_untyped_failure_is_not_a_refusal() -> None:
    def failing(problem: KRuleProblem) -> BoxSelectionSearch:
        raise RuntimeError("crash")

    with pytest.raises(RuntimeError):
        check_engine(failing)
