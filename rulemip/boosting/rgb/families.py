r"""Families of regularized regression trees for RGB ([RGB] §3–§5, docs/explanation/rgb.md).

A family :math:`\mathcal H_k = \mathcal H_{n_k, \lambda_k, q}` holds the binary regression
trees with at most :math:`n_k` internal nodes (:math:`n_k + 1` leaves) whose leaf-value
vector satisfies :math:`\|w\|_q \le \lambda_k`. [RGB] Theorem 1 bounds its empirical
Rademacher complexity by

.. math:: \Omega_k = \lambda_k \sqrt{\frac{(4 n_k + 2)\,\log_2(d + 2)\,\log(m + 1)}{m}},

with :math:`m` the sample size, :math:`d` the number of features and :math:`\log` the
natural logarithm (Massart's lemma). The experiments of [RGB] §5 "normalize the
regularization to be in [0, 1]" without saying how; rulemip divides by the largest value
over the grid,

.. math:: \tilde\Omega_k = \Omega_k / \max_j \Omega_j
          = \frac{\lambda_k \sqrt{4 n_k + 2}}{\max_j \lambda_j \sqrt{4 n_j + 2}} \in (0, 1],

which keeps the ratios of Theorem 1 (the bound is multiplicative in :math:`\lambda` and
:math:`\sqrt{4n+2}`) and makes the data factor :math:`\sqrt{\log_2(d+2)\log(m+1)/m}` cancel:
the normalized complexities depend on the grid only. (A min–max normalization would give the
simplest family complexity 0, i.e. make it free, which the theory does not support.)

Sampling distributions over the grid (Randomized Coordinate Descent, [RGB] §4.2, [Nesterov
2012]): coordinate :math:`k` is drawn with probability proportional to a bound
:math:`C_k` on the Lipschitz constant of :math:`\partial L/\partial\alpha_k`. Lemma 3 gives
:math:`C_k \le \frac1m\sum_i h_k(x_i)^2 C_\Phi(y_i)`, which needs the tree. Bounding
:math:`\frac1m\sum_i h_k(x_i)^2 \le \max_i h_k(x_i)^2 \le \|w\|_\infty^2 \le \|w\|_q^2 \le
\lambda_k^2` (the :math:`\ell_1/\ell_\infty` Hölder bound of (10)) gives
:math:`C_k \le \lambda_k^2 \max_i C_\Phi(y_i)`; [RGB] Lemma 4 and (26) state the linear form
:math:`C_k \le \lambda_k \max_i C_\Phi(y_i)` and hence :math:`p_k \propto \lambda_k` (its
proof uses :math:`\sum_l \eta_l w_l^2 \le \|w\|_2 \max_l \eta_l`, which drops a square).
``sampling="lambda"`` (default, the paper's (26) and docs/explanation/rgb.md) draws :math:`p_k
\propto
\lambda_k`; ``"lambda_squared"`` draws with the corrected bound :math:`p_k \propto
\lambda_k^2`; ``"uniform"`` draws :math:`p_k = 1/K` (Lu & Mazumder 2018). In every case
the factor :math:`\max_i C_\Phi(y_i)` cancels in the normalization.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.exceptions import InvalidParameterError

FloatArray = NDArray[np.float64]

#: Internal-node bounds of the grid in [RGB] §5.
PAPER_N_INTERNAL: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 256)
#: Leaf-norm bounds of the grid in [RGB] §5.
PAPER_LAMBDAS: tuple[float, ...] = (0.001, 0.01, 0.1, 0.5, 1.0, 2.0, 4.0)
#: Internal-node bounds of rulemip's default grid: the paper's plus stumps (n = 1), the
#: base learner of scikit-learn's best boosted models on low-dimensional data
#: (docs/benchmarks/rgb.md).
DEFAULT_N_INTERNAL: tuple[int, ...] = (1, *PAPER_N_INTERNAL)
#: Sampling distributions over families (module docstring).
SAMPLINGS: tuple[str, ...] = ("lambda", "lambda_squared", "uniform")


def rademacher_bound(n_internal: float | FloatArray, lam: float | FloatArray, m: int,
                     d: int) -> FloatArray:
    r"""[RGB] Theorem 1: :math:`\lambda\sqrt{(4n+2)\log_2(d+2)\log(m+1)/m}` (elementwise).

    Parameters
    ----------
    n_internal : bound :math:`n` on the number of internal nodes.
    lam : bound :math:`\lambda` on :math:`\|w\|_q`.
    m : sample size (>= 1).
    d : input dimension (>= 1).
    """
    n_arr = np.asarray(n_internal, dtype=float)
    lam_arr = np.asarray(lam, dtype=float)
    factor = math.log2(d + 2) * math.log(m + 1) / m
    return np.asarray(lam_arr * np.sqrt((4.0 * n_arr + 2.0) * factor), dtype=float)


@dataclass(frozen=True)
class FamilyGrid:
    r"""A finite list of families :math:`\mathcal H_{n_k, \lambda_k, q}`, :math:`k = 0..K-1`.

    Parameters
    ----------
    n_internal : :math:`n_k`, the maximal number of internal nodes of family ``k`` (>= 1).
    lambdas : :math:`\lambda_k > 0`, the bound on the leaf vector norm :math:`\|w\|_q`.
    q : the norm, 1 or 2.
    """

    n_internal: tuple[int, ...]
    lambdas: tuple[float, ...]
    q: int = 2

    def __post_init__(self) -> None:
        if len(self.n_internal) != len(self.lambdas) or not self.n_internal:
            raise InvalidParameterError(
                "`families` must contain at least one (n_internal, lambda) pair.")
        if self.q not in (1, 2):
            raise InvalidParameterError(f"`q` must be 1 or 2; got {self.q!r}.")

    # ------------------------------------------------------------------ construction
    @classmethod
    def product(cls, n_values: Iterable[int], lambdas: Iterable[float], q: int = 2
                ) -> FamilyGrid:
        """The Cartesian product ``n_values × lambdas`` (``n`` varies slowest)."""
        ns = list(n_values)
        ls = list(lambdas)
        return cls.from_pairs([(n, lam) for n in ns for lam in ls], q=q)

    @classmethod
    def paper(cls, q: int = 2) -> FamilyGrid:
        """The 7 × 7 = 49 families of [RGB] §5."""
        return cls.product(PAPER_N_INTERNAL, PAPER_LAMBDAS, q=q)

    @classmethod
    def default(cls, q: int = 2) -> FamilyGrid:
        """rulemip's default: the paper's grid plus stumps, 8 × 7 = 56 families
        (``DEFAULT_N_INTERNAL`` × ``PAPER_LAMBDAS``)."""
        return cls.product(DEFAULT_N_INTERNAL, PAPER_LAMBDAS, q=q)

    @classmethod
    def from_pairs(cls, pairs: Any, q: int = 2) -> FamilyGrid:
        """Validate a sequence of ``(n_internal, lambda)`` pairs.

        Raises
        ------
        InvalidParameterError
            When ``pairs`` is not a non-empty sequence of pairs with a positive integer
            ``n_internal`` and a finite ``lambda > 0``, or has duplicates.
        """
        if isinstance(pairs, str | bytes) or not isinstance(pairs, Sequence | np.ndarray):
            raise InvalidParameterError(
                "`families` must be None (rulemip's default grid, the paper's 7x7 plus stumps), "
                f"'paper' (the paper's 7x7 grid) or a list of (n_internal, lambda) pairs; got "
                f"{pairs!r}.")
        ns: list[int] = []
        ls: list[float] = []
        for item in pairs:
            if isinstance(item, str | bytes) or len(item) != 2:  # type: ignore[arg-type]
                raise InvalidParameterError(
                    "each entry of `families` must be an (n_internal, lambda) pair; got "
                    f"{item!r}.")
            n, lam = item[0], item[1]
            if isinstance(n, np.integer):
                n = int(n)
            if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
                raise InvalidParameterError(
                    "`families`: n_internal must be a positive integer (at most n internal "
                    f"nodes, n + 1 leaves); got {n!r}.")
            if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not (
                    math.isfinite(float(lam)) and float(lam) > 0):
                raise InvalidParameterError(
                    "`families`: lambda (the bound on the leaf norm ||w||_q) must be a finite "
                    f"number > 0; got {lam!r}.")
            ns.append(int(n))
            ls.append(float(lam))
        if not ns:
            raise InvalidParameterError(
                "`families` is empty; give at least one (n_internal, lambda) pair or None.")
        if len(set(zip(ns, ls))) != len(ns):
            raise InvalidParameterError(
                "`families` contains a duplicate (n_internal, lambda) pair; list each "
                "family once.")
        return cls(tuple(ns), tuple(ls), q)

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        return len(self.n_internal)

    @property
    def pairs(self) -> list[tuple[int, float]]:
        """The families as ``(n_internal, lambda)`` pairs."""
        return list(zip(self.n_internal, self.lambdas))

    def raw_complexities(self, m: int, d: int) -> FloatArray:
        r""":math:`\Omega_k` of [RGB] Theorem 1 for sample size ``m`` and dimension ``d``."""
        return rademacher_bound(np.array(self.n_internal), np.array(self.lambdas), m, d)

    def complexities(self) -> FloatArray:
        r"""Normalized :math:`\tilde\Omega_k = \Omega_k / \max_j \Omega_j \in (0, 1]`.

        Independent of ``m`` and ``d`` (module docstring): it equals
        :math:`\lambda_k\sqrt{4n_k+2} / \max_j \lambda_j\sqrt{4n_j+2}`.
        """
        raw = np.array(self.lambdas) * np.sqrt(4.0 * np.array(self.n_internal) + 2.0)
        return np.asarray(raw / raw.max(), dtype=float)

    def probabilities(self, sampling: str = "lambda") -> FloatArray:
        r"""Sampling distribution :math:`p` over the families (module docstring)."""
        lam = np.array(self.lambdas, dtype=float)
        if sampling == "lambda":
            weights = lam
        elif sampling == "lambda_squared":
            weights = lam * lam
        elif sampling == "uniform":
            weights = np.ones_like(lam)
        else:
            listed = ", ".join(repr(s) for s in SAMPLINGS)
            raise InvalidParameterError(f"`sampling` must be one of {listed}; got {sampling!r}.")
        return np.asarray(weights / weights.sum(), dtype=float)


def leaf_scale(leaf_values: FloatArray, lam: float, q: int) -> float:
    r"""Factor :math:`s = \min(1, \lambda / \|w\|_q)` that puts ``w`` into the norm ball.

    Radial scaling keeps the direction of the least-squares tree (the step
    :math:`\alpha` absorbs the scale); for ``q = 2`` it is the Euclidean projection onto
    the ball. A zero vector is left as is (``s = 1``).
    """
    norm = float(np.linalg.norm(leaf_values, ord=q))
    if norm <= lam or norm == 0.0:
        return 1.0
    return lam / norm
