"""Atomic writes: a file appears whole or not at all.

:func:`atomic_write` writes to a temporary file in the target folder and renames
it into place, so a failed or interrupted write never leaves a half-written file
(re-exported by :mod:`bayesrank.data.io`, where every writer uses it).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from bayesrank.data.interrupts import Terminated, end_by_sigterm, sigterm_as_interrupt

__all__ = ["atomic_write"]


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp_path)`` and rename the result onto ``path`` only on success.

    The file gets the permissions a plain ``open(path, "w")`` would give it
    (those of the file it replaces, else 0o666 less the umask), not
    ``mkstemp``'s owner-only 0o600.  Ctrl-C or SIGTERM while writing removes the
    temporary file (:mod:`bayesrank.data.interrupts`).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix,
                                    dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    with sigterm_as_interrupt(only_default=True) as ours:  # SIGTERM, too, removes tmp
        try:
            writer(tmp)
            os.chmod(tmp, _mode_for(target))
            os.replace(tmp, target)
        except BaseException as exc:
            tmp.unlink(missing_ok=True)
            if ours and isinstance(exc, Terminated):
                end_by_sigterm()  # as SIGTERM would have ended the process, less the file
            raise
    return target
