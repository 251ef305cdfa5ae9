r"""Engine ``"kbox"``: the exact search over ensembles of short boxes
(docs/explanation/kbox_search.md).

Squared loss, any ridge λ ≥ 0, with or without intercept, k ≤ 3 rules of at most
``max_rule_length`` restricted features on the candidate thresholds. Every distinct box of
the language is built as a bitset over the grid cells (:mod:`rulemip.algorithms.kbox.table`);
the best single box (two copies, k = 2) is the first incumbent, the warm
start (when it is in the language) the second; the pair scan of
:mod:`rulemip.algorithms.kbox.pairs` then scores every pair its bounds cannot exclude. A
finished scan proves the incumbent optimal over the whole language: the search reports its
risk as the lower bound, the driver recomputes the model's risk from the data and decides
the status (:func:`rulemip.solvers.status.promote`). A scan stopped by the budget reports
the 2^k-levels bound, which holds for every model.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_nonneg_float, check_positive_int
from rulemip.algorithms.kbox.pairs import pair_search
from rulemip.algorithms.kbox.table import BoxTable, build_box_table
from rulemip.algorithms.kbox.triples import triple_search
from rulemip.algorithms.solve.driver import solve
from rulemip.algorithms.solve.registry import register_formulation
from rulemip.budget import Budget, default_max_memory
from rulemip.data.dataset import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.cells import CellReduction, reduce_to_cells
from rulemip.formulations.levels import levels_bound
from rulemip.formulations.protocol import SearchOutcome
from rulemip.formulations.result import ExactResult
from rulemip.formulations.sizes import KBOX_ENGINE_MAX_RULES, count_boxes, kbox_table_bytes
from rulemip.losses import get_loss
from rulemip.model.mip_model import MIPModel
from rulemip.parallel import current_workers, resolve_n_jobs
from rulemip.refit import fit_weights
from rulemip.rules import RuleEnsemble
from rulemip.rules.ensemble import conditions_from_box
from rulemip.rules.language import Language, checked_language
from rulemip.rules.problem import KRuleProblem
from rulemip.rules.rule import Rule
from rulemip.solvers.base import Capability, SolverBackend
from rulemip.solvers.result import budget_limit

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["KBoxModel", "KBoxSearch", "check_kbox_fits", "solve_kbox"]
#: the relative slack subtracted from a finished scan's risk before it is reported as the
#: lower bound (the scan's own round-off; the driver compares it with the recomputed risk)
PROOF_SLACK = 1e-9


@dataclass
class KBoxModel:
    r"""What :meth:`KBoxSearch.build_model` derives from a dataset (a
    :class:`~rulemip.formulations.protocol.BuiltModel`): the problem it solves, the cells,
    the box table and the constants that turn a gain into a risk,
    :math:`R_\lambda = (\mathrm{base} + C - \mathrm{gain})/W`."""

    problem: KRuleProblem
    cells: CellReduction
    table: BoxTable
    base: float
    unit: float
    levels: float
    model: MIPModel = field(default_factory=lambda: MIPModel("kbox"))
    notes: list[str] = field(default_factory=list)
    bound_valid: bool = True

    @property
    def dataset(self) -> Dataset:
        return self.problem.dataset

    @property
    def n_boxes(self) -> int:
        return self.table.n_boxes

    @property
    def n_cells(self) -> int:
        return self.cells.n_cells

    @property
    def safe_bound(self) -> float:
        """The reduction constant over W (losses are ≥ 0 after it)."""
        return self.cells.constant / self.cells.total_weight

    def block(self, name: str) -> NDArray[np.int64]:
        raise KeyError(f"the k-box search has no model blocks (asked for {name!r})")

    def risk_of_gain(self, gain: float) -> float:
        return (self.base + self.cells.constant - gain) / self.cells.total_weight

    def box_cover(self, lower: Sequence[float], upper: Sequence[float]
                  ) -> NDArray[np.bool_]:
        """The cells inside the box ``lower < x <= upper`` (bounds snapped to the nearest
        candidate cut point, as :meth:`BoxSelectionProblem.encode` does)."""
        inside = np.ones(self.cells.n_cells, dtype=bool)
        for j, t in enumerate(self.cells.thresholds):
            g = self.cells.groups[:, j]
            if math.isfinite(lower[j]) and len(t):
                inside &= g >= int(np.argmin(np.abs(t - lower[j]))) + 1
            if math.isfinite(upper[j]) and len(t):
                inside &= g <= int(np.argmin(np.abs(t - upper[j])))
        return inside


def scan_threads() -> int:
    """Threads of the pair scan: the fit's ``n_jobs`` (the estimators' parameter, set for
    the fit by :func:`rulemip.parallel.search_workers`; ``-1``: one per core)."""
    return resolve_n_jobs(current_workers()[0])


class KBoxSearch:
    """The best ensemble of at most k ≤ 3 short boxes (module docstring); an
    :class:`~rulemip.formulations.protocol.OracleFormulation` that needs no solver.

    Parameters
    ----------
    language : the models searched (:class:`~rulemip.rules.language.Language`): k ≤ 3
        rules, the candidate cut points (None: from the data with ``max_thresholds``, as
        for the CIP), L = ``max_rule_length``, the most features a rule restricts
        (``None``: any number, which only small tables afford: the box table is refused
        beyond ``max_memory``), and the unpenalized intercept (without it the
        all-covering box is a rule).
    loss : ``"squared"`` only.
    reg : λ ≥ 0.
    max_memory : bytes the box table may take (default: the search memory budget).
    """

    engine = "kbox"
    #: the build asks the fit's budget between its stages (cells, box table)
    budgeted_build = True

    def __init__(self, language: Language, *, loss: str = "squared", reg: float = 1e-3,
                 max_thresholds: int | None = None, max_memory: int | None = None) -> None:
        lang = checked_language(language)
        k = lang.n_rules
        if k > KBOX_ENGINE_MAX_RULES:
            raise InvalidParameterError(
                f"the k-box search (engine='kbox') proves ensembles of at most "
                f"{KBOX_ENGINE_MAX_RULES} rules; got n_rules={k}. Use engine='auto'.")
        if get_loss(loss).name != "squared":
            raise InvalidParameterError(
                f"the k-box search (engine='kbox') is for squared loss; got loss={loss!r}. "
                "Use engine='auto'.")
        lam = check_nonneg_float(reg, "reg")
        assert lam is not None
        #: the models searched (its parts also as the attributes below)
        self.language = lang
        self.n_rules: int = k
        self.loss = "squared"
        self.reg = lam
        self.fit_intercept = lang.fit_intercept
        self.thresholds = None if lang.thresholds is None else list(lang.thresholds)
        self.max_thresholds = check_positive_int(max_thresholds, "max_thresholds",
                                                 allow_none=True)
        self.max_rule_length = lang.max_rule_length
        self.max_memory = max_memory

    # ------------------------------------------------------------------ the protocol
    def needs(self) -> set[Capability]:
        """Nothing: the search runs on the box table alone."""
        return set()

    def build_model(self, dataset: Dataset, *, backend: SolverBackend | None = None,
                    native: bool = True, warm_start: RuleEnsemble | None = None,
                    budget: Budget | None = None) -> KBoxModel:
        """Cells, the table of every distinct box of the language and the levels bound;
        raises :class:`~rulemip.budget.BudgetExpired` between the stages once ``budget``
        is spent."""
        clock = Budget.of(budget)
        ths = self.thresholds if self.thresholds is not None else \
            candidate_thresholds(dataset.X, self.max_thresholds, dataset.sample_weight)
        if len(ths) != dataset.d:
            raise InvalidParameterError(
                f"`thresholds` has {len(ths)} entries but the data has {dataset.d} features.")
        y = get_loss("squared").check_labels(np.asarray(dataset.y))
        cells = reduce_to_cells(dataset.X, y, ths, "squared", dataset.sample_weight)
        clock.check("reducing the data to cells")
        limit = default_max_memory() if self.max_memory is None else self.max_memory
        table = build_box_table(cells, self.language, max_bytes=limit)
        clock.check("building the k-box table")
        w = cells.cell_weight
        unit = float(w[0]) if len(w) and np.all(w == w[0]) else 0.0
        sse = levels_bound(table.ybar, w, 2 ** self.n_rules) if len(w) else 0.0
        levels = (max(sse, 0.0) + cells.constant) / cells.total_weight
        notes = [f"{cells.n_cells} occupied cells, {table.n_boxes} distinct boxes of at most "
                 f"{self.max_rule_length or dataset.d} features ({table.n_raw} before "
                 "merging equal covers)"]
        problem = KRuleProblem.of(dataset, self.n_rules, reg=self.reg,
                                  fit_intercept=self.fit_intercept, thresholds=ths,
                                  max_rule_length=self.max_rule_length)
        return KBoxModel(problem, cells, table, table.base, unit, levels, notes=notes)

    def encode_start(self, built: Any, ensemble: RuleEnsemble) -> FloatArray | None:
        """The warm start's boxes as table indices (``x``: k entries, −1 unused; stored as
        floats, the protocol's point type), or
        ``None`` when a rule is outside the language (more than L features, or a cover no
        box of the table has)."""
        x = np.full(self.n_rules, -1.0)
        for t, rule in enumerate(ensemble.rules[: self.n_rules]):
            if self.max_rule_length is not None and \
                    len({c.feature for c in rule.conditions}) > self.max_rule_length:
                return None
            lower = [-math.inf] * built.dataset.d
            upper = [math.inf] * built.dataset.d
            for c in rule.conditions:
                lower[c.feature] = max(lower[c.feature], c.lower)
                upper[c.feature] = min(upper[c.feature], c.upper)
            cover = built.box_cover(lower, upper)
            if not cover.any() or (self.fit_intercept and cover.all()):
                continue  # an empty rule, or the intercept's twin: contributes nothing
            b = built.table.find(cover)
            if b < 0:
                return None
            x[t] = b
        return x

    def decode_solution(self, built: Any, x: FloatArray
                        ) -> tuple[RuleEnsemble, float, list[str]]:
        """The boxes ``x`` (−1: unused) with weights refitted on the original data (copies
        of a box share its weight, the ridge optimum) and the recomputed risk."""
        ds = built.dataset
        bodies = []
        for b in np.rint(np.asarray(x, dtype=float)).astype(np.int64):
            if b < 0:
                continue
            lo, hi = built.table.bounds(int(b), built.cells.thresholds)
            bodies.append(conditions_from_box(lo, hi, ds.encoder, ds.feature_names))
        Q = np.column_stack([Rule(c).query(ds.X) for c in bodies]).astype(float) \
            if bodies else np.zeros((ds.n, 0))
        res = fit_weights(Q, ds.y, "squared", self.reg, self.fit_intercept,
                          sample_weight=ds.sample_weight)
        rules = [Rule(c, float(wt)) for c, wt in zip(bodies, res.weights, strict=True)]
        ens = RuleEnsemble(rules, res.intercept if self.fit_intercept else 0.0, "squared",
                           ds.encoder, ds.classes)
        return ens, float(res.risk), []

    def polish(self, built: Any, x: FloatArray) -> FloatArray | None:
        """No master point to repair."""
        return None

    def search(self, built: Any, *, backend: SolverBackend | None = None,
               budget: Budget, mip_gap: float = 1e-6, start: FloatArray | None = None,
               warm_start: RuleEnsemble | None = None, seed: int = 0,
               threads: int | None = None,
               callback: Callable[[dict[str, Any]], Any] | None = None) -> SearchOutcome:
        """Scan every single box (k = 1) or pair of boxes (k = 2) its bounds cannot
        exclude (module docstring), with ``threads`` workers (default: the fit's
        ``n_jobs``, :func:`scan_threads`), or on the fit's Dask ``scheduler`` (one chunk
        per worker thread at a time); the optimum does not depend on either."""
        table = built.table
        w = built.cells.cell_weight
        if table.n_boxes == 0:
            x = np.full(self.n_rules, -1.0)
            return SearchOutcome(x=x, lower_bound=built.risk_of_gain(0.0) * (1 - PROOF_SLACK),
                                 finished=True, method="enumeration")
        if self.n_rules == 1:
            K = table.V + self.reg
            gain = np.where(K > 0, table.S ** 2 / np.where(K > 0, K, 1.0), 0.0)
            b = int(np.argmax(gain))
            risk = built.risk_of_gain(float(gain[b]))
            return SearchOutcome(x=np.array([float(b)]),
                                 lower_bound=risk - PROOF_SLACK * max(abs(risk), 1e-12),
                                 finished=True, method="enumeration",
                                 iterations=table.n_boxes, objective=risk)
        if self.n_rules == 3:
            return self._search_triples(built, budget, start, threads, callback)
        pair = None
        if start is not None and len(start) == 2 and max(start) >= 0:
            s0, s1 = (int(v) for v in np.rint(start))
            pair = (s0, s1) if min(s0, s1) >= 0 else (max(s0, s1), max(s0, s1))
        res = pair_search(table, self.reg, unit=built.unit, weight=w, start=pair,
                          budget=budget, callback=_progress(built, callback),
                          threads=threads if threads is not None else scan_threads(),
                          scheduler=current_workers()[1])
        note = (f"pair scan: {res.scored} pairs scored, {res.nodes} trie nodes, "
                f"{res.checked} partners checked, "
                f"{res.boxes_done}/{table.n_boxes} first boxes in {res.seconds:.3g} s")
        return self._scan_outcome(built, budget, res.boxes, res.gain, res.finished,
                                  res.scored, "pair scan", note)

    def _search_triples(self, built: Any, budget: Budget, start: FloatArray | None,
                        threads: int | None,
                        callback: Callable[[dict[str, Any]], Any] | None) -> SearchOutcome:
        """k = 3: the pair search, then every triple its bounds cannot exclude
        (:func:`~rulemip.algorithms.kbox.triples.triple_search`)."""
        table = built.table
        s = None if start is None else [int(v) for v in np.rint(start)]
        res = triple_search(table, self.reg, unit=built.unit, weight=built.cells.cell_weight,
                            start=s, budget=budget, callback=_progress(built, callback),
                            threads=threads if threads is not None else scan_threads(),
                            scheduler=current_workers()[1])
        note = (f"triple scan: {res.pair_scored} pairs scored by the pair search, "
                f"{res.pairs} pairs visited, {res.searched} searched for a third box, "
                f"{res.scored} triples scored, {res.strips} strips, {res.checked} third "
                f"boxes checked, {res.boxes_done}/{table.n_boxes} first boxes in "
                f"{res.seconds:.3g} s")
        return self._scan_outcome(built, budget, res.boxes, res.gain, res.finished,
                                  res.scored, "triple scan", note)

    def _scan_outcome(self, built: Any, budget: Budget, boxes: Sequence[int], gain: float,
                      finished: bool, scored: int, method: str, note: str) -> SearchOutcome:
        """A scan's result as the protocol's outcome: a finished scan proves its gain's
        risk (less :data:`PROOF_SLACK`, relative) as the lower bound; a stopped one keeps
        the 2^k-levels bound, which holds for every model."""
        risk = built.risk_of_gain(gain)
        x = np.array(boxes, dtype=float)
        if finished:
            lower = risk - PROOF_SLACK * max(abs(risk), 1e-12)
            return SearchOutcome(x=x, lower_bound=lower, finished=True, method=method,
                                 iterations=scored, objective=risk, notes=(note,))
        limit = budget_limit(budget)
        return SearchOutcome(x=x, lower_bound=built.levels, finished=False, limit=limit,
                             method=method, iterations=scored, objective=risk,
                             notes=(note, f"stopped by the {limit.value} limit; the bound is "
                                          f"the {2 ** self.n_rules}-levels bound"))


def _progress(built: KBoxModel, callback: Callable[[dict[str, Any]], Any] | None
              ) -> Callable[[dict[str, Any]], Any] | None:
    """The scan's reports (first boxes done, pairs scored, incumbent gain) as the progress
    lines of every search: seconds, first boxes done as the iteration, the incumbent's
    risk and the bound that holds while the scan runs (the levels bound), and a detail
    naming the first boxes done and the pairs or triples scored."""
    if callback is None:
        return None
    t0 = time.perf_counter()

    what = "triples" if built.problem.n_rules == 3 else "pairs"

    def report(info: dict[str, Any]) -> Any:
        return callback({**info, "time": time.perf_counter() - t0,
                         "iteration": int(info["boxes_done"]),
                         "ub": built.risk_of_gain(float(info["gain"])), "lb": built.levels,
                         "detail": f"{info['boxes_done']}/{info['boxes']} first boxes, "
                                   f"{info['scored']} {what} scored"})

    return report


def solve_kbox(problem: KRuleProblem, *, mip_gap: float = 1e-6,
               warm_start: RuleEnsemble | None = None,
               callback: Callable[[dict[str, Any]], None] | None = None,
               budget: Budget | None = None) -> ExactResult:
    """Certified best ensemble of ``problem`` (at most 2 boxes of at most its rule length
    of features, squared loss) through the driver, within ``budget`` (None: unlimited)."""
    formulation = KBoxSearch(problem.language, **problem.keywords())
    clock = Budget.coerce(budget, None)
    return solve(formulation, problem.dataset, solver="auto", budget=clock, mip_gap=mip_gap,
                 warm_start=warm_start, callback=callback)


def check_kbox_fits(problem: KRuleProblem) -> None:
    """Refuse, before any work, what the k-box search cannot hold: more than
    :data:`~rulemip.formulations.sizes.KBOX_ENGINE_MAX_RULES` rules, or a box table beyond the
    search's memory budget (the size guard registered with the engine)."""
    k = problem.n_rules
    if k > KBOX_ENGINE_MAX_RULES:
        raise InvalidParameterError(
            f"the k-box search (engine='kbox') proves ensembles of at most {KBOX_ENGINE_MAX_RULES} "
            f"rules; got n_rules={k}. Use engine='auto'.")
    rows = int(problem.dataset.X.shape[0])
    limit = default_max_memory()
    n_boxes = count_boxes(problem.language)
    if kbox_table_bytes(n_boxes, rows) > limit:
        raise InvalidParameterError(
            f"the k-box search (engine='kbox') builds every box of the language, and these "
            f"thresholds give {n_boxes:.3g} of them "
            f"(more than {limit / 2**30:.3g} GiB); use a smaller `max_rule_length` or "
            "`max_thresholds`, or engine='auto'.")


register_formulation("kbox", lambda p: KBoxSearch(p.language, **p.keywords()),
                     losses=("squared",), fits=check_kbox_fits,
                     wants_local_start=False, needs=frozenset(), oracle=True,
                     description="exact search over ensembles of k <= 3 short boxes "
                                 "(docs/explanation/kbox_search.md)")
