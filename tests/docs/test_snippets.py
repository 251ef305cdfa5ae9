"""Every code block of the README, the tutorial and the how-tos runs (issue 32, item 6).

A page's fenced ``python`` blocks run in order in one namespace, in a temporary working
directory; its ``bash`` blocks run there too, line by line: ``rulemip ...`` through the
command-line entry point (in this process, exit code 0 required), ``python -c CODE`` as
Python, ``pip ...`` not at all (the test environment is the installation). Any other
line fails the test: a block that cannot run carries a marker on the line before its
fence.

Markers (an HTML comment, invisible on the rendered page):

* ``<!-- snippet: skip (reason) -->`` — illustrative, not run (a placeholder class, ...);
* ``<!-- snippet: excerpt PATH -->`` — an excerpt of a file of the repository: not run,
  but every non-blank line of it must occur in PATH in the same order (indentation
  aside), so the excerpt cannot drift from the code it quotes;
* ``<!-- snippet: requires MODULE -->`` — runs when MODULE is installed, else the page's
  remaining blocks are skipped;
* ``<!-- snippet: output rulemip ARGS -->`` — before a block of printed output: the
  command runs and every non-blank line of the block must occur in what it prints, in
  order (wall times such as ``1.53 s`` match any time).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "tutorial.md",
         *sorted((ROOT / "docs" / "howto").glob("*.md"))]

FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*snippet:\s*(skip|excerpt|requires|output)\b\s*(.*?)\s*-->\s*$")
WALL_TIME = re.compile(r"\b\d+(?:\.\d+)? s\b")
#: what a first run (kernels compiled before the fit) adds to the status line
FIRST_RUN = re.compile(r" \(\+ <t> s compiling kernels before it, first run only\)")


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int               # 1-based line of the opening fence
    marker: str | None      # "skip", "excerpt", "requires", "output" or None
    argument: str           # the marker's reason, path, module or command


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a markdown page, with the marker on the line before each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        marker = MARKER.match(lines[start - 1].strip()) if start > 0 else None
        out.append(Block(lang=m.group(1), code="\n".join(lines[start + 1:j]) + "\n",
                         line=start + 1, marker=marker.group(1) if marker else None,
                         argument=marker.group(2) if marker else ""))
        i = j + 1
    return out


def test_every_page_has_blocks_and_markers_are_known():
    """The extractor sees the pages' blocks, and every ``snippet:`` comment is well formed
    and stands right before a fence (a misspelt marker would silently run the block)."""
    for page in PAGES:
        assert blocks(page), page
        lines = page.read_text(encoding="utf-8").splitlines()
        for k, line in enumerate(lines):
            if "snippet:" in line and line.lstrip().startswith("<!--"):
                assert MARKER.match(line.strip()), f"{page.name}:{k + 1}: unknown marker"
                assert k + 1 < len(lines) and FENCE.match(lines[k + 1]), \
                    f"{page.name}:{k + 1}: a snippet marker must precede a fence"


def _check_excerpt(block: Block, where: str) -> None:
    target = ROOT / block.argument
    assert target.is_file(), f"{where}: excerpt of a missing file {block.argument}"
    source = [ln.strip() for ln in target.read_text(encoding="utf-8").splitlines()]
    pos = 0
    for ln in block.code.splitlines():
        if not ln.strip():
            continue
        try:
            pos = source.index(ln.strip(), pos) + 1
        except ValueError:
            pytest.fail(f"{where}: excerpt line not found (in order) in {block.argument}: "
                        f"{ln.strip()!r}")


def _run_cli(raw: str, words: list[str], where: str, ran: dict[str, str]) -> str:
    """``rulemip ARGS`` through the entry point in this process; what it printed (kept in
    ``ran``, so that an output block after the same command on the page does not rerun
    it)."""
    from rulemip.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(words[1:])
    assert code == 0, f"{where}: {raw!r} exited {code}:\n{err.getvalue()}"
    ran[shlex.join(words)] = out.getvalue()
    return out.getvalue()


def _check_output(block: Block, where: str, ran: dict[str, str]) -> None:
    words = shlex.split(block.argument)
    assert words[:1] == ["rulemip"], f"{where}: an output marker names a rulemip command"
    text = ran.get(shlex.join(words))
    if text is None:
        text = _run_cli(block.argument, words, where, ran)
    # a first run (empty numba cache, as in CI) adds the compile time to the status line
    printed = [FIRST_RUN.sub("", WALL_TIME.sub("<t> s", ln.rstrip()))
               for ln in text.splitlines()]
    pos = 0
    for ln in block.code.splitlines():
        if not ln.strip():
            continue
        want = WALL_TIME.sub("<t> s", ln.rstrip())
        try:
            pos = printed.index(want, pos) + 1
        except ValueError:
            pytest.fail(f"{where}: {block.argument!r} no longer prints {ln.strip()!r} "
                        "(in this order); it printed:\n" + "\n".join(printed))


def _run_bash(block: Block, where: str, ran: dict[str, str]) -> None:
    for raw in block.code.splitlines():
        words = shlex.split(raw, comments=True)
        if not words:
            continue
        if any(w in {"&&", "||", "|", ";", ">", "<"} for w in words):
            pytest.fail(f"{where}: {raw!r} is not a simple command; split it or mark the "
                        "block <!-- snippet: skip (reason) -->")
        if words[0] == "pip":
            continue  # the test environment is the installation
        if words[0] == "rulemip":
            _run_cli(raw, words, where, ran)
        elif words[:2] == ["python", "-c"] and len(words) == 3:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(words[2], where, "exec"), {"__name__": "__main__"})
        else:
            pytest.fail(f"{where}: cannot run {raw!r}; mark the block "
                        "<!-- snippet: skip (reason) -->")


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_page_snippets_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # the file a how-to writes is importable, as it would be in the reader's directory
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__main__"}
    ran: dict[str, str] = {}  # command -> what it printed
    rel = page.relative_to(ROOT).as_posix()
    for block in blocks(page):
        where = f"{rel}:{block.line}"
        if block.marker == "skip":
            continue
        if block.marker == "excerpt":
            _check_excerpt(block, where)
            continue
        if block.marker == "output":
            _check_output(block, where, ran)
            continue
        if block.marker == "requires" and importlib.util.find_spec(block.argument) is None:
            pytest.skip(f"{where}: needs {block.argument}")
        if block.lang == "python":
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                # a documented time limit may stop a solve: that warns, it does not fail;
                # but a page must not call a deprecated name (a FutureWarning raised at the
                # snippet's own line)
                warnings.simplefilter("ignore")
                warnings.filterwarnings("error", category=FutureWarning, module="__main__")
                # padded so that a traceback names the page's own line numbers
                exec(compile("\n" * block.line + block.code, str(page), "exec"), namespace)
        elif block.lang == "bash":
            _run_bash(block, where, ran)
