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
#: the one file allowed to match: the package's pointer to CHANGELOG.md
POINTER = "__init__.py"


def test_no_module_mentions_a_deprecation() -> None:
    hits = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        lines = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if WORDS.search(line)]
        if lines:
            hits[rel] = lines
    pointer = hits.pop(POINTER, [])
    assert not hits, f"deprecation left in: {hits}"
    lines = (PACKAGE / POINTER).read_text(encoding="utf-8").splitlines()
    assert len(pointer) == 1, pointer     # the sentence (and the next line) names the file
    assert "CHANGELOG.md" in " ".join(lines[pointer[0] - 1:pointer[0] + 1])


@pytest.mark.parametrize("former", ["rulemip.algorithms.driver", "rulemip.boosting.box_kernel",
                                    "rulemip.algorithms.box_bnb", "rulemip.formulations.engines"])
def test_former_module_addresses_no_longer_import(former: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(former)


def test_no_module_reads_signatures() -> None:
    """Engines are called with what their protocol says, never with keywords filtered by
    ``inspect.signature``: no module imports ``inspect`` (the registry maps a name to
    ``factory(problem)``)."""
    users = sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
                   if re.search(r"^\s*(import inspect|from inspect import)", path.read_text(
                       encoding="utf-8"), re.MULTILINE))
    assert not users, users
