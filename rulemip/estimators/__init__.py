"""scikit-learn estimators, one module per family, imported lazily."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "RuleBoostingRegressor": "rulemip.estimators.boosting",
    "RuleBoostingClassifier": "rulemip.estimators.boosting",
    "ExactRuleEnsembleRegressor": "rulemip.estimators.exact",
    "ExactRuleEnsembleClassifier": "rulemip.estimators.exact",
    "TreeRuleExtractor": "rulemip.estimators.tree_rules",
    "RGBClassifier": "rulemip.estimators.rgb",
    "RGBRegressor": "rulemip.estimators.rgb",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rulemip.estimators' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
