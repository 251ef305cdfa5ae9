"""benchmarks/peers_streed.py: the binarization splits on rulemip's candidate thresholds,
a tree's leaves read back as rules reproduce STreeD's predictions, the k-rule optimum is at
most the (k + 1)-leaf tree's risk (against brute force on tiny tables), and without
pystreed the script prints a hint and skips the tree rows."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from rulemip.data.thresholds import candidate_thresholds
from rulemip.testing.brute_force import brute_force_optimum

from ._bench import benchmark_module


@pytest.fixture(scope="module")
def peers():  # type: ignore[no-untyped-def]
    return benchmark_module("peers_streed")


def _table(seed: int, n: int = 14) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = 3.0 * (X[:, 0] > 0) + 2.0 * (X[:, 1] > 0.3) + 0.5 * rng.normal(size=n)
    return X, y


def test_binarize_uses_the_candidate_thresholds(peers) -> None:  # type: ignore[no-untyped-def]
    X, _ = _table(0)
    B, columns = peers.binarize(X, 3)
    ths = candidate_thresholds(X, 3)
    assert columns == [(j, float(t)) for j in range(2) for t in ths[j]]
    for c, (j, t) in enumerate(columns):
        assert np.array_equal(B[:, c], (X[:, j] <= t).astype(np.intc))


def test_leaves_reproduce_the_tree(peers) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pystreed")
    from pystreed import STreeDRegressor

    X, y = _table(1, 40)
    B, columns = peers.binarize(X, 4)
    est = STreeDRegressor(optimization_task="regression", max_depth=2, max_num_nodes=2)
    est.fit(B, y)
    f = np.full(len(y), np.nan)
    for conds, value, rows in peers.tree_leaves(est.get_tree(), columns):
        inside = np.ones(len(y), bool)
        for j, t, le in conds:
            inside &= (X[:, j] <= t) if le else (X[:, j] > t)
        assert int(inside.sum()) == rows and np.all(np.isnan(f[inside]))
        f[inside] = value
    assert np.allclose(f, est.predict(B))


@pytest.mark.parametrize("seed", [2, 3, 4])
@pytest.mark.parametrize("reg", [0.0, 0.5])
def test_k_rule_optimum_at_most_the_tree(peers, seed: int, reg: float
                                         ) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pystreed")
    X, y = _table(seed)
    B, columns = peers.binarize(X, 3)
    names = ["a", "b"]
    for k in (1, 2):
        row = peers.streed_row("tiny", B, y, columns, names, k, k, reg, 10.0)
        assert row["status"] == "optimal (trees)" and row["max_length"] <= 2
        best = brute_force_optimum(X, y, k, reg=reg, thresholds=candidate_thresholds(X, 3),
                                   max_rule_length=2)
        assert best.risk <= row["risk"] + 1e-9 * max(1.0, abs(row["risk"]))
        if reg == 0.0:
            assert row["risk"] == pytest.approx(row["mse"])


def test_without_pystreed_the_tree_rows_are_skipped(peers, monkeypatch, capsys
                                                    ) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "pystreed", None)
    monkeypatch.setattr(sys, "argv", ["peers_streed.py", "--quick", "--no-rulemip"])
    peers.main()
    out = capsys.readouterr().out
    assert "pystreed is not installed" in out and "STreeD tree" not in out
