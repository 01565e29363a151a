"""Progress of a run: a bar on stderr, and the callbacks the API takes.

The engine calls a progress callback after each window as
``progress(pairs_done, pairs_total)``; a callback with the attribute
``wants_cells = True`` is called as
``progress(pairs_done, pairs_total, cells_done, cells_total)`` instead (the bar
uses cells for its rate and ETA: pairs differ in cost).

For the command line::

    from pairalign.progress import terminal_progress
    bar = terminal_progress(quiet=args.quiet)      # None when quiet or not a TTY
    align_all(..., progress=bar)

The bar stays silent for the first ``delay`` seconds (2 by default), so short
runs print nothing; then it redraws at most ten times a second, and ends its
line when the run completes.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

Progress = Callable[..., None]


def _si(x: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.3g} "


def _duration(s: float) -> str:
    s = max(0, int(round(s)))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


class ProgressBar:
    """A one-line progress bar: percent, pairs done, cells per second, ETA.

    Parameters
    ----------
    stream : file, optional
        Where to draw (``sys.stderr`` by default).
    delay : float
        Seconds from creation before the bar first shows (short runs stay quiet).
    interval : float
        Fewest seconds between redraws.
    clock : callable
        Time source (tests pass a fake).
    """

    wants_cells = True

    def __init__(self, stream: TextIO | None = None, delay: float = 2.0,
                 interval: float = 0.1, width: int = 24,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.delay = delay
        self.interval = interval
        self.width = width
        self.clock = clock
        self.start = clock()
        self.last = None
        self.shown = False
        self.closed = False
        self._len = 0

    def __call__(self, done: int, total: int, cells_done: int | None = None,
                 cells_total: int | None = None) -> None:
        if self.closed:
            return
        now = self.clock()
        final = done >= total
        if not final:
            if now - self.start < self.delay:
                return
            if self.last is not None and now - self.last < self.interval:
                return
        if final and not self.shown:
            self.closed = True  # a short run: nothing was drawn, nothing to end
            return
        self.last = now
        self._draw(self.line(done, total, cells_done, cells_total, now - self.start))
        if final:
            self.stream.write("\n")
            self.stream.flush()
            self.closed = True

    def line(self, done: int, total: int, cells_done: int | None, cells_total: int | None,
             elapsed: float) -> str:
        if cells_done is not None and cells_total:
            frac = cells_done / cells_total
        else:
            frac = done / total if total else 1.0
        frac = min(max(frac, 0.0), 1.0)
        fill = int(round(frac * self.width))
        bar = "#" * fill + "-" * (self.width - fill)
        parts = [f"{frac * 100:5.1f}% [{bar}] {done:,}/{total:,} pairs"]
        if cells_done is not None and elapsed > 0:
            rate = cells_done / elapsed
            parts.append(f"{_si(rate)}cells/s")
            if done < total and rate > 0 and cells_total:
                parts.append(f"ETA {_duration((cells_total - cells_done) / rate)}")
        elif elapsed > 0 and done:
            if done < total:
                parts.append(f"ETA {_duration((total - done) * elapsed / done)}")
        if done >= total:
            parts.append(f"in {_duration(elapsed)}")
        return "  ".join(parts)

    def _draw(self, text: str) -> None:
        pad = " " * max(0, self._len - len(text))
        self.stream.write("\r" + text + pad)
        self.stream.flush()
        self._len = len(text)
        self.shown = True

    def close(self) -> None:
        """End the line if the bar was drawn and the run did not complete (an error)."""
        if self.shown and not self.closed:
            self.stream.write("\n")
            self.stream.flush()
        self.closed = True


def terminal_progress(quiet: bool = False, stream: TextIO | None = None,
                      delay: float = 2.0) -> ProgressBar | None:
    """A progress bar on ``stream`` (stderr), or ``None`` when ``quiet`` or not a TTY.

    Pass the result as the ``progress`` argument of the API (``None`` means no
    progress). Call its ``close()`` in a ``finally`` if a run may fail.
    """
    stream = sys.stderr if stream is None else stream
    if quiet:
        return None
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        return None
    return ProgressBar(stream, delay=delay)


def chain(*callbacks: Progress | None) -> Progress | None:
    """One callback calling each of ``callbacks`` (``None`` entries skipped)."""
    cbs = [c for c in callbacks if c is not None]
    if not cbs:
        return None
    if len(cbs) == 1:
        return cbs[0]

    def both(done, total, cells_done=None, cells_total=None):
        for c in cbs:
            if getattr(c, "wants_cells", False):
                c(done, total, cells_done, cells_total)
            else:
                c(done, total)
    both.wants_cells = True
    return both
