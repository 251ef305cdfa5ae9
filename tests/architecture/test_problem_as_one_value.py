"""The k-rule problem travels as one value (``rulemip.rules.problem.KRuleProblem``): below
the surface — the estimators, the command line, gap studies (``certify/gap.py``) and the
language itself (``rules/language.py``) — only the functions listed here, kernel entry
points that take the language's parts as numbers, have a parameter named ``n_rules`` or
``max_rule_length``; everything else takes the problem. A new such parameter fails this
test: pass the problem instead, or add the function here with the reason."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "rulemip"
SURFACE = ("estimators/", "cli/", "certify/gap.py", "rules/language.py")
LOOSE = {"n_rules", "max_rule_length"}

#: module path (under rulemip/) : qualified name -> why it takes the numbers (issue 40,
#: item 2: at most 12 entries)
KERNEL_ENTRY_POINTS = {
    # the problem's own constructor
    "rules/problem.py:KRuleProblem.of": "builds the problem from its parts",
    "rules/problem.py:KRuleProblem.with_rules": "the same problem at another k",
    # a public estimator: its parameters are flat keywords (scikit-learn's convention);
    # the fit's plan builds it from the problem
    "boosting/booster.py:RuleBooster.__init__": "the booster's estimator parameters",
    # compiled kernels and their Python entry points (numbers in, numbers out)
    "boosting/boxsearch/range_search.py:box_search": "the one-box search kernel",
    "boosting/search.py:find_rule": "the one-rule search (booster, swaps, pricing)",
    "formulations/box_oracles.py:enumerate_boxes": "the box enumeration kernel",
    "algorithms/krule/two_rule_bound.py:two_rule_bound": "the two-rule branch and bound on cells",
    "formulations/levels.py:logistic_levels_bound": "the levels bound kernel",
    "algorithms/local/box_swaps.py:local_search": "the CIP's box-multiplicity local search "
                                                  "(k units over an oracle)",
    # certificates are read from JSON fields, not from a problem
    "certify/certificate.py:problem_digest": "the digest of a certificate's fields",
    # test oracles, independent of the package's own problem type on purpose
    "testing/brute_force.py:distinct_boxes": "brute-force oracle",
    "testing/brute_force.py:brute_force_optimum": "brute-force oracle",
}


def _visit(node: ast.AST, prefix: str, found: set[str]) -> None:
    """Add ``prefix + qualified name`` of every function under ``node`` taking a loose
    parameter."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            _visit(child, f"{prefix}{child.name}.", found)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            a = child.args
            if {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)} & LOOSE:
                found.add(f"{prefix}{child.name}")
            _visit(child, f"{prefix}{child.name}.", found)


def _functions_with_loose_parameters() -> set[str]:
    found: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if not rel.startswith(SURFACE):
            _visit(ast.parse(path.read_text(encoding="utf-8")), f"{rel}:", found)
    return found


def test_only_kernel_entry_points_take_the_problem_in_parts() -> None:
    found = _functions_with_loose_parameters()
    assert found - set(KERNEL_ENTRY_POINTS) == set(), \
        "take the KRuleProblem instead (or list the kernel entry point with its reason)"
    assert set(KERNEL_ENTRY_POINTS) - found == set(), "listed but no longer taking parts"


def test_at_most_twelve_kernel_entry_points() -> None:
    """The issue's target: at most 12 listed functions, none left "to do"."""
    assert len(KERNEL_ENTRY_POINTS) <= 12
    assert not any(why.startswith("to do") for why in KERNEL_ENTRY_POINTS.values())
