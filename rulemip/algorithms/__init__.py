"""rulemip.algorithms (see docs/architecture.md).

Importing the package registers the built-in engines, each in its own module (the generic
driver, :mod:`rulemip.algorithms.driver`, imports none of them): ``"cip"`` and
``"cip-bnb"`` (:mod:`~rulemip.algorithms.box_selection_methods`), ``"mip"``
(:mod:`~rulemip.algorithms.interval_cover_engine`), ``"cg"``
(:mod:`~rulemip.algorithms.column_generation`), ``"cell-bnb"``
(:mod:`~rulemip.algorithms.cell_bnb`) and ``"kbox"`` (:mod:`~rulemip.algorithms.kbox`), in
that order (the order of ``ENGINES``); and the tree-pruning engines ``"exact"``,
``"path"`` and ``"relax_round"`` (:mod:`~rulemip.algorithms.pruning_engines`, driven by
:mod:`~rulemip.algorithms.pruning_driver`).
"""

# isort: off
from rulemip.algorithms import box_selection_methods  # noqa: F401  (registers on import)
from rulemip.algorithms import interval_cover_engine  # noqa: F401
from rulemip.algorithms import column_generation  # noqa: F401
from rulemip.algorithms import cell_bnb  # noqa: F401
from rulemip.algorithms import kbox  # noqa: F401
from rulemip.algorithms import pruning_engines  # noqa: F401  (the pruning family)
# isort: on
