"""Writing result files: atomically, with the permissions the user's umask asks for.

Every file rulemip writes (certificates, JSON results, sweep task files) goes through
:func:`write_text_atomic`: the text lands in a temporary file next to the target and is
renamed over it, so a crash never leaves a half-written file, and the file gets mode
``0o666 & ~umask`` like any file created with :func:`open` (a bare temporary file would
be ``0600``). :func:`check_output_path` lets a command refuse an unusable output path
*before* it spends minutes computing what it would write there.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from rulemip.exceptions import InvalidParameterError

_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask (read by setting and restoring it; serialized by a lock)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def check_output_path(path: str | os.PathLike[str], option: str) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` if a file can be written there.

    Missing folders are fine (they are created on writing); a path that is an existing
    folder, a path below an existing *file*, or a folder without write permission raises
    :class:`~rulemip.exceptions.InvalidParameterError` naming ``option``.
    """
    target = Path(path)
    if target.is_dir():
        raise InvalidParameterError(
            f"`{option}` {str(path)!r} is a folder; give a file name inside it.")
    parent = target.parent
    while not parent.exists():
        if parent == parent.parent:
            break
        parent = parent.parent
    if not parent.is_dir():
        raise InvalidParameterError(
            f"`{option}` {str(path)!r} lies below {str(parent)!r}, which is a file, not a "
            "folder; choose another path.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidParameterError(
            f"`{option}` {str(path)!r}: no permission to write in {str(parent)!r}; choose "
            "another path.")
    return target


def check_output_dir(path: str | os.PathLike[str], option: str) -> Path:
    """Like :func:`check_output_path` for a folder that will hold several files."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise InvalidParameterError(
            f"`{option}` {str(path)!r} is a file; give a folder (it is created if missing).")
    if target.is_dir():
        if not os.access(target, os.W_OK | os.X_OK):
            raise InvalidParameterError(
                f"`{option}` {str(path)!r}: no permission to write there; choose another "
                "folder.")
        return target
    check_output_path(target, option)
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename (see module)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                   dir=target.parent)
    except (FileExistsError, NotADirectoryError) as exc:
        raise InvalidParameterError(
            f"cannot write {str(path)!r}: a part of the folder path is a file ({exc.strerror})"
            "; choose another path.") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_json_atomic(path: str | os.PathLike[str], payload: Any) -> Path:
    """Write ``payload`` as indented JSON (one trailing newline) with
    :func:`write_text_atomic`."""
    return write_text_atomic(path, json.dumps(payload, indent=2) + "\n")
