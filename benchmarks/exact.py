"""Time to certified optimality of the exact k-rule engines (docs/explanation/interval_cover.md,
docs/explanation/box_selection.md), cross-checked.

Rerun (from the repository root; the commands behind every table are listed in
``docs/benchmarks/exact.md``)::

    python benchmarks/exact.py --time-limit 60 --regs 10 --jsonl rows.jsonl
    python benchmarks/exact.py --time-limit 60 --dims 2 3 --regs 100 --jsonl rows.jsonl
    python benchmarks/exact.py --summarize rows.jsonl     # summary + agreement check
    python benchmarks/exact.py --quick                    # smoke run, ~1.5 min

Instances: subsamples (seed 0) of scikit-learn's diabetes data — 1 feature (bmi) with
n ∈ {30, 60, 100}, 2 (bmi, bp) and 3 (bmi, bp, s5) features with n = 100; at most 5
quantile cut points per feature (6 threshold groups); squared loss with intercept;
λ = ``--regs`` in the package convention R_λ = (Σ l + λ‖β‖²)/n; k = ``--ks`` (1..10).

Engines (``--engines``; default: every one whose backend is installed and capable):

* ``cip-enum``      — BoxSelectionCIP, exact enumeration of supports (no solver);
* ``cip-auto``      — BoxSelectionCIP's default ``method="auto"`` (only on request);
* ``cip-bnb``       — BoxSelectionCIP ``method="bnb"``, branch and bound over boxes with
  Frank–Wolfe node bounds (squared loss; only on request);
* ``cip-conic:scip`` — experiment, squared loss: the CIP as a mixed-integer conic program
  on SCIP (:func:`solve_conic_scip`; only on request);
* ``cip-oa:<b>``    — BoxSelectionCIP, outer approximation with persistent masters on
  backend ``b`` (every installed backend with ``PERSISTENT`` and ``INTEGER``);
* ``mip:<b>``       — IntervalCoverMIP on backend ``b`` (every installed backend with
  ``INTEGER``): natively where the backend takes the quadratic objective with integers
  (SCIP), otherwise by the tangent-cut outer approximation (HiGHS, CBC, ...).

Every row: engine, backend, k, status, wall time, gap, certified R_λ (the decoded risk,
recomputed from the data), lower bound. After the rows the script checks agreement: for
every instance, all certified optima must agree (relative tolerance ``AGREE_RTOL``), no
method's lower bound may exceed a certified optimum and no method's feasible risk may lie
below one. Any violation is printed as ``*** DISAGREEMENT`` and makes the exit status 1.

To keep a run bounded, a method that fails to certify ``--skip-after`` (default 1)
consecutive k is not run for larger k on the same data and λ; such rows say ``skipped``
(the enumeration's work grows with k; the MIP's and OA's usually do, but not always).
Timings are wall-clock on whatever machine runs this; on a shared machine they are noisy.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rulemip.algorithms.krule.box_selection import solve_box_selection
from rulemip.algorithms.solve.driver import solve as solve_formulation
from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.formulations.interval_cover import IntervalCoverMIP
from rulemip.formulations.result import ExactResult
from rulemip.rules.language import Language
from rulemip.solvers import Capability, available_backends, get_backend

FEATURES = [2, 3, 8]  # bmi, bp, s5 of sklearn's diabetes
FEATURE_NAMES = ["bmi", "bp", "s5"]
MAX_THRESHOLDS = 5  # 6 threshold groups per feature
AGREE_RTOL = 1e-5  # two certified optima (each gap <= 1e-6) must agree this closely
CASES: list[tuple[int, int]] = [(1, 30), (1, 60), (1, 100), (2, 100), (3, 100)]


def diabetes(n: int, d: int, seed: int = 0, loss: str = "squared") -> Dataset:
    """Rows ``n`` (sampled without replacement, ``seed``) and the first ``d`` of bmi, bp,
    s5 of scikit-learn's diabetes data. ``loss="logistic"``: label y > median;
    ``"poisson"``: counts round(y / 25)."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(y), n, replace=False)
    yy = y[idx]
    if loss == "logistic":
        yy = np.where(yy > np.median(y), 1.0, -1.0)
    elif loss == "poisson":
        yy = np.rint(yy / 25.0)
    return Dataset.from_arrays(X[idx][:, FEATURES[:d]], yy, feature_names=FEATURE_NAMES[:d],
                               loss=loss)


# ---------------------------------------------------------------------- engines
def mip_backends() -> list[str]:
    """Installed backends that can solve MILPs (hence the interval-cover MIP, natively or
    by tangent cuts)."""
    return [b for b in available_backends()
            if {Capability.INTEGER, Capability.LP} <= set(get_backend(b).capabilities)]


def engine_names(include_auto: bool = False) -> list[str]:
    """Every engine this machine can run, in a fixed order; ``include_auto`` adds
    ``cip-auto`` (the CIP's default ``method="auto"``: enumeration within half the time
    limit when there are few supports, then OA) and ``cip-bnb`` (``method="bnb"``)."""
    names = ["cip-enum"] + (["cip-auto", "cip-bnb"] if include_auto else [])
    if include_auto and "scip" in available_backends():
        names.append("cip-conic:scip")
    names += [f"cip-oa:{b}" for b in mip_backends()
              if Capability.PERSISTENT in get_backend(b).capabilities]
    return names + [f"mip:{b}" for b in mip_backends()]


def solve(engine: str, ds: Dataset, k: int, reg: float, thresholds: Sequence[np.ndarray],
          time_limit: float | None, *, loss: str = "squared", fit_intercept: bool = True,
          threads: int = 2, mip_gap: float = 1e-6, **cip_options: Any) -> ExactResult:
    """Solve one instance with one engine (names as in :func:`engine_names`)."""
    kind, _, backend = engine.partition(":")
    ths = [np.asarray(t, dtype=float) for t in thresholds]
    if kind in ("cip-enum", "cip-oa", "cip-auto", "cip-bnb"):
        cip = BoxSelectionCIP(Language(k, ths, fit_intercept=fit_intercept), loss=loss, reg=reg)
        method = {"cip-enum": "enumerate", "cip-oa": "oa", "cip-auto": "auto",
                  "cip-bnb": "bnb"}[kind]
        return solve_box_selection(cip, ds, method=method, solver=backend or "highs",
                                   budget=Budget.from_time_limit(time_limit),
                                   threads=threads, mip_gap=mip_gap, **cip_options)
    if kind == "cip-conic":
        return solve_conic_scip(ds, k, reg, ths, time_limit, threads=threads,
                                mip_gap=mip_gap)
    if kind == "mip":
        mip = IntervalCoverMIP(Language(k, ths, fit_intercept=fit_intercept), loss=loss, reg=reg)
        return solve_formulation(mip, ds, solver=backend,
                                 budget=Budget.from_time_limit(time_limit), threads=threads,
                                 mip_gap=mip_gap)
    raise ValueError(f"unknown engine {engine!r}; known: {engine_names(True)}")


def solve_conic_scip(ds: Dataset, k: int, reg: float, thresholds: Sequence[np.ndarray],
                     time_limit: float | None, *, threads: int = 2, mip_gap: float = 1e-6
                     ) -> ExactResult:
    r"""Experiment (docs/benchmarks/exact.md §4): the box-selection CIP for squared loss
    with intercept as a mixed-integer conic program solved by SCIP.

    With the weighted centering of :class:`~rulemip.formulations.box_oracles.SquaredBoxOracle`
    (centered columns :math:`\tilde q_b`, centered targets :math:`\tilde y`, weights
    :math:`W_p`, reduction constant C),

    .. math:: \min \frac{1}{W}\Big(\sum_p W_p e_p^2 + \lambda \sum_b s_b + C\Big)
              \ \text{s.t.}\ e = \tilde y - \tilde Q \beta,\ \beta_b^2 \le s_b z_b,\
              \sum_b z_b \le k,\ z_b \in \{0..k\},\ s \ge 0

    — the rotated cone :math:`\beta_b^2 \le s_b z_b` is the perspective of the ridge term,
    so for fixed z the inner minimum is exactly :math:`R(z)` and SCIP's node relaxations are
    the perspective (continuous) relaxation with branching on z. The upper bound reported
    is :math:`R(z)` of SCIP's best z recomputed by the oracle; the lower bound is SCIP's
    dual bound less a relative margin of 1e-7. SCIP's tolerances on the cone and epigraph
    rows leave its bound up to ~2e-6 (relative) below the recomputed optimum, so this
    experiment calls a gap of at most ``max(mip_gap, 1e-5)`` certified.
    """
    import pyscipopt as ps

    from rulemip.solvers.result import Limit, TerminationReason, relative_gap

    t0 = time.perf_counter()
    prob = BoxSelectionCIP(Language(k, list(thresholds)), reg=reg).build(ds)
    oracle = prob.oracle
    assert hasattr(oracle, "col_mean")
    Qc = prob.Q - oracle.col_mean
    w, yc, B, W = oracle.w, oracle.yc, prob.n_boxes, oracle.W
    m = ps.Model()
    m.hideOutput()
    m.setParam("parallel/maxnthreads", threads)
    if time_limit is not None:
        m.setParam("limits/time", max(time_limit - (time.perf_counter() - t0), 0.0))
    m.setParam("limits/gap", 0.01 * mip_gap)
    m.setParam("numerics/feastol", 1e-8)
    beta = [m.addVar(lb=None, ub=None) for _ in range(B)]
    sv = [m.addVar(lb=0.0) for _ in range(B)]
    z = [m.addVar(vtype="I", lb=0, ub=k) for _ in range(B)]
    e = [m.addVar(lb=None, ub=None) for _ in range(len(yc))]
    t = m.addVar(lb=0.0)
    for p in range(len(yc)):
        nz = np.flatnonzero(Qc[p])
        m.addCons(e[p] + ps.quicksum(float(Qc[p, b]) * beta[b] for b in nz) == float(yc[p]))
    m.addCons(ps.quicksum(float(w[p]) * e[p] * e[p] for p in range(len(yc))) <= t)
    for b in range(B):
        m.addCons(beta[b] * beta[b] <= sv[b] * z[b])
    m.addCons(ps.quicksum(z) <= k)
    m.setObjective((t + reg * ps.quicksum(sv) + prob.cells.constant) / W, "minimize")
    m.optimize()
    lb = float(m.getDualbound())
    lb = max(lb - 1e-7 * abs(lb), prob.bound)
    risk, zbest, ens = math.inf, None, None
    if m.getNSols() > 0:
        zbest = np.rint([m.getVal(v) for v in z])
        risk = float(oracle.value_and_gradient(zbest)[0])
        ens, risk = prob.decode(zbest)
    lb = min(lb, risk)
    gap = relative_gap(risk, lb)
    ok = gap <= max(mip_gap, 1e-5)
    return ExactResult(ensemble=ens, risk=risk, lower_bound=lb, gap=gap,
                       termination=TerminationReason.OPTIMAL if ok
                       else TerminationReason.FEASIBLE,
                       limit=None if ok else Limit.TIME, wall_time=time.perf_counter() - t0,
                       iterations=int(m.getNNodes()), engine="cip", method="conic",
                       backend="scip-conic", backend_version=m.version(), n_boxes=B,
                       n_cells=prob.cells.n_cells, bound_valid=True,
                       notes=(m.getStatus(),))


@dataclass
class Row:
    """One benchmark row (``status`` also ``skipped`` or ``error``)."""

    data: str
    n: int
    reg: float
    engine: str
    backend: str
    k: int
    status: str
    time: float
    gap: float
    risk: float
    lower_bound: float
    iterations: int = 0
    note: str = ""
    spec: str = ""  # the --engines name that produced the row

    @property
    def certified(self) -> bool:
        return self.status == "optimal"

    def markdown(self) -> str:
        def num(v: float, fmt: str) -> str:
            return format(v, fmt) if math.isfinite(v) else ("—" if math.isnan(v) else str(v))

        return (f"| {self.data} | {self.n} | {self.reg:g} | {self.engine} | {self.backend} | "
                f"{self.k} | {self.status} | {num(self.time, '.2f')} | "
                f"{num(self.gap, '.1e')} | {num(self.risk, '.4f')} | "
                f"{num(self.lower_bound, '.4f')} |")


HEADER = ("| data | n | λ | engine | backend | k | status | time (s) | gap | R_λ | "
          "lower bound |\n|---|---|---|---|---|---|---|---|---|---|---|")


def run_one(engine: str, ds: Dataset, data: str, k: int, reg: float,
            thresholds: Sequence[np.ndarray], time_limit: float | None, **kw: Any) -> Row:
    """One timed solve as a :class:`Row` (exceptions become ``status="error"``)."""
    t0 = time.perf_counter()
    kind = engine.partition(":")[0]
    try:
        res = solve(engine, ds, k, reg, thresholds, time_limit, **kw)
    except Exception as exc:  # a backend failing must not stop the benchmark
        return Row(data, ds.n, reg, kind, engine.partition(":")[2] or "-", k, "error",
                   time.perf_counter() - t0, math.nan, math.nan, math.nan,
                   note=f"{type(exc).__name__}: {exc}", spec=engine)
    backend = res.backend
    if kind == "mip" and Capability.NONLINEAR_LOSS not in get_backend(backend).capabilities:
        backend += "+tangent"
    return Row(data, ds.n, reg, kind, backend, k, res.termination.value,
               time.perf_counter() - t0, res.gap, res.risk, res.lower_bound, res.iterations,
               spec=engine)


# ---------------------------------------------------------------------- agreement
def check_agreement(rows: Iterable[Row], rtol: float = AGREE_RTOL) -> list[str]:
    """Problems found among rows of the same instance (data, n, λ, k); empty if none.

    * two certified optima differ by more than ``rtol`` (relative);
    * a lower bound exceeds a certified optimum by more than ``rtol``;
    * a feasible risk lies more than ``rtol`` below a certified optimum.
    """
    groups: dict[tuple[str, int, float, int], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.data, r.n, r.reg, r.k), []).append(r)
    problems = []
    for key, grp in groups.items():
        cert = [r for r in grp if r.certified]
        if not cert:
            continue
        lo = min(cert, key=lambda r: r.risk)
        hi = max(cert, key=lambda r: r.risk)
        scale = max(1.0, abs(lo.risk))
        if hi.risk - lo.risk > rtol * scale:
            problems.append(f"{key}: certified optima differ: {lo.engine}/{lo.backend} "
                            f"{lo.risk:.10g} vs {hi.engine}/{hi.backend} {hi.risk:.10g}")
        for r in grp:
            if math.isfinite(r.lower_bound) and r.lower_bound > lo.risk + rtol * scale:
                problems.append(f"{key}: lower bound of {r.engine}/{r.backend} "
                                f"{r.lower_bound:.10g} exceeds the certified optimum "
                                f"{lo.risk:.10g}")
            if math.isfinite(r.risk) and r.risk < hi.risk - rtol * scale:
                problems.append(f"{key}: feasible risk of {r.engine}/{r.backend} "
                                f"{r.risk:.10g} is below the certified optimum {hi.risk:.10g}")
    return problems


def agreement_counts(rows: Sequence[Row]) -> tuple[int, int]:
    """(instances certified by ≥ 2 methods, instances certified by ≥ 1)."""
    per: dict[tuple[str, int, float, int], int] = {}
    for r in rows:
        if r.certified:
            key = (r.data, r.n, r.reg, r.k)
            per[key] = per.get(key, 0) + 1
    return sum(v >= 2 for v in per.values()), len(per)


# ---------------------------------------------------------------------- summary
def summary(rows: Sequence[Row]) -> str:
    """Per data, n, λ and method: the certified k, the slowest certified time, and the
    first k that was run but not certified (else the largest k)."""
    out = ["| data | n | λ | engine | backend | certified k | max time certified (s) | "
           "first uncertified k (else largest): status, time, gap |",
           "|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, int, float, str], list[Row]] = {}
    for r in rows:
        spec = r.spec or r.engine + ":" + r.backend.split("+")[0].split("-")[0]
        groups.setdefault((r.data, r.n, r.reg, spec), []).append(r)
    for (data, n, reg, _), grp in groups.items():
        cert = [r for r in grp if r.certified]
        ks = _ranges(sorted(r.k for r in cert))
        tmax = max((r.time for r in cert), default=math.nan)
        ran = sorted((r for r in grp if r.status != "skipped"), key=lambda r: r.k)
        fail = [r for r in ran if not r.certified]
        last = fail[0] if fail else (ran[-1] if ran else grp[-1])
        backend = ran[0].backend if ran else grp[0].backend
        tail = f"{last.status}" + ("" if last.status == "skipped" else
                                   f", {last.time:.1f} s, {last.gap:.1e}")
        out.append(f"| {data} | {n} | {reg:g} | {grp[0].engine} | {backend} | {ks or '—'} | "
                   f"{'—' if math.isnan(tmax) else f'{tmax:.1f}'} | k={last.k}: {tail} |")
    return "\n".join(out)


def _ranges(ks: list[int]) -> str:
    parts: list[str] = []
    for k in ks:
        if parts and parts[-1].split("–")[-1] == str(k - 1):
            parts[-1] = parts[-1].split("–")[0] + f"–{k}"
        else:
            parts.append(str(k))
    return ", ".join(parts)


# ---------------------------------------------------------------------- driver
def run(args: argparse.Namespace) -> list[Row]:
    engines = args.engines or engine_names()
    rows: list[Row] = []
    print(HEADER, flush=True)
    sink = open(args.jsonl, "a") if args.jsonl else None  # noqa: SIM115 - closed below
    try:
        for d, n in CASES:
            if d not in args.dims or (args.n is not None and n not in args.n):
                continue
            ds = diabetes(n, d)
            ths = candidate_thresholds(ds.X, MAX_THRESHOLDS)
            data = f"{d}-d"
            for reg in args.regs:
                for engine in engines:
                    fails = 0
                    limit = args.skip_after
                    for k in args.ks:
                        if fails >= limit:
                            row = Row(data, n, reg, engine.partition(":")[0],
                                      engine.partition(":")[2]
                                      or ("bnb" if engine == "cip-bnb" else "enumeration"), k,
                                      "skipped", math.nan, math.nan, math.nan, math.nan,
                                      note=f"{fails} smaller k not certified", spec=engine)
                        else:
                            row = run_one(engine, ds, data, k, reg, ths, args.time_limit)
                            fails = 0 if row.certified else fails + 1
                        rows.append(row)
                        print(row.markdown() + (f" <!-- {row.note} -->" if row.note
                                                and row.status == "error" else ""),
                              flush=True)
                        if sink is not None:
                            sink.write(json.dumps(asdict(row)) + "\n")
                            sink.flush()
    finally:
        if sink is not None:
            sink.close()
    return rows


def report(rows: Sequence[Row]) -> int:
    """Print the summary and the agreement check; return the exit status."""
    print("\n" + summary([r for r in rows]), flush=True)
    problems = check_agreement(rows)
    both, any_ = agreement_counts(rows)
    print(f"\nagreement: {both} of {any_} certified instances were certified by at least two "
          f"methods; all certified optima agree within {AGREE_RTOL:g} (relative) and no "
          "bound crosses them." if not problems else "")
    for p in problems:
        print(f"*** DISAGREEMENT {p}", flush=True)
    return 1 if problems else 0


def load_rows(paths: Sequence[str]) -> list[Row]:
    rows = []
    for path in paths:
        with open(path) as fh:
            rows.extend(Row(**json.loads(line)) for line in fh if line.strip())
    return rows


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1-d n=30 and 2-d, k ≤ 3, λ = 100, 10 s limit")
    p.add_argument("--dims", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--n", type=int, nargs="+", default=None,
                   help="only these sample sizes (default all of the case list)")
    p.add_argument("--ks", type=int, nargs="+", default=list(range(1, 11)))
    p.add_argument("--regs", type=float, nargs="+", default=[10.0, 100.0])
    p.add_argument("--engines", nargs="+", default=None,
                   help="subset of: " + " ".join(engine_names(True)))
    p.add_argument("--skip-after", type=int, default=1,
                   help="skip larger k after this many consecutive uncertified k")
    p.add_argument("--jsonl", default=None, help="append every row as JSON to this file")
    p.add_argument("--summarize", nargs="+", default=None, metavar="JSONL",
                   help="only print summary and agreement check of earlier --jsonl files")
    args = p.parse_args(argv)
    if args.quick:
        args.time_limit = min(args.time_limit, 10.0)
        args.dims = [d for d in args.dims if d <= 2]
        args.n = [30, 100]
        args.ks = [k for k in args.ks if k <= 3]
        args.regs = [100.0]
    unknown = set(args.engines or ()) - set(engine_names(True))
    if unknown:
        p.error(f"unknown or unavailable engines {sorted(unknown)}; available: "
                f"{engine_names(True)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.summarize:
        rows = load_rows(args.summarize)
        print(HEADER)
        for r in rows:
            print(r.markdown())
    else:
        rows = run(args)
    return report(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
