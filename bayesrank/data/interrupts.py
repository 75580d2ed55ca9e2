"""SIGTERM handled like Ctrl-C, so that a stopped command cleans up after itself.

Python turns SIGINT (Ctrl-C) into :class:`KeyboardInterrupt`, which unwinds the stack:
:func:`bayesrank.data.io.atomic_write` removes its temporary file and the command
line prints one line.  SIGTERM (``kill``, a job scheduler pre-empting a job, a
container stopping) instead ends the process at once, which would leave a writer's
temporary file behind.  :func:`sigterm_as_interrupt` raises :class:`Terminated` (a
KeyboardInterrupt) in its place; the command line holds it for the whole command, and
:func:`atomic_write` holds it while it writes, then, once the temporary file is gone,
ends the process by SIGTERM as it would have ended (a library must not change what a
signal does to its caller's process for longer than that).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

__all__ = ["Terminated", "end_by_sigterm", "last_signal", "sigterm_as_interrupt"]


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (raised as an interrupt, so ``finally`` blocks and cleanups run)."""


_received: list[int] = []


def last_signal() -> int | None:
    """The last signal turned into an interrupt here (SIGTERM), None if none was."""
    return _received[-1] if _received else None


def _raise_terminated(signum: int, frame: object) -> None:
    _received.append(signum)
    raise Terminated("terminated by SIGTERM")


@contextlib.contextmanager
def sigterm_as_interrupt(*, only_default: bool = False) -> Iterator[bool]:
    """Within the block SIGTERM raises :class:`Terminated`; yields whether it does.

    Only the main thread can set signal handlers: elsewhere (and, with
    ``only_default``, when the process already handles SIGTERM its own way) nothing
    changes and the block yields False.
    """
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous = signal.getsignal(signal.SIGTERM)
    if only_default and previous is not signal.SIG_DFL:
        yield False
        return
    _received.clear()
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield True
    finally:
        signal.signal(signal.SIGTERM, previous)


def end_by_sigterm() -> None:
    """End this process by SIGTERM with the default action (after cleaning up)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
