r"""Solver-free proof of a two- or three-rule squared-loss optimum: replay the k-box search.

A certificate of two rules of at most L features claims a lower bound L_b on
:math:`R_\lambda`. With the cells, the box table and the constants of
:mod:`rulemip.algorithms.kbox.engine` (:math:`W R_\lambda = \mathrm{base} + C - \mathrm{gain}`),
the claim is that no ensemble of the language gains more than
:math:`G = \mathrm{base} + C - W L_b`. The replay runs the pair scan with G as its
first incumbent (the scan itself first scores every box with two copies): a finished
scan that met nothing above G proves the bound, any ensemble above it refutes it
(docs/explanation/kbox_search.md §4).
Everything is recomputed from the data and the recorded thresholds.
"""

from __future__ import annotations

from dataclasses import dataclass

from rulemip.algorithms.kbox.engine import KBoxSearch
from rulemip.algorithms.kbox.pairs import pair_search
from rulemip.algorithms.kbox.triples import triple_search
from rulemip.budget import Budget
from rulemip.parallel import resolve_n_jobs
from rulemip.rules.problem import KRuleProblem

__all__ = ["PairReplayResult", "replay_three_rules", "replay_two_rules"]

#: round-off allowed on a gain, relative to the larger of the claimed gain and the gain of
#: a perfect fit (``base + C``): the caller's slack (relative to the bound) is the
#: tolerance; this only keeps equal gains computed in two orders from refuting
GAIN_RTOL: float = 1e-14


@dataclass(frozen=True)
class PairReplayResult:
    """``proved``: no ensemble of the language beats the claimed bound; ``refuted``: one
    reaches a risk below it (``best_risk``); neither: the replay was stopped (a time limit);
    ``scored``: pairs scored exactly."""

    proved: bool
    refuted: bool
    best_risk: float
    scored: int
    seconds: float


def replay_two_rules(problem: KRuleProblem, *, lower_bound: float,
                     time_limit: float | None = None) -> PairReplayResult:
    """Re-derive (or refute) ``lower_bound`` on the best two-rule squared-loss risk of
    ``problem`` (the boxes of at most its ``max_rule_length`` features on its
    thresholds)."""
    return _replay(problem.with_rules(2), lower_bound=lower_bound, time_limit=time_limit)


def replay_three_rules(problem: KRuleProblem, *, lower_bound: float,
                       time_limit: float | None = None) -> PairReplayResult:
    """Re-derive (or refute) ``lower_bound`` on the best three-rule squared-loss risk of
    ``problem``: the three-box scan (:func:`~rulemip.algorithms.kbox.triples.triple_search`,
    the pair search first) with the claimed gain as its incumbent; ``scored`` counts
    triples."""
    return _replay(problem.with_rules(3), lower_bound=lower_bound, time_limit=time_limit)


def _replay(problem: KRuleProblem, *, lower_bound: float, time_limit: float | None
            ) -> PairReplayResult:
    k, reg = problem.n_rules, problem.reg
    search = KBoxSearch(problem.language, **problem.keywords())
    dataset = problem.dataset
    built = search.build_model(dataset)
    table = built.table
    W = built.cells.total_weight
    claim = built.base + built.cells.constant - W * lower_bound
    slack = GAIN_RTOL * max(abs(claim), built.base + built.cells.constant, 1e-300)
    budget = Budget.from_time_limit(time_limit)
    threads = resolve_n_jobs(-1)  # one per core, as a fit's default n_jobs
    # the scans' first incumbents (the best box with two copies; for three boxes the
    # ascents of triple_search) count when they are above the claim
    if k == 2:
        res = pair_search(table, reg, unit=built.unit, weight=built.cells.cell_weight,
                          budget=budget, incumbent_gain=claim - slack, threads=threads)
        gain, finished, scored, seconds = res.gain, res.finished, res.scored, res.seconds
    else:
        tri = triple_search(table, reg, unit=built.unit, weight=built.cells.cell_weight,
                            budget=budget, incumbent_gain=claim - slack, threads=threads)
        gain, finished, scored, seconds = tri.gain, tri.finished, tri.scored, tri.seconds
    best_risk = built.risk_of_gain(gain)
    if gain > claim + slack:
        return PairReplayResult(False, True, best_risk, scored, seconds)
    return PairReplayResult(finished, False, best_risk, scored, seconds)
