"""Unit tests by room: ``tests/unit/<folder>/`` holds the tests of the modules of
``rulemip/<folder>/`` (``toplevel/``: the modules directly in ``rulemip/``, such as
``budget.py`` and ``losses.py``; ``benchmarks/``: the helpers of ``benchmarks/``). Each
folder is a package, so two rooms may hold test files of the same name. Tests of the
package's structure (import cycles, who calls the status rule, one clock) are in
``tests/architecture/``."""
