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

Python drops an exception raised while it runs a finalizer or a weak reference's callback
(``__del__``; Numba's type cache and compiler free their objects that way): it passes
the exception to ``sys.unraisablehook`` and the interrupted code runs on.
:func:`interrupts_not_dropped` installs a hook that sees an interrupt dropped there and
sends the signal again a moment later, until it lands where it can unwind the stack;
:func:`sigterm_as_interrupt` holds it, and :func:`bayesrank.fit` samples inside it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "end_by_sigterm", "interrupts_not_dropped", "last_signal",
           "sigterm_as_interrupt"]


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (raised as an interrupt, so ``finally`` blocks and cleanups run)."""


_received: list[int] = []


def last_signal() -> int | None:
    """The last signal turned into an interrupt here (SIGTERM), None if none was."""
    return _received[-1] if _received else None


_REDELIVER_S = 0.02


def _redeliver(signum: int) -> None:
    timer = threading.Timer(_REDELIVER_S, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    exc = KeyboardInterrupt() if signum == signal.SIGINT else Terminated("terminated by SIGTERM")
    exc.bayesrank_signal = signum  # type: ignore[attr-defined]
    raise exc


def _redeliver_if_dropped(previous_hook):
    """An unraisable hook: an interrupt dropped in a finalizer is sent again, quietly.

    Ours carry their signal; a plain KeyboardInterrupt is Python's own for SIGINT.
    """

    def hook(unraisable) -> None:
        exc = unraisable.exc_value
        if not isinstance(exc, KeyboardInterrupt):
            previous_hook(unraisable)
            return
        _redeliver(getattr(exc, "bayesrank_signal", signal.SIGINT))

    return hook


@contextlib.contextmanager
def interrupts_not_dropped() -> Iterator[None]:
    """Within the block, Ctrl-C that Python drops in a finalizer is delivered again.

    Signal handlers stay as the caller set them: the interrupt is only sent again, to
    whatever handles SIGINT (by default Python's KeyboardInterrupt).  :func:`bayesrank.fit`
    samples inside this block, so a Ctrl-C that lands while Numba or PyTensor free their
    objects still stops the fit.
    """
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _redeliver_if_dropped(previous_hook)
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook


@contextlib.contextmanager
def sigterm_as_interrupt(*, only_default: bool = False,
                         ctrl_c: bool = False) -> Iterator[bool]:
    """Within the block SIGTERM raises :class:`Terminated`; yields whether it does.

    With ``ctrl_c`` SIGINT is handled here too (KeyboardInterrupt, delivered again when a
    finalizer dropped it).  Only the main thread can set signal handlers: elsewhere (and, with
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
    previous_int = signal.getsignal(signal.SIGINT)
    _received.clear()
    signal.signal(signal.SIGTERM, _raise_terminated)
    if ctrl_c:
        signal.signal(signal.SIGINT, _raise_terminated)
    try:
        with interrupts_not_dropped():
            yield True
    finally:
        signal.signal(signal.SIGTERM, previous)
        if ctrl_c:
            signal.signal(signal.SIGINT, previous_int)


def end_by_sigterm() -> None:
    """End this process by SIGTERM with the default action (after cleaning up)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
