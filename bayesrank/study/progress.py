"""Progress of long study runs, with an estimate of the time left.

Written to stderr, one updating line, only when stderr is a terminal (or, when
forced with ``quiet=False``, one plain line every 10 s into whatever stderr is);
``quiet=True`` silences it.  The estimate is the
elapsed time per finished unit times the units left, a fair guess because the
units of one protocol (draw blocks, model pools) cost about the same.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress", "format_seconds"]


def format_seconds(seconds: float) -> str:
    """``"42 s"``, ``"3 min 05 s"`` or ``"2 h 07 min"``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


class Progress:
    """One protocol's progress line: ``[study] bootstrap 120/3000 pools, 14 s, ~5 min left``.

    Parameters
    ----------
    quiet : bool or None
        None (default): report only when ``stream`` is a terminal; True: never;
        False: always (e.g. into a log file).
    stream : text stream, optional
        Default ``sys.stderr``.
    min_interval : float
        Seconds between redraws (the last one is always shown).
    """

    def __init__(
        self, quiet: bool | None = None, stream: TextIO | None = None, min_interval: float = 0.5
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.redraw = isatty is not None and isatty()  # one updating line on a terminal
        self.enabled = self.redraw if quiet is None else not quiet
        # elsewhere (a forced log) one plain line per interval
        self.min_interval = min_interval if self.redraw else max(min_interval, 10.0)
        self._label = ""
        self._unit = ""
        self._total = 0
        self._done = 0
        self._start = 0.0
        self._last = 0.0

    def start(self, label: str, total: int, unit: str) -> None:
        """Begin a protocol of ``total`` units."""
        self._label, self._unit, self._total, self._done = label, unit, int(total), 0
        self._start = self._last = time.perf_counter()
        self._draw(force=True)

    def advance(self, n: int = 1) -> None:
        """``n`` more units finished."""
        self._done += n
        self._draw(force=self._done >= self._total)

    def line(self) -> str:
        """The current progress text (also when disabled; used by tests)."""
        elapsed = time.perf_counter() - self._start
        text = f"[study] {self._label} {self._done}/{self._total} {self._unit}, " \
               f"{format_seconds(elapsed)}"
        if 0 < self._done < self._total:
            left = elapsed / self._done * (self._total - self._done)
            text += f", ~{format_seconds(left)} left"
        return text

    def finish(self) -> None:
        """End the protocol's line."""
        if self.enabled and self._total:
            if self.redraw:
                self.stream.write("\n")
            self.stream.flush()
        self._total = 0

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        if self.redraw:
            self.stream.write("\r" + self.line() + "\x1b[K")
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()
