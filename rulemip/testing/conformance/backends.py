"""Backend conformance suite: small models with known optima and the checks every backend
must pass (plain functions, reusable from any test runner).

Each :class:`ConformanceCase` builds a :class:`~rulemip.model.StandardForm` whose optimum is
known in closed form or by brute-force enumeration *computed here*, independently of any
solver. :func:`check_case` solves it with one backend and asserts the result contract
(docs/explanation/solving.md): termination, objective within ``rel_tol``, the returned ``x``
feasible
(``StandardForm.max_violation <= 1e-6``) and with the reported objective, and a dual bound
that never exceeds the primal. :func:`check_persistent_rows` checks that adding rows one at a
time to a persistent solver and re-solving matches a fresh solve.

Usage (also from :mod:`rulemip.testing.conformance`)::

    from rulemip.testing.conformance import CASES, check_case, backend_claims
    for case in CASES:
        if backend_claims(backend, case):
            check_case(backend, case)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from rulemip.model.mip_model import MIPModel
from rulemip.model.standard_form import StandardForm
from rulemip.solvers.base import Capability, SolverBackend, required_capabilities, supports
from rulemip.solvers.result import Limit, SolveOptions, SolveResult, TerminationReason

__all__ = ["CASES", "ConformanceCase", "backend_claims", "brute_force_integer_optimum",
           "check_case",
           "check_persistent_rows", "market_split", "random_milp"]

FEAS_TOL = 1e-6


@dataclass(frozen=True)
class ConformanceCase:
    """A model with its known outcome.

    ``objective`` is the known optimum (``None`` when there is none: infeasible, unbounded,
    or a time-limited hard instance); ``limit`` is the limit the solve must report.
    """

    name: str
    build: Callable[[], StandardForm]
    termination: TerminationReason
    objective: float | None = None
    limit: Limit | None = None
    options: SolveOptions = field(default_factory=SolveOptions)
    rel_tol: float = 1e-6

    def needs(self) -> set[Capability]:
        return required_capabilities(self.build())


# ---------------------------------------------------------------------- models
def lp_model() -> StandardForm:
    r"""``min -x - 2y + 0.5 z + 1.5`` s.t. ``x + y <= 4``, ``x + 3y <= 6``,
    ``-1 <= x - z <= 1`` (two-sided), ``x, y >= 0``, ``z`` free.

    ``z`` is pushed to ``x - 1``; substituting, the LP over ``(x, y)`` is
    ``min -0.5 x - 2 y + 1`` whose vertices are (0,0): 1, (4,0): -1, (0,2): -3, (3,1): -2.5,
    so the optimum is ``-3`` at ``(0, 2, -1)``."""
    m = MIPModel("lp")
    v = m.add_variables("x", 2, lb=0.0)
    z = m.add_variables("z", lb=-math.inf)
    m.add_constraints("cap", rows=[{0: 1, 1: 1}, {0: 1, 1: 3}], upper=[4, 6])
    m.add_constraints("link", rows=[{0: 1.0, int(z.ids): -1.0}], lower=-1.0, upper=1.0)
    m.add_objective(v.ids, [-1.0, -2.0])
    m.add_objective([int(z.ids)], [0.5])
    m.offset = 1.5
    return m.to_standard_form()


_KNAP_V = np.array([10.0, 13.0, 7.0, 8.0, 9.0, 4.0, 6.0])
_KNAP_W = np.array([3.0, 4.0, 2.0, 3.0, 3.0, 1.0, 2.0])
_KNAP_CAP = 9.0


def knapsack_model() -> StandardForm:
    """0/1 knapsack as a minimization: ``min -vᵀx`` s.t. ``wᵀx <= 9``."""
    m = MIPModel("knapsack")
    x = m.add_variables("x", len(_KNAP_V), binary=True)
    m.add_constraints("cap", matrix=sp.csr_matrix(_KNAP_W[None, :]), cols=x.ids,
                      upper=_KNAP_CAP)
    m.add_objective(x.ids, -_KNAP_V)
    return m.to_standard_form()


def _knapsack_optimum() -> float:
    best = 0.0
    for bits in itertools.product((0, 1), repeat=len(_KNAP_V)):
        b = np.array(bits, dtype=float)
        if b @ _KNAP_W <= _KNAP_CAP:
            best = max(best, float(b @ _KNAP_V))
    return -best


_GI_C = np.array([2.0, -3.0, 1.5])
_GI_A = np.array([[1.0, 1.0, 1.0], [2.0, -1.0, 3.0]])
_GI_LO = np.array([-2.0, -5.0])
_GI_HI = np.array([2.5, 4.0])


def general_integer_model() -> StandardForm:
    """MILP with general integers in ``[-3, 3]`` and a continuous column ``s``:
    ``min cᵀx + s`` s.t. ``lo <= A x <= hi``, ``s >= 0.5 - x_0``, ``s >= 0``."""
    m = MIPModel("general_integer")
    x = m.add_variables("x", 3, lb=-3, ub=3, integer=True)
    s = m.add_variables("s", lb=0.0)
    m.add_constraints("rows", matrix=sp.csr_matrix(_GI_A), cols=x.ids, lower=_GI_LO,
                      upper=_GI_HI)
    m.add_constraints("hinge", rows=[{int(s.ids): 1.0, int(x.ids[0]): 1.0}], lower=0.5)
    m.add_objective(x.ids, _GI_C)
    m.add_objective([int(s.ids)], [1.0])
    return m.to_standard_form()


def _general_integer_optimum() -> float:
    best = math.inf
    for pt in itertools.product(range(-3, 4), repeat=3):
        x = np.array(pt, dtype=float)
        ax = _GI_A @ x
        if np.all(ax >= _GI_LO) and np.all(ax <= _GI_HI):
            best = min(best, float(_GI_C @ x) + max(0.0, 0.5 - x[0]))
    return best


def infeasible_model() -> StandardForm:
    """Two binaries that must sum to at least 3."""
    m = MIPModel("infeasible")
    m.add_variables("x", 2, binary=True)
    m.add_constraints("cover", rows=[{0: 1.0, 1: 1.0}], lower=3.0)
    m.add_objective([0, 1], [1.0, 1.0])
    return m.to_standard_form()


def unbounded_model() -> StandardForm:
    """``min -x - y`` s.t. ``x - y <= 1``, ``x, y >= 0`` (ray ``(1, 1)``)."""
    m = MIPModel("unbounded")
    m.add_variables("x", 2, lb=0.0)
    m.add_constraints("r", rows=[{0: 1.0, 1: -1.0}], upper=1.0)
    m.add_objective([0, 1], [-1.0, -1.0])
    return m.to_standard_form()


def qp_model() -> StandardForm:
    """Continuous QP ``min (x-1)² + (y-2)²`` s.t. ``x + y <= 2``: the projection of (1, 2)
    on the half-plane, ``(0.5, 1.5)``, value ``0.5``."""
    m = MIPModel("qp")
    v = m.add_variables("v", 2, lb=-10.0, ub=10.0)
    m.add_square(v.ids, 1.0)
    m.add_objective(v.ids, [-2.0, -4.0])
    m.offset = 5.0
    m.add_constraints("c", rows=[{0: 1.0, 1: 1.0}], upper=2.0)
    return m.to_standard_form()


_MIQP_A = np.array([1.3, 2.6, 3.7])


def miqp_model() -> StandardForm:
    """Convex MIQP ``min Σ (x_i - a_i)² + ½ (x_0 - x_1)²`` over integers ``x ∈ [0, 5]³``
    with ``Σ x <= 6``."""
    m = MIPModel("miqp")
    x = m.add_variables("x", 3, lb=0, ub=5, integer=True)
    m.add_square(x.ids, 1.0)
    m.add_objective(x.ids, -2.0 * _MIQP_A)
    m.offset = float(_MIQP_A @ _MIQP_A)
    # ½(x0 - x1)² = ½x0² + ½x1² - x0x1 → Q entries (0,0)=1, (1,1)=1, (0,1)=(1,0)=-1
    m.add_quadratic([0, 1, 0, 1], [0, 1, 1, 0], [1.0, 1.0, -1.0, -1.0])
    m.add_constraints("budget", rows=[{0: 1.0, 1: 1.0, 2: 1.0}], upper=6.0)
    return m.to_standard_form()


def _miqp_optimum() -> float:
    best = math.inf
    for pt in itertools.product(range(6), repeat=3):
        x = np.array(pt, dtype=float)
        if x.sum() <= 6:
            best = min(best, float(((x - _MIQP_A) ** 2).sum() + 0.5 * (x[0] - x[1]) ** 2))
    return best


def indicator_model() -> StandardForm:
    """Indicators of all three senses (optimum ``-3`` at ``z = (1, 1), x = 8, y = 1``).

    ``min -x + y + 3 z_1 + z_2`` over ``x, y ∈ [0, 10]``, binaries ``z``, with
    ``z_1 = 0 ⇒ x <= 2``, ``z_1 = 1 ⇒ x <= 8``, ``z_2 = 1 ⇒ y >= 1``,
    ``z_2 = 0 ⇒ x - y = 0``. Enumerating ``z``: (0,0) → 0, (1,0) → 3, (0,1) → 0,
    (1,1) → -8 + 1 + 3 + 1 = -3."""
    m = MIPModel("indicator")
    xy = m.add_variables("xy", 2, lb=0.0, ub=10.0)
    z = m.add_variables("z", 2, binary=True)
    x, y = int(xy.ids[0]), int(xy.ids[1])
    z1, z2 = int(z.ids[0]), int(z.ids[1])
    m.add_objective([x, y, z1, z2], [-1.0, 1.0, 3.0, 1.0])
    m.add_indicator(z1, 0, {x: 1.0}, "<=", 2.0, "small")
    m.add_indicator(z1, 1, {x: 1.0}, "<=", 8.0, "large")
    m.add_indicator(z2, 1, {y: 1.0}, ">=", 1.0, "y_on")
    m.add_indicator(z2, 0, {x: 1.0, y: -1.0}, "==", 0.0, "tie")
    return m.to_standard_form()


# groups of points sharing one prediction f_g: closed-form optimal losses
_LOG_Y = np.array([1, 1, 1, -1, 1, -1, -1, -1, -1, 1], dtype=float)
_LOG_G = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])
_POI_Y = np.array([0.0, 1.0, 3.0, 2.0, 5.0, 4.0, 6.0])
_POI_G = np.array([0, 0, 0, 1, 1, 1, 1])
_SQ_Y = np.array([1.0, 2.0, 4.0, -1.0, 0.5])
_SQ_G = np.array([0, 0, 0, 1, 1])


def _group_model(name: str, parts: list[tuple[str, np.ndarray, np.ndarray]]) -> StandardForm:
    """One free prediction column ``f_i`` per point, rows ``f_i = b_{g(i)}`` tying the
    points of a group to a free group value, and the loss term on ``f``."""
    m = MIPModel(name)
    for k, (loss, y, g) in enumerate(parts):
        f = m.add_variables(f"f{k}", len(y), lb=-20.0, ub=20.0)
        b = m.add_variables(f"b{k}", int(g.max()) + 1, lb=-20.0, ub=20.0)
        rows = [{int(f.ids[i]): 1.0, int(b.ids[g[i]]): -1.0} for i in range(len(y))]
        m.add_constraints(f"tie{k}", rows=rows, lower=0.0, upper=0.0)
        m.add_loss(loss, f.ids, y, scale=1.0 / len(y))
    return m.to_standard_form()


def logistic_model() -> StandardForm:
    """Mean logistic loss of two groups; optimum ``f_g = log(n⁺_g / n⁻_g)``."""
    return _group_model("logistic", [("logistic", _LOG_Y, _LOG_G)])


def mixed_loss_model() -> StandardForm:
    """Logistic, Poisson and squared loss terms on separate groups."""
    return _group_model("mixed_loss", [("logistic", _LOG_Y, _LOG_G),
                                       ("poisson", _POI_Y, _POI_G),
                                       ("squared", _SQ_Y, _SQ_G)])


def _closed_form_group_loss(loss: str, y: np.ndarray, g: np.ndarray) -> float:
    from rulemip.losses import get_loss

    lo = get_loss(loss)
    f = np.empty_like(y)
    for grp in np.unique(g):
        yy = y[g == grp]
        if loss == "logistic":
            pos, neg = float((yy > 0).sum()), float((yy < 0).sum())
            f[g == grp] = math.log(pos / neg)
        elif loss == "poisson":
            f[g == grp] = math.log(float(yy.mean()))
        else:
            f[g == grp] = float(yy.mean())
    return float(lo.value(f, y).mean())


def market_split(m: int = 4, n: int = 30, seed: int = 0) -> StandardForm:
    """Cornuéjols–Dawande market split with slack: ``min Σ s⁺ + s⁻`` s.t.
    ``A x + s⁺ - s⁻ = ⌊A 1 / 2⌋``, ``x`` binary, ``s`` integer. Branch-and-bound needs
    exponentially many nodes, so a short time limit always stops it."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 100, size=(m, n)).astype(float)
    d = np.floor(a.sum(1) / 2)
    M = MIPModel("market_split")
    x = M.add_variables("x", n, binary=True)
    # the slacks are integral at every integer x (integer data): declare them integer so
    # that pure-integer backends (CP-SAT) take the model too
    smax = a.sum(1)
    sp_ = M.add_variables("s_plus", m, lb=0.0, ub=smax, integer=True)
    sm = M.add_variables("s_minus", m, lb=0.0, ub=smax, integer=True)
    A = sp.hstack([sp.csr_matrix(a), sp.eye(m), -sp.eye(m)]).tocsr()
    M.add_constraints("split", matrix=A, cols=np.r_[x.ids, sp_.ids, sm.ids], lower=d, upper=d)
    M.add_objective(np.r_[sp_.ids, sm.ids], 1.0)
    return M.to_standard_form()


def random_milp(n: int = 8, m: int = 6, seed: int = 0, integer: bool = True) -> StandardForm:
    """A bounded random packing (MI)LP ``min -cᵀx`` s.t. ``A x <= b``, ``0 <= x <= 3``."""
    rng = np.random.default_rng(seed)
    M = MIPModel("random_milp")
    x = M.add_variables("x", n, lb=0.0, ub=3.0, integer=integer)
    A = rng.integers(1, 10, size=(m, n)).astype(float)
    b = np.floor(A.sum(1) * 0.8)
    M.add_constraints("pack", matrix=sp.csr_matrix(A), cols=x.ids, upper=b)
    M.add_objective(x.ids, -rng.integers(1, 20, size=n).astype(float))
    return M.to_standard_form()



def brute_force_integer_optimum(model: StandardForm, values: range = range(4)) -> float:
    """Least objective over the integer points with every coordinate in ``values`` that
    satisfy the rows (``inf`` if none): the known optimum of a small pure-integer model
    whose column bounds lie within ``values``."""
    best = math.inf
    for point in itertools.product(values, repeat=model.n_cols):
        x = np.asarray(point, dtype=float)
        if model.max_violation(x) <= 1e-9:
            best = min(best, model.objective_value(x))
    return best


def _small_random_ilp(seed: int) -> Callable[[], StandardForm]:
    def build() -> StandardForm:
        return random_milp(n=5, m=3, seed=seed)

    return build


_RANDOM_ILP_SEEDS = (0, 1, 2, 3)

CASES: tuple[ConformanceCase, ...] = (
    ConformanceCase("lp", lp_model, TerminationReason.OPTIMAL, -3.0),
    ConformanceCase("knapsack", knapsack_model, TerminationReason.OPTIMAL, _knapsack_optimum()),
    ConformanceCase("general_integer", general_integer_model, TerminationReason.OPTIMAL,
                    _general_integer_optimum()),
    ConformanceCase("infeasible", infeasible_model, TerminationReason.INFEASIBLE),
    ConformanceCase("unbounded", unbounded_model, TerminationReason.UNBOUNDED),
    ConformanceCase("qp", qp_model, TerminationReason.OPTIMAL, 0.5),
    ConformanceCase("miqp", miqp_model, TerminationReason.OPTIMAL, _miqp_optimum()),
    ConformanceCase("indicator", indicator_model, TerminationReason.OPTIMAL, -3.0),
    ConformanceCase("logistic", logistic_model, TerminationReason.OPTIMAL,
                    _closed_form_group_loss("logistic", _LOG_Y, _LOG_G), rel_tol=1e-5),
    ConformanceCase("mixed_loss", mixed_loss_model, TerminationReason.OPTIMAL,
                    _closed_form_group_loss("logistic", _LOG_Y, _LOG_G)
                    + _closed_form_group_loss("poisson", _POI_Y, _POI_G)
                    + _closed_form_group_loss("squared", _SQ_Y, _SQ_G), rel_tol=1e-5),
    ConformanceCase("time_limit", market_split, TerminationReason.FEASIBLE, None, Limit.TIME,
                    SolveOptions(time_limit=0.5)),
    *(ConformanceCase(f"random_ilp_{seed}", _small_random_ilp(seed), TerminationReason.OPTIMAL,
                      brute_force_integer_optimum(random_milp(n=5, m=3, seed=seed)))
      for seed in _RANDOM_ILP_SEEDS),
)


def backend_claims(backend: SolverBackend, case: ConformanceCase) -> bool:
    """True when the backend declares every capability the case needs (and does not list
    the combination as unsupported): :func:`rulemip.solvers.base.supports`."""
    return supports(backend, case.needs())


def check_case(backend: SolverBackend, case: ConformanceCase,
               options: SolveOptions | None = None) -> SolveResult:
    """Solve ``case`` with ``backend`` and assert the result contract; returns the result."""
    model = case.build()
    res = backend.solve(model, options if options is not None else case.options)
    where = f"{backend.name}/{case.name}"
    _check_bounds(res, where)
    if case.limit is not None:
        assert res.limit is case.limit, f"{where}: limit {res.limit}, expected {case.limit}"
        assert res.termination in (TerminationReason.FEASIBLE,
                                   TerminationReason.NO_SOLUTION_FOUND), \
            f"{where}: termination {res.termination} at a limit"
        assert res.termination is not TerminationReason.OPTIMAL
    else:
        assert res.termination is case.termination, \
            f"{where}: termination {res.termination}, expected {case.termination}"
    if res.termination in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
        assert res.x is not None, f"{where}: no solution vector"
        assert res.x.shape == (model.n_cols,), f"{where}: x has shape {res.x.shape}"
        viol = model.max_violation(res.x)
        assert viol <= FEAS_TOL, f"{where}: solution violates the model by {viol:g}"
        recomputed = model.objective_value(res.x)
        assert _close(recomputed, res.bounds.primal, case.rel_tol), \
            f"{where}: primal {res.bounds.primal} but x has objective {recomputed}"
    if case.objective is not None and res.termination is TerminationReason.OPTIMAL:
        assert _close(res.bounds.primal, case.objective, case.rel_tol), \
            f"{where}: objective {res.bounds.primal}, known optimum {case.objective}"
        assert res.gap <= max(case.rel_tol, 1e-6) or _close(res.bounds.dual, res.bounds.primal,
                                                             case.rel_tol), \
            f"{where}: OPTIMAL with gap {res.gap}"
    if case.termination is TerminationReason.INFEASIBLE:
        assert res.x is None, f"{where}: infeasible but returned x"
    return res


def _close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def _check_bounds(res: SolveResult, where: str) -> None:
    p, d = res.bounds.primal, res.bounds.dual
    if math.isfinite(p) and math.isfinite(d):
        assert d <= p + 1e-9 * max(1.0, abs(p)), f"{where}: dual bound {d} > primal {p}"
    assert res.backend, f"{where}: result has no backend name"
    assert res.backend_version, f"{where}: result has no backend version"
    assert res.wall_time >= 0.0


def check_persistent_rows(backend: SolverBackend, model: StandardForm, n_hold: int = 3,
                          options: SolveOptions | None = None) -> list[SolveResult]:
    """Load ``model`` without its last ``n_hold`` rows, add them back one at a time and
    re-solve after each; every re-solve must match a fresh solve of the same row set."""
    m = model.n_rows
    assert 0 < n_hold <= m
    base = _take_rows(model, m - n_hold)
    solver = backend.persistent(base)
    results = [solver.solve(options)]
    _match(results[-1], backend.solve(base, options), f"{backend.name}/persistent+0")
    for k in range(m - n_hold, m):
        solver.add_rows(model.A[k:k + 1], model.row_lower[k:k + 1], model.row_upper[k:k + 1])
        assert solver.n_rows == k + 1 and solver.n_cols == model.n_cols
        res = solver.solve(options)
        fresh = backend.solve(_take_rows(model, k + 1), options)
        _match(res, fresh, f"{backend.name}/persistent+{k - (m - n_hold) + 1}")
        results.append(res)
    return results


def _take_rows(model: StandardForm, k: int) -> StandardForm:
    from dataclasses import replace

    return replace(model, A=model.A[:k].tocsr(), row_lower=model.row_lower[:k].copy(),
                   row_upper=model.row_upper[:k].copy(), row_names=model.row_names[:k])


def _match(a: SolveResult, b: SolveResult, where: str) -> None:
    assert a.termination is b.termination, f"{where}: {a.termination} vs fresh {b.termination}"
    if a.termination is TerminationReason.OPTIMAL:
        assert _close(a.bounds.primal, b.bounds.primal, 1e-6), \
            f"{where}: {a.bounds.primal} vs fresh {b.bounds.primal}"
