"""The exact three-box search (rulemip.algorithms.kbox.triples, triple_kernel): its optimum
equals brute force over every multiset of three boxes on small random tables (ties,
duplicate rows, constant features, weights, intercept on and off, ridge 0 to 10, length
caps 1–3 and None), its corner bound never excludes a third box that reaches the incumbent,
constructed singular triples (C = A ⊔ B) score as their span, a stopped search returns a
valid bound, and threads give the same optimum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rulemip.algorithms.fit_plan import solve_exact
from rulemip.algorithms.kbox import triple_kernel as tk
from rulemip.algorithms.kbox.pairs import scan_layout
from rulemip.algorithms.kbox.table import build_box_table
from rulemip.algorithms.kbox.triples import triple_search, triple_value
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.formulations.cells import reduce_to_cells
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.testing.brute_force import brute_force_optimum

from .random_tables import random_table


def _data(seed: int, n: int = 12, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    return random_table(seed, n, d, second_rule=True)


def _weights(kind: object, n: int, seed: int) -> np.ndarray | None:
    rng = np.random.default_rng(100 + seed)
    if kind == "int":
        return rng.integers(1, 4, size=n).astype(float)  # cells of unequal weight
    if kind:
        return rng.uniform(0.2, 2.0, size=n)
    return None


CASES = [  # seed, reg, fit_intercept, length, weighted
    (0, 1e-3, True, 2, False), (1, 0.0, True, 2, False), (2, 10.0, False, 2, True),
    (3, 1.0, False, 1, False), (4, 1e-3, True, 1, True), (5, 0.1, True, 3, False),
    (6, 0.0, False, 2, "int"), (7, 3.0, True, None, False), (8, 0.0, True, 1, "int"),
    (9, 1e-3, False, None, True), (10, 0.5, True, 2, "int"), (11, 1e-2, True, 3, True),
]


@pytest.mark.parametrize(("seed", "reg", "fit_intercept", "length", "weighted"), CASES)
def test_three_boxes_equal_brute_force(seed, reg, fit_intercept, length, weighted):
    X, y = _data(seed)
    sw = _weights(weighted, len(y), seed)
    th = candidate_thresholds(X, 2)
    ds = Dataset.from_arrays(X, y, sample_weight=sw)
    problem = KRuleProblem.of(ds, 3, reg=reg, fit_intercept=fit_intercept, thresholds=th,
                              max_rule_length=length)
    res = solve_exact(problem, engine="kbox", budget=Budget.from_time_limit(None, work_limit=10**6))
    bf = brute_force_optimum(X, y, 3, reg=reg, fit_intercept=fit_intercept, thresholds=th,
                             sample_weight=sw, max_rule_length=length)
    assert res.engine == "kbox"
    assert res.is_optimal
    assert res.risk == pytest.approx(bf.risk, rel=1e-9, abs=1e-12)
    assert res.lower_bound <= bf.risk + 1e-9 * max(1.0, abs(bf.risk))
    assert len(res.ensemble.rules) <= 3
    assert all(length is None or len({c.feature for c in r.conditions}) <= length
               for r in res.ensemble.rules)


def _table(seed: int, n: int, length: int | None, fit_intercept: bool, n_th: int = 3):
    X, y = _data(seed, n=n)
    cells = reduce_to_cells(X, y, candidate_thresholds(X, n_th), "squared", None)
    table = build_box_table(cells, Language(2, max_rule_length=length, fit_intercept=fit_intercept))
    w = cells.cell_weight
    unit = float(w[0]) if np.all(w == w[0]) else 0.0
    return table, w, unit


@pytest.mark.parametrize(("seed", "reg", "fit_intercept"),
                         [(0, 0.0, True), (1, 1e-3, False), (2, 2.0, True)])
def test_a_replayed_optimum_is_met_again(seed, reg, fit_intercept):
    """Started at the optimum gain minus a hair, the scan must meet a triple at least that
    good again: no bound (node, run tails, member) excludes the optimum."""
    table, w, unit = _table(seed, 16, 2, fit_intercept)
    best = _dense_best_triple(table, reg, w)
    res = triple_search(table, reg, unit=unit, weight=w, incumbent_gain=best * (1 - 1e-7))
    assert res.finished
    assert res.gain == pytest.approx(best, rel=1e-9)
    assert triple_value(table, reg, res.boxes, unit=unit, weight=w) == \
        pytest.approx(best, rel=1e-9)


def test_the_corner_bound_never_excludes_a_third_box_that_reaches_the_incumbent():
    """``may_complete`` over any rectangle of correlations holding a real third box (and a
    z range holding its z) answers yes when that box's exact gain reaches the threshold;
    the test fails when the bound is made too strong (e.g. the corners dropped)."""
    table, w, unit = _table(3, 24, 2, True)
    lay = scan_layout(table, 1e-3, unit=unit, weight=w)
    rng = np.random.default_rng(0)
    bits, N, K, z = lay.bits, lay.N, lay.K, lay.z
    W = lay.W

    cover = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :len(w)]

    def rho(x, y):
        n = float(w @ (cover[x] & cover[y]))
        return (n - N[x] * N[y] / W) / np.sqrt(K[x] * K[y])

    checked = 0
    for _ in range(400):
        a, b, c = rng.choice(lay.n, size=3, replace=False)
        rab, rac, rbc = rho(a, b), rho(a, c), rho(b, c)
        det2 = 1 - rab * rab
        if det2 <= 1e-9:
            continue
        u1 = (z[a] - rab * z[b]) / det2
        u2 = (z[b] - rab * z[a]) / det2
        g2 = z[a] * u1 + z[b] * u2
        gain = tk.triple_gain(z[a], z[b], z[c], rab, rac, rbc)
        for _ in range(5):
            e = rng.uniform(0, 0.2, size=6)
            assert tk.may_complete(g2, u1, u2, rab, det2, rac - e[0], rac + e[1],
                                   rbc - e[2], rbc + e[3], z[c] - e[4], z[c] + e[5],
                                   gain * (1 - 1e-12))
        checked += 1
    assert checked > 100


def test_triple_gain_is_the_least_squares_gain_and_singular_triples_score_their_span():
    """The Schur form equals the 3 × 3 least-squares gain; a constructed C = A ⊔ B at
    ridge 0 (with an intercept: columns dependent) scores what the pair A, B scores."""
    X = np.arange(12, dtype=float)[:, None]
    y = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8], dtype=float)
    cells = reduce_to_cells(X, y, [np.array([2.5, 6.5])], "squared", None)
    table = build_box_table(cells, Language(2, max_rule_length=1))
    w = cells.cell_weight  # 3, 4, 5 rows: cells of unequal weight (unit 0)
    lay = scan_layout(table, 0.0, unit=0.0, weight=w)
    # boxes by their group runs: A = [0, 0], B = [1, 1], C = A ⊔ B = [0, 1]
    runs = {(int(table.lo[b, 0]), int(table.hi[b, 0])): b for b in range(table.n_boxes)}
    A, B, C = runs[(0, 0)], runs[(1, 1)], runs[(0, 1)]
    pair = triple_value(table, 0.0, (A, B, B), unit=0.0, weight=w)
    assert triple_value(table, 0.0, (A, B, C), unit=0.0, weight=w) == pytest.approx(pair)
    pos = {int(p): i for i, p in enumerate(lay.perm)}
    a, b, c = pos[A], pos[B], pos[C]
    cover = np.unpackbits(lay.bits.view(np.uint8), axis=1, bitorder="little")[:, :3]

    def rho(x, yy):
        n = float(w @ (cover[x] & cover[yy]))
        return (n - lay.N[x] * lay.N[yy] / lay.W) / np.sqrt(lay.K[x] * lay.K[yy])

    g = tk.triple_gain(lay.z[a], lay.z[b], lay.z[c], rho(a, b), rho(a, c), rho(b, c))
    assert np.isfinite(g)
    assert g == pytest.approx(pair, rel=1e-9)
    res = triple_search(table, 0.0, unit=0.0, weight=w)
    assert res.finished and res.gain == pytest.approx(_dense_best_triple(table, 0.0, w))


def test_a_stopped_search_returns_a_valid_bound_and_repeats():
    """A work limit stops the scan: not optimal, limit ``node``, the 8-levels bound below
    the brute-force optimum, the same model on a second run."""
    X, y = _data(3, n=40)
    th = candidate_thresholds(X, 3)
    ds = Dataset.from_arrays(X, y)
    bf = brute_force_optimum(X, y, 3, reg=1e-3, thresholds=th, max_rule_length=1)
    problem = KRuleProblem.of(ds, 3, reg=1e-3, thresholds=th, max_rule_length=1)
    runs = [solve_exact(problem, engine="kbox",
                        budget=Budget.from_time_limit(None, work_limit=5)) for _ in range(2)]
    for res in runs:
        assert not res.is_optimal and res.limit is not None and res.limit.value == "node"
        assert res.lower_bound <= bf.risk
        assert res.risk >= bf.risk - 1e-9 * abs(bf.risk)
    assert runs[0].risk == runs[1].risk


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_threads_find_the_same_triple(fit_intercept):
    table, w, unit = _table(7, 40, 2, fit_intercept)
    runs = [triple_search(table, 1e-3, unit=unit, weight=w, threads=t) for t in (1, 2)]
    assert all(r.finished for r in runs)
    assert len({(r.boxes, r.gain) for r in runs}) == 1


def test_a_warm_start_of_three_rules_is_the_first_incumbent():
    """A three-rule warm start in the language is kept when the budget is spent at once."""
    X, y = _data(5, n=20)
    th = candidate_thresholds(X, 2)
    ds = Dataset.from_arrays(X, y)
    problem = KRuleProblem.of(ds, 3, reg=1e-3, thresholds=th, max_rule_length=2)
    full = solve_exact(problem, engine="kbox")
    assert full.is_optimal
    res = solve_exact(problem, engine="kbox", budget=Budget.from_time_limit(None, work_limit=1),
                      warm_start=full.ensemble)
    assert not res.is_optimal
    assert res.risk == pytest.approx(full.risk, rel=1e-9)


def _dense_best_triple(table, reg: float, w: np.ndarray) -> float:
    """The best multiset of three boxes by brute force, vectorized: every (i ≤ j ≤ k), its
    3 × 3 ridge Gram matrix solved (pseudo-inverse where singular)."""
    n_cells = len(w)
    Q = np.unpackbits(table.bits.view(np.uint8), axis=1, bitorder="little")[:, :n_cells]
    Q = Q.astype(float)
    W = float(w.sum())
    G = (Q * w) @ Q.T
    if table.centred:
        G = G - np.outer(table.N, table.N) / W
    idx = np.array(list(itertools.combinations_with_replacement(range(table.n_boxes), 3)))
    M = G[idx[:, :, None], idx[:, None, :]] + reg * np.eye(3)
    g = table.S[idx]
    sol = np.einsum("tij,tj->ti", np.linalg.pinv(M, rcond=1e-12, hermitian=True), g)
    return float(np.max(np.einsum("ti,ti->t", g, sol)))


@pytest.mark.parametrize(("seed", "reg", "fit_intercept", "length", "n_th"),
                         [(20, 1e-3, True, 2, 2), (21, 0.0, True, 2, 3), (22, 1.0, False, 2, 2),
                          (23, 1e-3, True, 1, 3), (24, 0.1, False, None, 3)])
def test_larger_languages_equal_the_dense_brute_force(seed, reg, fit_intercept, length,
                                                      n_th):
    """On 40 rows (up to about ninety boxes: linked and unlinked pairs, runs, tails and
    the corner bounds all at work) the scan's optimum equals the best of every multiset of
    three boxes."""
    table, w, unit = _table(seed, 40, length, fit_intercept, n_th)
    res = triple_search(table, reg, unit=unit, weight=w)
    assert res.finished
    best = _dense_best_triple(table, reg, w)
    assert res.gain == pytest.approx(best, rel=1e-8)
    assert triple_value(table, reg, res.boxes, unit=unit, weight=w) == \
        pytest.approx(best, rel=1e-8)


def test_a_spent_budget_stops_before_the_layout():
    """With the budget spent after the pair search, the three-box search returns at once,
    unfinished, with a model it can score (issue 38: the trie was
    built past the deadline); a build asked with a spent budget stops between stages."""
    from rulemip.algorithms.kbox.engine import KBoxSearch
    from rulemip.budget import BudgetExpired

    table, w, unit = _table(7, 40, 2, True)
    res = triple_search(table, 1e-3, unit=unit, weight=w,
                        budget=Budget.from_time_limit(None, work_limit=1))
    assert not res.finished and res.boxes_done == 0 and res.strips == 0
    assert res.gain == pytest.approx(triple_value(table, 1e-3, res.boxes, unit=unit,
                                                  weight=w))
    X, y = _data(7, n=40)
    with pytest.raises(BudgetExpired):
        KBoxSearch(Language(3, max_rule_length=2)).build_model(
            Dataset.from_arrays(X, y), budget=Budget.from_time_limit(0.0))


def test_auto_proves_three_rules_by_the_three_box_search_on_small_languages():
    """``engine="auto"`` takes the three-box search for k = 3 with a capped length while
    its work (candidate boxes² × words) is within KBOX3_AUTO_MAX_WORK, and proves the
    brute-force optimum; not beyond it (diabetes, 8 cut points) nor without a length cap."""
    from sklearn.datasets import load_diabetes

    from rulemip.algorithms.solve.registry import choose_engine

    X, y = _data(3)
    th = candidate_thresholds(X, 2)
    problem = KRuleProblem.of(Dataset.from_arrays(X, y), 3, reg=1e-3, thresholds=th,
                              max_rule_length=2)
    assert choose_engine("auto", problem) == "kbox"
    res = solve_exact(problem, engine="auto",
                      budget=Budget.from_time_limit(None, work_limit=10**6))
    bf = brute_force_optimum(X, y, 3, reg=1e-3, thresholds=th, max_rule_length=2)
    assert res.engine == "kbox" and res.is_optimal
    assert res.risk == pytest.approx(bf.risk, rel=1e-9)
    Xd, yd = load_diabetes(return_X_y=True)
    ds = Dataset.from_arrays(Xd, yd)
    for t, length, k, expect in [(4, 2, 3, True), (8, 2, 3, False), (8, 2, 2, True),
                                 (2, None, 3, False)]:
        p = KRuleProblem.of(ds, k, reg=1e-3, thresholds=candidate_thresholds(Xd, t),
                            max_rule_length=length)
        assert (choose_engine("auto", p) == "kbox") is expect
