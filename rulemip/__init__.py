"""rulemip — exact sparse rule models.

Certified-optimal small additive rule ensembles (interval-cover MIP and its convex integer
reformulation), the rule-boosting family (SGS, SGB, SXB, CGB, COB), approximation-gap
certificates, rule extraction from tree ensembles, and regularized gradient boosting.

The public names below are imported lazily: ``import rulemip`` loads no solver and no
scikit-learn until a name is used. The names deprecated in 0.2 were removed in 0.3:
``CHANGELOG.md`` lists each with its replacement.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.3.0"

_EXPORTS: dict[str, str] = {
    # data, rules, losses
    "Dataset": "rulemip.data",
    "Condition": "rulemip.rules",
    "Rule": "rulemip.rules",
    "RuleEnsemble": "rulemip.rules",
    "get_loss": "rulemip.losses",
    "load_bundled": "rulemip.data",
    "compile_kernels": "rulemip._kernels",
    # boosting
    "RuleBooster": "rulemip.boosting",
    "RuleBoostingRegressor": "rulemip.estimators",
    "RuleBoostingClassifier": "rulemip.estimators",
    # exact learning and certificates
    "ExactRuleEnsembleRegressor": "rulemip.estimators",
    "ExactRuleEnsembleClassifier": "rulemip.estimators",
    "Certificate": "rulemip.certify",
    "verify": "rulemip.certify",
    "gap_study": "rulemip.certify",
    "GapStudy": "rulemip.certify",
    # tree ensembles
    "TreeRuleExtractor": "rulemip.estimators",
    "RGBClassifier": "rulemip.estimators",
    "RGBRegressor": "rulemip.estimators",
    # extension points (docs/howto/add_formulation.md, docs/howto/backends.md)
    "Formulation": "rulemip.formulations.protocol",
    "OracleFormulation": "rulemip.formulations.protocol",
    "SearchOutcome": "rulemip.formulations.protocol",
    "KRuleProblem": "rulemip.rules.problem",
    "Language": "rulemip.rules.language",
    "register_formulation": "rulemip.algorithms.solve.registry",
    "solve": "rulemip.algorithms.solve.driver",
    "register_backend": "rulemip.solvers.base:register",
    # errors and warnings
    "RulemipError": "rulemip.exceptions",
    "InvalidDataError": "rulemip.exceptions",
    "InvalidParameterError": "rulemip.exceptions",
    "FormulationError": "rulemip.exceptions",
    "BackendUnavailableError": "rulemip.exceptions",
    "UnsupportedCapabilityError": "rulemip.exceptions",
    "SolverError": "rulemip.exceptions",
    "CertificateError": "rulemip.exceptions",
    "SolveLimitWarning": "rulemip.exceptions",
    "HeuristicBoundWarning": "rulemip.exceptions",
}

__all__ = [*sorted(_EXPORTS), "__version__"]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'rulemip' has no attribute {name!r}")
    module, _, attr = target.partition(":")  # "module:attr" exports under another name
    value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
