"""Regularized gradient boosting, [RGB] Algorithm 1 (docs/explanation/rgb.md): the booster
(:mod:`~rulemip.boosting.rgb.algorithm`), its families of regularized trees
(:mod:`~rulemip.boosting.rgb.families`), the trees as rules
(:mod:`~rulemip.boosting.rgb.rules`) and the choice of β (:mod:`~rulemip.boosting.rgb.select`)."""

from rulemip.boosting.rgb.algorithm import (
    RGBCandidate,
    RGBFit,
    RGBRound,
    decision_function,
    fit_rgb,
    line_search_step,
    lipschitz_step,
    newton_node_values,
    target_scale,
)

__all__ = ["RGBCandidate", "RGBFit", "RGBRound", "decision_function", "fit_rgb",
           "line_search_step", "lipschitz_step", "newton_node_values", "target_scale"]
