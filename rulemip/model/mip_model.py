"""``MIPModel``: a mutable, solver-neutral model built from named variable and constraint
blocks — the extension point for OR researchers.

A *block* maps domain indices (rule ``t``, point ``i``, feature ``j``, node ...) to column
or row ids, so a formulation can say ``model.var("z")[i, t]`` and a researcher can add
rows over the same variables::

    m = formulation.build(dataset).model           # a MIPModel
    z = m.var("z")                                 # integer array of column ids, shape (n, k)
    m.add_constraints("at_most_5_covered", rows=[{int(c): 1.0 for c in z[:, 0]}], upper=5)
    write_mps(m, "model.mps"); pyomo_model = to_pyomo(m)   # rulemip.model.export

Rows are stored as COO triplets and assembled once by :meth:`to_standard_form`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from rulemip.exceptions import FormulationError
from rulemip.model.standard_form import IndicatorConstraint, SeparableLoss, StandardForm


@dataclass(frozen=True)
class Block:
    """A named range of consecutive columns (or rows) with a domain shape."""

    name: str
    start: int
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def ids(self) -> NDArray[np.int64]:
        """Column (row) ids arranged in the block's shape."""
        return np.arange(self.start, self.start + self.size, dtype=np.int64).reshape(self.shape)

    def __getitem__(self, key: Any) -> Any:
        return self.ids[key]


class MIPModel:
    """Mutable model: add variable blocks, constraint blocks, objective terms."""

    def __init__(self, name: str = "rulemip") -> None:
        self.name = name
        self._var_blocks: dict[str, Block] = {}
        self._row_blocks: dict[str, Block] = {}
        self._lb: list[NDArray[np.float64]] = []
        self._ub: list[NDArray[np.float64]] = []
        self._int: list[NDArray[np.bool_]] = []
        self._n_cols = 0
        self._n_rows = 0
        self._ri: list[NDArray[np.int64]] = []
        self._ci: list[NDArray[np.int64]] = []
        self._vals: list[NDArray[np.float64]] = []
        self._rlo: list[NDArray[np.float64]] = []
        self._rhi: list[NDArray[np.float64]] = []
        self._c: dict[int, float] = {}
        self._q: dict[tuple[int, int], float] = {}
        self.offset = 0.0
        self.indicators: list[IndicatorConstraint] = []
        self.loss_terms: list[SeparableLoss] = []

    # ------------------------------------------------------------------ variables
    def add_variables(self, name: str, shape: int | Sequence[int] = (), *, lb: ArrayLike = 0.0,
                      ub: ArrayLike = math.inf, integer: bool = False,
                      binary: bool = False) -> Block:
        """Add a block of variables; ``binary`` implies integer in [0, 1]."""
        if name in self._var_blocks:
            raise FormulationError(f"variable block {name!r} exists already.")
        shp = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
        block = Block(name, self._n_cols, shp)
        size = block.size
        if binary:
            lb, ub, integer = 0.0, 1.0, True
        self._lb.append(np.broadcast_to(np.asarray(lb, dtype=float), shp).ravel().copy())
        self._ub.append(np.broadcast_to(np.asarray(ub, dtype=float), shp).ravel().copy())
        self._int.append(np.full(size, bool(integer)))
        self._n_cols += size
        self._var_blocks[name] = block
        return block

    def var(self, name: str) -> Block:
        try:
            return self._var_blocks[name]
        except KeyError:
            raise FormulationError(
                f"no variable block {name!r}; blocks are {list(self._var_blocks)}.") from None

    def rows(self, name: str) -> Block:
        try:
            return self._row_blocks[name]
        except KeyError:
            raise FormulationError(
                f"no constraint block {name!r}; blocks are {list(self._row_blocks)}.") from None

    @property
    def variable_blocks(self) -> Mapping[str, Block]:
        return dict(self._var_blocks)

    @property
    def constraint_blocks(self) -> Mapping[str, Block]:
        return dict(self._row_blocks)

    @property
    def n_cols(self) -> int:
        return self._n_cols

    @property
    def n_rows(self) -> int:
        return self._n_rows

    def set_bounds(self, cols: ArrayLike, lb: ArrayLike | None = None,
                   ub: ArrayLike | None = None) -> None:
        """Change the bounds of existing columns (e.g. fix rules in MIP-boosting)."""
        lbs = np.concatenate(self._lb) if self._lb else np.empty(0)
        ubs = np.concatenate(self._ub) if self._ub else np.empty(0)
        idx = np.asarray(cols, dtype=np.int64).ravel()
        if lb is not None:
            lbs[idx] = np.broadcast_to(np.asarray(lb, dtype=float), idx.shape)
        if ub is not None:
            ubs[idx] = np.broadcast_to(np.asarray(ub, dtype=float), idx.shape)
        ints = np.concatenate(self._int) if self._int else np.empty(0, dtype=bool)
        self._lb, self._ub, self._int = [lbs], [ubs], [ints]

    # ------------------------------------------------------------------ constraints
    def add_constraints(self, name: str, *, rows: Iterable[Mapping[int, float]] | None = None,
                        matrix: sp.spmatrix | None = None, cols: ArrayLike | None = None,
                        lower: ArrayLike = -math.inf, upper: ArrayLike = math.inf) -> Block:
        """Add ``lower <= A x <= upper`` as a named block.

        Give either ``rows`` (one ``{column id: coefficient}`` mapping per row) or a sparse
        ``matrix`` whose columns are model columns, or — with ``cols`` — the columns
        ``cols[j]`` for matrix column ``j``.
        """
        if name in self._row_blocks:
            raise FormulationError(f"constraint block {name!r} exists already.")
        if (rows is None) == (matrix is None):
            raise FormulationError("give exactly one of `rows` or `matrix`.")
        if rows is not None:
            ri: list[int] = []
            ci: list[int] = []
            vv: list[float] = []
            m = 0
            for m_idx, row in enumerate(rows):
                for col, val in row.items():
                    ri.append(m_idx)
                    ci.append(int(col))
                    vv.append(float(val))
                m = m_idx + 1
            r_arr = np.asarray(ri, dtype=np.int64)
            c_arr = np.asarray(ci, dtype=np.int64)
            v_arr = np.asarray(vv, dtype=float)
        else:
            coo = sp.coo_matrix(matrix)
            m = coo.shape[0]
            r_arr = coo.row.astype(np.int64)
            c_arr = coo.col.astype(np.int64)
            if cols is not None:
                c_arr = np.asarray(cols, dtype=np.int64).ravel()[c_arr]
            v_arr = coo.data.astype(float)
        if len(c_arr) and (c_arr.min() < 0 or c_arr.max() >= self._n_cols):
            raise FormulationError(f"constraint block {name!r} refers to unknown columns.")
        keep = v_arr != 0.0
        self._ri.append(r_arr[keep] + self._n_rows)
        self._ci.append(c_arr[keep])
        self._vals.append(v_arr[keep])
        self._rlo.append(np.broadcast_to(np.asarray(lower, dtype=float), (m,)).copy())
        self._rhi.append(np.broadcast_to(np.asarray(upper, dtype=float), (m,)).copy())
        block = Block(name, self._n_rows, (m,))
        self._row_blocks[name] = block
        self._n_rows += m
        return block

    def add_indicator(self, binary: int, active_value: int, terms: Mapping[int, float],
                      sense: str, rhs: float, name: str = "") -> None:
        """``x[binary] == active_value ⇒ Σ terms (sense) rhs`` (backends with indicators)."""
        if sense not in ("<=", ">=", "=="):
            raise FormulationError(f"indicator sense must be <=, >= or ==; got {sense!r}.")
        self.indicators.append(IndicatorConstraint(
            int(binary), int(active_value), tuple(int(c) for c in terms),
            tuple(float(v) for v in terms.values()), sense, float(rhs), name))

    # ------------------------------------------------------------------ objective
    def add_objective(self, cols: ArrayLike, coefs: ArrayLike) -> None:
        """Add linear objective terms ``Σ coefs·x[cols]`` (accumulating)."""
        c_idx = np.asarray(cols, dtype=np.int64).ravel()
        vals = np.broadcast_to(np.asarray(coefs, dtype=float), c_idx.shape)
        for j, v in zip(c_idx.tolist(), vals.tolist(), strict=True):
            self._c[j] = self._c.get(j, 0.0) + v

    def add_quadratic(self, i: ArrayLike, j: ArrayLike, coefs: ArrayLike) -> None:
        """Add ``½ Σ coefs·x_i·x_j`` terms to the objective (``Q[i, j] += coef``; give both
        triangles for off-diagonal terms, or use :meth:`add_square` for squares)."""
        ii = np.asarray(i, dtype=np.int64).ravel()
        jj = np.asarray(j, dtype=np.int64).ravel()
        vals = np.broadcast_to(np.asarray(coefs, dtype=float), ii.shape)
        for a, b, v in zip(ii.tolist(), jj.tolist(), vals.tolist(), strict=True):
            self._q[(a, b)] = self._q.get((a, b), 0.0) + v

    def add_square(self, cols: ArrayLike, coefs: ArrayLike) -> None:
        """Add ``Σ coefs·x_j²`` to the objective."""
        c_idx = np.asarray(cols, dtype=np.int64).ravel()
        vals = np.broadcast_to(np.asarray(coefs, dtype=float), c_idx.shape)
        self.add_quadratic(c_idx, c_idx, 2.0 * vals)

    def add_loss(self, loss: str, cols: ArrayLike, y: ArrayLike,
                 weights: ArrayLike | None = None, scale: float = 1.0) -> None:
        """Add ``scale * Σ_i weights_i * l(x[cols_i], y_i)`` to the objective."""
        c_idx = np.asarray(cols, dtype=np.int64).ravel()
        y_arr = np.asarray(y, dtype=float).ravel()
        w_arr = np.ones(len(c_idx)) if weights is None else np.asarray(weights, dtype=float)
        if not (len(c_idx) == len(y_arr) == len(w_arr)):
            raise FormulationError("loss term: cols, y and weights must have equal length.")
        self.loss_terms.append(SeparableLoss(loss, c_idx, y_arr, w_arr.ravel(), float(scale)))

    # ------------------------------------------------------------------ output
    def to_standard_form(self) -> StandardForm:
        n = self._n_cols
        c = np.zeros(n)
        for j, v in self._c.items():
            c[j] = v
        if self._ri:
            A = sp.csr_matrix((np.concatenate(self._vals),
                               (np.concatenate(self._ri), np.concatenate(self._ci))),
                              shape=(self._n_rows, n))
            rlo, rhi = np.concatenate(self._rlo), np.concatenate(self._rhi)
        else:
            A = sp.csr_matrix((0, n))
            rlo, rhi = np.empty(0), np.empty(0)
        Q = None
        if self._q:
            keys = list(self._q)
            Q = sp.csr_matrix(([self._q[k] for k in keys],
                               ([k[0] for k in keys], [k[1] for k in keys])), shape=(n, n))
            Q = ((Q + Q.T) * 0.5).tocsr()
        # names are made on demand: spelling a million of them took 0.4 s per call
        col_names = BlockNames(self._var_blocks)
        row_names = BlockNames(self._row_blocks)
        lb = np.concatenate(self._lb) if self._lb else np.empty(0)
        ub = np.concatenate(self._ub) if self._ub else np.empty(0)
        ints = np.concatenate(self._int) if self._int else np.empty(0, dtype=bool)
        return StandardForm(c, A, rlo, rhi, lb, ub, ints, Q, float(self.offset), col_names,
                            row_names, tuple(self.indicators), self.name,
                            tuple(self.loss_terms))


class BlockNames(Sequence[str]):
    """The names of a model's columns or rows, ``block[i,j]`` in block order (a scalar
    block: its name), spelled when read: a tuple of strings for every entry of a large
    model cost more than building its matrix."""

    def __init__(self, blocks: Mapping[str, Block]) -> None:
        self._blocks = [(name, tuple(b.shape), int(b.size)) for name, b in blocks.items()]
        self._starts = np.cumsum([0] + [size for _, _, size in self._blocks])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def _name(self, i: int) -> str:
        k = int(np.searchsorted(self._starts, i, side="right")) - 1
        name, shape, _ = self._blocks[k]
        if shape == ():
            return name
        idx = np.unravel_index(i - int(self._starts[k]), shape)
        return f"{name}[{','.join(str(int(v)) for v in idx)}]"

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self._name(j) for j in range(*i.indices(len(self))))
        j = int(i)
        if j < 0:
            j += len(self)
        if not 0 <= j < len(self):
            raise IndexError(f"name index {i} out of range ({len(self)} names)")
        return self._name(j)

    def __iter__(self) -> Any:
        for name, shape, _ in self._blocks:
            if shape == ():
                yield name
                continue
            for idx in np.ndindex(*shape):
                yield f"{name}[{','.join(str(v) for v in idx)}]"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"BlockNames({len(self)} names)"
