"""A first box's strips and the two third-box searches of the three-box scan
(rulemip.algorithms.kbox.triple_strips, unit_rows): cells of integer multiplicity as
equal-weight rows keep every intersection weight; the inclusion-exclusion bounds on ρ_bc
contain the true correlation of every triple and are attained (so a stronger bound fails);
a strip's bounds contain its members'; and each search, given an incumbent a hair below
the best third box of a pair, finds that box among exactly the third boxes it is
responsible for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rulemip.algorithms.kbox import triple_strips as ts
from rulemip.algorithms.kbox.correlations import correlation
from rulemip.algorithms.kbox.pair_kernel import _and_weight
from rulemip.algorithms.kbox.pairs import scan_layout
from rulemip.algorithms.kbox.table import build_box_table
from rulemip.algorithms.kbox.triple_bounds import LINK, triple_gain
from rulemip.algorithms.kbox.unit_rows import unit_rows
from rulemip.data.thresholds import candidate_thresholds
from rulemip.formulations.cells import reduce_to_cells
from rulemip.rules.language import Language

from .random_tables import random_table


def _layout(seed: int, fit_intercept: bool = True, reg: float = 1e-3, n_th: int = 3,
            weights: str | None = None):
    X, y = random_table(seed, 40, 3, second_rule=True)
    sw = None
    if weights == "int":
        sw = np.random.default_rng(seed).integers(1, 4, size=len(y)).astype(float)
    elif weights == "float":
        sw = np.random.default_rng(seed).uniform(0.2, 2.0, size=len(y))
    cells = reduce_to_cells(X, y, candidate_thresholds(X, n_th), "squared", sw)
    table = build_box_table(cells, Language(2, max_rule_length=2, fit_intercept=fit_intercept))
    w = cells.cell_weight
    unit = float(w[0]) if np.all(w == w[0]) else 0.0
    return scan_layout(table, reg, unit=unit, weight=w)


def _weighted(x: np.ndarray, y: np.ndarray, weight: np.ndarray) -> float:
    bits = np.unpackbits(np.bitwise_and(x, y).view(np.uint8), bitorder="little")
    return float(weight @ bits[: len(weight)])


def test_unit_rows_keep_every_intersection_weight():
    rng = np.random.default_rng(0)
    n_cells = 150
    weight = 0.25 * rng.integers(1, 4, size=n_cells)  # whole multiples of 0.25
    dense = rng.random((30, n_cells)) < 0.4
    bits = np.packbits(np.pad(dense, ((0, 0), (0, 192 - n_cells))), axis=1,
                       bitorder="little").view(np.uint64)
    out = unit_rows(bits, bits[:5], weight)
    assert out is not None
    rows, slabs, unit, row_weight = out
    assert unit == 0.25 and len(row_weight) == round(weight.sum() / 0.25)
    np.testing.assert_array_equal(slabs, rows[:5])
    for i in range(30):
        for j in range(30):
            expect = _weighted(bits[i], bits[j], weight)
            assert _and_weight(rows[i], rows[j], unit, row_weight) == pytest.approx(expect)
    assert unit_rows(bits, bits[:5], weight + 0.01) is None  # not whole multiples
    heavy = weight.copy()
    heavy[0] = 100.0  # 400 rows for one cell: more than MAX_GROWTH times the words
    assert unit_rows(bits, bits[:5], heavy) is None


@pytest.mark.parametrize(("seed", "fit_intercept", "weights"),
                         [(1, True, None), (2, False, "int"), (3, True, "float")])
def test_intersection_bounds_contain_and_attain_the_true_correlation(seed, fit_intercept,
                                                                       weights):
    lay = _layout(seed, fit_intercept, weights=weights)
    n = lay.n
    rng = np.random.default_rng(seed)
    low = high = 0
    for a, b in rng.integers(0, n, size=(60, 2)):
        if a == b:
            continue
        nab = _and_weight(lay.bits[a], lay.bits[b], lay.unit, lay.weight)
        for c in range(n):
            nac = _and_weight(lay.bits[a], lay.bits[c], lay.unit, lay.weight)
            nbc = _and_weight(lay.bits[b], lay.bits[c], lay.unit, lay.weight)
            true = correlation(nbc, lay.N[b], lay.N[c], lay.W, lay.centred, lay.K[b],
                               lay.K[c])
            lo, hi = ts.rho_bc_range(nab, nac, lay.N[a], lay.N[b], lay.N[c], lay.K[b],
                                     lay.K[c], lay.W, lay.centred)
            assert lo - 1e-12 <= true <= hi + 1e-12
            low += abs(true - lo) < 1e-12
            high += abs(true - hi) < 1e-12
    assert low > 0 and high > 0  # both ends are reached: neither can be made stronger


def _strips(lay, a: int):
    n = lay.n
    out = dict(n_a=np.empty(n), rho_a=np.empty(n), suffix=np.empty((n + 1, 2)),
               cap=np.empty(n), rank_linked=np.empty(n),
               strip_start=np.empty(ts.N_STRIPS + 1, dtype=np.int64),
               strip_z=np.empty(n), strip_box=np.empty(n, dtype=np.int64),
               strip_rng=np.empty((ts.N_STRIPS, 10)))
    z_order = np.argsort(lay.z, kind="stable").astype(np.int64)
    ts.first_box_row(lay.bits, lay.N, lay.K, lay.rank, lay.a_order, a, int(lay.rank[a]),
                     lay.W, lay.centred, lay.unit, lay.weight, out["n_a"], out["rho_a"],
                     out["suffix"], out["cap"], out["rank_linked"])
    ts.first_box_strips(lay.N, lay.K, lay.z, lay.rank, z_order, int(lay.rank[a]),
                        out["n_a"], out["rho_a"], out["strip_start"], out["strip_z"],
                        out["strip_box"], out["strip_rng"])
    return out


@pytest.mark.parametrize("seed", [4, 5])
def test_strips_partition_the_boxes_and_bound_their_members(seed):
    lay = _layout(seed)
    a = int(lay.a_order[1])
    st = _strips(lay, a)
    start, box = st["strip_start"], st["strip_box"]
    owned = [x for x in range(lay.n) if lay.rank[x] > lay.rank[a]
             and abs(st["rho_a"][x]) < LINK]  # the third boxes of unlinked triples
    assert owned and sorted(box[: start[-1]].tolist()) == owned
    for b in range(0, lay.n, 3):
        for k in range(ts.N_STRIPS):
            members = box[start[k]:start[k + 1]]
            if len(members) == 0:
                continue
            assert np.all(np.diff(st["strip_z"][start[k]:start[k + 1]]) >= 0)
            rho = st["rho_a"][members]
            assert np.all([ts.strip_of(v) == k for v in rho])
            lo, hi = ts.strip_bc_range(st["n_a"][b], lay.N[a], lay.N[b], lay.K[b],
                                       st["strip_rng"], k, lay.W, lay.centred)
            for c in members:
                clo, chi = ts.rho_bc_range(st["n_a"][b], st["n_a"][c], lay.N[a], lay.N[b],
                                           lay.N[c], lay.K[b], lay.K[c], lay.W, lay.centred)
                assert lo - 1e-12 <= clo and chi <= hi + 1e-12


def _pair_terms(lay, st, a: int, b: int):
    za, zb = lay.z[a], lay.z[b]
    rab = st["rho_a"][b]
    det2 = 1.0 - rab * rab
    if det2 <= 1e-10:  # collinear: the scan skips the pair
        return None
    u1 = (za - rab * zb) / det2
    u2 = (zb - rab * za) / det2
    return rab, det2, za * u1 + zb * u2, u1, u2


@pytest.mark.parametrize(("seed", "fit_intercept", "reg"),
                         [(6, True, 1e-3), (7, False, 1.0), (8, True, 0.0)])
def test_each_search_finds_the_best_of_the_third_boxes_it_owns(seed, fit_intercept, reg):
    """For many pairs: the best third box among those the pair is responsible for (linked:
    c unlinked to a if it ranks before b, to b as well if before a; unlinked: c after b,
    unlinked to both), by plain enumeration, is found when the incumbent is a hair below
    it — so neither the strips' tails nor the vectorized test drops it."""
    lay = _layout(seed, fit_intercept, reg)
    n = lay.n
    rank = lay.rank
    inv_root_K = 1.0 / np.sqrt(lay.K)
    keep = np.empty(n, dtype=np.bool_)
    tried = {True: 0, False: 0}
    for ra in range(0, min(n, 12)):
        a = int(lay.a_order[ra])
        st = _strips(lay, a)
        for rb in range(ra + 1, n, 2):
            b = int(lay.a_order[rb])
            terms = _pair_terms(lay, st, a, b)
            if terms is None:
                continue
            rab, det2, g2, u1, u2 = terms
            linked = abs(rab) >= LINK
            best = -math.inf
            for c in range(n):
                if c in (a, b):
                    continue
                rac = st["rho_a"][c]
                rbc = correlation(_and_weight(lay.bits[b], lay.bits[c], lay.unit,
                                              lay.weight), lay.N[b], lay.N[c], lay.W,
                                  lay.centred, lay.K[b], lay.K[c])
                if linked:
                    if rank[c] < rb and abs(rac) >= LINK:
                        continue
                    if rank[c] < ra and abs(rbc) >= LINK:
                        continue
                elif rank[c] <= rb or abs(rac) >= LINK or abs(rbc) >= LINK:
                    continue
                best = max(best, triple_gain(lay.z[a], lay.z[b], lay.z[c], rab, rac, rbc))
            if best == -math.inf or best <= g2 * (1 + 1e-9):
                continue
            tried[linked] += 1
            state = np.array([best * (1 - 1e-7), 0.0])
            found = np.full(3, -1, dtype=np.int64)
            counts = np.zeros(5, dtype=np.int64)
            args = (lay.bits, lay.N, lay.K)
            if linked:
                ts.linked_thirds(*args, inv_root_K, lay.z, rank, a, b, ra, rb, rab, det2, g2,
                                 u1, u2, lay.W, lay.centred, lay.unit, lay.weight,
                                 st["n_a"], st["rho_a"], st["cap"], st["rank_linked"], keep,
                                 state, found, counts)
            else:
                ts.unlinked_thirds(*args, rank, a, b, ra, rb, rab, det2, g2, u1, u2,
                                   abs(lay.z[b]), lay.W, lay.centred, lay.unit, lay.weight,
                                   st["n_a"], st["rho_a"], st["strip_start"],
                                   st["strip_z"], st["strip_box"], st["strip_rng"], state,
                                   found, counts)
            assert state[0] == pytest.approx(best, rel=1e-9)
    assert tried[True] > 0 and tried[False] > 0
