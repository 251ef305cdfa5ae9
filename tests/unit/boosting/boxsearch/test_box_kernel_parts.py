"""The pieces of the box-search kernel split by role (issue 31/32): the masks built by numpy,
the root evaluated by ``run``, and the cache guard that recompiles
the whole kernel when any of its modules changes."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip import _numba_cache
from rulemip.boosting.boxsearch import bounds as box_bounds
from rulemip.boosting.boxsearch import kernel as box_kernel
from rulemip.boosting.boxsearch import words as box_words
from rulemip.boosting.boxsearch.pool import NodePool
from rulemip.boosting.boxsearch.range_search import kernel_problem
from rulemip.boosting.objectives import make_objective
from rulemip.boosting.space import SearchSpace


@pytest.mark.parametrize("seed", range(5))
def test_build_masks_hold_the_rows_of_every_prefix(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 200)), int(rng.integers(1, 5))
    m = rng.integers(0, 7, d)
    G = np.column_stack([rng.integers(0, m[j] + 1, n) for j in range(d)]).astype(np.int32)
    LE, off, valid = box_words.build_masks(G, m)
    assert LE.dtype == np.uint64 and off.dtype == np.int64 and valid.dtype == np.uint64
    assert LE.flags.c_contiguous
    rows = range(n)

    def bits(words):
        return np.array([(int(words[i >> 6]) >> (i & 63)) & 1 for i in rows], bool)

    np.testing.assert_array_equal(bits(valid), np.ones(n, bool))
    for j in range(d):
        for b in range(m[j] + 1):
            np.testing.assert_array_equal(bits(LE[off[j] + b]), G[:, j] <= b)
    assert off[-1] == LE.shape[0] == int((m + 1).sum())


def test_the_root_is_evaluated_by_run():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    space = SearchSpace.build(X, 4)
    prob = kernel_problem(make_objective("gb", rng.normal(size=40)))
    m = np.array([len(t) for t in space.thresholds], np.int64)
    G = np.ascontiguousarray(space.groups_t.T[prob.perm], dtype=np.int32)
    LE, off, valid = box_words.build_masks(G, m)
    pool = NodePool(64, space.d, 8)
    ctr = np.zeros(6, np.int64)
    fstate = np.array([-np.inf, -np.inf])
    best_box = np.full((2, space.d), -1, np.int32)
    iparams = np.array([prob.mode, 0, -1, 0, 8, -1], np.int64)
    box_kernel.init_root(pool.pool, pool.bound, pool.splits, pool.heap, pool.free, ctr, fstate,
                         best_box, LE, off, m, valid, prob.S, prob.params, iparams)
    assert ctr[box_kernel.C_EVALS] == 1 and ctr[box_kernel.C_EXPANDED] == 0
    assert pool.splits[0, 0] != box_kernel.UNEVALUATED
    assert np.isfinite(pool.bound[0]) and pool.bound[0] >= 0.0
    assert ctr[box_kernel.C_HEAP] + ctr[box_kernel.C_FREE] == 64


def test_every_module_of_the_kernel_is_stamped_with_all_of_them():
    files = _numba_cache._GROUPS[box_kernel.__file__]
    assert len(files) == len(box_words.FILES) == 4
    for mod in (box_words, box_bounds, box_kernel):
        assert _numba_cache._GROUPS[mod.__file__] == files


def test_a_change_to_a_sibling_module_changes_the_stamp(tmp_path):
    a, b = tmp_path / "kern_a.py", tmp_path / "kern_b.py"
    a.write_text("def f():\n    return 1\n")
    b.write_text("X = 1\n")
    assert _numba_cache.guard_kernel_cache(str(a), "kern_b.py")
    from numba.core import caching

    locator = caching.CacheImpl._locator_classes[0]
    namespace: dict[str, object] = {}
    exec(compile(a.read_text(), str(a), "exec"), namespace)
    loc = locator.from_function(namespace["f"], str(a))
    assert loc is not None
    before = loc.get_source_stamp()
    b.write_text("X = 2\n")
    assert loc.get_source_stamp() != before


@pytest.mark.parametrize("seed", range(8))
def test_the_kernels_argsort_sorts(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    a = rng.integers(-6, 6, n).astype(float) if seed % 2 else rng.normal(size=n)
    a[rng.random(n) < 0.1] = -np.inf
    order = box_bounds._argsort(a)
    assert sorted(order.tolist()) == list(range(n))
    np.testing.assert_array_equal(a[order], np.sort(a))
