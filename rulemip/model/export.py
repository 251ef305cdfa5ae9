r"""Solver-neutral export of a :class:`~rulemip.model.StandardForm` (or a
:class:`~rulemip.model.MIPModel`): CPLEX LP files and free MPS files (Pyomo models:
:mod:`rulemip.model.pyomo_export`).

* :func:`write_lp` writes the CPLEX LP format: linear rows (ranged rows as
  ``name: lo <= aᵀx <= hi``), bounds, ``General`` integers, a quadratic objective as
  ``[ ... ] / 2`` and indicator constraints as ``name: z = 1 -> aᵀx <= b``.
* :func:`write_mps` writes free MPS: ``RANGES`` for two-sided rows, explicit bounds for
  every column (``MI``/``PL``/``FR``/``FX``), integer columns between ``MARKER`` lines,
  the objective constant as the negated ``RHS`` of the objective row, and a quadratic
  objective ``½xᵀQx`` as a ``QUADOBJ`` section (upper triangle of ``Q``). MPS has no
  indicator constraints: :func:`linearize_indicators` replaces them by exact big-M rows.
* Pyomo: :func:`rulemip.model.pyomo_export.to_pyomo` (one indexed ``Var``/``Constraint``
  per block of names ``block[i,j]``).

Separable loss terms (:class:`~rulemip.model.SeparableLoss`): a *squared* loss is a
convex quadratic and is written as part of the quadratic objective; *logistic* and
*Poisson* losses have no LP/MPS form (they raise :class:`~rulemip.exceptions.FormulationError`
naming the tangent-cut master :func:`rulemip.algorithms.convex.tangent_cuts.master_model` as the
remedy), while the Pyomo export writes them as nonlinear ``Expression`` components
(``log``/``exp``) for an NLP/MINLP solver.

Names are sanitised to what both file formats accept (letters, digits, ``_`` and ``.``;
``x[0,3]`` becomes ``x_0_3``; a name that could be read as a number or keyword gets a
leading ``_``; duplicates get a suffix). :func:`export_names` returns the names used, in
column and row order.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.exceptions import FormulationError
from rulemip.model.standard_form import StandardForm, as_standard_form

if TYPE_CHECKING:
    from rulemip.model.mip_model import MIPModel

__all__ = ["export_names", "linearize_indicators", "write_lp", "write_mps"]

_MAX_NAME = 255
_LP_KEYWORDS = frozenset({
    "minimize", "minimise", "minimum", "min", "maximize", "maximise", "maximum", "max",
    "subject", "to", "such", "that", "st", "s.t.", "st.", "bounds", "bound", "binary",
    "binaries", "bin", "general", "generals", "gen", "integer", "integers", "semi",
    "semis", "semi-continuous", "sos", "end", "free", "inf", "infinity", "obj"})
_TERMS_PER_LINE = 6
_BLOCK_NAME = re.compile(r"^(?P<base>[^\[\]]+)\[(?P<idx>-?\d+(?:,-?\d+)*)\]$")


# ---------------------------------------------------------------------- helpers
def _sanitise_one(raw: str) -> str:
    s = raw.replace("[", "_").replace(",", "_").replace("]", "")
    s = re.sub(r"[^A-Za-z0-9_.]", "_", s)
    if not s:
        s = "_"
    # names must not read as numbers (leading digit, '.', or e/E + digit) or LP keywords
    if s[0].isdigit() or s[0] == "." or re.match(r"^[eE][0-9eE.]", s) \
            or s.lower() in _LP_KEYWORDS:
        s = "_" + s
    return s[:_MAX_NAME]


def _sanitise(names: Sequence[str], n: int, prefix: str,
              taken: set[str] | None = None) -> list[str]:
    """``n`` unique file-safe names from ``names`` (default ``prefix<i>``)."""
    seen: set[str] = set() if taken is None else taken
    out: list[str] = []
    for i in range(n):
        raw = names[i] if i < len(names) and names[i] else f"{prefix}{i}"
        s = _sanitise_one(raw)
        if s in seen:
            k = 2
            while f"{s[:_MAX_NAME - 8]}_{k}" in seen:
                k += 1
            s = f"{s[:_MAX_NAME - 8]}_{k}"
        seen.add(s)
        out.append(s)
    return out


def export_names(model: StandardForm | MIPModel) -> tuple[list[str], list[str]]:
    """The column and row names :func:`write_lp` / :func:`write_mps` use, in model order.

    Parameters
    ----------
    model : StandardForm or MIPModel
        The model (names come from its named blocks).

    Returns
    -------
    (list of str, list of str)
        Sanitised column names, then row names (unique; ``obj`` is reserved for the
        objective row).
    """
    sf = as_standard_form(model)
    cols = _sanitise(sf.col_names, sf.n_cols, "x")
    rows = _sanitise(sf.row_names, sf.n_rows, "r", taken={"obj"})
    return cols, rows


def _fmt(v: float) -> str:
    """Shortest decimal that reads back as the same double."""
    v = float(v)
    if v == 0.0:
        return "0"
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def _bound(v: float) -> str:
    if math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return _fmt(v)


def _objective_parts(sf: StandardForm, what: str
                     ) -> tuple[NDArray[np.float64], sp.csr_matrix | None, float]:
    """Linear costs, symmetric ``Q`` and constant with squared loss terms folded in.

    ``s·w·(f − y)² = s·w·f² − 2·s·w·y·f + s·w·y²`` adds ``2·s·w`` to ``Q[f, f]`` (the
    objective is ``½xᵀQx``). Logistic and Poisson terms raise.
    """
    c = np.asarray(sf.c, dtype=float).copy()
    offset = float(sf.offset)
    n = sf.n_cols
    qi: list[NDArray[np.int64]] = []
    qv: list[NDArray[np.float64]] = []
    for term in sf.loss_terms:
        if term.loss != "squared":
            raise FormulationError(
                f"a {term.loss!r} loss term cannot be written to {what} (it is not linear or "
                "quadratic); export the tangent-cut master instead: "
                "`rulemip.algorithms.convex.tangent_cuts.master_model` (epigraph columns plus "
                "tangent cuts), or use `to_pyomo()`, which keeps the loss as a nonlinear "
                "expression.")
        cols = np.asarray(term.cols, dtype=np.int64)
        w = np.asarray(term.weights, dtype=float) * float(term.scale)
        y = np.asarray(term.y, dtype=float)
        np.add.at(c, cols, -2.0 * w * y)
        offset += float(w @ (y * y))
        qi.append(cols)
        qv.append(2.0 * w)
    Q = sf.Q if sf.has_quadratic else None
    if qi:
        idx = np.concatenate(qi)
        diag = sp.csr_matrix((np.concatenate(qv), (idx, idx)), shape=(n, n))
        Q = diag if Q is None else (sp.csr_matrix(Q) + diag).tocsr()
    if Q is not None:
        Q = sp.csr_matrix(Q)
        Q = ((Q + Q.T) * 0.5).tocsr()
        Q.sum_duplicates()
        Q.eliminate_zeros()
        if Q.nnz == 0:
            Q = None
    return c, Q, offset


def _check_finite(sf: StandardForm) -> None:
    if not (np.all(np.isfinite(sf.c)) and np.all(np.isfinite(sf.A.data))):
        raise FormulationError("the model has non-finite objective or matrix coefficients; "
                               "only bounds may be infinite.")


def _lp_terms(coefs: Sequence[tuple[float, str]]) -> Iterator[str]:
    for k, (a, name) in enumerate(coefs):
        sign = "-" if a < 0 else "+"
        mag = abs(a)
        body = name if mag == 1.0 else f"{_fmt(mag)} {name}"
        if k == 0:
            yield f"- {body}" if a < 0 else body
        else:
            yield f"{sign} {body}"


def _wrap(head: str, tokens: Sequence[str], tail: str = "") -> str:
    """One LP statement, broken every few terms (LP lines are limited in length)."""
    lines: list[str] = []
    cur = head
    for k, tok in enumerate(tokens):
        cur += " " + tok
        if (k + 1) % _TERMS_PER_LINE == 0 and k + 1 < len(tokens):
            lines.append(cur)
            cur = "   "
    if tail:
        cur += " " + tail
    lines.append(cur)
    return "\n".join(lines)


# ---------------------------------------------------------------------- indicators
def linearize_indicators(model: StandardForm | MIPModel) -> StandardForm:
    r"""Replace every indicator constraint by exact big-M rows.

    For ``z = v ⇒ aᵀx <= b`` with literal ``λ = z`` (``v = 1``) or ``1 − z`` (``v = 0``),
    the row ``aᵀx − b <= M (1 − λ)`` uses ``M = Σ_j max(a_j ℓ_j, a_j u_j) − b``, the
    largest value ``aᵀx − b`` takes within the column bounds, so the rows describe the
    same feasible set (``>=`` symmetric; ``==`` gives both). Rows that can never be
    violated (``M <= 0``) are dropped. The new rows are named ``bigm_indicator[r]``.

    Parameters
    ----------
    model : StandardForm or MIPModel
        A model whose indicator binaries are integer columns within ``[0, 1]``.

    Returns
    -------
    StandardForm
        The model without indicators, with the big-M rows appended.

    Raises
    ------
    FormulationError
        When a column in an indicator has an infinite bound (no finite ``M`` exists), or
        an indicator's switch is not a binary column.
    """
    sf = as_standard_form(model)
    if not sf.indicators:
        return sf
    lb, ub = sf.col_lower, sf.col_upper
    rows_i: list[int] = []
    rows_j: list[int] = []
    rows_v: list[float] = []
    upper: list[float] = []
    r = 0
    for k, ind in enumerate(sf.indicators):
        label = ind.name or f"#{k}"
        z = ind.binary
        if not (0 <= z < sf.n_cols and sf.integrality[z] and lb[z] >= 0.0 and ub[z] <= 1.0):
            raise FormulationError(
                f"indicator {label!r}: its switch (column {z}) must be an integer column with "
                "bounds within [0, 1].")
        a = np.asarray(ind.vals, dtype=float)
        cols = np.asarray(ind.cols, dtype=np.int64)
        lo_terms = np.minimum(a * lb[cols], a * ub[cols])
        hi_terms = np.maximum(a * lb[cols], a * ub[cols])
        if not (np.all(np.isfinite(lo_terms)) and np.all(np.isfinite(hi_terms))):
            raise FormulationError(
                f"indicator {label!r} has a column with an infinite bound, so no big-M "
                "exists; give its columns finite bounds (MIPModel.set_bounds) or use a "
                "backend with indicator constraints (solver='scip' or 'cpsat').")
        senses = ("<=", ">=") if ind.sense == "==" else (ind.sense,)
        for sense in senses:
            # write every row as  s·aᵀx + coef·z <= rhs  with s = ±1
            s = 1.0 if sense == "<=" else -1.0
            big_m = (float(hi_terms.sum()) - ind.rhs) if s > 0 else \
                (ind.rhs - float(lo_terms.sum()))
            if big_m <= 0.0:
                continue
            coef_z = big_m if ind.active_value == 1 else -big_m
            rhs = s * ind.rhs + (big_m if ind.active_value == 1 else 0.0)
            merged: dict[int, float] = {}
            for j, v in zip(cols.tolist(), (s * a).tolist()):
                merged[j] = merged.get(j, 0.0) + v
            merged[z] = merged.get(z, 0.0) + coef_z
            for j, v in merged.items():
                if v != 0.0:
                    rows_i.append(r)
                    rows_j.append(j)
                    rows_v.append(v)
            upper.append(rhs)
            r += 1
    extra = sp.csr_matrix((rows_v, (rows_i, rows_j)), shape=(r, sf.n_cols))
    names = sf.row_names
    if sf.row_names or sf.col_names:
        base = tuple(sf.row_names) if sf.row_names else tuple(f"r{i}" for i in range(sf.n_rows))
        names = base + tuple(f"bigm_indicator[{i}]" for i in range(r))
    return replace(sf, A=sp.vstack([sf.A, extra], format="csr"),
                   row_lower=np.concatenate([sf.row_lower, np.full(r, -math.inf)]),
                   row_upper=np.concatenate([sf.row_upper, np.asarray(upper, dtype=float)]),
                   row_names=names, indicators=())


# ---------------------------------------------------------------------- LP
def _lp_text(sf: StandardForm) -> str:
    _check_finite(sf)
    c, Q, offset = _objective_parts(sf, "an LP file")
    cols, rows = export_names(sf)
    out: list[str] = [f"\\ {sf.name or 'rulemip'}: written by rulemip", "Minimize"]
    obj = [(float(c[j]), cols[j]) for j in np.flatnonzero(c).tolist()]
    tokens = list(_lp_terms(obj))
    if Q is not None:
        up = sp.triu(Q).tocoo()
        q_terms: list[tuple[float, str]] = []
        for i, j, v in zip(up.row.tolist(), up.col.tolist(), up.data.tolist()):
            # ½xᵀQx = ½[Σ Q_ii x_i² + Σ_{i<j} 2 Q_ij x_i x_j]
            if i == j:
                q_terms.append((v, f"{cols[i]} ^ 2"))
            else:
                q_terms.append((2.0 * v, f"{cols[i]} * {cols[j]}"))
        q_tok = list(_lp_terms(q_terms))
        tokens += (["+ ["] if tokens else ["["]) + q_tok + ["] / 2"]
    if offset != 0.0:
        tokens.append(f"- {_fmt(-offset)}" if offset < 0 else f"+ {_fmt(offset)}")
        if len(tokens) == 1:
            tokens[0] = _fmt(offset)
    if not tokens:
        tokens = [f"0 {cols[0]}"] if cols else ["0"]
    out.append(_wrap(" obj:", tokens))
    out.append("Subject To")
    A = sp.csr_matrix(sf.A)
    taken = set(rows) | {"obj"}
    ranged: dict[int, tuple[str, str]] = {}
    for i in np.flatnonzero(np.isfinite(sf.row_lower) & np.isfinite(sf.row_upper)
                            & (sf.row_lower != sf.row_upper)).tolist():
        lo_name, hi_name = _sanitise([f"{rows[i]}_lo", f"{rows[i]}_hi"], 2, "r", taken)
        ranged[i] = (lo_name, hi_name)
    for i in range(sf.n_rows):
        s, e = A.indptr[i], A.indptr[i + 1]
        terms = [(float(v), cols[j]) for j, v in zip(A.indices[s:e].tolist(),
                                                     A.data[s:e].tolist()) if v != 0.0]
        if not terms:
            if not cols:
                raise FormulationError("an LP file needs at least one column for its rows.")
            terms = [(0.0, cols[0])]
        body = [f"0 {cols[0]}"] if all(v == 0.0 for v, _ in terms) else list(_lp_terms(terms))
        lo, hi = float(sf.row_lower[i]), float(sf.row_upper[i])
        if lo == hi:
            out.append(_wrap(f" {rows[i]}:", body, f"= {_fmt(hi)}"))
        elif math.isinf(lo) and math.isinf(hi):
            out.append(_wrap(f" {rows[i]}:", body, ">= -inf"))
        elif math.isinf(lo):
            out.append(_wrap(f" {rows[i]}:", body, f"<= {_fmt(hi)}"))
        elif math.isinf(hi):
            out.append(_wrap(f" {rows[i]}:", body, f">= {_fmt(lo)}"))
        else:
            # LP readers (HiGHS, SCIP) take no `lo <= aᵀx <= hi`: write two rows
            lo_name, hi_name = ranged[i]
            out.append(_wrap(f" {lo_name}:", body, f">= {_fmt(lo)}"))
            out.append(_wrap(f" {hi_name}:", body, f"<= {_fmt(hi)}"))
    ind_names = _sanitise([ind.name for ind in sf.indicators], len(sf.indicators),
                          "indicator", taken=taken)
    for name, ind in zip(ind_names, sf.indicators):
        z = ind.binary
        if not (sf.integrality[z] and sf.col_lower[z] >= 0.0 and sf.col_upper[z] <= 1.0):
            raise FormulationError(
                f"indicator {ind.name!r}: its switch (column {z}) must be an integer column "
                "with bounds within [0, 1].")
        terms = [(float(v), cols[j]) for j, v in zip(ind.cols, ind.vals) if v != 0.0]
        body = list(_lp_terms(terms)) if terms else [f"0 {cols[z]}"]
        sense = "=" if ind.sense == "==" else ind.sense
        out.append(_wrap(f" {name}: {cols[z]} = {int(ind.active_value)} ->", body,
                         f"{sense} {_fmt(ind.rhs)}"))
    out.append("Bounds")
    for j in range(sf.n_cols):
        lo, hi = float(sf.col_lower[j]), float(sf.col_upper[j])
        if math.isinf(lo) and lo < 0 and math.isinf(hi) and hi > 0:
            out.append(f" {cols[j]} free")
        elif lo == hi:
            out.append(f" {cols[j]} = {_fmt(lo)}")
        else:
            out.append(f" {_bound(lo)} <= {cols[j]} <= {_bound(hi)}")
    ints = np.flatnonzero(sf.integrality).tolist()
    if ints:
        out.append("General")
        for k in range(0, len(ints), 10):
            out.append(" " + " ".join(cols[j] for j in ints[k:k + 10]))
    out.append("End")
    return "\n".join(out) + "\n"


def write_lp(model: StandardForm | MIPModel, path: str | os.PathLike[str]) -> None:
    """Write ``model`` to ``path`` in CPLEX LP format.

    Parameters
    ----------
    model : StandardForm or MIPModel
        The model; indicator constraints are written as ``z = v -> aᵀx <= b`` and a squared
        loss term as part of the quadratic objective.
    path : str or path-like
        The file to write.

    Raises
    ------
    FormulationError
        For logistic or Poisson loss terms (no LP form; the message names the tangent-cut
        remedy) or non-finite coefficients.
    """
    text = _lp_text(as_standard_form(model))
    with open(path, "w", encoding="ascii") as fh:
        fh.write(text)


# ---------------------------------------------------------------------- MPS
def _mps_text(sf: StandardForm) -> str:
    if sf.indicators:
        raise FormulationError(
            "the MPS format has no indicator constraints; linearize them first with "
            "`rulemip.model.export.linearize_indicators(model)` (exact big-M rows from the "
            "column bounds), or write an LP file (`write_lp`), which keeps them.")
    _check_finite(sf)
    c, Q, offset = _objective_parts(sf, "an MPS file")
    cols, rows = export_names(sf)
    out = [f"NAME {_sanitise_one(sf.name or 'rulemip')}", "OBJSENSE", "    MIN", "ROWS",
           " N  obj"]
    lo_r, hi_r = sf.row_lower, sf.row_upper
    kinds: list[str] = []
    for i in range(sf.n_rows):
        lo, hi = float(lo_r[i]), float(hi_r[i])
        if lo == hi:
            kind = "E"
        elif math.isinf(lo) and math.isinf(hi):
            kind = "N"
        elif math.isinf(lo):
            kind = "L"
        else:
            kind = "G"  # lower bound finite; a finite upper bound becomes a RANGE
        kinds.append(kind)
        out.append(f" {kind}  {rows[i]}")
    out.append("COLUMNS")
    A = sp.csc_matrix(sf.A)
    in_int = False
    for j in range(sf.n_cols):
        if sf.integrality[j] and not in_int:
            out.append("    MARKER  'MARKER'  'INTORG'")
            in_int = True
        elif not sf.integrality[j] and in_int:
            out.append("    MARKER  'MARKER'  'INTEND'")
            in_int = False
        entries = [("obj", float(c[j]))] if c[j] != 0.0 else []
        s, e = A.indptr[j], A.indptr[j + 1]
        entries += [(rows[i], float(v)) for i, v in zip(A.indices[s:e].tolist(),
                                                        A.data[s:e].tolist()) if v != 0.0]
        if not entries:
            entries = [("obj", 0.0)]  # a column must appear once to exist
        for row, v in entries:
            out.append(f"    {cols[j]}  {row}  {_fmt(v)}")
    if in_int:
        out.append("    MARKER  'MARKER'  'INTEND'")
    out.append("RHS")
    if offset != 0.0:
        out.append(f"    RHS  obj  {_fmt(-offset)}")  # objective constant = −RHS
    for i, kind in enumerate(kinds):
        rhs = float(hi_r[i]) if kind in ("E", "L") else float(lo_r[i])
        if kind != "N" and rhs != 0.0:
            out.append(f"    RHS  {rows[i]}  {_fmt(rhs)}")
    ranges = [(rows[i], float(hi_r[i]) - float(lo_r[i])) for i, kind in enumerate(kinds)
              if kind == "G" and math.isfinite(hi_r[i])]
    if ranges:
        out.append("RANGES")
        out.extend(f"    RNG  {name}  {_fmt(r)}" for name, r in ranges)
    out.append("BOUNDS")
    for j in range(sf.n_cols):
        lo, hi = float(sf.col_lower[j]), float(sf.col_upper[j])
        name = cols[j]
        if lo == hi:
            out.append(f" FX BND  {name}  {_fmt(lo)}")
            continue
        if math.isinf(lo) and math.isinf(hi):
            out.append(f" FR BND  {name}")
            continue
        # explicit both sides: readers give integer columns without bounds [0, 1]
        out.append(f" MI BND  {name}" if math.isinf(lo) else f" LO BND  {name}  {_fmt(lo)}")
        out.append(f" PL BND  {name}" if math.isinf(hi) else f" UP BND  {name}  {_fmt(hi)}")
    if Q is not None:
        out.append("QUADOBJ")
        up = sp.triu(Q).tocoo()
        for i, j, v in sorted(zip(up.row.tolist(), up.col.tolist(), up.data.tolist())):
            out.append(f"    {cols[i]}  {cols[j]}  {_fmt(v)}")
    out.append("ENDATA")
    return "\n".join(out) + "\n"


def write_mps(model: StandardForm | MIPModel, path: str | os.PathLike[str]) -> None:
    """Write ``model`` to ``path`` in free MPS format (``QUADOBJ`` for ``½xᵀQx``).

    Parameters
    ----------
    model : StandardForm or MIPModel
        The model; a squared loss term is written as part of the quadratic objective.
    path : str or path-like
        The file to write.

    Raises
    ------
    FormulationError
        For indicator constraints (remedy: :func:`linearize_indicators` or
        :func:`write_lp`), logistic or Poisson loss terms (remedy: the tangent-cut master
        :func:`rulemip.algorithms.convex.tangent_cuts.master_model`) or non-finite coefficients.
    """
    text = _mps_text(as_standard_form(model))
    with open(path, "w", encoding="ascii") as fh:
        fh.write(text)
