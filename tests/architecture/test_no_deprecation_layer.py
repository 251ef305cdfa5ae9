"""Version 0.3 removed the deprecation layer in one sweep (CHANGELOG.md): no module of
rulemip warns of a deprecated name, keeps one, or mentions one — except the package's one
pointer to the CHANGELOG — and no module address of 0.1 imports any more."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import rulemip

PACKAGE = Path(rulemip.__file__).resolve().parent
WORDS = re.compile(r"deprecat|FutureWarning|DeprecationWarning", re.IGNORECASE)
#: files allowed to match, with why (delete an entry when its file no longer matches)
ALLOWED = {
    "__init__.py": "the pointer to CHANGELOG.md",
    # register_method and MethodSpec.accepted: removed by h40-core's registry redesign
    # (issue 40, item 3); delete this entry with them
    "algorithms/solve/registry.py": "register_method (h40-core)",
}


def test_no_module_mentions_a_deprecation() -> None:
    hits = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        lines = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if WORDS.search(line)]
        if lines:
            hits[rel] = lines
    stray = {rel: lines for rel, lines in hits.items() if rel not in ALLOWED}
    assert not stray, f"deprecation left in: {stray}"
    assert len(hits.get("__init__.py", [])) <= 1


@pytest.mark.parametrize("former", ["rulemip.algorithms.driver", "rulemip.boosting.box_kernel",
                                    "rulemip.algorithms.box_bnb", "rulemip.formulations.engines"])
def test_former_module_addresses_no_longer_import(former: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(former)


def test_no_module_reads_signatures() -> None:
    """Engines are called with what their protocol says, never with keywords filtered by
    ``inspect.signature``: no module imports ``inspect`` — but the registry of the
    deprecated ``register_method``, until h40-core's redesign removes it (then delete
    it here)."""
    users = sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
                   if re.search(r"^\s*(import inspect|from inspect import)", path.read_text(
                       encoding="utf-8"), re.MULTILINE))
    assert set(users) <= {"algorithms/solve/registry.py"}, users
