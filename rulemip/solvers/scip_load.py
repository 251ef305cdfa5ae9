r"""Loading a :class:`~rulemip.model.StandardForm` into SCIP (the rules of
:mod:`rulemip.solvers.scip`'s module docstring): columns, the offset, linear rows, the
quadratic objective's epigraph, indicators and separable loss terms, each a Python loop
that checks the load's deadline every :data:`LOAD_CHECK_EVERY` items."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.exceptions import InvalidParameterError
from rulemip.losses import get_loss
from rulemip.model.standard_form import IndicatorConstraint, SeparableLoss

__all__ = ["LOAD_CHECK_EVERY", "LoadExpired", "ScipLoader"]


def _bound(v: float) -> float | None:
    return None if math.isinf(v) else float(v)


class LoadExpired(Exception):
    """The time limit passed while the model was being loaded (:class:`ScipPersistent`
    checks it every :data:`LOAD_CHECK_EVERY` columns, rows and loss points)."""


#: columns / rows / loss points loaded between two clock checks (≈ 0.01 s of loading)
LOAD_CHECK_EVERY = 1000


class ScipLoader:
    """The building half of :class:`~rulemip.solvers.scip.ScipPersistent`: it adds the
    model's parts to ``self._m`` and keeps the columns, terms and rows it made."""

    _ps: Any
    _m: Any
    _Expr: Any
    _ExprCons: Any
    _Term: Any
    _offset: float
    _vars: list[Any]
    _terms: list[Any]
    _rows: list[Any]
    _zero: Any
    _integer: NDArray[np.bool_]
    _c: NDArray[np.float64]
    _quad_t: Any
    _thetas: list[list[Any]]
    _indicator_binaries: set[int]
    _deadline: float | None

    def _check_load(self, i: int) -> None:
        if self._deadline is not None and i % LOAD_CHECK_EVERY == 0 \
                and time.perf_counter() >= self._deadline:
            raise LoadExpired

    def _add_vars(self, c: NDArray[np.float64], lb: NDArray[np.float64],
                  ub: NDArray[np.float64], integer: NDArray[np.bool_],
                  names: Sequence[str] = ()) -> None:
        m = self._m
        first = len(self._vars)
        for j in range(len(c)):
            self._check_load(j)
            name = names[j] if j < len(names) else f"x{first + j}"
            v = m.addVar(name=name, vtype="I" if integer[j] else "C", lb=_bound(lb[j]),
                         ub=_bound(ub[j]), obj=float(c[j]))
            self._vars.append(v)
            self._terms.append(self._Term(v))
        self._integer = np.concatenate([self._integer, np.asarray(integer, dtype=bool)])
        self._c = np.concatenate([self._c, np.asarray(c, dtype=float)])

    def _set_offset(self, offset: float) -> None:
        if offset != self._offset:
            self._m.addObjoffset(offset - self._offset)
            self._offset = offset

    def _zero_var(self) -> Any:
        """A column fixed at 0 carrying the rows that have no coefficients."""
        if self._zero is None:
            self._zero = self._m.addVar(name="rulemip_zero", lb=0.0, ub=0.0)
        return self._zero

    def _add_linear_rows(self, A: sp.csr_matrix, lower: NDArray[np.float64],
                         upper: NDArray[np.float64], names: Sequence[str] = ()) -> None:
        Expr, ExprCons, terms = self._Expr, self._ExprCons, self._terms
        indptr, indices, data = A.indptr, A.indices, A.data
        first = len(self._rows)
        for i in range(A.shape[0]):
            self._check_load(i)
            s, e = indptr[i], indptr[i + 1]
            if e > s:
                coefs: dict[Any, float] = {}
                for j, a in zip(indices[s:e].tolist(), data[s:e].tolist()):
                    t = terms[j]
                    coefs[t] = coefs.get(t, 0.0) + a
                expr = Expr(coefs)
            else:
                expr = Expr({self._Term(self._zero_var()): 1.0})
            name = names[i] if i < len(names) else f"r{first + i}"
            cons = self._m.addCons(ExprCons(expr, lhs=_bound(lower[i]), rhs=_bound(upper[i])),
                                   name=name)
            self._rows.append(cons)

    def _add_quadratic(self, Q: sp.csr_matrix) -> None:
        m = self._m
        t = m.addVar(name="rulemip_quad_epigraph", lb=None, ub=None, obj=1.0)
        self._quad_t = t
        coo = sp.triu(sp.coo_matrix(Q)).tocoo()
        expr: Any = -t
        for i, j, q in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()):
            # ½ xᵀQx = Σ_i ½Q_ii x_i² + Σ_{i<j} Q_ij x_i x_j  (Q symmetric)
            coef = 0.5 * q if i == j else q
            expr = expr + coef * self._vars[i] * self._vars[j]
        m.addCons(expr <= 0.0, name="rulemip_quad_objective")

    def _add_indicator(self, ind: IndicatorConstraint, k: int) -> None:
        self._check_load(k)
        Expr, ExprCons = self._Expr, self._ExprCons
        if not self._integer[ind.binary]:
            raise InvalidParameterError(
                f"indicator {ind.name or k!r}: column {ind.binary} is not integer (binary).")
        coefs: dict[Any, float] = {}
        for j, a in zip(ind.cols, ind.vals):
            coefs[self._terms[j]] = coefs.get(self._terms[j], 0.0) + a
        binvar = self._vars[ind.binary]
        self._indicator_binaries.add(int(ind.binary))
        active = bool(ind.active_value)
        senses = ["<=", ">="] if ind.sense == "==" else [ind.sense]
        for sense in senses:
            expr = Expr(dict(coefs))
            cons = (ExprCons(expr, lhs=None, rhs=ind.rhs) if sense == "<="
                    else ExprCons(expr, lhs=ind.rhs, rhs=None))
            self._m.addConsIndicator(cons, binvar, activeone=active,
                                     name=f"{ind.name or 'indicator'}_{k}_{sense}")

    def _add_loss(self, term: SeparableLoss, k: int) -> None:
        ps, m = self._ps, self._m
        y = np.asarray(term.y, dtype=float)
        w = np.asarray(term.weights, dtype=float) * float(term.scale)
        thetas: list[Any] = []
        self._thetas.append(thetas)
        for i, col in enumerate(np.asarray(term.cols).tolist()):
            self._check_load(i)
            f = self._vars[col]
            theta = m.addVar(name=f"rulemip_loss{k}_{i}", lb=None, ub=None, obj=float(w[i]))
            thetas.append(theta)
            yi = float(y[i])
            if term.loss == "logistic":
                # log(1 + e^u) <= θ in its exponential-cone form (module docstring)
                m.addCons(ps.exp(-theta) + ps.exp(-yi * f - theta) <= 1.0, name=f"loss{k}_{i}")
            else:  # squared, poisson: l(f, y) <= θ with the formula of rulemip.losses
                m.addCons(get_loss(term.loss).expression(f, yi, ps.exp, ps.log) - theta <= 0.0,
                          name=f"loss{k}_{i}")
