r"""Choose RGB's :math:`\beta` by an internal validation split (docs/explanation/rgb.md §9).

When the user leaves ``beta=None``, the estimators split the training sample once —
a fraction :data:`VALIDATION_FRACTION` held out, stratified by label for classification —,
run [RGB] Algorithm 1 on the rest for every :math:`\beta` in :data:`AUTO_BETAS`, and keep the
:math:`\beta` whose model has the least mean validation loss
:math:`\frac1{|V|}\sum_{i\in V}\Phi(y_i, F(x_i))` (logistic, squared or Poisson, the loss
being minimized; ties go to the larger :math:`\beta`, the simpler model). The final model is
then fitted on the whole sample with that :math:`\beta`.

:data:`AUTO_BETAS` is the paper's grid {0.001, 0.01, 0.1, 0.3, 1} without 0.001, which was
never the best on the benchmark sets (docs/benchmarks/rgb.md). Samples too small to hold out
:data:`MIN_VALIDATION` points (or, for classification, two of each class) are not split;
:math:`\beta` is then :data:`FALLBACK_BETA`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.boosting.rgb.algorithm import RGBFit, decision_function
from rulemip.budget import Budget
from rulemip.losses import get_loss

AUTO_BETAS: tuple[float, ...] = (0.01, 0.1, 0.3, 1.0)
VALIDATION_FRACTION = 0.2
MIN_VALIDATION = 10
FALLBACK_BETA = 0.1


def validation_split(y: NDArray[Any], stratify: bool, rng: np.random.RandomState
                     ) -> tuple[NDArray[np.int64], NDArray[np.int64]] | None:
    """Indices (train, validation) of a random split holding out
    :data:`VALIDATION_FRACTION` of the rows (per class when ``stratify``); ``None`` when the
    sample is too small (module docstring)."""
    m = len(y)
    n_val = round(VALIDATION_FRACTION * m)
    if n_val < MIN_VALIDATION or m - n_val < MIN_VALIDATION:
        return None
    if not stratify:
        perm = rng.permutation(m)
        return np.sort(perm[n_val:]), np.sort(perm[:n_val])
    val: list[NDArray[np.int64]] = []
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        k = round(VALIDATION_FRACTION * len(rows))
        if k < 2 or len(rows) - k < 2:
            return None
        val.append(rng.permutation(rows)[:k])
    v = np.sort(np.concatenate(val))
    return np.setdiff1d(np.arange(m), v), v


def select_beta(X: NDArray[Any], y: NDArray[Any], loss: str, stratify: bool,
                fit: Callable[[NDArray[Any], NDArray[Any], float, Budget], RGBFit],
                random_state: Any, budget: Budget, fits: dict[float, RGBFit] | None = None
                ) -> tuple[float, dict[float, float]]:
    r"""The :math:`\beta` of :data:`AUTO_BETAS` with the least validation loss.

    Parameters
    ----------
    X, y : the training sample (labels in the loss' convention).
    loss : the loss name (its mean on the validation rows is the criterion).
    stratify : split per class (classification).
    fit : ``fit(X_train, y_train, beta, budget) -> RGBFit``, Algorithm 1 with every other
        option fixed.
    random_state : seed of the split.
    budget : shared by the candidate fits; once it has run out, the remaining candidates
        are skipped (a candidate stopped by it is still compared).
    fits : when given, receives each candidate's fit by its β (the estimators keep the
        chosen one for a time limit that leaves the final fit no round).

    Returns
    -------
    beta, losses : the chosen :math:`\beta` and the validation loss of every candidate
        fitted (empty when the sample was not split: then ``beta`` is
        :data:`FALLBACK_BETA`).
    """
    from rulemip._validation import check_random_state

    rng = check_random_state(random_state)
    split = validation_split(y, stratify, rng)
    if split is None:
        return FALLBACK_BETA, {}
    train, val = split
    loss_obj = get_loss(loss)
    y_val = loss_obj.check_labels(np.asarray(y[val], dtype=float))
    losses: dict[float, float] = {}
    for beta in AUTO_BETAS:
        if losses and budget.expired():
            break
        result = fit(X[train], y[train], beta, budget)
        if fits is not None:
            fits[beta] = result
        F = decision_function(result.intercept, result.trees, result.coefs, X[val])
        losses[beta] = float(np.mean(loss_obj.value(F, y_val)))
    best = min(losses.values())
    chosen = max(b for b, v in losses.items() if v <= best)
    return chosen, losses
