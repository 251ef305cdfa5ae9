r"""Pyomo backend: any solver Pyomo can call, on the model built by
:func:`rulemip.model.pyomo_export.to_pyomo`.

``get_backend("pyomo")`` uses the first available solver of :data:`DEFAULT_SOLVERS`
(``highs``, ``appsi_highs``, ``scip``, Gurobi, CPLEX, Xpress, ``cbc``, ``glpk``);
``get_backend("pyomo:NAME")`` (or ``PyomoBackend("NAME")``) any solver by its Pyomo
``SolverFactory`` name. The model goes through :func:`~rulemip.model.pyomo_export.to_pyomo`:
indicator constraints become exact big-M rows from the column bounds, loss terms become
nonlinear ``Expression`` components (only NLP/MINLP solvers such as ``scip`` or ``ipopt``
declare ``NONLINEAR_LOSS``).

Capabilities depend on the solver (:data:`SOLVER_CAPABILITIES`, matched by name prefix;
unknown solvers are assumed to take LP/MILP only). ``highs`` cannot combine integers with
a quadratic objective (no MIQP), like the native HiGHS backend.

Options: ``time_limit`` is passed as Pyomo's ``timelimit``; ``mip_gap``, ``seed``,
``threads`` and ``node_limit`` go to the solver under its own option names for the known
solver families (:data:`OPTION_NAMES`; anything not mapped is recorded in ``notes``);
``extra`` is passed verbatim as solver options (for the HiGHS family, a solve failing
because HiGHS's process-wide thread pool has another size restarts the pool once, as the
``highs`` backend does). A start is loaded into the variables and
passed with ``warmstart=True`` to solvers that are ``warm_start_capable()``.

Results: Pyomo's termination condition maps onto :class:`TerminationReason`/``Limit``;
``primal`` is the objective of ``x`` recomputed exactly, ``dual`` Pyomo's
``problem.lower_bound`` (for an LP, or a MIP the solver calls optimal without a bound, the
primal value — noted). Node counts are not available through Pyomo (``nodes = None``).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.exceptions import InvalidParameterError
from rulemip.model.pyomo_export import column_values, to_pyomo
from rulemip.model.standard_form import StandardForm
from rulemip.solvers._common import (
    Progress,
    check_solve_args,
    finished_status,
    limit_status,
    make_result,
    reject,
)
from rulemip.solvers.base import Capability, check_supported, module_available
from rulemip.solvers.result import Limit, SolveOptions, SolveResult, TerminationReason

__all__ = ["DEFAULT_SOLVERS", "OPTION_NAMES", "SOLVER_CAPABILITIES", "PyomoBackend"]

#: preference order of ``solver="pyomo"``
DEFAULT_SOLVERS = ("highs", "appsi_highs", "scip", "gurobi_direct", "cplex_direct",
                   "xpress_direct", "cbc", "glpk")

_C = Capability
_MILP = frozenset({_C.LP, _C.INTEGER, _C.INDICATOR})
#: capabilities by solver-name prefix (first match wins); indicators are big-M rows
SOLVER_CAPABILITIES: tuple[tuple[str, frozenset[Capability]], ...] = (
    ("appsi_highs", _MILP | {_C.MIP_START, _C.DUAL_BOUND}),
    ("highs", _MILP | {_C.QUADRATIC_OBJECTIVE, _C.DUAL_BOUND}),
    ("scip", _MILP | {_C.QUADRATIC_OBJECTIVE, _C.NONLINEAR_LOSS, _C.DUAL_BOUND}),
    ("gurobi", _MILP | {_C.QUADRATIC_OBJECTIVE, _C.MIP_START, _C.DUAL_BOUND}),
    ("cplex", _MILP | {_C.QUADRATIC_OBJECTIVE, _C.MIP_START, _C.DUAL_BOUND}),
    ("xpress", _MILP | {_C.QUADRATIC_OBJECTIVE, _C.MIP_START, _C.DUAL_BOUND}),
    ("cbc", _MILP | {_C.MIP_START, _C.DUAL_BOUND}),
    ("glpk", _MILP | {_C.DUAL_BOUND}),
    ("ipopt", frozenset({_C.LP, _C.QUADRATIC_OBJECTIVE, _C.NONLINEAR_LOSS})),
)
_NO_MIQP = (frozenset({_C.INTEGER, _C.QUADRATIC_OBJECTIVE}),)

#: solver option names for (mip_gap, seed, threads, node_limit), by solver-name prefix
OPTION_NAMES: tuple[tuple[str, tuple[str | None, str | None, str | None, str | None]], ...] = (
    ("appsi_highs", ("mip_rel_gap", "random_seed", "threads", "mip_max_nodes")),
    ("highs", ("mip_rel_gap", "random_seed", "threads", "mip_max_nodes")),
    ("scip", ("limits/gap", "randomization/randomseedshift", None, "limits/nodes")),
    ("gurobi", ("MIPGap", "Seed", "Threads", "NodeLimit")),
    ("cplex", ("mipgap", "randomseed", "threads", "mip_limits_nodes")),
    ("xpress", ("miprelstop", "randomseed", "threads", "maxnode")),
    ("cbc", ("ratioGap", "randomCbcSeed", "threads", "maxNodes")),
    ("glpk", ("mipgap", None, None, None)),
)

_INSTALL_HINT = ("pip install 'pyomo>=6.7,<7' highspy  (Pyomo plus a solver it can call; "
                 "any Pyomo solver works through solver='pyomo:NAME')")


def _lookup(table: tuple[tuple[str, Any], ...], name: str, default: Any) -> Any:
    for prefix, value in table:
        if name.startswith(prefix):
            return value
    return default


@functools.lru_cache(maxsize=32)
def _solver_available(name: str) -> bool:
    if not module_available("pyomo"):
        return False
    import pyomo.environ as pe

    try:
        opt = pe.SolverFactory(name)
        return bool(opt.available(exception_flag=False))
    except Exception:  # an unknown name or a broken plugin: not available
        return False


@functools.lru_cache(maxsize=1)
def _default_solver() -> str | None:
    for name in DEFAULT_SOLVERS:
        if _solver_available(name):
            return name
    return None


class PyomoBackend:
    """Solve through Pyomo with the solver ``solver`` (see the module docstring).

    Parameters
    ----------
    solver : str, optional
        A Pyomo ``SolverFactory`` name (``"appsi_highs"``, ``"gurobi_direct"``, ...);
        ``None`` picks the first available of :data:`DEFAULT_SOLVERS`.
    """

    install_hint = _INSTALL_HINT

    def __init__(self, solver: str | None = None) -> None:
        if solver is not None and (not isinstance(solver, str) or not solver.strip()):
            raise InvalidParameterError(
                f"`solver` must be a Pyomo solver name such as 'appsi_highs'; got {solver!r}.")
        self._requested = solver
        self.name = "pyomo" if solver is None else f"pyomo:{solver}"

    @property
    def solver_name(self) -> str | None:
        """The Pyomo solver used (``None`` when no default solver is available)."""
        return self._requested if self._requested is not None else _default_solver()

    @property
    def capabilities(self) -> frozenset[Capability]:  # type: ignore[override]
        name = self.solver_name
        if name is None:
            return _MILP
        return frozenset(_lookup(SOLVER_CAPABILITIES, name, _MILP))

    @property
    def unsupported_combinations(self) -> tuple[frozenset[Capability], ...]:
        name = self.solver_name or ""
        return _NO_MIQP if name.startswith("highs") else ()

    @property
    def bound_tolerance(self) -> float:
        """Feasibility tolerance of the dual bounds this backend reports: 1e-7 for HiGHS
        (set as by the ``highs`` backend), else 1e-6 (a typical default)
        (:func:`rulemip.solvers.status.bound_slack`)."""
        name = self.solver_name or ""
        return 1e-7 if name.startswith(("highs", "appsi_highs")) else 1e-6

    def available(self) -> bool:
        name = self.solver_name
        return name is not None and _solver_available(name)

    def version(self) -> str:
        import pyomo.environ as pe
        import pyomo.version

        name = self.solver_name
        ver = ""
        if name is not None:
            try:
                v = pe.SolverFactory(name).version()
                ver = ".".join(str(p) for p in v) if isinstance(v, tuple) else str(v or "")
            except Exception:  # the solver's version is informative only
                ver = ""
        return f"Pyomo {pyomo.version.version}; {name} {ver}".strip()

    def solve(self, model: StandardForm, options: SolveOptions | None = None,
              start: NDArray[np.float64] | None = None) -> SolveResult:
        """Build the Pyomo model of ``model``, solve it and report a :class:`SolveResult`."""
        import pyomo.environ as pe

        opts, sf, x0 = check_solve_args(model, options, start)
        name = self.solver_name
        if name is None or not _solver_available(name):
            raise reject(self.name, "any model: the solver is not available",
                         f"install one with `{self.install_hint}`.")
        check_supported(self, sf, "use an NLP/MINLP Pyomo solver ('pyomo:scip', "
                        "'pyomo:ipopt'), solver='scip', or the outer-approximation driver.")
        t0 = time.perf_counter()
        pm = to_pyomo(sf)
        opt = pe.SolverFactory(name)
        notes: list[str] = []
        solver_options = self._solver_options(name, opts, notes)
        kwargs: dict[str, Any] = {"load_solutions": False, "tee": bool(opts.verbose),
                                  "options": solver_options}
        if x0 is not None:
            if opt.warm_start_capable():
                for v, val in zip(pm.rulemip_columns, x0.tolist()):
                    if not math.isnan(val):
                        v.set_value(val, skip_validation=True)
                kwargs["warmstart"] = True
            else:
                notes.append(f"Pyomo solver {name!r} is not warm-start capable; "
                             "`start` ignored.")
        load = time.perf_counter() - t0
        if opts.time_limit is not None:
            kwargs["timelimit"] = max(float(opts.time_limit) - load, 0.0)
        results = opt.solve(pm, **kwargs)
        if (opts.threads is not None and "highs" in name
                and str(results.solver.termination_condition) in ("error", "unknown")):
            # HiGHS's process-wide thread pool was started with another size: rebuild it
            import highspy

            highspy.Highs.resetGlobalScheduler(True)
            notes.append(f"HiGHS thread pool restarted with {opts.threads} threads.")
            results = opt.solve(pm, **kwargs)
        wall = time.perf_counter() - t0
        res = self._result(sf, pm, opt, results, opts, wall, notes, kwargs)
        progress = Progress(opts.callback)
        if progress:
            progress.report(res.bounds.primal, res.bounds.dual, res.nodes, wall)
        return res

    def _solver_options(self, name: str, opts: SolveOptions, notes: list[str]
                        ) -> dict[str, Any]:
        gap, seed, threads, nodes = _lookup(OPTION_NAMES, name, (None, None, None, None))
        out: dict[str, Any] = {}
        for key, value, what in ((gap, float(opts.mip_gap), "mip_gap"),
                                 (seed, int(opts.seed), "seed"),
                                 (threads, opts.threads, "threads"),
                                 (nodes, opts.node_limit, "node_limit")):
            if value is None or (what == "seed" and value == 0 and key is None):
                continue
            if key is None:
                notes.append(f"rulemip does not know {name!r}'s option for `{what}`; "
                             "pass it through `extra`.")
            else:
                out[key] = value
        if name.startswith(("highs", "appsi_highs")):
            out["mip_abs_gap"] = 0.0  # only the relative gap may end a solve (as 'highs')
            # tolerances of the 'highs' backend, so that its bounds are as tight
            # (rulemip.solvers.status.bound_slack)
            out["mip_feasibility_tolerance"] = 1e-7
        out.update(opts.extra)
        return out

    def _result(self, sf: StandardForm, pm: Any, opt: Any, results: Any,
                opts: SolveOptions, wall: float, notes: list[str], kwargs: dict[str, Any]
                ) -> SolveResult:
        from pyomo.opt import TerminationCondition as TC

        tc = results.solver.termination_condition
        raw = str(tc)
        x = None
        quiet = logging.getLogger("pyomo.core")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # Pyomo warns when loading a time-limited incumbent
        try:
            if len(results.solution) > 0:
                pm.solutions.load_from(results)
                vals = column_values(pm)
                if not np.isnan(vals).any():
                    x = vals
        except ValueError:  # Pyomo refuses to load the solution of a failed solve
            x = None
        finally:
            quiet.setLevel(level)
        if x is not None and sf.is_mip:
            ints = sf.integrality
            r = np.round(x[ints])
            close = np.abs(x[ints] - r) <= 1e-6
            x[ints] = np.where(close, r, x[ints])
        has_sol = x is not None and sf.max_violation(x) <= 1e-6
        if not has_sol:
            x = None
        primal = sf.objective_value(x) if x is not None else math.inf
        lb = _finite(results.problem.lower_bound)
        dual = lb if lb is not None else -math.inf
        limit: Limit | None = None
        if tc in (TC.optimal, TC.globallyOptimal, TC.locallyOptimal):
            if not has_sol:
                term = TerminationReason.NUMERICAL_ERROR
                notes.append("the solver reported optimal without a feasible solution.")
            elif not sf.is_mip or lb is None:
                if sf.is_mip:
                    notes.append("no dual bound from the solver; its optimality claim "
                                 "is taken as the bound.")
                dual = primal
                term = TerminationReason.OPTIMAL
            else:
                term, limit = finished_status(primal, dual, opts)
            if tc is TC.locallyOptimal and sf.is_mip:
                notes.append("the solver reported a local optimum.")
        elif tc == TC.infeasible:
            term, x, primal, dual = TerminationReason.INFEASIBLE, None, math.inf, math.inf
        elif tc == TC.unbounded:
            term, x, primal, dual = TerminationReason.UNBOUNDED, None, -math.inf, -math.inf
        elif tc == TC.infeasibleOrUnbounded:
            term = self._infeasible_or_unbounded(pm, opt, kwargs, notes)
            x = None
            primal, dual = ((math.inf, math.inf) if term is TerminationReason.INFEASIBLE
                            else (-math.inf, -math.inf))
        elif tc in (TC.maxTimeLimit, TC.maxIterations, TC.maxEvaluations, TC.userInterrupt,
                    TC.feasible, TC.intermediateNonInteger, TC.other):
            which = {TC.maxTimeLimit: Limit.TIME, TC.maxIterations: Limit.ITERATION,
                     TC.maxEvaluations: Limit.NODE,
                     TC.userInterrupt: Limit.INTERRUPTED}.get(tc, Limit.OTHER)
            term, limit = limit_status(has_sol, which)
        else:
            term, x, primal, dual = TerminationReason.ERROR, None, math.inf, -math.inf
        return make_result(term, primal=primal, dual=dual, limit=limit, x=x, wall_time=wall,
                           nodes=None, iterations=None, backend=self.name,
                           backend_version=self.version(), options=opts, raw_status=raw,
                           notes=notes)

    def _infeasible_or_unbounded(self, pm: Any, opt: Any, kwargs: dict[str, Any],
                                 notes: list[str]) -> TerminationReason:
        """Decide "infeasible or unbounded" by a feasibility solve (zero objective)."""
        import pyomo.environ as pe
        from pyomo.opt import TerminationCondition as TC

        for obj in pm.component_objects(pe.Objective, active=True):
            obj.deactivate()
        pm.add_component("rulemip_feasibility", pe.Objective(expr=0.0))
        probe = dict(kwargs)
        probe.pop("warmstart", None)
        tc = opt.solve(pm, **probe).solver.termination_condition
        if tc in (TC.optimal, TC.globallyOptimal, TC.locallyOptimal, TC.feasible):
            notes.append("the solver reported infeasible-or-unbounded; a feasibility solve "
                         "found a feasible point, so the model is unbounded.")
            return TerminationReason.UNBOUNDED
        if tc == TC.infeasible:
            return TerminationReason.INFEASIBLE
        notes.append("the solver could not decide between infeasible and unbounded.")
        return TerminationReason.ERROR


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
