"""rulemip.algorithms: the exact fit and the families that serve it (docs/architecture.md).

One folder per family or role; the import-linter contract "algorithms: rooms" in
``pyproject.toml`` keeps each room to the ones below it:

- :mod:`~rulemip.algorithms.fit_plan`, :mod:`~rulemip.algorithms.fit_decision` — the
  exact fit as a plan of phases under one budget, decided once (what the estimators, the
  command line and gap studies run);
- :mod:`rulemip.algorithms.krule` — the exact k-rule engines (interval-cover MIP,
  box-selection CIP by OA or branch and bound, column generation, cell sweep, MIP
  boosting) and the two-rule bound;
- :mod:`rulemip.algorithms.kbox` — the exact search over ensembles of short boxes;
- :mod:`rulemip.algorithms.pruning` — tree-ensemble pruning: its driver and engines
  (exact OA, CBCD paths, relax-and-round);
- :mod:`rulemip.algorithms.local` — local search over rules and boxes (swaps, kicks,
  multi-start), the fit's local phase and the engines' primal heuristics;
- :mod:`rulemip.algorithms.solve` — the one driver of the k-rule engines, its registry
  and status decision;
- :mod:`rulemip.algorithms.convex` — outer approximation, tangent cuts and Frank–Wolfe.

Importing the package registers the built-in engines, each in its own module (the
driver imports none of them): ``"cip"`` and ``"cip-bnb"``
(:mod:`~rulemip.algorithms.krule.box_selection`), ``"mip"``
(:mod:`~rulemip.algorithms.krule.interval_cover`), ``"cg"``
(:mod:`~rulemip.algorithms.krule.column_generation`), ``"cell-bnb"``
(:mod:`~rulemip.algorithms.krule.cell_bnb`) and ``"kbox"``
(:mod:`~rulemip.algorithms.kbox.engine`), in that order (the order of ``ENGINES``); and the
tree-pruning engines ``"exact"``, ``"path"``, ``"relax_round"`` and ``"mip"``
(:mod:`~rulemip.algorithms.pruning.engines`, driven by
:mod:`~rulemip.algorithms.pruning.driver`).
"""

# isort: off
import rulemip.algorithms.krule.box_selection
import rulemip.algorithms.krule.interval_cover
import rulemip.algorithms.krule.column_generation
import rulemip.algorithms.krule.cell_bnb
import rulemip.algorithms.kbox.engine
import rulemip.algorithms.pruning.engines  # noqa: F401  (the pruning family)
# isort: on
