"""The exact search over ensembles of short boxes, engine ``"kbox"``
(docs/explanation/kbox_search.md): the box table (:mod:`~rulemip.algorithms.kbox.table`),
the pair scan (:mod:`~rulemip.algorithms.kbox.pairs`), their compiled kernels, and the
engine (:mod:`~rulemip.algorithms.kbox.engine`)."""

from rulemip.algorithms.kbox.engine import KBoxModel, KBoxSearch, check_kbox_fits, solve_kbox

__all__ = ["KBoxModel", "KBoxSearch", "check_kbox_fits", "solve_kbox"]
