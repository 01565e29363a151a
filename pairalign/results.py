"""What an alignment run returns: scores, ids and every pair's alignment."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import numpy as np

from .cigar import cigar_string
from .job import SortedSet
from .pairs import PairBatch
from .scoring import Scoring

if TYPE_CHECKING:
    import skbio.alignment


#: What asking for a CIGAR that a run did not keep says.
_NO_CIGAR = ("no alignment: the run was score-only (traceback=False) or kept no CIGAR "
             "(cigar=False)")


@dataclass(frozen=True)
class PairAlignment:
    """One aligned pair.

    Coordinates are 0-based with exclusive ends; the CIGAR covers
    ``query[query_begin:query_end]`` against ``target[target_begin:target_end]``
    (``I`` consumes the query, ``D`` the target). Without traceback, begins,
    identities, length and CIGAR are absent (-1 and ``None``); a run that kept
    no CIGAR (``cigar=False``) has ``None`` for the CIGAR alone.
    """

    query_id: str
    target_id: str
    query_index: int
    target_index: int
    score: int
    identities: int
    length: int
    query_begin: int
    query_end: int
    target_begin: int
    target_end: int
    cigar: str | None

    @property
    def identity(self) -> float:
        """Fraction of alignment columns that are identical residues."""
        return self.identities / self.length if self.length > 0 else 0.0

    @property
    def path(self) -> skbio.alignment.PairAlignPath:
        """The alignment as a :class:`skbio.alignment.PairAlignPath`.

        Raises
        ------
        ValueError
            Where the run made no CIGARs (``traceback=False`` or
            ``cigar=False``), or the local alignment is empty (score 0).
        """
        from skbio.alignment import PairAlignPath

        if self.cigar is None:
            raise ValueError(_NO_CIGAR)
        if not self.cigar:
            raise ValueError("empty alignment (local score 0): no path")
        # scikit-bio reads I as a gap in the first sequence; ours consumes the query
        mirrored = self.cigar.translate(str.maketrans("ID", "DI"))
        return PairAlignPath.from_cigar(mirrored, starts=[self.query_begin, self.target_begin])


class AlignmentResult:
    """Scores and alignments of all pairs (all-vs-all) or all query x target pairs.

    Attributes
    ----------
    ids : list of str
        Query ids (all ids for all-vs-all), in input order.
    target_ids : list of str
        Target ids (the same list for all-vs-all).
    pairs : PairBatch
        Columnar results, pairs in input order (``i < j`` for all-vs-all).
    mode : str
    scoring : Scoring
    traceback : bool
    cigar : bool
        Whether the pairs' CIGARs were kept (with traceback; see
        :func:`pairalign.align_all`).
    all_vs_all : bool
        Every pair of one set (``i < j``), or every query against every target.
    sequences, target_sequences : list of str
        The query and target residues (the same list for all-vs-all).

    Examples
    --------
    >>> import pairalign
    >>> res = pairalign.align_all(["MKVLA", "MKVIA", "MRVLA"], mode="global")
    >>> res.scores.shape
    (3, 3)
    >>> first = next(iter(res))
    >>> first.query_id, first.target_id, first.cigar
    ('seq1', 'seq2', '3=1X1=')
    """

    def __init__(self, ids: list[str], target_ids: list[str] | None, pairs: PairBatch,
                 mode: str, scoring: Scoring, traceback: bool, sequences: list[str],
                 target_sequences: list[str] | None = None, *,
                 codes: ResidueCodes | None = None, cigar: bool = True) -> None:
        self.ids = list(ids)
        self.all_vs_all = target_ids is None
        self.target_ids = self.ids if target_ids is None else list(target_ids)
        self.pairs = pairs
        self.mode = mode
        self.scoring = scoring
        self.traceback = traceback
        self.cigar = bool(traceback and cigar)
        self.sequences = sequences
        self.target_sequences = sequences if target_sequences is None else target_sequences
        self._codes = codes or ResidueCodes(self.sequences, self.target_sequences, scoring)

    def __len__(self) -> int:
        return len(self.pairs)

    def with_pairs(self, pairs: PairBatch) -> AlignmentResult:
        """A result of the same sequences and settings over ``pairs`` (some
        of this run's, e.g. the best hits gathered from several results)."""
        return AlignmentResult(self.ids, None if self.all_vs_all else self.target_ids, pairs,
                               self.mode, self.scoring, self.traceback, self.sequences,
                               self.target_sequences, codes=self._codes, cigar=self.cigar)

    def residue_codes(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The query and target sequences as residue codes
        (:meth:`Scoring.encode`), each set joined: ``((codes, starts),
        (target_codes, target_starts))``, sequence ``k`` from
        ``codes[starts[k]]`` on. The operations' ``M`` runs are told apart
        into ``=`` and ``X`` by these codes: the run's own encoding where
        :mod:`pairalign.api` made the result, else encoded at the first call
        (once for all the batches of :func:`pairalign.iter_all`)."""
        return self._codes.get()

    def __repr__(self) -> str:
        kind = "all-vs-all" if self.all_vs_all else "query x target"
        return (f"<AlignmentResult {kind}, {len(self.ids)} x {len(self.target_ids)} "
                f"sequences, {len(self)} pairs, {self.mode}, {self.scoring.name}>")

    @property
    def scores(self) -> np.ndarray:
        """Scores as a matrix (int32): ``n x n`` and symmetric for all-vs-all, with
        a zero diagonal (a sequence is not aligned with itself); ``queries x
        targets`` otherwise."""
        out = np.zeros((len(self.ids), len(self.target_ids)), np.int32)
        out[self.pairs.query, self.pairs.target] = self.pairs.score
        if self.all_vs_all:
            out[self.pairs.target, self.pairs.query] = self.pairs.score
        return out

    def __getitem__(self, k: int) -> PairAlignment:
        p = self.pairs
        if not -len(p) <= k < len(p):
            raise IndexError(k)
        k %= len(p)
        q, t = int(p.query[k]), int(p.target[k])
        cigar = None
        if self.cigar:
            (qcodes, qstart), (tcodes, tstart) = self.residue_codes()
            cigar = cigar_string(*p.ops(k), query=qcodes[qstart[q] + p.query_begin[k]:],
                                 target=tcodes[tstart[t] + p.target_begin[k]:])
        return PairAlignment(self.ids[q], self.target_ids[t], q, t, int(p.score[k]),
                             int(p.identities[k]), int(p.length[k]), int(p.query_begin[k]),
                             int(p.query_end[k]), int(p.target_begin[k]),
                             int(p.target_end[k]), cigar)

    def __iter__(self) -> Iterator[PairAlignment]:
        for k in range(len(self.pairs)):
            yield self[k]

    def aligned(self, k: int) -> tuple[str, str]:
        """The two gapped strings of pair ``k`` (the aligned region only)."""
        rec = self[k]
        if rec.cigar is None:
            raise ValueError(_NO_CIGAR)
        q = self.sequences[rec.query_index]
        t = self.target_sequences[rec.target_index]
        return gapped(rec.cigar, q, t, rec.query_begin, rec.target_begin)


class ResidueCodes:
    """Query and target sequences as joined residue codes and each sequence's
    start (see :meth:`AlignmentResult.residue_codes`): a run's encoded sets
    (``sets``: its job's rows and columns), or the sequences encoded at the
    first :meth:`get`. Results of one run share one."""

    def __init__(self, sequences: list[str], target_sequences: list[str],
                 scoring: Scoring, sets: tuple[SortedSet, SortedSet] | None = None) -> None:
        self._sources = (sequences, target_sequences, scoring)
        self._sets = sets
        self._codes = None
        self._lock = threading.Lock()

    def get(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        with self._lock:  # TSV chunks are formatted on several threads
            if self._codes is None:
                if self._sets is None:
                    sequences, target_sequences, scoring = self._sources
                    rows = SortedSet.encode(sequences, scoring)
                    cols = (rows if target_sequences is sequences
                            else SortedSet.encode(target_sequences, scoring))
                    self._sets = (rows, cols)
                self._codes = tuple(_input_starts(s) for s in self._sets)
            return self._codes


def _input_starts(s: SortedSet) -> tuple[np.ndarray, np.ndarray]:
    """``s``'s codes and where input sequence ``k`` starts in them."""
    starts = np.empty(len(s), np.int64)
    starts[s.order] = s.offsets[:-1]
    return s.codes, starts


def gapped(cigar: str, query: str, target: str, query_begin: int,
           target_begin: int) -> tuple[str, str]:
    """The two rows of an alignment, with ``-`` for gaps."""
    from .cigar import parse_cigar

    i, j = query_begin, target_begin
    a, b = [], []
    for n, op in parse_cigar(cigar):
        if op in "M=X":
            a.append(query[i:i + n])
            b.append(target[j:j + n])
            i += n
            j += n
        elif op == "I":
            a.append(query[i:i + n])
            b.append("-" * n)
            i += n
        else:
            a.append("-" * n)
            b.append(target[j:j + n])
            j += n
    return "".join(a), "".join(b)
