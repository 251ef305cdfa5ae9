"""The solver-neutral model: :class:`MIPModel` (named blocks) and :class:`StandardForm`,
and their export to LP/MPS files (:mod:`rulemip.model.export`) and Pyomo
(:mod:`rulemip.model.pyomo_export`)."""

from rulemip.model.export import (
    export_names,
    linearize_indicators,
    write_lp,
    write_mps,
)
from rulemip.model.mip_model import Block, MIPModel
from rulemip.model.pyomo_export import column_values, to_pyomo
from rulemip.model.standard_form import (
    IndicatorConstraint,
    SeparableLoss,
    StandardForm,
    as_standard_form,
)

__all__ = ["Block", "IndicatorConstraint", "MIPModel", "SeparableLoss", "StandardForm",
           "as_standard_form",
           "column_values", "export_names", "linearize_indicators", "to_pyomo", "write_lp",
           "write_mps"]
