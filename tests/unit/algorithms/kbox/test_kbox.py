"""The exact k-box search (rulemip.algorithms.kbox.engine*): its box table equals the brute-force
language, its correlation bounds hold for every feasible intersection, and its optimum
equals brute force over every single box and pair of boxes on small random tables (ties,
duplicate rows, constant features, weights, intercept on and off, ridge 0 to 10, length
caps); a search stopped by its budget returns a model with a valid bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rulemip.algorithms.fit_plan import solve_exact
from rulemip.algorithms.kbox.engine import KBoxSearch
from rulemip.algorithms.kbox.pair_bounds import needed_overlaps, rho_range
from rulemip.algorithms.kbox.table import build_box_table
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.cells import reduce_to_cells
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.testing.brute_force import brute_force_optimum, distinct_boxes

from .random_tables import random_table


def _data(seed: int, n: int = 14, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    return random_table(seed, n, d)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("length", [1, 2, None])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_box_table_is_the_brute_force_language(seed, length, fit_intercept):
    X, y = _data(seed)
    th = candidate_thresholds(X, 3)
    cells = reduce_to_cells(X, y, th, "squared", None)
    table = build_box_table(cells, Language(2, max_rule_length=length, fit_intercept=fit_intercept))
    boxes, Q = distinct_boxes(X, th, fit_intercept, length)
    assert table.n_boxes == len(boxes)
    # every table box is a distinct cover in the language, and its sums are right
    covers = set()
    for b in range(table.n_boxes):
        n_feat = int((table.features[b] >= 0).sum())
        assert length is None or n_feat <= length
        lo, hi = table.bounds(b, th)
        q = np.all((np.array(lo) < X) & (np.array(hi) >= X), axis=1)
        covers.add(np.packbits(q).tobytes())
        assert table.N[b] == pytest.approx(q.sum())
        centre = y.mean() if fit_intercept else 0.0
        assert table.S[b] == pytest.approx((y[q] - centre).sum(), abs=1e-9)
    assert covers == {np.packbits(Q[:, j].astype(bool)).tobytes() for j in range(Q.shape[1])}


def test_rho_range_holds_for_every_feasible_intersection():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        W = float(rng.integers(5, 60))
        centred = bool(rng.integers(2))
        lam = float(rng.choice([0.0, 1e-3, 1.0, 10.0]))
        Na = float(rng.integers(1, W))
        n0 = float(rng.integers(1, W))
        n1 = float(rng.integers(n0, W + 1))
        T = float(rng.integers(0, Na + 1))
        slab = float(rng.integers(T, W + 1))  # |s| >= T
        D = slab - T
        Ka = (Na * (W - Na) / W if centred else Na) + lam
        if Ka <= 0:
            continue
        lo, hi = rho_range(Na, Ka, n0, n1, T, D, W, lam, centred)
        for Nb in np.arange(n0, n1 + 1):
            Kb = (Nb * (W - Nb) / W if centred else Nb) + lam
            if Kb <= 0:
                continue
            n_min = max(0.0, Na + Nb - W, Nb - D)
            n_max = min(Na, Nb, T)
            for nab in np.arange(math.ceil(n_min), math.floor(n_max) + 1):
                c = nab - Na * Nb / W if centred else nab
                rho = c / math.sqrt(Ka * Kb)
                assert lo - 1e-12 <= rho <= hi + 1e-12, (W, Na, Nb, nab, T, D, lo, hi, rho)



def test_needed_overlaps_hold_for_every_partner_that_reaches_the_incumbent():
    """Every partner b with |z_b| <= |z_a| and gain >= Gp shares at least n_need with a or
    at least m_need with a's complement (brute force over weights, intersections and a
    grid of z_b, including the grid's ends ±|z_a| where the gain is largest)."""
    rng = np.random.default_rng(1)
    filtered = 0
    for _ in range(1500):
        W = float(rng.integers(5, 50))
        centred = bool(rng.integers(2))
        lam = float(rng.choice([0.0, 1e-3, 1.0, 10.0]))
        Na = float(rng.integers(1, W))
        Ka = (Na * (W - Na) / W if centred else Na) + lam
        if Ka <= 0:
            continue
        za = float(rng.normal()) * float(rng.choice([0.3, 1.0, 3.0]))
        Gp = float(rng.uniform(0.5, 40.0)) * max(za * za, 0.05)
        n_need, m_need = needed_overlaps(za, Gp, Na, Ka, W, lam, centred)
        filtered += n_need > 0 or m_need > 0
        for Nb in np.arange(1.0, W + 1):
            Kb = (Nb * (W - Nb) / W if centred else Nb) + lam
            if Kb <= 0:
                continue
            for nab in np.arange(max(0.0, Na + Nb - W), min(Na, Nb) + 1):
                c = nab - Na * Nb / W if centred else nab
                rho = c / math.sqrt(Ka * Kb)
                if abs(rho) >= 1.0 - 1e-12:
                    continue
                zb = np.linspace(-abs(za), abs(za), 9)
                gain = (za * za - 2 * rho * za * zb + zb * zb) / (1 - rho * rho)
                if gain.max() >= Gp:
                    assert nab >= n_need or Nb - nab >= m_need, (W, Na, Nb, nab, za, Gp)
    assert filtered > 300  # the condition is active in many cases, not vacuous


CASES = [  # seed, k, reg, fit_intercept, length, weighted
    (0, 2, 1e-3, True, 2, False), (1, 2, 0.0, True, 2, False), (2, 2, 10.0, False, 2, True),
    (3, 2, 1.0, False, 1, False), (4, 2, 1e-3, True, 1, True), (5, 1, 0.1, True, 2, False),
    (6, 2, 0.0, False, 2, False), (7, 2, 3.0, True, None, False), (8, 1, 0.0, False, 1, True),
    (9, 2, 1e-3, True, 2, "int"), (10, 2, 0.5, False, 2, "int"), (11, 2, 1e-2, True, 3, True),
]


@pytest.mark.parametrize(("seed", "k", "reg", "fit_intercept", "length", "weighted"), CASES)
def test_kbox_engine_equals_brute_force(seed, k, reg, fit_intercept, length, weighted):
    X, y = _data(seed)
    rng = np.random.default_rng(100 + seed)
    if weighted == "int":
        sw = rng.integers(1, 4, size=len(y)).astype(float)  # cells of unequal weight
    elif weighted:
        sw = rng.uniform(0.2, 2.0, size=len(y))
    else:
        sw = None
    th = candidate_thresholds(X, 2)
    ds = Dataset.from_arrays(X, y, sample_weight=sw)
    problem = KRuleProblem.of(ds, k, reg=reg, fit_intercept=fit_intercept, thresholds=th,
                              max_rule_length=length)
    res = solve_exact(problem,
                      engine="kbox", budget=Budget.from_time_limit(60))
    bf = brute_force_optimum(X, y, k, reg=reg, fit_intercept=fit_intercept, thresholds=th,
                             sample_weight=sw, max_rule_length=length)
    assert res.engine == "kbox"
    assert res.is_optimal
    assert res.risk == pytest.approx(bf.risk, rel=1e-9, abs=1e-12)
    assert res.lower_bound <= bf.risk + 1e-9 * max(1.0, abs(bf.risk))
    assert len(res.ensemble.rules) <= k
    assert all(length is None or len({c.feature for c in r.conditions}) <= length
               for r in res.ensemble.rules)


def test_kbox_warm_start_and_a_spent_budget():
    """A warm start in the language is the first incumbent; a spent budget returns a model
    with the levels bound, not a proof."""
    X, y = _data(3, n=20)
    th = candidate_thresholds(X, 3)
    ds = Dataset.from_arrays(X, y)
    full = solve_exact(KRuleProblem.of(ds, 2, reg=1e-3, thresholds=th, max_rule_length=2),
                       engine="kbox")
    bf = brute_force_optimum(X, y, 2, reg=1e-3, thresholds=th, max_rule_length=2)
    assert full.risk == pytest.approx(bf.risk, rel=1e-9)
    spent = Budget.from_time_limit(1e-9)
    res = solve_exact(KRuleProblem.of(ds, 2, reg=1e-3, thresholds=th, max_rule_length=2),
                      engine="kbox", budget=spent, warm_start=full.ensemble)
    assert not res.is_optimal
    assert res.risk == pytest.approx(full.risk, rel=1e-9)  # the warm start, kept
    assert res.lower_bound <= bf.risk


def test_kbox_refuses_what_it_cannot_prove():
    X, y = _data(0)
    with pytest.raises(InvalidParameterError, match="at most 3"):
        KBoxSearch(Language(4, max_rule_length=2))
    with pytest.raises(InvalidParameterError, match="squared"):
        KBoxSearch(Language(2, max_rule_length=2), loss="logistic")
    ds = Dataset.from_arrays(X, y)
    with pytest.raises(InvalidParameterError, match="GiB"):
        KBoxSearch(Language(2, max_rule_length=3), max_thresholds=3,
                   max_memory=1000).build_model(ds)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_threads_find_the_same_optimum(fit_intercept):
    """One worker and three give the same pair, gain and finish (ties to the least pair)."""
    from rulemip.algorithms.kbox.pairs import pair_search

    rng = np.random.default_rng(7)
    X = rng.integers(0, 5, size=(60, 4)).astype(float)
    y = np.round(X[:, 0] - X[:, 2] * (X[:, 1] > 2) + rng.normal(size=60), 0)  # many ties
    cells = reduce_to_cells(X, y, candidate_thresholds(X, 4), "squared", None)
    table = build_box_table(cells, Language(2, max_rule_length=2, fit_intercept=fit_intercept))
    w = cells.cell_weight
    runs = [pair_search(table, 1e-3, unit=0.0 if len(set(w)) > 1 else float(w[0]),
                        weight=w, threads=t) for t in (1, 3, 3)]
    assert all(r.finished for r in runs)
    assert len({(r.boxes, r.gain) for r in runs}) == 1


def test_a_dask_cluster_finds_the_same_optimum():
    """The pair scan's chunks on a Dask LocalCluster give the pair, gain and finish of one
    thread; so does the estimator with ``scheduler`` (the engine takes the fit's
    scheduler)."""
    distributed = pytest.importorskip("dask.distributed")
    from rulemip import ExactRuleEnsembleRegressor
    from rulemip.algorithms.kbox.pairs import pair_search

    rng = np.random.default_rng(8)
    X = rng.integers(0, 5, size=(60, 4)).astype(float)
    y = np.round(X[:, 0] - X[:, 2] * (X[:, 1] > 2) + rng.normal(size=60), 0)
    cells = reduce_to_cells(X, y, candidate_thresholds(X, 4), "squared", None)
    table = build_box_table(cells, Language(2, max_rule_length=2))
    w = cells.cell_weight
    unit = 0.0 if len(set(w)) > 1 else float(w[0])
    serial = pair_search(table, 1e-3, unit=unit, weight=w, threads=1)
    local = ExactRuleEnsembleRegressor(2, max_rule_length=2, max_thresholds=4, n_jobs=1,
                                       engine="kbox").fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        remote = pair_search(table, 1e-3, unit=unit, weight=w, scheduler=client)
        on_dask = ExactRuleEnsembleRegressor(2, max_rule_length=2, max_thresholds=4,
                                             engine="kbox", scheduler=client).fit(X, y)
    assert remote.finished and serial.finished
    assert (remote.boxes, remote.gain, remote.boxes_done) == \
        (serial.boxes, serial.gain, serial.boxes_done)
    assert on_dask.rules_.to_text() == local.rules_.to_text()
    assert on_dask.certificate_.status == local.certificate_.status == "optimal"


def test_the_estimator_skips_its_local_phase_for_an_engine_that_declares_so():
    """``EngineSpec.wants_local_start``: kbox registers False, so the exact estimator goes
    straight from the warm start to the engine; the CIP still gets the local phase."""
    from rulemip import ExactRuleEnsembleRegressor
    from rulemip.algorithms.solve.registry import engine_spec

    assert engine_spec("kbox").wants_local_start is False
    assert engine_spec("cip").wants_local_start is True
    X, y = _data(2, n=30)
    est = ExactRuleEnsembleRegressor(2, max_rule_length=2, max_thresholds=3).fit(X, y)
    assert est.engine_ == "kbox" and est.result_.is_optimal and est.local_starts_ == ()
    cip = ExactRuleEnsembleRegressor(2, max_rule_length=2, max_thresholds=3,
                                     engine="cip").fit(X, y)
    assert cip.local_starts_ != ()
    assert cip.result_.risk >= est.result_.risk - 1e-9 * abs(est.result_.risk)


def test_a_work_limited_scan_names_the_work_limit_and_repeats():
    """A scan stopped by the budget's work limit says so (limit ``node``, not ``time``),
    keeps a valid bound, and returns the same model on a second run."""
    X, y = _data(3, n=40)
    th = candidate_thresholds(X, 3)
    ds = Dataset.from_arrays(X, y)
    bf = brute_force_optimum(X, y, 2, reg=1e-3, thresholds=th, max_rule_length=2)
    runs = [solve_exact(KRuleProblem.of(ds, 2, reg=1e-3, thresholds=th, max_rule_length=2),
                        engine="kbox",
                        budget=Budget.from_time_limit(None, work_limit=20)) for _ in range(2)]
    for res in runs:
        assert not res.is_optimal and res.limit is not None and res.limit.value == "node"
        assert res.lower_bound <= bf.risk
    assert runs[0].risk == runs[1].risk


@pytest.mark.parametrize(("k", "what"), [(2, "pairs"), (3, "triples")])
def test_verbose_progress_shows_the_incumbent_risk(capsys, k, what):
    """``verbose=True`` on the k-box search prints progress lines with the incumbent's
    risk and a finite bound (the scan's reports translated), never ``incumbent inf``, and
    the first boxes done with the pairs or triples scored."""
    from rulemip import ExactRuleEnsembleRegressor

    X, y = _data(4, n=40)
    ExactRuleEnsembleRegressor(k, max_rule_length=2, max_thresholds=3, engine="kbox",
                               verbose=True).fit(X, y)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "incumbent" in ln]
    assert lines
    assert not any("incumbent inf" in ln for ln in lines)
    assert any(f"{what} scored" in ln and "first boxes" in ln for ln in lines)


_ISSUE38_X = np.array([[-0.8, 0.38, -0.69], [-0.51, -0.2, -1.83], [-0.27, -1.8, -1.21],
                       [-0.5, 0.08, -0.29], [1.01, 0.08, 0.52], [-0.51, -0.67, 1.61],
                       [-1.65, 1.11, -0.78], [0.62, -1.31, 0.44], [0.27, -2.12, -0.68],
                       [0.59, 0.96, 0.25]])
_ISSUE38_Y = np.array([-2, -1, -1, -1, 2, 0, 0, 2, 1, 1], dtype=float)
_ISSUE38_TH = [np.array([-0.505, 0.43]), np.array([-0.99, -0.06]),
               np.array([-1.52, -0.735, -0.485, 0.48])]


@pytest.mark.parametrize(("reg", "length", "n_jobs", "work_limit"),
                         [(1.0, 2, 1, None), (0.0, 2, 2, None), (0.0, 3, 1, 10**6),
                          (1.0, 1, 2, None), (1.0, 3, 1, None), (1.0, 2, -1, 10**6)])
def test_partners_of_equal_weight_outside_the_first_box_are_bounded_right(reg, length,
                                                                          n_jobs, work_limit):
    """Issue 38 item 4: a partner of a's weight inside a region holding none of a had the
    intersection bound min(N_a, N_b, T_R) − unit = −1 (the 'distinct covers of equal
    weight' slack applied to T_R as well), a correlation bound of exactly −1 and a
    division by zero in the corner test. Every listed setting is now optimal at the
    brute-force optimum, on the k-box engine."""
    from rulemip import ExactRuleEnsembleRegressor

    X, y, th = _ISSUE38_X, _ISSUE38_Y, _ISSUE38_TH
    est = ExactRuleEnsembleRegressor(n_rules=2, reg=reg, max_rule_length=length,
                                     thresholds=th, engine="kbox", n_jobs=n_jobs,
                                     work_limit=work_limit).fit(X, y)
    bf = brute_force_optimum(X, y, 2, reg=reg, thresholds=th, max_rule_length=length)
    assert est.engine_ == "kbox"
    assert est.certificate_.status == "optimal"
    assert est.certificate_.risk == pytest.approx(bf.risk, rel=1e-9, abs=1e-12)
