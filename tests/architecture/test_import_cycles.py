"""No import cycle among rulemip's modules (issue 40): the import graph that
import-linter's engine (``grimp``) builds — imports inside functions included, so a lazy
import does not hide a cycle — has no module that reaches itself. A cycle is found for
each direct import ``a -> b`` from which a chain ``b -> ... -> a`` leads back."""

from __future__ import annotations

import grimp
import pytest


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("rulemip", cache_dir=None)


def import_cycles(graph: grimp.ImportGraph) -> set[frozenset[str]]:
    """The modules of every cycle, one set per cycle through a direct import."""
    cycles = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(imported, importer)
            if back is not None:
                cycles.add(frozenset((importer, *back)))
    return cycles


def test_no_import_cycle_among_rulemip_modules(graph: grimp.ImportGraph) -> None:
    found = import_cycles(graph)
    assert not found, f"import cycles: {sorted(sorted(c) for c in found)}"


def test_the_scan_sees_a_lazy_import_cycle() -> None:
    """The scan would catch a cycle closed by an import inside a function (the shape of
    the two cycles removed in 0.3: ``range_search ↔ split_search``,
    ``certificate ↔ verification``)."""
    g = grimp.ImportGraph()
    for m in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        g.add_module(m)
    g.add_import(importer="pkg.a", imported="pkg.b", line_number=1, line_contents="import")
    g.add_import(importer="pkg.b", imported="pkg.c", line_number=1, line_contents="import")
    g.add_import(importer="pkg.c", imported="pkg.a", line_number=9, line_contents="lazy")
    assert import_cycles(g) == {frozenset({"pkg.a", "pkg.b", "pkg.c"})}


def test_the_two_cycles_removed_in_0_3_stay_removed(graph: grimp.ImportGraph) -> None:
    for a, b in (("rulemip.boosting.boxsearch.range_search",
                  "rulemip.boosting.boxsearch.split_search"),
                 ("rulemip.certify.certificate", "rulemip.certify.verification")):
        both_ways = graph.find_shortest_chain(a, b) and graph.find_shortest_chain(b, a)
        assert not both_ways, (a, b)
