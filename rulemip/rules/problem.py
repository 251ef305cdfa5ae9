r"""The k-rule problem as one value.

A :class:`KRuleProblem` is what every exact k-rule fit solves: minimize the regularized
risk

.. math:: R_\lambda(f) = \frac{1}{\sum_i w_i}\Big(\sum_i w_i\, l(f(x_i), y_i)
          + \lambda \lVert\beta\rVert^2\Big)

over the models of its :class:`~rulemip.rules.language.Language` — at most ``n_rules``
rules whose interval bounds are candidate thresholds, each restricting at most
``max_rule_length`` features, with an intercept :math:`\beta_0` or none
(docs/explanation/notation.md). It is built once at the surface (the estimators, the
command line, gap studies) and handed whole to the fit's plan, the engines' factories,
the local phases, the bounds and the certificate, as skglm hands its solvers a datafit
and a penalty rather than their parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_nonneg_float, check_positive_int
from rulemip.data.dataset import Dataset
from rulemip.refit import fit_weights
from rulemip.rules.ensemble import RuleEnsemble
from rulemip.rules.language import Language

FloatArray = NDArray[np.float64]

__all__ = ["KRuleProblem"]


@dataclass(frozen=True, eq=False)
class KRuleProblem:
    """One k-rule problem (module docstring).

    Attributes
    ----------
    dataset : the data (labels in the loss' convention, sample weights included).
    loss : ``"squared"``, ``"logistic"`` or ``"poisson"``.
    language : the models the problem ranges over (rule count, thresholds, rule length,
        intercept).
    reg : the ridge :math:`\\lambda \\ge 0`.
    """

    dataset: Dataset
    loss: str
    language: Language
    reg: float

    @classmethod
    def of(cls, dataset: Dataset, n_rules: int, *, loss: str = "squared",
           reg: float = 1e-3, fit_intercept: bool = True,
           thresholds: Sequence[FloatArray], max_rule_length: int | None = None
           ) -> KRuleProblem:
        """The problem of ``n_rules`` rules over ``thresholds`` on ``dataset`` (``n_rules``
        a positive integer, ``reg`` ≥ 0: :class:`~rulemip.exceptions.InvalidParameterError`
        otherwise)."""
        k = check_positive_int(n_rules, "n_rules")
        lam = check_nonneg_float(reg, "reg")
        assert k is not None and lam is not None
        ths = [np.asarray(t, dtype=float) for t in thresholds]
        return cls(dataset, loss, Language(k, ths, max_rule_length, bool(fit_intercept)),
                   float(lam))

    # ------------------------------------------------------------------ the language
    @property
    def n_rules(self) -> int:
        return self.language.n_rules

    @property
    def thresholds(self) -> list[FloatArray]:
        ths = self.language.thresholds
        return [] if ths is None else list(ths)

    @property
    def max_rule_length(self) -> int | None:
        return self.language.max_rule_length

    @property
    def fit_intercept(self) -> bool:
        return self.language.fit_intercept

    @property
    def squared(self) -> bool:
        return self.loss == "squared"

    def with_rules(self, n_rules: int) -> KRuleProblem:
        """The same problem with ``n_rules`` rules (a path over k, one round of boosting)."""
        lang = self.language
        return KRuleProblem(self.dataset, self.loss,
                            Language(int(n_rules), lang.thresholds, lang.max_rule_length,
                                     lang.fit_intercept), self.reg)

    def keywords(self) -> dict[str, Any]:
        """The problem's objective as the keywords of a formulation's constructor, whose
        first argument is the :attr:`language`: ``Formulation(problem.language,
        **problem.keywords())`` (``loss``, ``reg``)."""
        return {"loss": self.loss, "reg": self.reg}

    # ------------------------------------------------------------------ models
    def risk(self, ensemble: RuleEnsemble) -> float:
        """:math:`R_\\lambda` of ``ensemble`` recomputed from the data."""
        ds = self.dataset
        return float(ensemble.risk(ds.X, ds.y, reg=self.reg, sample_weight=ds.sample_weight))

    def violations(self, ensemble: RuleEnsemble) -> list[str]:
        """What puts ``ensemble`` outside the language (empty: it is a model of it)."""
        return self.language.violations(ensemble)

    def empty_model(self) -> RuleEnsemble:
        """The model without rules: the optimal intercept (or the zero function), a model
        of every language."""
        ds = self.dataset
        fit = fit_weights(np.zeros((ds.X.shape[0], 0)), ds.y, self.loss, self.reg,
                          self.fit_intercept, ds.sample_weight)
        return RuleEnsemble([], intercept=float(fit.intercept), loss=self.loss,
                            classes=ds.classes)
