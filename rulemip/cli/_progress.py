"""Live progress on stderr for the command line: phase, elapsed time, the solver's latest
incumbent/bound/gap line, and a bar for sweeps.

Shown only when stderr is a terminal or ``--progress`` is given; ``--quiet`` wins. On a
terminal one line is redrawn in place (a background thread keeps the elapsed time
current while a phase is silent, e.g. the boosting warm start); otherwise each update is
a plain line, so logs stay readable. The library itself prints nothing unless its
estimators get ``verbose=True``: the command line turns that on and routes those lines
here (:meth:`Progress.capture`).
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO


def progress_wanted(flag: bool, quiet: bool = False, stream: TextIO | None = None) -> bool:
    """``--progress`` given, or stderr is a terminal; never with ``--quiet``."""
    if quiet:
        return False
    if flag:
        return True
    s = stream if stream is not None else sys.stderr
    try:
        return bool(s.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """One status line (see module). All methods are no-ops when not ``enabled``."""

    def __init__(self, enabled: bool, stream: TextIO | None = None,
                 live: bool | None = None) -> None:
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        if live is None:
            try:
                live = bool(self.stream.isatty())
            except (AttributeError, ValueError):
                live = False
        self.live = live
        self._start = time.monotonic()
        self._phase = ""
        self._detail = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ drawing
    def _line(self) -> str:
        parts = [f"[{time.monotonic() - self._start:7.1f}s]", self._phase]
        if self._detail:
            parts.append("| " + self._detail)
        return " ".join(p for p in parts if p)

    def _draw(self, newline: bool = False) -> None:
        with self._lock:
            text = self._line()
            if self.live:
                self.stream.write("\r" + text[:200] + "\x1b[K" + ("\n" if newline else ""))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()

    def phase(self, label: str) -> None:
        """Start a new phase (its label stays until the next phase)."""
        if not self.enabled:
            return
        if self.live and self._phase:
            self._draw(newline=True)  # keep the finished phase's last state on screen
        self._phase, self._detail = label, ""
        self._draw()

    def detail(self, text: str) -> None:
        """Replace the detail part (e.g. the solver's incumbent/bound/gap)."""
        if not self.enabled:
            return
        self._detail = text.strip()
        self._draw()

    def bar(self, done: int, total: int, width: int = 24) -> None:
        """A bar with counts and an estimate of the time left."""
        if not self.enabled or total <= 0:
            return
        filled = round(width * done / total)
        elapsed = time.monotonic() - self._start
        eta = f", about {elapsed / done * (total - done):.0f} s left" if 0 < done < total else ""
        self.detail(f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}{eta}")

    # ------------------------------------------------------------------ lifetime
    def __enter__(self) -> Progress:
        if self.enabled and self.live:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self._draw()

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        if self.enabled and self.live:
            self._draw(newline=True)

    @contextlib.contextmanager
    def capture(self, next_phase: str | None = None) -> Iterator[None]:
        """Route lines written to ``sys.stderr`` (the estimators' ``verbose`` output) into
        the detail part; the first such line starts phase ``next_phase`` (the solver
        reports only once the warm start is over)."""
        if not self.enabled:
            yield
            return
        sink = _LineSink(self, next_phase)
        with contextlib.redirect_stderr(sink):
            yield
        sink.flush_rest()


class _LineSink(io.TextIOBase):
    """A text stream that hands every complete line to :meth:`Progress.detail`."""

    def __init__(self, progress: Progress, next_phase: str | None) -> None:
        self.progress = progress
        self.next_phase = next_phase
        self._buf = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._buf += text
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            if line.strip():
                if self.next_phase:
                    self.progress.phase(self.next_phase)
                    self.next_phase = None
                self.progress.detail(line)
        return len(text)

    def flush_rest(self) -> None:
        if self._buf.strip():
            self.progress.detail(self._buf)
        self._buf = ""
