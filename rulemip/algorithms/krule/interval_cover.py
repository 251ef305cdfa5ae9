"""The interval-cover MIP as the ``"mip"`` engine ([GAP] §4.1,
docs/explanation/interval_cover.md).

:class:`~rulemip.formulations.interval_cover.IntervalCoverMIP` is a model formulation: the
driver (:func:`rulemip.algorithms.solve.driver.solve`) hands its model to the backend natively or
drives a MILP master by tangent cuts. It registers here, beside the driver rather than in
it, the way a third-party formulation would (docs/howto/add_formulation.md).
"""

from __future__ import annotations

from rulemip.algorithms.solve.registry import register_formulation
from rulemip.formulations.interval_cover import BIGM_NEEDS, IntervalCoverMIP

register_formulation("mip", lambda p: IntervalCoverMIP(p.language, **p.keywords()),
                     needs=BIGM_NEEDS, oracle=False,
                     description="interval-cover MIP: native or tangent-cut OA")

__all__: list[str] = []
