"""Former module addresses (rulemip/_moved.py): each still imports, warns once with the new
address, and reads its names from the module that now holds them."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest

from rulemip import _moved


@pytest.mark.parametrize("former", sorted(_moved.MOVED))
def test_a_former_address_imports_warns_and_reads_the_current_module(former: str) -> None:
    current = importlib.import_module("rulemip." + _moved.MOVED[former])
    sys.modules.pop("rulemip." + former, None)
    with pytest.warns(FutureWarning, match=_moved.MOVED[former].replace(".", r"\.")):
        module = importlib.import_module("rulemip." + former)
    assert module is not current
    public = list(getattr(current, "__all__", [])) or [
        n for n in vars(current) if not n.startswith("__")]
    assert public, former
    for name in public:
        assert getattr(module, name) is getattr(current, name)
    assert set(public) <= set(dir(module))
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


def test_names_that_left_a_moved_module_are_found_where_they_live() -> None:
    sys.modules.pop("rulemip.algorithms.driver", None)
    with pytest.warns(FutureWarning):
        from rulemip.algorithms.driver import decide_fit, solve, solve_exact
    from rulemip.algorithms.fit_decision import decide_fit as current_decide_fit
    from rulemip.algorithms.fit_plan import solve_exact as current_solve_exact
    from rulemip.algorithms.solve.driver import solve as current_solve

    assert solve_exact is current_solve_exact
    assert decide_fit is current_decide_fit
    assert solve is current_solve


def test_the_package_imports_no_former_address() -> None:
    # every module of the package, imported in a fresh interpreter: no former address is
    # loaded on the way (a FutureWarning would be an error there)
    code = ("import importlib, pkgutil, sys, rulemip\n"
            "from rulemip import _moved\n"
            "for info in pkgutil.walk_packages(rulemip.__path__, 'rulemip.'):\n"
            "    if not info.name.endswith('__main__'): importlib.import_module(info.name)\n"
            "print(sorted(n for n, m in sys.modules.items()\n"
            "             if isinstance(m, _moved._FormerModule)))\n")
    out = subprocess.run([sys.executable, "-W", "error::FutureWarning", "-c", code],
                         capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip() == "[]", out.stdout


def test_the_moved_table_names_existing_modules_only() -> None:
    for current in _moved.MOVED.values():
        spec = importlib.util.find_spec("rulemip." + current)
        assert spec is not None and spec.origin and spec.origin.endswith(".py"), current
        assert not isinstance(spec.loader, _moved._FormerLoader)
