r"""The bounds of the exact pair scan (docs/explanation/kbox_search.md §2): what a partner
b of a first box a must look like to gain at least the incumbent — its correlation with a
(:func:`rho_range`, :func:`_may_beat`, :func:`_tails`), its weight
(:func:`partner_weights`) and what it must share with a or with a's complement
(:func:`needed_overlaps`, :func:`weight_needs`, :func:`_node_needs`). Compiled; each is
checked against brute force in ``tests/unit/algorithms/kbox/test_pair_bounds.py``.
"""

from __future__ import annotations

import math

from numba import njit

__all__ = ["WEIGHT_STEPS", "needed_overlaps", "partner_weights", "rho_range",
           "weight_needs"]


@njit(cache=True, inline="always")
def _cross(nab: float, Na: float, Nb: float, W: float, centred: bool) -> float:
    return nab - Na * Nb / W if centred else nab


@njit(cache=True, inline="always")
def _h(za: float, zb: float, rho: float) -> float:
    """:math:`(z_a^2 - 2\rho z_a z_b + z_b^2)/(1-\rho^2)`, the gain of two columns with
    normalized sums z and correlation ρ."""
    return (za * za - 2.0 * rho * za * zb + zb * zb) / (1.0 - rho * rho)


@njit(cache=True, inline="always")
def _norm(n: float, W: float, lam: float, centred: bool) -> float:
    r""":math:`K(N) = V(N) + \lambda`: the squared norm of a box's (centred) indicator of
    weight N, plus the ridge."""
    return (n * (W - n) / W if centred else n) + lam


@njit(cache=True, nogil=True)
def rho_range(Na: float, Ka: float, n0: float, n1: float, T: float, D: float, W: float,
              lam: float, centred: bool) -> tuple[float, float]:
    r"""Bounds :math:`[\rho_{lo}, \rho_{hi}]` on the correlation
    :math:`c/\sqrt{K_a K(N_b)}` of box a with every box b of weight
    :math:`N_b \in [n_0, n_1]` whose common weight with a satisfies
    :math:`\max(0, N_a + N_b - W, N_b - D) \le n_{ab} \le \min(N_a, N_b, T)`.

    The cross term is piecewise linear in :math:`N_b`; on each piece its ratio to
    :math:`\sqrt{K(N_b)}` is either monotone (the pieces through the origin, since
    :math:`N^2/K(N)` increases) or bounded by the piece's extreme cross term over the
    piece's least K (K is concave in N, so least at an end) — docs/explanation/
    kbox_search.md §2."""
    if _norm(n0, W, lam, centred) <= 0.0 or _norm(n1, W, lam, centred) <= 0.0:
        return -1.0, 1.0  # a zero-norm partner (collinear with the intercept): no bound
    M = min(Na, T)
    alpha = Na / W if centred else 0.0
    # the high side: (min(N, M) - αN) / sqrt(Ka K(N))
    hi = -math.inf
    if n0 <= M:
        n = min(n1, M)
        hi = (1.0 - alpha) * n / math.sqrt(Ka * _norm(n, W, lam, centred))
    if n1 >= M:
        left = max(n0, M)
        num = M - alpha * left
        k_left = _norm(left, W, lam, centred)
        k_right = _norm(n1, W, lam, centred)
        k = min(k_left, k_right) if num > 0.0 else max(k_left, k_right)
        hi = max(hi, num / math.sqrt(Ka * k))
    # the low side: (max(0, Na + N - W, N - D) - αN) / sqrt(Ka K(N))
    kappa = min(W - Na, D)
    lo = math.inf
    if n0 <= kappa:
        n = min(n1, kappa)
        lo = -alpha * n / math.sqrt(Ka * _norm(n, W, lam, centred))
    if n1 >= kappa:
        left = max(n0, kappa)
        num = max(0.0, Na + left - W, left - D) - alpha * left
        k_left = _norm(left, W, lam, centred)
        k_right = _norm(n1, W, lam, centred)
        k = min(k_left, k_right) if num < 0.0 else max(k_left, k_right)
        lo = min(lo, num / math.sqrt(Ka * k))
    return lo, hi


@njit(cache=True, nogil=True)
def needed_overlaps(za: float, Gp: float, Na: float, Ka: float, W: float, lam: float,
                    centred: bool) -> tuple[float, float]:
    r"""What a partner b of a (with :math:`|z_b| \le |z_a|`) must share with a, or with
    a's complement, to gain at least Gp: ``(n_need, m_need)`` such that every such b has
    :math:`n_{ab} \ge` n_need or :math:`N_b - n_{ab} \ge` m_need.

    Over :math:`|z_b| \le |z_a|` the gain h(ρ, z_b) is at most
    :math:`2 z_a^2/(1 - |\rho|)`, so :math:`|\rho| \ge \rho_0 = 1 - 2 z_a^2/G_p`. For
    ρ ≥ ρ_0: :math:`n_{ab} \ge f(N_b) = \alpha N_b + \rho_0\sqrt{K_a K(N_b)}` (α =
    N_a/W, 0 without intercept) and :math:`n_{ab} \le \min(N_a, N_b)`, so
    :math:`N_b` lies in the interval :math:`[N_1, N_3]` of :func:`partner_weights`, at
    whose ends the concave f is least: :math:`\min(f(N_1), f(N_3)) = \min(N_1, N_a)`.
    For ρ ≤ −ρ_0 (with intercept only) the same argument on :math:`N_b - n_{ab} \ge
    (1-\alpha) N_b + \rho_0\sqrt{K_a K(N_b)}` (:func:`weight_needs`). Returns (0, 0) —
    no condition — when :math:`\rho_0 \le 0` (docs/explanation/kbox_search.md §2)."""
    if 2.0 * za * za >= Gp or Gp <= 0.0:
        return 0.0, 0.0
    lo1, hi1, lo2, hi2 = partner_weights(za, Gp, Na, Ka, W, lam, centred, 0.0)
    return weight_needs(za, Gp, Na, Ka, W, lam, centred, lo1, hi1, lo2, hi2)


@njit(cache=True, nogil=True)
def weight_needs(za: float, Gp: float, Na: float, Ka: float, W: float, lam: float,
                 centred: bool, lo1: float, hi1: float, lo2: float, hi2: float
                 ) -> tuple[float, float]:
    r""":func:`needed_overlaps` over partners of weights in the intervals of
    :func:`partner_weights`: with ρ ≥ ρ_0, :math:`n_{ab} \ge f(N_b) = \alpha N_b +
    \rho_0\sqrt{K_a K(N_b)}`, concave, so at least its least value at the interval's
    ends; with ρ ≤ −ρ_0, :math:`N_b - n_{ab} \ge (1 - \alpha) N_b + \rho_0\sqrt{K_a
    K(N_b)}`, likewise. An empty interval needs nothing possible (+inf)."""
    if 2.0 * za * za >= Gp or Gp <= 0.0:
        return 0.0, 0.0
    rho0 = 1.0 - 2.0 * za * za / Gp
    alpha = Na / W if centred else 0.0
    slack = 1e-9 * W
    n_need = math.inf
    if lo1 <= hi1:
        n_need = min(_excess(0.0, alpha, -rho0, Ka, max(lo1, 0.0), W, lam, centred),
                     _excess(0.0, alpha, -rho0, Ka, min(hi1, W), W, lam, centred)) - slack
    m_need = math.inf
    if centred and lo2 <= hi2:
        m_need = min(_excess(0.0, 1.0 - alpha, -rho0, Ka, max(lo2, 0.0), W, lam, centred),
                     _excess(0.0, 1.0 - alpha, -rho0, Ka, min(hi2, W), W, lam, centred)
                     ) - slack
    return n_need, m_need


@njit(cache=True, inline="always")
def _excess(A: float, B: float, rho0: float, Ka: float, n: float, W: float, lam: float,
            centred: bool) -> float:
    r""":math:`A + B n - \rho_0\sqrt{K_a K(n)}`: convex in n (K is concave)."""
    return A + B * n - rho0 * math.sqrt(Ka * max(_norm(n, W, lam, centred), 0.0))


@njit(cache=True, inline="always")
def _crossing(A: float, B: float, rho0: float, Ka: float, W: float, lam: float,
              centred: bool, larger: bool) -> float:
    r"""A root of :math:`(A + Bn)^2 = \rho_0^2 K_a K(n)` — where :func:`_excess` may
    vanish —, the larger or the smaller (numerically stable form); K is quadratic in n
    with an intercept and linear without."""
    c = rho0 * rho0 * Ka
    a2 = B * B + (c / W if centred else 0.0)
    b1 = 2.0 * A * B - c
    c0 = A * A - c * lam
    if a2 <= 0.0:
        return -c0 / b1 if b1 != 0.0 else 0.0
    sd = math.sqrt(max(b1 * b1 - 4.0 * a2 * c0, 0.0))
    q = -0.5 * (b1 + (sd if b1 >= 0.0 else -sd))
    r1 = q / a2
    r2 = c0 / q if q != 0.0 else r1
    return max(r1, r2) if larger else min(r1, r2)


@njit(cache=True)
def _weight_end(A: float, B: float, rho0: float, Ka: float, W: float, lam: float,
                centred: bool, upper: bool) -> float:
    r"""For the convex :math:`e(n) =` :func:`_excess` on [0, W] with :math:`e(0) \le 0`
    (``upper`` False) the least box weight n (K(n) > 0) with :math:`e(n) \ge 0` (its set
    is [that n, W]: a convex function at most 0 at 0 stays at least 0 beyond a point where
    it is; at λ = 0, e(0) = 0 itself, and 0 is no box's weight), or
    +inf when e(W) < 0; with :math:`e(W) \le 0` or e decreasing (``upper``) the largest
    such n, or −inf when e(0) < 0. That n is a root of the quadratic (:func:`_crossing`),
    widened by :math:`10^{-7} W` and checked: an end where e does not have the sign that
    puts it outside the set (round-off) is found by bisection instead (50 halvings, the
    bracket's outer end), so the interval is never too narrow."""
    widen = 1e-7 * W
    if not upper:
        if _excess(A, B, rho0, Ka, W, W, lam, centred) < 0.0:
            return math.inf
        end = max(_crossing(A, B, rho0, Ka, W, lam, centred, True) - widen, 0.0)
        if end == 0.0 or _excess(A, B, rho0, Ka, end, W, lam, centred) < 0.0:
            return end
        return _bisect(A, B, rho0, Ka, W, lam, centred, upper)
    if _excess(A, B, rho0, Ka, 0.0, W, lam, centred) < 0.0:
        return -math.inf
    if _norm(W, W, lam, centred) > 0.0 and _excess(A, B, rho0, Ka, W, W, lam, centred) >= 0.0:
        return W  # (at λ = 0 with an intercept e(W) = 0, and W is no box's weight)
    end = min(_crossing(A, B, rho0, Ka, W, lam, centred, False) + widen, W)
    if end >= 0.0 and _excess(A, B, rho0, Ka, end, W, lam, centred) < 0.0:
        return end
    return _bisect(A, B, rho0, Ka, W, lam, centred, upper)


@njit(cache=True)
def _bisect(A: float, B: float, rho0: float, Ka: float, W: float, lam: float,
            centred: bool, upper: bool) -> float:
    """:func:`_weight_end` by 50 halvings of [0, W], the bracket's outer end returned
    (below the crossing for a lower end, above it for an upper one)."""
    lo, hi = 0.0, W
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if (_excess(A, B, rho0, Ka, mid, W, lam, centred) >= 0.0) != upper:
            hi = mid
        else:
            lo = mid
    return hi if upper else lo


@njit(cache=True, nogil=True)
def partner_weights(za: float, Gp: float, Na: float, Ka: float, W: float, lam: float,
                    centred: bool, unit: float) -> tuple[float, float, float, float]:
    r"""The weights a partner b of a (with :math:`|z_b| \le |z_a|`) can have if it gains
    at least Gp: ``(lo1, hi1, lo2, hi2)`` with :math:`N_b \in [lo_1, hi_1]` when
    ρ_ab > 0 and :math:`N_b \in [lo_2, hi_2]` when ρ_ab < 0 (an empty interval:
    lo > hi; no condition: (−inf, inf, −inf, inf)).

    Such a partner has :math:`|\rho| \ge \rho_0 = 1 - 2 z_a^2/G_p` (:func:`needed_overlaps`).
    ρ ≥ ρ_0 needs :math:`n_{ab} - \alpha N_b \ge \rho_0\sqrt{K_a K(N_b)}` with
    :math:`n_{ab} \le \min(N_a, N_b)`: both :math:`(1-\alpha) N_b` and
    :math:`N_a - \alpha N_b` minus :math:`\rho_0\sqrt{K_a K(N_b)}` must be ≥ 0. Both are
    convex in :math:`N_b`; the first is ≤ 0 at 0, so its feasible set is
    :math:`[lo_1, W]`; the second is ≤ 0 at W with an intercept (and decreasing without),
    so its set is :math:`[0, hi_1]`. ρ ≤ −ρ_0 (with an intercept) is the same with a's
    complement: :math:`n_{ab} \ge \max(0, N_a + N_b - W)` makes :math:`\alpha N_b` and
    :math:`(W - N_a) - (1-\alpha) N_b`, minus the same root, ≥ 0
    When every cell weighs ``unit`` (> 0), weights are multiples of it and each end is
    moved inwards past the multiples k at which the correlation cannot reach ρ_0 even with
    the most (ρ > 0) or least (ρ < 0) common weight a box of weight k can have with a:
    :math:`\min(N_a, k)`, less one cell at :math:`k = N_a` (a distinct cover of a's
    weight misses a cell of a), and :math:`\max(0, N_a + k - W)`, plus one cell at
    :math:`k = W - N_a` (a distinct cover of that weight other than a's complement meets
    a; the complement itself gains what two copies of a gain, never more than the
    incumbent, which starts at the best such gain). At most :data:`WEIGHT_STEPS`
    multiples are tried per end (docs/explanation/kbox_search.md §2)."""
    if 2.0 * za * za >= Gp or Gp <= 0.0:
        return -math.inf, math.inf, -math.inf, math.inf
    rho0 = 1.0 - 2.0 * za * za / Gp
    alpha = Na / W if centred else 0.0
    slack = 1e-9 * W
    lo1 = _weight_end(0.0, 1.0 - alpha, rho0, Ka, W, lam, centred, False) - slack
    hi1 = _weight_end(Na, -alpha, rho0, Ka, W, lam, centred, True) + slack
    if unit > 0.0:
        lo1, hi1 = _multiples(lo1, hi1, rho0, Na, Ka, W, lam, centred, unit, True)
    if not centred:
        return lo1, hi1, math.inf, -math.inf
    lo2 = _weight_end(0.0, alpha, rho0, Ka, W, lam, centred, False) - slack
    hi2 = _weight_end(W - Na, -(1.0 - alpha), rho0, Ka, W, lam, centred, True) + slack
    if unit > 0.0:
        lo2, hi2 = _multiples(lo2, hi2, rho0, Na, Ka, W, lam, centred, unit, False)
    return lo1, hi1, lo2, hi2


#: multiples of the cell weight tried from each end of a partner-weight interval
WEIGHT_STEPS = 16


@njit(cache=True, inline="always")
def _reaches(k: float, rho0: float, Na: float, Ka: float, W: float, lam: float,
             centred: bool, unit: float, positive: bool) -> bool:
    """Whether a box of weight k (a multiple of ``unit``) can have ρ ≥ ρ_0 (``positive``)
    or ρ ≤ −ρ_0 with a (:func:`partner_weights`), up to round-off."""
    kb = _norm(k, W, lam, centred)
    if kb <= 0.0:
        return False  # not a box of the scan (zero norm)
    root = math.sqrt(Ka * kb)
    if positive:
        n = min(Na, k) - (unit if abs(k - Na) < 0.5 * unit else 0.0)
        return _cross(n, Na, k, W, centred) >= (rho0 - 1e-9) * root
    n = max(0.0, Na + k - W) + (unit if abs(k - (W - Na)) < 0.5 * unit else 0.0)
    return _cross(n, Na, k, W, centred) <= -(rho0 - 1e-9) * root


@njit(cache=True)
def _multiples(lo: float, hi: float, rho0: float, Na: float, Ka: float, W: float,
               lam: float, centred: bool, unit: float, positive: bool
               ) -> tuple[float, float]:
    """The interval [lo, hi] of partner weights shrunk to its outermost multiples of
    ``unit`` that :func:`_reaches` allows (empty: lo > hi)."""
    k0 = max(math.ceil(lo / unit - 1e-9), 1.0)
    k1 = min(math.floor(hi / unit + 1e-9), math.floor(W / unit + 1e-9))
    if k0 > k1:
        return math.inf, -math.inf
    # the least multiple allowed, if one of the first WEIGHT_STEPS is
    new_lo = (k0 + WEIGHT_STEPS) * unit  # (none of those: no conclusion beyond them)
    for t in range(WEIGHT_STEPS):
        k = k0 + t
        if k > k1:
            return math.inf, -math.inf  # none allowed
        if _reaches(k * unit, rho0, Na, Ka, W, lam, centred, unit, positive):
            new_lo = k * unit
            break
    new_hi = (k1 - WEIGHT_STEPS + 1) * unit
    for t in range(WEIGHT_STEPS):
        k = k1 - t
        if k * unit <= new_lo:
            new_hi = new_lo
            break
        if _reaches(k * unit, rho0, Na, Ka, W, lam, centred, unit, positive):
            new_hi = k * unit
            break
    new_hi = max(new_hi, new_lo)
    slack = 1e-9 * W
    return new_lo - slack, new_hi + slack


@njit(cache=True, inline="always")
def _may_beat(za: float, zlo: float, zhi: float, rho_lo: float, rho_hi: float,
              Gp: float) -> bool:
    r"""Whether some partner with :math:`z_b \in [z_{lo}, z_{hi}]` and correlation in
    [ρ_lo, ρ_hi] may gain at least Gp: the gain is convex in ρ and in :math:`z_b`, so its
    maximum over the rectangle is at a corner."""
    if zlo > zhi:
        return False
    if rho_hi >= 1.0 - 1e-12 or rho_lo <= -1.0 + 1e-12 or rho_lo > rho_hi:
        return True  # (an empty range only from round-off: no conclusion)
    for zb in (zlo, zhi):  # noqa: SIM110  (compiled: no generators)
        if _h(za, zb, rho_lo) >= Gp or _h(za, zb, rho_hi) >= Gp:
            return True
    return False


@njit(cache=True, inline="always")
def _node_needs(za: float, zlo: float, zhi: float, Gp: float, sga: float, edge: float,
                n0: float, n1: float,
                sk0: float, sk1: float, lo1: float, hi1: float, lo2: float, hi2: float,
                sk_lo1: float, sk_hi1: float, sk_lo2: float, sk_hi2: float, alpha: float,
                ska: float, centred: bool, W: float) -> tuple[float, float]:
    r"""What every partner b below a trie node that gains at least Gp shares with a:
    ``(need1, need2)`` with :math:`n_{ab} \ge` need1 or :math:`N_b - n_{ab} \ge` need2
    (0: no condition; inf: impossible).

    For a fixed :math:`z_b` the gain reaches Gp exactly when ρ lies outside the roots
    :math:`\rho_\pm(z_b) = (z_a z_b \pm \sqrt{(G_p - z_a^2)(G_p - z_b^2)})/G_p`; both
    roots increase with :math:`z_b \operatorname{sign} z_a` over :math:`|z_b| \le
    |z_a|`, so over the node's z range every partner has ρ ≥ ρ_+ (the root at the end
    nearer :math:`-z_a`) or ρ ≤ ρ_− (the root at the other end). ρ ≥ ρ_+ > 0 means
    :math:`n_{ab} \ge \alpha N_b + \rho_+\sqrt{K_a K(N_b)}`, concave in the partner's
    weight, so at least its least value at the ends of the node's weights
    :math:`[n_0, n_1]` within :math:`[lo_1, hi_1]` (:func:`partner_weights`; sk: the
    roots :math:`\sqrt{K}` there); ρ ≤ ρ_− < 0 likewise on :math:`N_b - n_{ab}` with
    :math:`(1 - \alpha) N_b`. Without an intercept ρ ≥ 0, so ρ ≤ ρ_− < 0 is
    impossible. ``sga`` is :math:`\sqrt{G_p - z_a^2}` and ``edge`` the roots' value
    :math:`\pm(1 - 2 z_a^2/G_p)` at the ends ∓z_a of the range, taken without a root
    (docs/explanation/kbox_search.md §2)."""
    zp = zlo if za > 0.0 else zhi
    zm = zhi if za > 0.0 else zlo
    if zp == -za:
        rp = edge - 1e-9
    else:
        rp = (za * zp + sga * math.sqrt(max(Gp - zp * zp, 0.0))) / Gp - 1e-9
    if zm == za:
        rm = -edge + 1e-9
    else:
        rm = (za * zm - sga * math.sqrt(max(Gp - zm * zm, 0.0))) / Gp + 1e-9
    slack = 1e-9 * W
    need1 = 0.0
    if rp > 0.0:
        need1 = math.inf
        if n1 >= lo1 and n0 <= hi1:
            k0 = sk0 if n0 >= lo1 else sk_lo1
            k1 = sk1 if n1 <= hi1 else sk_hi1
            need1 = min(alpha * max(n0, lo1) + rp * ska * k0,
                        alpha * min(n1, hi1) + rp * ska * k1) - slack
    need2 = 0.0
    if rm < 0.0:
        need2 = math.inf
        if centred and n1 >= lo2 and n0 <= hi2:
            k0 = sk0 if n0 >= lo2 else sk_lo2
            k1 = sk1 if n1 <= hi2 else sk_hi2
            need2 = min((1.0 - alpha) * max(n0, lo2) - rm * ska * k0,
                        (1.0 - alpha) * min(n1, hi2) - rm * ska * k1) - slack
    return need1, need2


@njit(cache=True, inline="always")
def _tails(za: float, rho: float, G: float) -> tuple[float, float]:
    """Roots of :math:`z_b^2 - 2\\rho z_a z_b + z_a^2 = G(1-\\rho^2)` in :math:`z_b`:
    a partner strictly between them gains less than G at correlation ρ."""
    d = (1.0 - rho * rho) * (G - za * za)
    r = math.sqrt(d) if d > 0.0 else 0.0
    return rho * za - r, rho * za + r
