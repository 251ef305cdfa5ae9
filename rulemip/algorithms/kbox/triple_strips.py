r"""A first box's third boxes in strips of correlation (docs/explanation/kbox_search.md §6).

For a first box a, every other box c is read once: its intersection weight
:math:`n_{ac}` with a and its correlation :math:`\rho_{ac}`. The boxes of larger rank
*unlinked* to a — the third boxes of unlinked triples met from a — are then grouped into
:data:`N_STRIPS` strips of equal width of :math:`\rho_{ac}` over (−LINK, LINK), each
sorted by z, with the exact ranges over its members of :math:`\rho_{ac}`, :math:`n_{ac}`,
:math:`m_c = N_c - n_{ac}` (c's weight outside a), :math:`N_c` and :math:`K_c`.

For a pair (a, b) the intersection :math:`n_{bc}` is then bounded without reading it, by
inclusion and exclusion over a: b ∩ c is the disjoint union of b ∩ c ∩ a and
(b ∖ a) ∩ (c ∖ a), so

.. math:: \max(0, n_{ab} + n_{ac} - N_a) + \max(0, (N_b - n_{ab}) + m_c - (W - N_a))
          \le n_{bc} \le \min(n_{ab}, n_{ac}) + \min(N_b - n_{ab}, m_c)

for any cell weights; the lower end increases in :math:`n_{ac}` and :math:`m_c`, the
upper end too, so a strip's ranges bound it for every member at once
(:func:`strip_bc_range`), and one member's values for that member
(:func:`rho_bc_range`). A strip's rectangle of (ρ_ac, ρ_bc) gives the z-tails
(:func:`~rulemip.algorithms.kbox.triple_bounds.tails3`) outside which its members must lie
to complete the pair to the incumbent: two binary searches skip the rest unread.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rulemip.algorithms.kbox.correlations import correlation
from rulemip.algorithms.kbox.pair_kernel import _and_weight, _cross, _first_ge, _first_gt
from rulemip.algorithms.kbox.triple_bounds import (
    LINK,
    SPAN_TOL,
    may_complete,
    offer,
    schur,
    tails3,
)

__all__ = [
    "N_STRIPS",
    "first_box_row",
    "first_box_strips",
    "linked_thirds",
    "rho_bc_range",
    "strip_bc_range",
    "unlinked_thirds",
]

#: strips of equal width over (−LINK, LINK): narrower strips leave fewer members between
#: the tails, more of them cost more tails per pair
N_STRIPS = 16

#: columns of a strip's ranges (low, high): ρ_ac, n_ac, m_c, N_c, K_c
RHO, NAC, MC, NC, KC = 0, 2, 4, 6, 8


@njit(cache=True, inline="always")
def strip_of(rho: float) -> int:
    """The strip of a correlation in (−LINK, LINK)."""
    k = int((rho + LINK) * (N_STRIPS / (2.0 * LINK)))
    return 0 if k < 0 else min(k, N_STRIPS - 1)


@njit(cache=True, nogil=True)
def first_box_row(bits: np.ndarray, N: np.ndarray, K: np.ndarray, rank: np.ndarray,
                  a_order: np.ndarray, a: int, ra: int, W: float, centred: bool,
                  unit: float, weight: np.ndarray, n_a: np.ndarray, rho_a: np.ndarray,
                  suffix: np.ndarray, cap: np.ndarray, rank_linked: np.ndarray) -> None:
    r"""What a first box a (at rank ``ra``) reads for all its pairs: ``n_a[x]`` the
    weight of a ∩ x and ``rho_a[x]`` = :math:`\rho_{ax}` for every box (one intersection
    each); ``suffix[r]`` the range of :math:`\rho_{ax}` over the boxes of rank ≥ r unlinked
    to a (empty: lo > hi); ``cap[x]`` the bound on :math:`|\rho_{bx}|` a linked pair's
    third box x must respect (LINK if x ranks before a, else ∞) and ``rank_linked[x]`` x's
    rank if x is linked to a, else ∞ (:func:`linked_thirds`)."""
    n = bits.shape[0]
    Ka = K[a]
    for x in range(n):
        n_a[x] = _and_weight(bits[a], bits[x], unit, weight)
        v = correlation(n_a[x], N[a], N[x], W, centred, Ka, K[x])
        rho_a[x] = v
        rank_linked[x] = float(rank[x]) if (v <= -LINK or v >= LINK) else math.inf
        cap[x] = LINK if rank[x] < ra else math.inf
    suffix[n, 0] = math.inf
    suffix[n, 1] = -math.inf
    for r in range(n - 1, -1, -1):
        v = rho_a[a_order[r]]
        suffix[r, 0] = suffix[r + 1, 0]
        suffix[r, 1] = suffix[r + 1, 1]
        if -LINK < v < LINK:
            suffix[r, 0] = min(suffix[r, 0], v)
            suffix[r, 1] = max(suffix[r, 1], v)


@njit(cache=True, nogil=True)
def first_box_strips(N: np.ndarray, K: np.ndarray, z: np.ndarray, rank: np.ndarray,
                     z_order: np.ndarray, ra: int, n_a: np.ndarray, rho_a: np.ndarray,
                     strip_start: np.ndarray, strip_z: np.ndarray, strip_box: np.ndarray,
                     strip_rng: np.ndarray) -> None:
    r"""Every box of rank above ``ra`` (the first box's) unlinked to it in its strip of
    :math:`\rho_{ax}` (:func:`strip_of`; ``n_a``, ``rho_a`` from :func:`first_box_row`):
    strip k is
    ``strip_box[strip_start[k]:strip_start[k+1]]``, by increasing z (``strip_z``;
    ``z_order``: every box by increasing z), ``strip_rng[k]`` its ranges (module
    docstring). Built at a first box's first unlinked pair that needs third boxes."""
    n = N.shape[0]
    m = strip_rng.shape[0]
    for k in range(m + 1):
        strip_start[k] = 0
    for k in range(m):
        for j in range(0, strip_rng.shape[1], 2):
            strip_rng[k, j] = math.inf
            strip_rng[k, j + 1] = -math.inf
    for x in range(n):
        if rank[x] > ra and -LINK < rho_a[x] < LINK:
            strip_start[strip_of(rho_a[x]) + 1] += 1
    for k in range(m):
        strip_start[k + 1] += strip_start[k]
    fill = strip_start[:m].copy()
    for i in range(n):
        x = z_order[i]
        if rank[x] <= ra or not -LINK < rho_a[x] < LINK:
            continue
        k = strip_of(rho_a[x])
        strip_z[fill[k]] = z[x]
        strip_box[fill[k]] = x
        fill[k] += 1
        _widen(strip_rng, k, RHO, rho_a[x])
        _widen(strip_rng, k, NAC, n_a[x])
        _widen(strip_rng, k, MC, N[x] - n_a[x])
        _widen(strip_rng, k, NC, N[x])
        _widen(strip_rng, k, KC, K[x])


@njit(cache=True, inline="always")
def _widen(rng: np.ndarray, k: int, col: int, v: float) -> None:
    if v < rng[k, col]:
        rng[k, col] = v
    if v > rng[k, col + 1]:
        rng[k, col + 1] = v


@njit(cache=True, inline="always")
def rho_bc_range(nab: float, nac: float, Na: float, Nb: float, Nc: float, Kb: float,
                 Kc: float, W: float, centred: bool) -> tuple[float, float]:
    r"""Bounds on :math:`\rho_{bc}` of one box c from its and b's intersections with a
    (module docstring); the cross term increases with :math:`n_{bc}`."""
    lo = max(0.0, nab + nac - Na) + max(0.0, (Nb - nab) + (Nc - nac) - (W - Na))
    hi = min(nab, nac) + min(Nb - nab, Nc - nac)
    root = math.sqrt(Kb * Kc)
    return (_cross(lo, Nb, Nc, W, centred) / root,
            _cross(max(hi, lo), Nb, Nc, W, centred) / root)


@njit(cache=True, inline="always")
def strip_bc_range(nab: float, Na: float, Nb: float, Kb: float, rng: np.ndarray, k: int,
                   W: float, centred: bool) -> tuple[float, float]:
    r"""Bounds on :math:`\rho_{bc}` over every member c of strip k: the intersection
    bounds at the strip's extreme :math:`n_{ac}` and :math:`m_c` (both ends increase in
    both), the centring term :math:`N_b N_c / W` at the extreme :math:`N_c`, divided by
    :math:`\sqrt{K_b K_c}` at the extreme :math:`K_c` that makes each end widest; cut to
    [−1, 1] (a correlation)."""
    lo = max(0.0, nab + rng[k, NAC] - Na) + max(0.0, (Nb - nab) + rng[k, MC] - (W - Na))
    hi = min(nab, rng[k, NAC + 1]) + min(Nb - nab, rng[k, MC + 1])
    num_lo = lo - (Nb * rng[k, NC + 1] / W if centred else 0.0)
    num_hi = max(hi, lo) - (Nb * rng[k, NC] / W if centred else 0.0)
    near = math.sqrt(Kb * rng[k, KC])  # the smaller root: the widest quotient
    far = math.sqrt(Kb * rng[k, KC + 1])
    r_lo = num_lo / near if num_lo < 0.0 else num_lo / far
    r_hi = num_hi / near if num_hi > 0.0 else num_hi / far
    return max(r_lo, -1.0), min(r_hi, 1.0)


@njit(cache=True, nogil=True)
def unlinked_thirds(bits: np.ndarray, N: np.ndarray, K: np.ndarray, rank: np.ndarray,
                    a: int, b: int, ra: int, rb: int, rab: float, det2: float, g2: float,
                    u1: float, u2: float, zb_abs: float, W: float, centred: bool,
                    unit: float, weight: np.ndarray, n_a: np.ndarray, rho_a: np.ndarray,
                    strip_start: np.ndarray, strip_z: np.ndarray, strip_box: np.ndarray,
                    strip_rng: np.ndarray, state: np.ndarray, best: np.ndarray,
                    counts: np.ndarray) -> None:
    r"""The third boxes c of the unlinked pair (a, b) that complete an unlinked triple: c of
    larger rank than b (so :math:`|z_c| \le |z_b|`), :math:`|\rho_{ac}|, |\rho_{bc}| <`
    LINK — a's strips, z within ±|z_b|. Per strip, the members strictly between the
    tails of the rectangle (its ρ_ac range × :func:`strip_bc_range` cut to ±LINK) gain less
    than the incumbent and are skipped unread; each other one is tested at its own ρ_ac
    with :func:`rho_bc_range` and, if it may still complete the pair, scored from its
    intersection with b."""
    Na = N[a]
    Nb = N[b]
    Kb = K[b]
    nab = n_a[b]
    checked = 0
    scored = 0
    searched = 0
    for k in range(N_STRIPS):
        s0 = strip_start[k]
        s1 = strip_start[k + 1]
        if s0 == s1:
            continue
        Gp = state[0] * (1.0 - 1e-9) - state[1]
        bc_lo, bc_hi = strip_bc_range(nab, Na, Nb, Kb, strip_rng, k, W, centred)
        bc_lo = max(bc_lo, -LINK)
        bc_hi = min(bc_hi, LINK)
        if bc_lo > bc_hi:
            continue
        searched += 1
        t_lo, t_hi = tails3(g2, u1, u2, rab, det2, strip_rng[k, RHO], strip_rng[k, RHO + 1],
                            bc_lo, bc_hi, Gp)
        p = _first_ge(strip_z, s0, s1, -zb_abs)
        q = _first_gt(strip_z, p, s1, min(t_lo, zb_abs))
        u = _first_ge(strip_z, q, s1, max(t_hi, -zb_abs))
        v = _first_gt(strip_z, u, s1, zb_abs)
        for part in range(2):
            c0 = p if part == 0 else u
            c1 = q if part == 0 else v
            for i in range(c0, c1):
                c = strip_box[i]
                if rank[c] <= rb:  # |z_c| = |z_b|: met from (a, c) instead
                    continue
                checked += 1
                zc = strip_z[i]
                rac = rho_a[c]
                lo, hi = rho_bc_range(nab, n_a[c], Na, Nb, N[c], Kb, K[c], W, centred)
                lo = max(lo, -LINK)
                hi = min(hi, LINK)
                if lo > hi or not may_complete(g2, u1, u2, rab, det2, rac, rac, lo, hi, zc,
                                               zc, Gp):
                    continue
                rbc = correlation(_and_weight(bits[b], bits[c], unit, weight), Nb, N[c], W,
                                  centred, Kb, K[c])
                if rbc <= -LINK or rbc >= LINK:
                    continue
                scored += 1
                Gp = _score(g2, u1, u2, rab, det2, rac, rbc, zc, ra, rb, rank[c], Gp, state,
                            best)
    counts[0] += scored
    counts[1] += searched
    counts[2] += checked


@njit(cache=True, inline="always")
def _score(g2: float, u1: float, u2: float, rab: float, det2: float, rac: float,
           rbc: float, zc: float, ra: int, rb: int, rc: int, Gp: float, state: np.ndarray,
           best: np.ndarray) -> float:
    """The triple's exact gain offered to the incumbent; the new threshold."""
    s = schur(rac, rbc, rab, det2)
    gain = g2
    if s > SPAN_TOL:
        t = zc - rac * u1 - rbc * u2
        gain = g2 + t * t / s
    if gain >= Gp:
        offer(gain, ra, rb, rc, state, best)
        return state[0] * (1.0 - 1e-9) - state[1]
    return Gp


@njit(cache=True, nogil=True)
def linked_thirds(bits: np.ndarray, N: np.ndarray, K: np.ndarray, inv_root_K: np.ndarray,
                  z: np.ndarray, rank: np.ndarray, a: int, b: int, ra: int, rb: int,
                  rab: float, det2: float, g2: float, u1: float, u2: float, W: float,
                  centred: bool, unit: float, weight: np.ndarray, n_a: np.ndarray,
                  rho_a: np.ndarray, cap: np.ndarray, rank_linked: np.ndarray,
                  keep: np.ndarray, state: np.ndarray, best: np.ndarray, counts: np.ndarray
                  ) -> None:
    r"""Every third box c of the linked pair (a, b) such that (a, b) is the triple's
    smallest linked pair in the order of ranks: c unlinked to a when it ranks before b
    (``rank_linked[c]``: c's rank if it is linked to a, else ∞), to b as well when it ranks
    before a (``cap[c]``: LINK then, else ∞).

    One branch-free (vectorized) pass over every box tests it at its own ρ_ac and z_c with
    ρ_bc anywhere in :func:`rho_bc_range` cut to ±cap: the two ends of that segment decide
    (s is concave along it, and where s > 0 at both ends the gain is convex between them),
    so c may complete the pair when, at an end, s ≤ SPAN_TOL or
    :math:`t^2 \ge (G - g_2)\,s` — :func:`~rulemip.algorithms.kbox.triple_bounds.
    may_complete` without its divisions. Only those are read (one intersection with b) and
    scored. ``inv_root_K``: :math:`1/\sqrt{K}` of every box; ``keep``: a scratch mask."""
    n = bits.shape[0]
    Na = N[a]
    Nb = N[b]
    nab = n_a[b]
    b_out = Nb - nab
    w_out = W - Na
    f = Nb / W if centred else 0.0
    inv_det2 = 1.0 / det2
    inv_rb = inv_root_K[b]
    Gp = state[0] * (1.0 - 1e-9) - state[1]
    need = Gp - g2
    frb = float(rb)
    for c in range(n):
        nac = n_a[c]
        Nc = N[c]
        mc = Nc - nac
        rac = rho_a[c]
        lo = max(0.0, nab + nac - Na) + max(0.0, b_out + mc - w_out)
        hi = max(min(nab, nac) + min(b_out, mc), lo)
        inv = inv_rb * inv_root_K[c]
        shift = f * Nc
        blo = max((lo - shift) * inv, -cap[c])
        bhi = min((hi - shift) * inv, cap[c])
        q = rac * rac
        s1 = 1.0 - (q - 2.0 * rab * rac * blo + blo * blo) * inv_det2
        s2 = 1.0 - (q - 2.0 * rab * rac * bhi + bhi * bhi) * inv_det2
        p = z[c] - rac * u1
        t1 = p - blo * u2
        t2 = p - bhi * u2
        m1 = max(t1 * t1 - need * s1, SPAN_TOL - s1)
        m2 = max(t2 * t2 - need * s2, SPAN_TOL - s2)
        keep[c] = (max(m1, m2) >= 0.0) & (blo <= bhi) & (rank_linked[c] >= frb)
    keep[a] = False
    keep[b] = False
    scored = 0
    checked = 0
    for c in range(n):
        if not keep[c]:
            continue
        checked += 1
        rbc = correlation(_and_weight(bits[b], bits[c], unit, weight), Nb, N[c], W, centred,
                          K[b], K[c])
        if rbc <= -cap[c] or rbc >= cap[c]:
            continue
        scored += 1
        Gp = _score(g2, u1, u2, rab, det2, rho_a[c], rbc, z[c], ra, rb, rank[c], Gp, state,
                    best)
    counts[0] += scored
    counts[2] += checked
