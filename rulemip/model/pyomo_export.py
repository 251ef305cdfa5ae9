r"""Pyomo export of a :class:`~rulemip.model.StandardForm` (or a
:class:`~rulemip.model.MIPModel`), split from :mod:`rulemip.model.export` (the LP/MPS
writers and the shared naming and indicator linearization).

:func:`to_pyomo` builds a ``pyomo.environ.ConcreteModel`` with one indexed ``Var`` per
variable block and one indexed ``Constraint`` per constraint block, recovered from the names
``block[i,j]`` that :class:`~rulemip.model.MIPModel` gives its columns and rows; separable
logistic and Poisson loss terms become nonlinear ``Expression`` components (``log``/``exp``)
for an NLP/MINLP solver. :func:`column_values` reads a solved model's columns back in order.
Pyomo is imported inside these functions only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.exceptions import FormulationError, InvalidParameterError
from rulemip.losses import get_loss
from rulemip.model.export import _BLOCK_NAME, _check_finite, linearize_indicators
from rulemip.model.standard_form import as_standard_form

if TYPE_CHECKING:
    from rulemip.model.mip_model import MIPModel
    from rulemip.model.standard_form import StandardForm

__all__ = ["column_values", "to_pyomo"]


def _blocks(names: Sequence[str], n: int, default: str
            ) -> list[tuple[str, list[Any], list[int]]]:
    """Group ``n`` ids into ``(base name, indices, ids)`` blocks from ``base[i,j]`` names.

    Falls back to one block ``default`` indexed by id when the names do not describe
    blocks (missing, duplicated, or mixing index lengths under one base)."""
    if n == 0:
        return []
    fallback = [(default, list(range(n)), list(range(n)))]
    if len(names) != n:
        return fallback
    order: list[str] = []
    groups: dict[str, tuple[list[Any], list[int], int]] = {}
    for k, name in enumerate(names):
        mt = _BLOCK_NAME.match(name)
        if mt:
            base = mt.group("base")
            parts = tuple(int(p) for p in mt.group("idx").split(","))
            idx: Any = parts[0] if len(parts) == 1 else parts
            arity = len(parts)
        else:
            base, idx, arity = name, None, 0
        if base not in groups:
            groups[base] = ([], [], arity)
            order.append(base)
        g_idx, g_ids, g_arity = groups[base]
        if g_arity != arity or (arity == 0 and g_ids):
            return fallback
        g_idx.append(idx)
        g_ids.append(k)
    for base in order:
        g_idx, _, arity = groups[base]
        if arity and len(set(g_idx)) != len(g_idx):
            return fallback
    return [(base, groups[base][0], groups[base][1]) for base in order]


def _component_name(pm: Any, base: str, suffix: str) -> str:
    name = base
    while hasattr(pm, name) or pm.component(name) is not None:
        name = f"{name}_{suffix}"
    return name


def to_pyomo(model: StandardForm | MIPModel) -> Any:
    """The model as a ``pyomo.environ.ConcreteModel``.

    Each variable block ``z`` (columns named ``z[i,t]``) becomes an indexed ``Var`` ``z``
    with the same indices, bounds and domain (``Integers`` / ``Reals``), each constraint
    block an indexed ``Constraint``; the objective is the ``Objective`` ``objective``
    (``cᵀx + ½xᵀQx + c_0`` plus the loss terms). Indicator constraints are linearized
    exactly with big-M rows from the column bounds (:func:`linearize_indicators`, block
    ``bigm_indicator``); each loss term ``k`` becomes an indexed ``Expression``
    ``loss_k`` (``log(1 + exp(−y f))``, ``exp(f) − y f + y log y − y`` or ``(f − y)²``).
    Name clashes with Pyomo attributes get a ``_var`` / ``_con`` suffix.

    The list ``pyomo_model.rulemip_columns`` holds the Pyomo variable of every model
    column (in column order), so :func:`column_values` reads a solution back as a vector.

    Parameters
    ----------
    model : StandardForm or MIPModel
        The model.

    Returns
    -------
    pyomo.environ.ConcreteModel
        A model to extend and solve with any Pyomo solver.

    Raises
    ------
    BackendUnavailableError
        When Pyomo is not installed.
    FormulationError
        When an indicator has a column with an infinite bound (no big-M).
    """
    from rulemip.exceptions import BackendUnavailableError

    try:
        import pyomo.environ as pe
    except ImportError as exc:  # pragma: no cover - pyomo is installed in CI
        raise BackendUnavailableError(
            "`to_pyomo` needs Pyomo; install it with `pip install 'rulemip[pyomo]'`.") from exc
    sf = linearize_indicators(as_standard_form(model))
    _check_finite(sf)
    pm = pe.ConcreteModel(name=sf.name or "rulemip")
    columns: list[Any] = [None] * sf.n_cols
    for base, idx, ids in _blocks(sf.col_names, sf.n_cols, "x"):
        cname = _component_name(pm, base, "var")
        if idx == [None]:
            var = pe.Var(domain=pe.Reals)
            pm.add_component(cname, var)
            datas = [var]
        else:
            var = pe.Var(idx, domain=pe.Reals)
            pm.add_component(cname, var)
            datas = [var[i] for i in idx]
        for vd, j in zip(datas, ids):
            if sf.integrality[j]:
                vd.domain = pe.Integers
            lo, hi = float(sf.col_lower[j]), float(sf.col_upper[j])
            vd.setlb(None if math.isinf(lo) else lo)
            vd.setub(None if math.isinf(hi) else hi)
            columns[j] = vd
    pm.rulemip_columns = columns
    A = sp.csr_matrix(sf.A)

    def row_expr(i: int) -> Any:
        s, e = A.indptr[i], A.indptr[i + 1]
        return pe.quicksum((float(v) * columns[j] for j, v in
                            zip(A.indices[s:e].tolist(), A.data[s:e].tolist())),
                           start=0.0)

    def row_rule(i: int) -> Any:
        lo, hi = float(sf.row_lower[i]), float(sf.row_upper[i])
        if math.isinf(lo) and math.isinf(hi):
            return pe.Constraint.Skip
        if A.indptr[i + 1] == A.indptr[i]:
            return pe.Constraint.Feasible if lo <= 0.0 <= hi else pe.Constraint.Infeasible
        expr = row_expr(i)
        if lo == hi:
            return expr == lo
        return (None if math.isinf(lo) else lo, expr, None if math.isinf(hi) else hi)

    for base, idx, ids in _blocks(sf.row_names, sf.n_rows, "rows"):
        cname = _component_name(pm, base, "con")
        lookup = dict(zip(idx, ids))
        if idx == [None]:
            pm.add_component(cname, pe.Constraint(rule=lambda m, r=ids[0]: row_rule(r)))
        else:
            pm.add_component(cname, pe.Constraint(
                idx, rule=lambda m, *key, lk=lookup: row_rule(lk[key[0] if len(key) == 1
                                                                 else tuple(key)])))
    c, Q, offset = sf.c, sf.Q if sf.has_quadratic else None, float(sf.offset)
    obj: Any = pe.quicksum((float(c[j]) * columns[j] for j in np.flatnonzero(c).tolist()),
                           start=offset)
    if Q is not None:
        up = sp.triu(sp.csr_matrix(Q)).tocoo()
        obj = obj + pe.quicksum(
            (0.5 * v if i == j else v) * columns[i] * columns[j]
            for i, j, v in zip(up.row.tolist(), up.col.tolist(), up.data.tolist()))
    for k, term in enumerate(sf.loss_terms):
        expr = _loss_expression(pe, term.loss, [columns[j] for j in term.cols.tolist()],
                                np.asarray(term.y, dtype=float))
        ename = _component_name(pm, f"loss_{k}", "expr")
        pm.add_component(ename, expr)
        w = np.asarray(term.weights, dtype=float) * float(term.scale)
        obj = obj + pe.quicksum(float(w[i]) * expr[i] for i in range(len(w)))
    pm.add_component(_component_name(pm, "objective", "obj"),
                     pe.Objective(expr=obj, sense=pe.minimize))
    return pm


def _loss_expression(pe: Any, loss: str, fs: list[Any], y: NDArray[np.float64]) -> Any:
    if loss not in ("squared", "logistic", "poisson"):
        raise FormulationError(
            f"loss term must be 'squared', 'logistic' or 'poisson'; got {loss!r}.")
    lo = get_loss(loss)
    return pe.Expression(range(len(fs)), rule=lambda m, i: lo.expression(
        fs[i], float(y[i]), pe.exp, pe.log))


def column_values(pyomo_model: Any) -> NDArray[np.float64]:
    """The values of a solved :func:`to_pyomo` model's columns, in model column order
    (``NaN`` for a variable without a value)."""
    columns = getattr(pyomo_model, "rulemip_columns", None)
    if columns is None:
        raise InvalidParameterError(
            "`pyomo_model` must be a model built by `to_pyomo`; it has no `rulemip_columns`.")
    return np.array([math.nan if v.value is None else float(v.value) for v in columns],
                    dtype=float)
