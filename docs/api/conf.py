"""Sphinx configuration of the API reference (issue 32, item 6).

Build: ``sphinx-build -W -b html docs/api OUT`` (warnings are errors; the slow test
``tests/docs/test_api_reference.py`` runs it). The pages document the modules' numpydoc
docstrings with ``sphinx.ext.autodoc`` and ``sphinx.ext.napoleon``; nothing is generated
into the source folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import rulemip

project = "rulemip"
author = "the rulemip authors"
release = rulemip.__version__
version = release

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": False}
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []


def _skip_member(app, what, name, obj, skip, options):
    # scikit-learn adds ``set_*_request`` methods (metadata routing) to every estimator;
    # their docstrings point into scikit-learn's own documentation
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
