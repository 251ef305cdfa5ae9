"""The ``rulemip`` command line: one sub-command per module of this package.

Each sub-command module defines ``register(subparsers)``, which adds its parser and sets
``func`` (``args -> exit code``). ``main`` only dispatches, so adding a command touches no
other command.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from rulemip import __version__
from rulemip.exceptions import RulemipError

# sub-command name -> module; listed in the order ``--help`` shows them
COMMANDS: dict[str, str] = {
    "fit": "rulemip.cli.fit",
    "boost": "rulemip.cli.boost",
    "verify": "rulemip.cli.verify",
    "gap": "rulemip.cli.gap",
    "prune": "rulemip.cli.prune",
    "compile": "rulemip.cli.compile",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rulemip",
        description="Exact sparse rule models: certified-optimal rule ensembles, boosting "
                    "gaps, rule extraction from tree ensembles.")
    parser.add_argument("--version", action="version", version=f"rulemip {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMANDS.values():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # command not built yet in this checkout
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except RulemipError as exc:
        print(f"rulemip {args.command}: error: {_as_options(_one_line(exc), args)}",
              file=sys.stderr)
        return 2
    except OSError as exc:  # a file that cannot be read or written, a full disk, ...
        print(f"rulemip {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"rulemip {args.command}: interrupted", file=sys.stderr)
        return 130


def _as_options(message: str, args: argparse.Namespace) -> str:
    """Name the command-line option where the library names its parameter: `n_rules`
    becomes `--n-rules` when the command has that option."""
    import re

    def swap(m: re.Match[str]) -> str:
        name = m.group(1)
        if name != "command" and name != "func" and hasattr(args, name):
            return "`--" + name.replace("_", "-") + "`"
        return m.group(0)

    return re.sub(r"`([a-z][a-z0-9_]*)`", swap, message)


def _one_line(exc: BaseException) -> str:
    """The message on one line (a command's error is one line of stderr)."""
    return " ".join(str(exc).split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
