"""The solver-neutral model: :class:`MIPModel` (named blocks) and :class:`StandardForm`."""

from rulemip.model.mip_model import Block, MIPModel
from rulemip.model.standard_form import IndicatorConstraint, SeparableLoss, StandardForm

__all__ = ["Block", "IndicatorConstraint", "MIPModel", "SeparableLoss", "StandardForm"]
