"""The pair scan's bounds on a partner (rulemip.algorithms.kbox.pair_bounds) against brute
force: every partner b (|z_b| <= |z_a|) that reaches the incumbent has a weight inside
``partner_weights`` and shares what ``weight_needs`` and ``_node_needs`` say with a or
with a's complement. Each test also counts cases where a partner sits exactly at a bound,
so a bound made one cell too strong fails it; and the scan from one first box finds
the brute-force best partner whatever the incumbent."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rulemip.algorithms.kbox.pair_bounds import (
    _bisect,
    _excess,
    _node_needs,
    _weight_end,
    partner_weights,
    weight_needs,
)
from rulemip.algorithms.kbox.pair_kernel import pair_gain, scan_pairs
from rulemip.algorithms.kbox.pairs import pair_extras, scan_layout
from rulemip.algorithms.kbox.table import build_box_table
from rulemip.data.thresholds import candidate_thresholds
from rulemip.formulations.cells import reduce_to_cells
from rulemip.rules.language import Language

from .random_tables import random_table


def _case(rng: np.random.Generator) -> tuple[float, float, bool, float, float, float, float,
                                             float]:
    """A random first box: (W, unit, centred, λ, N_a, K_a, z_a, Gp) with weights in cells
    of ``unit``."""
    unit = float(rng.choice([1.0, 2.0, 0.5]))
    W = unit * float(rng.integers(5, 45))
    centred = bool(rng.integers(2))
    lam = float(rng.choice([0.0, 1e-3, 1.0, 10.0]))
    Na = unit * float(rng.integers(1, round(W / unit)))
    Ka = (Na * (W - Na) / W if centred else Na) + lam
    za = float(rng.normal()) * float(rng.choice([0.3, 1.0, 3.0]))
    Gp = float(rng.uniform(1.02, 30.0)) * max(za * za, 0.05)
    return W, unit, centred, lam, Na, Ka, za, Gp


def _partners(W: float, unit: float, centred: bool, lam: float, Na: float, Ka: float,
              za: float, zb: np.ndarray):
    """Every (N_b, n_ab, ρ, best gain over ``zb``) of a partner: weights and common weights
    in multiples of ``unit``; a distinct cover of a's weight misses a cell of a; a's exact
    complement (centred: it gains what two copies of a gain) left out."""
    for Nb in np.arange(unit, W + unit / 2, unit):
        Kb = (Nb * (W - Nb) / W if centred else Nb) + lam
        if Kb <= 0:
            continue
        for nab in np.arange(max(0.0, Na + Nb - W), min(Na, Nb) + unit / 2, unit):
            if Nb == Na and nab == Na:
                continue  # a itself
            if centred and Nb == W - Na and nab == 0:
                continue  # a's complement
            c = nab - Na * Nb / W if centred else nab
            rho = c / math.sqrt(Ka * Kb)
            if abs(rho) >= 1.0 - 1e-12:
                continue
            gain = (za * za - 2 * rho * za * zb + zb * zb) / (1 - rho * rho)
            yield Nb, nab, rho, float(gain.max())


def test_partner_weights_and_needs_hold_for_every_partner_that_reaches_the_incumbent():
    rng = np.random.default_rng(3)
    active = at_end = 0
    for _ in range(1200):
        W, unit, centred, lam, Na, Ka, za, Gp = _case(rng)
        if Ka <= 0:
            continue
        lo1, hi1, lo2, hi2 = partner_weights(za, Gp, Na, Ka, W, lam, centred, unit)
        n_need, m_need = weight_needs(za, Gp, Na, Ka, W, lam, centred, lo1, hi1, lo2, hi2)
        active += n_need > 0 or m_need > 0
        zb = np.linspace(-abs(za), abs(za), 9)
        for Nb, nab, rho, gain in _partners(W, unit, centred, lam, Na, Ka, za, zb):
            if gain < Gp:
                continue
            assert (rho >= 0 and lo1 <= Nb <= hi1) or (rho <= 0 and lo2 <= Nb <= hi2), \
                (W, unit, Na, Nb, nab, za, Gp, (lo1, hi1, lo2, hi2))
            assert nab >= n_need or Nb - nab >= m_need, (W, Na, Nb, nab, za, Gp)
            at_end += min(abs(Nb - lo1), abs(Nb - hi1), abs(Nb - lo2), abs(Nb - hi2)) < 1e-6
    assert active > 300  # the conditions bite in many cases
    assert at_end > 50  # and are tight: one cell narrower would exclude a real partner


def test_weight_ends_contain_every_weight_where_the_excess_is_not_negative():
    """The quadratics' roots (and the bisection they fall back on) never cut a weight at
    which a partner could still reach the correlation: every box weight n on a fine grid
    with e(n) >= 0 lies inside [lower end, W] and [0, upper end]; both ways agree."""
    rng = np.random.default_rng(6)
    for _ in range(400):
        W = float(rng.integers(2, 500))
        centred = bool(rng.integers(2))
        lam = float(rng.choice([0.0, 1e-3, 1.0, 10.0]))
        Na = float(rng.uniform(0.5, W - 0.5))
        Ka = (Na * (W - Na) / W if centred else Na) + lam
        rho0 = float(rng.uniform(0.01, 0.999))
        alpha = Na / W if centred else 0.0
        grid = np.linspace(0.0, W, 2001)
        # the weights of boxes (K > 0; at λ = 0 not 0, nor W with an intercept, where
        # e vanishes too)
        grid = grid[((grid * (W - grid) / W) if centred else grid) + lam > 0]
        for A, B, upper in ((0.0, 1.0 - alpha, False), (Na, -alpha, True),
                            (0.0, alpha, False), (W - Na, -(1.0 - alpha), True)):
            if not centred and A == 0.0 and B == 0.0:
                continue
            end = _weight_end(A, B, rho0, Ka, W, lam, centred, upper)
            ok = np.array([_excess(A, B, rho0, Ka, n, W, lam, centred) >= 0 for n in grid])
            if ok.any():
                assert (grid[ok] <= end).all() if upper else (grid[ok] >= end).all()
                assert end == pytest.approx(_bisect(A, B, rho0, Ka, W, lam, centred, upper),
                                            abs=1e-6 * W)


def test_a_complement_pair_gains_what_two_copies_gain():
    """The partner the weight bounds leave out: a's exact complement (with an
    intercept)."""
    rng = np.random.default_rng(4)
    for _ in range(200):
        W = float(rng.integers(3, 40))
        Na = float(rng.integers(1, W))
        lam = float(rng.choice([1e-3, 1.0, 10.0]))
        Sa = float(rng.normal())
        V = Na * (W - Na) / W
        two_copies = Sa * Sa / (V + lam / 2)
        # the complement's centred column is minus a's: S = -S_a, V the same, c = -V
        g = pair_gain(Sa, V + lam, -Sa, V + lam, -V)
        assert g == pytest.approx(two_copies, rel=1e-9)


def test_node_needs_hold_for_every_partner_below_a_node():
    """For random nodes (a range of partner weights and of z_b within ±|z_a|), every
    partner inside that reaches the incumbent shares need1 with a or need2 with a's
    complement."""
    rng = np.random.default_rng(5)
    active = at_bound = 0
    for _ in range(800):
        W, unit, centred, lam, Na, Ka, za, Gp = _case(rng)
        if Ka <= 0 or za * za >= Gp:
            continue
        lo1, hi1, lo2, hi2 = partner_weights(za, Gp, Na, Ka, W, lam, centred, unit)
        cells = round(W / unit)
        n0, n1 = sorted(unit * rng.integers(1, cells + 1, size=2).astype(float))
        zlo, zhi = sorted(rng.uniform(-abs(za), abs(za), size=2))
        def sk(n: float, W=W, centred=centred, lam=lam) -> float:
            return math.sqrt(max((n * (W - n) / W if centred else n) + lam, 0.0))

        alpha = Na / W if centred else 0.0
        if rng.integers(3) == 0:  # a range reaching ±|z_a|: the roots' edge values
            zlo, zhi = -abs(za), abs(za)
        need1, need2 = _node_needs(za, zlo, zhi, Gp, math.sqrt(Gp - za * za),
                                   1 - 2 * za * za / Gp, n0, n1, sk(n0), sk(n1), lo1, hi1,
                                   lo2, hi2, sk(max(lo1, 0.0)), sk(min(hi1, W)),
                                   sk(max(lo2, 0.0)), sk(min(hi2, W)), alpha,
                                   math.sqrt(Ka), centred, W)
        active += need1 > 0 or need2 > 0
        zb = np.linspace(zlo, zhi, 7)
        for Nb, nab, _rho, gain in _partners(W, unit, centred, lam, Na, Ka, za, zb):
            if not n0 <= Nb <= n1 or gain < Gp:
                continue
            assert nab >= need1 or Nb - nab >= need2, (W, Na, Nb, nab, za, Gp, need1, need2)
            at_bound += min(abs(nab - need1), abs(Nb - nab - need2)) < unit
    assert active > 200
    assert at_bound > 20


@pytest.mark.parametrize(("seed", "reg", "fit_intercept", "length", "weighted"), [
    (0, 1e-3, True, 3, False), (1, 0.0, True, 2, False), (2, 1.0, False, 3, False),
    (3, 10.0, True, None, False), (4, 1e-3, True, 3, True), (5, 0.1, False, 2, True),
    (6, 1e-3, True, 3, "twice"), (7, 0.0, False, 1, False), (8, 1.0, True, 1, "twice"),
])
def test_the_scan_from_one_first_box_finds_its_best_partner(seed, reg, fit_intercept,
                                                            length, weighted):
    """The scan of a single first box a, started from incumbents below and above a's
    best partner gain, finds exactly the brute-force best partner of larger rank
    whenever one reaches the incumbent (ties: the least pair), with and without the child
    index; weak and strong first boxes alike."""
    X, y = random_table(seed, n=40, d=4, second_rule=True)
    w = None
    if weighted is True:
        w = np.random.default_rng(seed).uniform(0.5, 2.0, len(y))
    elif weighted == "twice":  # every cell of weight 2: the multiples of the cell weight
        X, y = np.vstack([X, X]), np.concatenate([y, y])
    th = candidate_thresholds(X, 3)
    cells = reduce_to_cells(X, y, th, "squared", w)
    table = build_box_table(cells, Language(2, max_rule_length=length,
                                            fit_intercept=fit_intercept))
    cw = cells.cell_weight
    unit = float(cw[0]) if np.all(cw == cw[0]) else 0.0
    lay = scan_layout(table, reg, unit=unit, weight=cw)
    child, node_sk, node_w = pair_extras(lay)
    no_child = np.zeros((0, 0), dtype=np.int64)
    # every pair's gain by brute force (positions), from the exact intersections
    # (the layout's bits are over its rows: the cells, or rows of one weight)
    Q = np.unpackbits(lay.bits.view(np.uint8), axis=1,
                      bitorder="little")[:, :len(lay.weight)]
    inter = (Q * lay.weight) @ Q.T.astype(float)
    n = lay.n
    gains = np.full((n, n), -np.inf)
    for a in range(n):
        for b in range(n):
            if a != b:
                c = inter[a, b] - lay.N[a] * lay.N[b] / lay.W if fit_intercept else inter[a, b]
                gains[a, b] = pair_gain(lay.S[a], lay.K[a], lay.S[b], lay.K[b], c)
    ranks = sorted({0, 1, 2, n // 10, n // 4, n // 2, (3 * n) // 4, n - 2})
    for ra in ranks:
        a = int(lay.a_order[ra])
        later = lay.a_order[ra + 1:]
        if not len(later):
            continue
        g = gains[a, later]
        top = float(g.max())
        for frac in (0.5, 0.9, 0.999, 1.0 + 1e-6):
            G0 = top * frac if top > 0 else 1e-9
            expect = later[g >= G0 * (1 - 1e-9)]
            for ch in (child, no_child):
                state = np.array([G0, lay.margin])
                best = np.full(2, -1, dtype=np.int64)
                counts = np.zeros(3, dtype=np.int64)
                scan_pairs(*lay.args(), ra, ra + 1, *lay.tail(ch, node_sk, node_w),
                           state, best,
                           counts)
                if len(expect) == 0 or top < G0:
                    assert best[0] < 0 or state[0] >= G0 * (1 - 1e-9)
                    continue
                assert state[0] == pytest.approx(top, rel=1e-9), (ra, frac)
                assert gains[a, int(best[0]) if best[0] != a else int(best[1])] == \
                    pytest.approx(top, rel=1e-9)
