"""The solver-neutral model: :class:`MIPModel` (named blocks) and :class:`StandardForm`,
and their export to LP/MPS files and Pyomo (:mod:`rulemip.model.export`)."""

from rulemip.model.export import (
    column_values,
    export_names,
    linearize_indicators,
    to_pyomo,
    write_lp,
    write_mps,
)
from rulemip.model.mip_model import Block, MIPModel
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
