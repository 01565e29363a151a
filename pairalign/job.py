"""What a run aligns: encoded sequences in length order, the mode and the scoring."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .kernels.conventions import MODES
from .scheduler.windows import Window, length_order
from .scoring import Scoring


@dataclass(frozen=True)
class SortedSet:
    """Sequences encoded and sorted longest first.

    ``codes[offsets[p]:offsets[p + 1]]`` is the sequence at sorted position ``p``,
    which is input sequence ``order[p]``.
    """

    codes: np.ndarray
    offsets: np.ndarray
    order: np.ndarray

    @cached_property
    def lengths(self) -> np.ndarray:
        """Each sequence's length (read-only; worked out once: the engine
        and the GPU backend read it for every window)."""
        lengths = np.diff(self.offsets)
        lengths.flags.writeable = False
        return lengths

    def __len__(self) -> int:
        return len(self.order)

    @classmethod
    def encode(cls, sequences: list[str], scoring: Scoring) -> "SortedSet":
        return cls.from_text(*cls.sorted_text(sequences), scoring)

    @staticmethod
    def sorted_text(sequences: list[str]) -> tuple[bytes, np.ndarray, np.ndarray]:
        """The sequences joined longest first: ``(text, offsets, order)``."""
        lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
        order = length_order(lengths)
        joined = "".join(sequences[k] for k in order).encode("ascii")
        offsets = np.zeros(len(sequences) + 1, np.int64)
        np.cumsum(lengths[order], out=offsets[1:])
        return joined, offsets, order

    @classmethod
    def from_text(cls, text: bytes, offsets: np.ndarray, order: np.ndarray,
                  scoring: Scoring) -> "SortedSet":
        """The set of :meth:`sorted_text`'s text, encoded."""
        return cls(scoring.encode(text), offsets, order)


@dataclass(frozen=True)
class Job:
    """An all-vs-all (``cols is None``) or query x target alignment job.

    With ``traceback`` and not ``cigar``, every pair's begins, identities and
    length come back but not its operations (batches' ``op_offsets`` all 0):
    what a distance matrix needs, without the operations' memory and
    transfers."""

    mode: str
    scoring: Scoring
    traceback: bool
    rows: SortedSet
    cols: SortedSet | None = None
    cigar: bool = True

    @classmethod
    def create(cls, mode: str, scoring: Scoring, traceback: bool, rows: list[str],
               cols: list[str] | None = None, cigar: bool = True) -> "Job":
        """The job of ``rows`` against ``cols`` (all-vs-all where None), its
        scoring one whose codes tell apart every letter that the sequences
        hold (:meth:`Scoring.for_residues`)."""
        texts = [SortedSet.sorted_text(rows)] + ([] if cols is None
                                                 else [SortedSet.sorted_text(cols)])
        scoring = scoring.for_residues(*(t[0] for t in texts))
        sets = [SortedSet.from_text(*t, scoring) for t in texts]
        return cls(mode, scoring, traceback, sets[0], sets[1] if cols is not None else None,
                   cigar=cigar)

    @property
    def operations(self) -> bool:
        """Whether the pairs' alignment operations come back."""
        return self.traceback and self.cigar

    @property
    def mode_code(self) -> int:
        return MODES[self.mode]

    @property
    def triangle(self) -> bool:
        return self.cols is None

    @property
    def pairs(self) -> int:
        """Pairs the job aligns (``i < j`` for all-vs-all)."""
        n = len(self.rows)
        return n * (n - 1) // 2 if self.triangle else n * len(self.col_set)

    @property
    def col_set(self) -> SortedSet:
        return self.rows if self.cols is None else self.cols

    def joined(self) -> tuple[np.ndarray, np.ndarray, int]:
        """Rows then columns in one code array: ``(codes, offsets, col_base)``;
        column ``c`` is sequence ``col_base + c`` (all-vs-all: one set, base 0)."""
        if self.cols is None:
            return self.rows.codes, self.rows.offsets, 0
        codes = np.concatenate([self.rows.codes, self.cols.codes])
        offsets = np.concatenate([self.rows.offsets[:-1],
                                  self.cols.offsets + self.rows.offsets[-1]])
        return codes, offsets, len(self.rows)

    def window_extent(self, w: Window) -> tuple[int, int]:
        """The longest row and the longest column of a window."""
        return int(self.rows.lengths[w.r0]), int(self.col_set.lengths[w.c0])

    def score_dtype(self, w: Window) -> np.dtype:
        n, m = self.window_extent(w)
        return self.scoring.score_dtype(n, m, self.mode)
