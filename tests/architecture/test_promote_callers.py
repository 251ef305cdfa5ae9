"""The status rule has one home (issue 32): :func:`rulemip.solvers.status.promote` is called
only by ``solvers/status.py`` itself, the drivers' decisions (the k-rule driver, the
pruning driver, the fit plan's ``fit_decision``) and the backend adapters under
``rulemip/solvers/`` — never by a search, a loop or a wrapper elsewhere. Also the two
helpers of ``solvers/status.py`` that the loops and ``prune_exact`` use instead."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

import rulemip
from rulemip.solvers.result import Limit, TerminationReason
from rulemip.solvers.status import loop_verdict, promote, tolerance_as_gap

PACKAGE = Path(rulemip.__file__).resolve().parent
ALLOWED = {"solvers/status.py", "algorithms/solve/driver.py", "algorithms/pruning/driver.py",
           "algorithms/fit_decision.py"}


def _allowed(rel: str) -> bool:
    return rel in ALLOWED or rel.startswith("solvers/")


def _promote_uses(tree: ast.AST) -> list[tuple[int, tuple[str, ...]]]:
    """(line, enclosing class/function names) of every call of ``promote`` — by name,
    as an attribute (``status.promote``) or under an import alias."""
    aliases = {"promote"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            aliases |= {a.asname for a in node.names if a.name == "promote" and a.asname}
    found: list[tuple[int, tuple[str, ...]]] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            scope = (*scope, node.name)
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id in aliases) or \
                    (isinstance(f, ast.Attribute) and f.attr == "promote"):
                found.append((node.lineno, scope))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, ())
    return found


def _callers() -> dict[str, list[tuple[int, tuple[str, ...]]]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        uses = _promote_uses(ast.parse(path.read_text(encoding="utf-8")))
        if uses:
            out[path.relative_to(PACKAGE).as_posix()] = uses
    return out


def test_promote_is_called_only_by_the_status_module_drivers_and_adapters():
    callers = _callers()
    stray = {rel: uses for rel, uses in callers.items() if not _allowed(rel)}
    assert not stray, f"promote called outside the drivers' decide: {stray}"
    # the rule is really applied where it is allowed (the scan finds calls at all)
    assert {"solvers/status.py", "algorithms/solve/driver.py",
            "algorithms/pruning/driver.py", "algorithms/fit_decision.py"} <= set(callers)


def test_the_scan_sees_attribute_and_aliased_calls():
    """The scan would catch a wrapper however it spells the call."""
    src = ("from rulemip.solvers.status import promote as p\n"
           "import rulemip.solvers.status as st\n"
           "class A:\n def f(self):\n  return p(1.0, 0.0, finished=True, mip_gap=0.0)\n"
           "def g():\n return st.promote(1.0, 0.0, finished=True, mip_gap=0.0)\n")
    assert _promote_uses(ast.parse(src)) == [(5, ("A", "f")), (7, ("g",))]


def test_tolerance_as_gap_is_the_loops_stopping_rule():
    assert tolerance_as_gap(1e-4, 1e-6, 2.0) == pytest.approx(1e-4 + 5e-7)
    assert tolerance_as_gap(1e-4, 1e-6, -4.0) == pytest.approx(1e-4 + 2.5e-7)
    assert tolerance_as_gap(1e-4, 1e-6, math.inf) == 1e-4
    # U - LB <= abs_tol + rel_tol |U|  <=>  relative gap <= tolerance_as_gap
    ub, rel, ab = 3.0, 1e-3, 1e-2
    lb = ub - (ab + rel * abs(ub))
    assert (ub - lb) / abs(ub) == pytest.approx(tolerance_as_gap(rel, ab, ub))


@pytest.mark.parametrize(("ub", "lb", "converged", "limit", "term", "out_limit"), [
    (1.0, 1.0 - 5e-5, True, None, TerminationReason.OPTIMAL, None),
    # converged by the loop's own test, gap within abs_tol + rel_tol |U| only
    (1.0, 1.0 - 5e-4, True, None, TerminationReason.OPTIMAL, None),
    (1.0, 0.5, True, None, TerminationReason.FEASIBLE, Limit.GAP),
    # stopped by a rule of the loop's own (stall, no violated cut): no limit named
    (1.0, 0.5, False, None, TerminationReason.FEASIBLE, None),
    (1.0, 0.5, False, Limit.TIME, TerminationReason.FEASIBLE, Limit.TIME),
    (math.inf, 0.5, False, Limit.TIME, TerminationReason.NO_SOLUTION_FOUND, Limit.TIME),
])
def test_loop_verdict_is_promote_at_the_loops_tolerance(ub, lb, converged, limit, term,
                                                        out_limit):
    v = loop_verdict(ub, lb, converged=converged, limit=limit, rel_tol=1e-4, abs_tol=1e-3,
                     fallback_bound=0.0)
    assert (v.termination, v.limit) == (term, out_limit)
    p = promote(ub, lb, finished=converged, mip_gap=tolerance_as_gap(1e-4, 1e-3, ub),
                limit=limit, fallback_bound=0.0)
    assert (v.lower_bound, v.gap) == (p.lower_bound, p.gap)


def test_loop_verdict_refutes_a_bound_above_the_incumbent():
    from rulemip.solvers.status import RefutedBoundWarning

    with pytest.warns(RefutedBoundWarning):
        v = loop_verdict(1.0, 1.5, converged=True, limit=None, rel_tol=1e-4, abs_tol=0.0,
                         fallback_bound=0.25)
    assert v.termination is TerminationReason.FEASIBLE and v.lower_bound == 0.25
