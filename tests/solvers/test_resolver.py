"""One backend resolver: declared capabilities, refusals up front, plugins by registry or
entry point."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from rulemip.algorithms.krule.box_selection import solve_box_selection
from rulemip.exceptions import InvalidParameterError, UnsupportedCapabilityError
from rulemip.rules.language import Language
from rulemip.solvers import base
from rulemip.solvers.base import (
    PERSISTENT_MASTER_NEEDS,
    Capability,
    available_backends,
    backend_names,
    get_backend,
    register,
    resolve_backend,
    unsupported,
)

C = Capability
NONLINEAR = {C.LP, C.INTEGER, C.NONLINEAR_LOSS}


class FakeBackend:
    """An LP-only backend a third party might ship."""

    name = "fake"
    capabilities = frozenset({C.LP})
    unsupported_combinations: tuple[frozenset[Capability], ...] = ()
    install_hint = "pip install fake"

    def available(self) -> bool:
        return True

    def version(self) -> str:
        return "0"

    def solve(self, model: Any, options: Any = None, start: Any = None) -> Any:
        raise NotImplementedError

    def persistent(self, model: Any) -> Any:
        raise NotImplementedError


@pytest.fixture
def clean_registry() -> Iterator[None]:
    modules, instances = dict(base._BACKEND_MODULES), dict(base._INSTANCES)
    loaded = base._ENTRY_POINTS_LOADED
    yield
    base._BACKEND_MODULES.clear()
    base._BACKEND_MODULES.update(modules)
    base._INSTANCES.clear()
    base._INSTANCES.update(instances)
    base._ENTRY_POINTS_LOADED = loaded


def test_register_a_backend_class(clean_registry: None) -> None:
    register("fake", FakeBackend)
    assert "fake" in backend_names() and "fake" in available_backends()
    backend, native = resolve_backend("fake", {C.LP})
    assert isinstance(backend, FakeBackend) and native
    with pytest.raises(UnsupportedCapabilityError, match="integer columns"):
        resolve_backend("fake", {C.LP, C.INTEGER})
    with pytest.raises(InvalidParameterError, match="already registered"):
        register("fake", FakeBackend)
    with pytest.raises(InvalidParameterError, match="ClassName"):
        register("other", "no_colon_here")


def test_entry_point_plugins_are_registered(clean_registry: None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    class EP:
        name, value = "fakeplugin", f"{__name__}:FakeBackend"

    import importlib.metadata

    def entry_points(group: str) -> list[EP]:
        return [EP()] if group == base.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    base._ENTRY_POINTS_LOADED = False
    assert "fakeplugin" in backend_names()
    assert isinstance(get_backend("fakeplugin"), FakeBackend)


def test_declared_refusals() -> None:
    assert unsupported(FakeBackend(), {C.LP}) is None
    assert "MIQP" in (unsupported(get_backend("highs"),
                                  {C.INTEGER, C.QUADRATIC_OBJECTIVE}) or "")


def test_nonlinear_models_go_native_or_to_a_master() -> None:
    backend, native = resolve_backend("highs", NONLINEAR)
    assert backend.name == "highs" and not native
    auto, auto_native = resolve_backend("auto", NONLINEAR)
    if "scip" in available_backends():
        assert auto.name == "scip" and auto_native
    else:
        assert not auto_native
    if "cpsat" in available_backends():  # integer-only: cannot even be the master
        with pytest.raises(UnsupportedCapabilityError, match="master"):
            resolve_backend("cpsat", NONLINEAR)


@pytest.mark.parametrize("solver", ["cbc", "cpsat"])
def test_cip_refuses_a_master_without_persistent_models_before_any_work(
        solver: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if solver not in available_backends():
        pytest.skip(f"{solver} not installed")
    from rulemip.data import Dataset
    from rulemip.formulations.box_selection import BoxSelectionCIP

    def no_build(self: Any, dataset: Any) -> Any:
        raise AssertionError("the model was built before the solver was refused")

    monkeypatch.setattr(BoxSelectionCIP, "build", no_build)
    ds = Dataset.from_arrays(np.arange(8.0).reshape(-1, 1), np.arange(8.0))
    with pytest.raises(UnsupportedCapabilityError, match="persistent"):
        solve_box_selection(BoxSelectionCIP(Language(2), reg=0.1), ds, solver=solver)
    assert unsupported(get_backend(solver), PERSISTENT_MASTER_NEEDS) is not None
