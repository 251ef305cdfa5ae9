"""Local search over rules and boxes: swaps with proved 1-swap optimality
(:mod:`~rulemip.algorithms.local.rule_swaps`), multi-start with kicks
(:mod:`~rulemip.algorithms.local.multi_start`) and the box-index swap heuristic of the
box-selection CIP (:mod:`~rulemip.algorithms.local.box_swaps`)."""
