r"""The exact three-box scan (docs/explanation/kbox_search.md §6): every multiset of
three boxes met at least once, compiled (no Python runs per pair or triple).

The gain of a triple and its bounds are in :mod:`~rulemip.algorithms.kbox.triple_bounds`
(the Schur form :math:`g = g_2 + t^2/s`, convex where s > 0, so a rectangle of
correlations is bounded at its corners); a first box's other boxes, read once and grouped
into strips of :math:`\rho_{ac}`, in :mod:`~rulemip.algorithms.kbox.triple_strips`. This
module holds the scan over first boxes and pairs, and the best third box of one pair.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rulemip.algorithms.kbox.correlations import correlation
from rulemip.algorithms.kbox.pair_kernel import COLLINEAR_TOL, _and_weight, _cross, pair_gain
from rulemip.algorithms.kbox.triple_bounds import (
    LINK,
    SPAN_TOL,
    may_complete,
    offer,
    triple_gain,
)
from rulemip.algorithms.kbox.triple_strips import (
    N_STRIPS,
    first_box_row,
    first_box_strips,
    linked_thirds,
    unlinked_thirds,
)

__all__ = ["LINK", "SPAN_TOL", "best_third", "may_complete", "scan_triples", "triple_gain"]


@njit(cache=True, nogil=True)
def scan_triples(bits: np.ndarray, N: np.ndarray, S: np.ndarray, K: np.ndarray,
                 z: np.ndarray, rank: np.ndarray, a_order: np.ndarray, r0: int, r1: int,
                 z_order: np.ndarray, W: float, lam: float, centred: bool, unit: float,
                 weight: np.ndarray, state: np.ndarray, best: np.ndarray,
                 counts: np.ndarray) -> None:
    r"""Scan the pairs (a, b) whose first box a is at ranks ``r0..r1-1`` of ``a_order``
    (decreasing :math:`|z|`) and b of larger rank, and the triples through them; every
    multiset of three boxes is met at least once.

    For every such pair the multisets {a, a, b} and {a, b, b} are scored exactly (two
    copies of a box: its ridge halved on the shared weight). A triple whose three
    correlations are all below :data:`LINK` in absolute value is met from its two
    strongest boxes (a, b): over :math:`|\rho_{ac}|, |\rho_{bc}| \le` LINK and
    :math:`|z_c| \le |z_b|` the Schur form is convex (every corner has s > 0 because
    LINK < 1/2), so one :func:`may_complete` test decides whether the pair needs its third
    boxes at all; those are searched in a's strips (:func:`~rulemip.algorithms.kbox.
    triple_strips.unlinked_thirds`). A triple with a linked pair (:math:`|\rho| \ge`
    LINK) is met from its smallest linked pair in the order of ranks, which tests third
    boxes of every rank in one vectorized pass (:func:`~rulemip.algorithms.kbox.
    triple_strips.linked_thirds`). Collinear pairs (a, b) are skipped: every triple through them
    gains what one of its pairs gains, and the caller starts the incumbent at least at the
    proved best pair. ``z_order``: every position by increasing z.

    ``state = [G*, margin]`` (the incumbent gain and an absolute round-off slack, as for
    pairs), ``best`` the ranks of the incumbent (sorted; −1: none), ``counts`` = [triples
    scored exactly, strips searched, third boxes checked in them, pairs visited, pairs
    whose third boxes were searched].
    """
    n = a_order.shape[0]
    n_a = np.empty(n)
    rho_a = np.empty(n)
    suffix = np.empty((n + 1, 2))
    strip_start = np.empty(N_STRIPS + 1, dtype=np.int64)
    strip_z = np.empty(n)
    strip_box = np.empty(n, dtype=np.int64)
    strip_rng = np.empty((N_STRIPS, 10))
    inv_root_K = 1.0 / np.sqrt(K)
    keep = np.empty(n, dtype=np.bool_)
    cap = np.empty(n)
    rank_linked = np.empty(n)
    half = 0.5 * lam
    n_pairs = 0
    n_searched = 0
    for ra in range(r0, r1):
        a = a_order[ra]
        za = z[a]
        Ka = K[a]
        Na = N[a]
        Sa = S[a]
        first_box_row(bits, N, K, rank, a_order, a, ra, W, centred, unit, weight, n_a,
                      rho_a, suffix, cap, rank_linked)
        strips_built = False
        for rb in range(ra + 1, n):
            b = a_order[rb]
            zb = z[b]
            Kb = K[b]
            n_pairs += 1
            cab = _cross(n_a[b], Na, N[b], W, centred)
            # {a, a, b} and {a, b, b}: two copies of one box share its weight (ridge λ/2)
            if Ka - half > 0.0:
                offer(pair_gain(Sa, Ka - half, S[b], Kb, cab), ra, ra, rb, state, best)
            if Kb - half > 0.0:
                offer(pair_gain(Sa, Ka, S[b], Kb - half, cab), ra, rb, rb, state, best)
            rab = cab / math.sqrt(Ka * Kb)
            det2 = 1.0 - rab * rab
            if det2 <= COLLINEAR_TOL:
                continue
            u1 = (za - rab * zb) / det2
            u2 = (zb - rab * za) / det2
            g2 = za * u1 + zb * u2
            if abs(rab) >= LINK:
                n_searched += 1
                linked_thirds(bits, N, K, inv_root_K, z, rank, a, b, ra, rb, rab, det2, g2,
                              u1, u2, W, centred, unit, weight, n_a, rho_a, cap,
                              rank_linked, keep, state, best, counts)
                continue
            # the unlinked third boxes of larger rank: ρ_ac within their exact range
            ac_lo = suffix[rb + 1, 0]
            ac_hi = suffix[rb + 1, 1]
            zb_abs = abs(zb)
            if ac_lo > ac_hi or not may_complete(
                    g2, u1, u2, rab, det2, ac_lo, ac_hi, -LINK, LINK, -zb_abs, zb_abs,
                    state[0] * (1.0 - 1e-9) - state[1]):
                continue
            n_searched += 1
            if not strips_built:
                first_box_strips(N, K, z, rank, z_order, ra, n_a, rho_a, strip_start,
                                 strip_z, strip_box, strip_rng)
                strips_built = True
            unlinked_thirds(bits, N, K, rank, a, b, ra, rb, rab, det2, g2, u1, u2, zb_abs, W,
                            centred, unit, weight, n_a, rho_a, strip_start, strip_z,
                            strip_box, strip_rng, state, best, counts)
    counts[3] += n_pairs
    counts[4] += n_searched


@njit(cache=True, nogil=True)
def best_third(bits: np.ndarray, N: np.ndarray, K: np.ndarray, z: np.ndarray, a: int,
               b: int, W: float, centred: bool, unit: float, weight: np.ndarray
               ) -> tuple[float, int]:
    """The best third box for the pair of positions (a, b), every box scored exactly
    (a second copy of a or b included: its ridge is then halved); ``(gain, position)``."""
    Ka, Kb = K[a], K[b]
    rab = correlation(_and_weight(bits[a], bits[b], unit, weight), N[a], N[b], W, centred, Ka, Kb)
    best_g = -1.0
    best_c = -1
    for c in range(bits.shape[0]):
        Kc = K[c]
        if Kc <= 0.0:
            continue
        rac = correlation(_and_weight(bits[a], bits[c], unit, weight), N[a], N[c], W, centred,
                   Ka, Kc)
        rbc = correlation(_and_weight(bits[b], bits[c], unit, weight), N[b], N[c], W, centred,
                   Kb, Kc)
        g = triple_gain(z[a], z[b], z[c], rab, rac, rbc)
        if g > best_g:
            best_g = g
            best_c = c
    return best_g, best_c
