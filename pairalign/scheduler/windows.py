"""Cut the pair triangle (all-vs-all) or rectangle (query x target) into windows.

Sequences are sorted by length, longest first (ties by input order), so the pairs
of a window cost alike. A window is a block of ``W x W`` sorted positions; in a
triangle, only the pairs ``row < col`` (sorted positions) belong to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

#: Window widths are multiples of this (a 16 x 16 block of GPU threads).
BLOCK = 16


@dataclass(frozen=True)
class Window:
    """Sorted positions ``[r0, r1) x [c0, c1)``; ``triangle`` keeps only ``r < c``."""

    r0: int
    r1: int
    c0: int
    c1: int
    triangle: bool
    pairs: int
    cells: int

    @property
    def cost(self) -> int:
        """Estimated cost: the number of DP cells."""
        return self.cells

    @property
    def splittable(self) -> bool:
        """Whether :func:`split_window` can cut it: more than one block of
        rows or of columns."""
        return self.r1 - self.r0 > BLOCK or self.c1 - self.c0 > BLOCK

    @property
    def divisible(self) -> bool:
        """Whether it holds more than one pair: :func:`halve_window` with
        ``cut=`` :func:`halves` cuts one of a block or less."""
        return self.pairs > 1


def length_order(lengths: np.ndarray) -> np.ndarray:
    """Indices sorting sequences longest first, ties in input order (stable)."""
    return np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")


def plan_windows(row_lengths: np.ndarray, col_lengths: np.ndarray | None,
                 width: int) -> list[Window]:
    """Windows over sorted lengths, in row-major order.

    Parameters
    ----------
    row_lengths : numpy.ndarray
        Lengths of the row sequences, sorted longest first.
    col_lengths : numpy.ndarray or None
        Lengths of the column sequences, sorted; ``None`` for the triangle of
        all pairs among the rows.
    width : int
        ``W``, a positive multiple of :data:`BLOCK`.
    """
    if width <= 0 or width % BLOCK:
        raise ValueError(f"window width must be a positive multiple of {BLOCK}, got {width}")
    triangle = col_lengths is None
    rows = np.asarray(row_lengths, dtype=np.int64)
    cols = rows if triangle else np.asarray(col_lengths, dtype=np.int64)
    windows = []
    for r0 in range(0, len(rows), width):
        r1 = min(r0 + width, len(rows))
        for c0 in range(r0 if triangle else 0, len(cols), width):
            w = make_window(rows, cols, r0, r1, c0, min(c0 + width, len(cols)), triangle)
            if w.pairs:
                windows.append(w)
    return windows


def make_window(rows: np.ndarray, cols: np.ndarray, r0: int, r1: int, c0: int, c1: int,
                triangle: bool) -> Window:
    """The window ``[r0, r1) x [c0, c1)`` with its pair and cell counts."""
    if triangle and c0 == r0:
        pairs, cells = _diagonal_work(rows[r0:r1])
    else:
        pairs = (r1 - r0) * (c1 - c0)
        cells = int(rows[r0:r1].sum() * cols[c0:c1].sum())
    return Window(r0, r1, c0, c1, triangle, pairs, cells)


Cut = Callable[[int, int], list[tuple[int, int]]]


def _cut(lo: int, hi: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` in two halves rounded to multiples of :data:`BLOCK` (one
    piece if it is a block or less)."""
    if hi - lo <= BLOCK:
        return [(lo, hi)]
    mid = lo + max(BLOCK, (hi - lo) // 2 // BLOCK * BLOCK)
    return [(lo, mid), (mid, hi)]


def halves(lo: int, hi: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` in two halves of any size (one piece if it is one position):
    the cut of a block whose pairs a device cannot hold at once (long reads)."""
    if hi - lo <= 1:
        return [(lo, hi)]
    mid = lo + (hi - lo) // 2
    return [(lo, mid), (mid, hi)]


def split_window(w: Window, rows: np.ndarray, cols: np.ndarray,
                 cut: Cut = _cut) -> list[Window]:
    """Quarter a window (halves rounded to multiples of :data:`BLOCK`, or as
    ``cut`` makes them)."""
    out = []
    for r0, r1 in cut(w.r0, w.r1):
        for c0, c1 in cut(w.c0, w.c1):
            if w.triangle and c1 <= r0 + 1:
                continue
            sub = make_window(rows, cols, r0, r1, c0, c1, w.triangle)
            if sub.pairs:
                out.append(sub)
    return out


def halve_window(w: Window, rows: np.ndarray, cols: np.ndarray,
                 cut: Cut = _cut) -> list[Window]:
    """Halve a window across its longer side (rows where it is square), the
    halves rounded to multiples of :data:`BLOCK` (or as ``cut`` makes them:
    :func:`halves` cuts a block). A triangle's diagonal window, whose halves
    would not be triangles, is quartered (:func:`split_window`).

    >>> import numpy as np
    >>> lengths = np.full(64, 10)
    >>> w = make_window(lengths, lengths, 0, 32, 32, 64, True)
    >>> [(x.r0, x.r1, x.c0, x.c1) for x in halve_window(w, lengths, lengths)]
    [(0, 16, 32, 64), (16, 32, 32, 64)]
    """
    if w.triangle and w.c0 == w.r0:
        return split_window(w, rows, cols, cut)
    if w.r1 - w.r0 >= w.c1 - w.c0:
        return [make_window(rows, cols, r0, r1, w.c0, w.c1, w.triangle)
                for r0, r1 in cut(w.r0, w.r1)]
    return [make_window(rows, cols, w.r0, w.r1, c0, c1, w.triangle)
            for c0, c1 in cut(w.c0, w.c1)]


def _diagonal_work(lengths: np.ndarray) -> tuple[int, int]:
    k = len(lengths)
    total = int(lengths.sum())
    cells = (total * total - int((lengths * lengths).sum())) // 2
    return k * (k - 1) // 2, cells


def first_columns(w: Window) -> tuple[np.ndarray, np.ndarray]:
    """A window's rows (sorted positions) and each one's first column (a
    triangle's after the diagonal, at most ``c1``), int64: row ``r``'s pairs
    are columns ``[a, c1)``, in :func:`window_pairs`' row-major order."""
    r = np.arange(w.r0, w.r1, dtype=np.int64)
    a = np.maximum(w.c0, r + 1) if w.triangle else np.full(r.size, w.c0, np.int64)
    return r, np.minimum(a, w.c1)


def window_pairs(window: Window) -> tuple[np.ndarray, np.ndarray]:
    """Row and column sorted positions of every pair of a window, row-major."""
    r = np.arange(window.r0, window.r1)
    c = np.arange(window.c0, window.c1)
    rr, cc = np.meshgrid(r, c, indexing="ij")
    if window.triangle:
        keep = rr < cc
        return rr[keep], cc[keep]
    return rr.ravel(), cc.ravel()
