"""Cross-solver agreement of the exact k-rule engines on instances drawn like
``benchmarks/exact.py`` (diabetes subsamples, here tiny: n ≤ 12, 1–2 features, k ≤ 3).

Already covered elsewhere and not repeated here: each MIP backend against brute force on
random integer data (``test_interval_cover.py``), the CIP (OA and enumeration) against
brute force (``test_box_selection_exact.py``), CIP vs MIP-on-HiGHS for squared and
logistic loss. Added here: the same comparisons on benchmark-like data, for all three
losses, *directly between solvers* — HiGHS (tangent-cut OA) vs SCIP (native) on the
interval-cover MIP, and the box-selection CIP (OA with HiGHS masters, and enumeration) vs
the interval-cover MIP on each backend (also CBC and Pyomo when they are registered) — and
that no engine's lower bound crosses another engine's certified optimum.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from rulemip.algorithms.krule.box_selection import solve_box_selection
from rulemip.algorithms.solve.driver import solve
from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.formulations.interval_cover import IntervalCoverMIP
from rulemip.formulations.result import ExactResult
from rulemip.rules.language import Language

pytestmark = pytest.mark.solver

RTOL = 1e-5
# (loss, d, k, reg): 1-d with 4 threshold groups, 2-d with 3 per feature; a ridge small
# against the box weights for squared loss (y ~ 150 ± 77), moderate for the GLM losses
CASES = [("squared", 1, 3, 10.0), ("squared", 2, 2, 10.0),
         ("logistic", 1, 2, 0.5), ("logistic", 2, 2, 0.5),
         ("poisson", 1, 2, 0.5), ("poisson", 2, 2, 0.5)]
N = {1: 12, 2: 10}
MAX_THRESHOLDS = {1: 3, 2: 2}
IDS = [f"{loss}-{d}d-k{k}" for loss, d, k, _ in CASES]


@cache
def _data(loss: str, d: int, seed: int = 3) -> Dataset:
    """Rows of sklearn's diabetes (bmi, bp), like benchmarks/exact.py; logistic label
    y > median, Poisson counts round(y/25)."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    idx = np.random.default_rng(seed).choice(len(y), N[d], replace=False)
    yy = y[idx]
    if loss == "logistic":
        yy = np.where(yy > np.median(y), 1.0, -1.0)
    elif loss == "poisson":
        yy = np.rint(yy / 25.0)
    return Dataset.from_arrays(X[idx][:, [2, 3][:d]], yy, loss=loss)


def _thresholds(loss: str, d: int) -> list[np.ndarray]:
    return candidate_thresholds(_data(loss, d).X, MAX_THRESHOLDS[d])


@cache
def _solve(engine: str, loss: str, d: int, k: int, reg: float) -> ExactResult:
    ds, ths = _data(loss, d), _thresholds(loss, d)
    if engine.startswith("cip"):
        cip = BoxSelectionCIP(Language(k, ths), loss=loss, reg=reg)
        method = "enumerate" if engine == "cip-enum" else "oa"
        return solve_box_selection(cip, ds, method=method, solver="highs",
                                   budget=Budget.from_time_limit(60),
                                   mip_gap=1e-7)
    mip = IntervalCoverMIP(Language(k, ths), loss=loss, reg=reg)
    return solve(mip, ds, solver=engine.split(":")[1], budget=Budget.from_time_limit(60),
                 mip_gap=1e-7)


def _assert_agree(a: ExactResult, b: ExactResult) -> None:
    assert a.is_optimal and a.bound_valid, a.notes
    assert b.is_optimal and b.bound_valid, b.notes
    scale = max(1.0, abs(a.risk))
    assert abs(a.risk - b.risk) <= RTOL * scale, (a.risk, b.risk)
    # a bound above the other engine's certified optimum would be invalid
    assert a.lower_bound <= b.risk + RTOL * scale
    assert b.lower_bound <= a.risk + RTOL * scale
    # an optimum with rules (on these data every optimum uses at least one rule)
    assert a.ensemble is not None and len(a.ensemble.rules) >= 1


@pytest.mark.parametrize("loss,d,k,reg", CASES, ids=IDS)
def test_mip_highs_tangent_cuts_and_scip_native_agree(loss: str, d: int, k: int,
                                                      reg: float) -> None:
    pytest.importorskip("highspy")
    pytest.importorskip("pyscipopt")
    highs = _solve("mip:highs", loss, d, k, reg)
    scip = _solve("mip:scip", loss, d, k, reg)
    assert "highs" in highs.backend and "scip" in scip.backend
    _assert_agree(highs, scip)


@pytest.mark.parametrize("loss,d,k,reg", CASES, ids=IDS)
@pytest.mark.parametrize("backend", ["highs", "scip"])
def test_box_selection_cip_agrees_with_interval_cover_mip(loss: str, d: int, k: int,
                                                          reg: float, backend: str) -> None:
    pytest.importorskip("highspy")  # the CIP's OA masters
    if backend == "scip":
        pytest.importorskip("pyscipopt")
    mip = _solve(f"mip:{backend}", loss, d, k, reg)
    for engine in ("cip-oa", "cip-enum"):
        cip = _solve(engine, loss, d, k, reg)
        _assert_agree(cip, mip)
        # same optimum, same rules' risk on the data
        assert cip.ensemble is not None
        ds = _data(loss, d)
        assert cip.ensemble.risk(ds.X, ds.y, reg) == pytest.approx(cip.risk, rel=1e-9)


def _skip_unregistered(backend: str) -> None:
    from rulemip.solvers import available_backends

    if backend not in available_backends():
        pytest.skip(f"backend {backend!r} not installed or not registered")


@pytest.mark.parametrize("loss,d,k,reg", [CASES[0], CASES[2], CASES[5]],
                         ids=[IDS[0], IDS[2], IDS[5]])
@pytest.mark.parametrize("backend", ["cbc", "pyomo"])
def test_other_milp_backends_agree_with_the_cip(loss: str, d: int, k: int, reg: float,
                                                backend: str) -> None:
    """Tangent-cut MIP on the further MILP backends (one case per loss)."""
    _skip_unregistered(backend)
    mip = _solve(f"mip:{backend}", loss, d, k, reg)
    assert backend in mip.backend
    _assert_agree(_solve("cip-enum", loss, d, k, reg), mip)


def test_k_rules_improve_on_fewer_rules() -> None:
    """The certified optima decrease with k (a k-rule model may repeat or zero a rule, so
    R*(k+1) ≤ R*(k)), and strictly on this data — catches an engine solving a smaller
    problem than stated."""
    pytest.importorskip("highspy")
    ds, ths = _data("squared", 2), _thresholds("squared", 2)
    risks = [solve_box_selection(BoxSelectionCIP(Language(k, ths), reg=10.0), ds,
                                 method="enumerate").risk for k in (1, 2, 3)]
    assert risks[0] > risks[1] > risks[2]
    mip2 = _solve("mip:highs", "squared", 2, 2, 10.0)
    assert mip2.risk == pytest.approx(risks[1], rel=RTOL)
