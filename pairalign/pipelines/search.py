"""Query-against-targets search: every query aligned with every target
(:func:`pairalign.align_many`), the best ``top`` hits per query, written as
BLAST tabular (``-outfmt 6``) or TSV.

BLAST tabular columns: ``qseqid sseqid pident length mismatch gapopen qstart
qend sstart send evalue bitscore``, coordinates 1-based and inclusive.
``pident`` is 100 x identical columns / alignment columns (gap columns
included, as BLAST), ``length`` the number of alignment columns, ``mismatch``
the mismatched columns, ``gapopen`` the number of gaps (runs of I or D). An
empty local alignment (score 0: no residue pair scores above 0) is no hit
and has no line, as in BLAST; so a query may have fewer than ``top`` lines,
or none.
E-values and bit scores are **not computed** (they need Karlin-Altschul
statistics for the scoring scheme and database): ``evalue`` is written ``NaN``
and the ``bitscore`` column holds the raw alignment score. ``evalue`` is written
``NaN`` (not a number), not ``0`` (which would claim a perfect hit) nor ``NA``
(which Biopython's ``blast-tab`` parser rejects): ``float("NaN")``, pandas and
R read it as a missing number, so Biopython's ``SearchIO.parse(..., "blast-tab")``
and ``pandas.read_csv`` accept the file. Rank by the score column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import OptionError
from ..kernels.conventions import OP_DEL, OP_INS
from ..output import write_lines, write_tsv, writing_to

if TYPE_CHECKING:
    from ..api import Mode, SequencesLike
    from ..output import PathOrHandle
    from ..results import AlignmentResult

#: Pairs of finished windows a search with ``top`` gathers before merging
#: them into the best hits so far.
MERGE_PAIRS = 1 << 20

BLAST6_COLUMNS = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen",
                  "qstart", "qend", "sstart", "send", "evalue", "bitscore")


def top_hits(result: AlignmentResult, top: int | None) -> np.ndarray:
    """Indices (into ``result.pairs``) of the best ``top`` targets of each query, by
    score (highest first, ties by target input order), queries in input order;
    every pair, so ordered, when ``top`` is None."""
    return _ranked(result.pairs, top)


def _ranked(p, top: int | None) -> np.ndarray:
    """:func:`top_hits` of the pairs of a batch."""
    order = np.lexsort((p.target, -p.score.astype(np.int64), p.query))
    if top is None:
        return order
    _check_top(top)
    q = p.query[order]
    start = np.searchsorted(q, q, side="left")  # first position of each query's run
    rank = np.arange(len(order)) - start
    return order[rank < top]


class BestOfWindow:
    """A ``keep`` filter (:func:`pairalign.iter_many`): the best ``top``
    pairs of each query within a window, by :func:`top_hits`'s order. That
    order is total, so a query's best ``top`` overall are among its windows'
    best: the rest are dropped where each window ran (on the Dask worker,
    for a cluster's run), before they are held or sent."""

    def __init__(self, top: int):
        _check_top(top)
        self.top = top

    def __call__(self, batch) -> np.ndarray:
        mask = np.zeros(len(batch), bool)
        mask[_ranked(batch, self.top)] = True
        return mask


def _check_top(top: int) -> None:
    if top < 1:
        raise OptionError("top must be at least 1")


def search(queries: SequencesLike, targets: SequencesLike, top: int | None = None,
           mode: Mode = "local", **align_options: Any) -> tuple[AlignmentResult, np.ndarray]:
    """Align every query with every target and keep the best ``top`` per query.

    Parameters
    ----------
    queries, targets : path or sequences
        As for :func:`pairalign.align_many`.
    top : int, optional
        Hits kept per query (all by default), highest score first, ties by
        target input order.
    mode : {"local", "semiglobal", "global"}
        Local (Smith-Waterman) by default.
    **align_options
        Passed to :func:`pairalign.align_many`.

    Returns
    -------
    (AlignmentResult, numpy.ndarray)
        The result and the indices of the kept hits into ``result.pairs``,
        ordered by query, then rank. ``result[k]`` is hit k's
        :class:`pairalign.PairAlignment`. With ``top``, the result holds the
        kept hits' pairs only: each window keeps the best ``top`` of each of
        its queries where it ran (:class:`BestOfWindow`: on the Dask
        workers, with a ``client``), and those are merged into the best so
        far as the window finishes, so that memory holds about ``queries x
        top`` pairs, not every pair.

    Examples
    --------
    >>> from pairalign.pipelines import search
    >>> res, hits = search(["HEAGAWGHEE"], ["PAWHEAE", "HEAGAWGHEE"], top=1)
    >>> [(res[k].target_id, res[k].score) for k in hits]
    [('seq2', 62)]
    """
    from ..api import align_many, iter_many
    from ..pairs import PairBatch

    if top is None:
        result = align_many(queries, targets, mode=mode, **align_options)
        return result, top_hits(result, top)
    _check_top(top)  # before the alignments
    kept, waiting, part = PairBatch.empty(), [], None

    def merged():
        both = PairBatch.concat([kept, *waiting])
        waiting.clear()
        return both.take(np.sort(_ranked(both, top)))

    for part in iter_many(queries, targets, mode=mode, ordered=False, keep=BestOfWindow(top),
                          **align_options):
        waiting.append(part.pairs)
        # merged once the windows waiting hold as many pairs as the best
        # (at least MERGE_PAIRS): each pair is sorted a bounded number of times
        if sum(len(b) for b in waiting) >= max(len(kept), MERGE_PAIRS):
            kept = merged()
    kept = merged()
    if part is None:  # no pairs: nothing to merge
        result = align_many(queries, targets, mode=mode, **align_options)
        return result, top_hits(result, top)
    result = part.with_pairs(kept)
    return result, top_hits(result, top)


def _op_counts(batch):
    """Mismatched columns and gap openings of every pair."""
    pair = np.repeat(np.arange(len(batch)), batch.n_ops)
    code = batch.op_code
    mism = batch.aligned_columns() - batch.identities.astype(np.int64)
    gaps = np.bincount(pair[(code == OP_INS) | (code == OP_DEL)],
                       minlength=len(batch)).astype(np.int64)
    return mism, gaps


def write_blast6(handle_or_path: PathOrHandle, result: AlignmentResult,
                 hits: np.ndarray | None = None) -> None:
    """BLAST tabular (outfmt 6) lines of the hits (see the module documentation),
    to a binary handle or a path (atomically; ``"-"``: standard output)."""
    if not result.cigar:
        raise OptionError("BLAST tabular output needs alignments with their CIGARs "
                          "(mismatches, gap opens): keep traceback and cigar on")
    with writing_to(handle_or_path) as handle:
        batch = result.pairs if hits is None else result.pairs.take(np.asarray(hits))
        mism, gaps = _op_counts(batch)
        length = batch.length.astype(np.int64)
        # BLAST+'s order of operations (ident / length * 100), so that the last
        # of the 3 decimals rounds as it prints them
        pident = batch.identities / np.maximum(length, 1) * 100.0
        qids, tids = result.ids, result.target_ids

        def line(k: int) -> str:
            qs, qe = int(batch.query_begin[k]) + 1, int(batch.query_end[k])
            ss, se = int(batch.target_begin[k]) + 1, int(batch.target_end[k])
            return (f"{qids[batch.query[k]]}\t{tids[batch.target[k]]}\t{pident[k]:.3f}\t"
                    f"{length[k]}\t{mism[k]}\t{gaps[k]}\t{qs}\t{qe}\t{ss}\t{se}\tNaN\t"
                    f"{int(batch.score[k])}\n")
        # an empty local alignment (score 0) is no hit: BLAST writes no line for it
        write_lines(handle, map(line, np.flatnonzero(length > 0)))


def write_search_tsv(handle_or_path: PathOrHandle, result: AlignmentResult,
                     hits: np.ndarray | None = None) -> None:
    """The hits as pairalign's TSV (a header line; columns of ``all-vs-all``:
    0-based starts, exclusive ends, CIGAR)."""
    batch = result.pairs if hits is None else result.pairs.take(np.asarray(hits))
    with writing_to(handle_or_path) as handle:
        write_tsv(handle, result, batch)
