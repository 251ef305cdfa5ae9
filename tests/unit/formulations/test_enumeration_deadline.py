"""Enumeration honours its deadline per support when evaluations are refits.

Logistic/Poisson supports are evaluated by a Newton refit each; the clock used to be read
once per 20 000 supports, so a 2 s limit ran for 20 s. The oracle below makes the deadline
pass during its third evaluation; the enumeration must stop right after it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds
from rulemip.formulations.box_oracles import enumerate_optimum
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.rules.language import Language


class _SlowAfter:
    """Delegates to an oracle; the ``trigger``-th call sleeps past ``deadline``."""

    def __init__(self, inner: Any, deadline: float, trigger: int) -> None:
        self.inner, self.deadline, self.trigger, self.calls = inner, deadline, trigger, 0

    def value_and_gradient(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        self.calls += 1
        if self.calls == self.trigger:
            time.sleep(max(self.deadline - time.perf_counter(), 0.0) + 0.01)
        out: tuple[float, np.ndarray] = self.inner.value_and_gradient(z)
        return out


def test_logistic_enumeration_stops_within_one_support_of_the_deadline() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=40) > 0, 1, 0)
    ds = Dataset.from_arrays(X, y, loss="logistic")
    prob = BoxSelectionCIP(Language(2, candidate_thresholds(ds.X, 3)), loss="logistic",
                           reg=0.5).build(ds)
    assert prob.n_boxes > 20
    slow = _SlowAfter(prob.oracle, time.perf_counter() + 0.2, trigger=3)
    _, _, lb, complete = enumerate_optimum(slow, prob.n_boxes, 2,  # type: ignore[arg-type]
                                           budget=Budget.of(slow.deadline))
    assert not complete and lb == -np.inf
    assert slow.calls <= 4
