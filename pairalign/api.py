"""The Python API: align every pair of a set, a query set against targets, or one pair."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, BinaryIO, Callable, Iterable, Iterator, Literal, Sequence, Union

import numpy as np

from .engine import DEFAULT_MAX_MEMORY, Progress, iter_windows, parse_memory, run_job
from .alphabet import Alphabet
from .errors import OptionError
from .job import Job
from .matrices import MatrixLike
from .kernels.conventions import MODES
from .pairs import PairBatch
from .results import AlignmentResult, PairAlignment, ResidueCodes
from .scoring import Scoring
from .sequences import SequenceRecords, read_sequences, records_from_python
from .backends import get_backend

if TYPE_CHECKING:
    import skbio

    from .scheduler.plan import Plan

#: An alignment mode.
Mode = Literal["global", "semiglobal", "local"]
#: A sequence as the API takes it: a string or a scikit-bio sequence.
SequenceLike = Union[str, "skbio.Sequence"]
#: Sequences as the API takes them: a FASTA/FASTQ path (``"-"`` for
#: standard input), a binary file handle, records, or sequences.
SequencesLike = Union[str, "os.PathLike[str]", BinaryIO, SequenceRecords, Iterable[SequenceLike]]


def load(sequences: SequencesLike, alphabet: Alphabet | None = None) -> SequenceRecords:
    """Sequence records from a path (``"-"`` for stdin), a binary file handle,
    records, or Python sequences, validated against ``alphabet`` where given (records of another
    alphabet are validated again: a letter outside it raises
    :class:`~pairalign.errors.InputError`), else detected."""
    if isinstance(sequences, SequenceRecords):
        if alphabet is None or alphabet == sequences.alphabet:
            return sequences
        again = records_from_python(sequences.sequences, ids=sequences.ids, alphabet=alphabet)
        return replace(again, descriptions=sequences.descriptions, source=sequences.source)
    if isinstance(sequences, (str, os.PathLike)) or hasattr(sequences, "read"):
        return read_sequences(sequences, alphabet=alphabet)
    return records_from_python(sequences, alphabet=alphabet)


def load_pair(queries: SequencesLike, targets: SequencesLike,
              alphabet: Alphabet | None = None) -> tuple[SequenceRecords, SequenceRecords]:
    """Query and target records of one alphabet: ``alphabet`` where given, else
    each set's own where they agree, and protein where one set reads as
    protein (every DNA letter is a protein letter too).

    Examples
    --------
    >>> q, t = load_pair(["ACGTACGT"], ["MKVLWWAE"])
    >>> q.alphabet, t.alphabet
    ('protein', 'protein')
    """
    q, t = load(queries, alphabet), load(targets, alphabet)
    if q.alphabet != t.alphabet:
        q, t = load(q, "protein"), load(t, "protein")
    return q, t


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise OptionError(f"unknown mode {mode!r}: expected one of {', '.join(MODES)}")


def make_scoring(alphabet: Alphabet, matrix: MatrixLike | None = None, gap_open: int | None = None,
                 gap_extend: int | None = None, match: int | None = None,
                 mismatch: int | None = None) -> Scoring:
    """The scoring scheme for an alphabet, defaults filled in (see :class:`Scoring`)."""
    return Scoring.create(alphabet, matrix=matrix, gap_open=gap_open, gap_extend=gap_extend,
                          match=match, mismatch=mismatch)


def _job(rows: SequenceRecords, cols: SequenceRecords | None, mode: str, scoring: Scoring,
         traceback: bool, backend, threads, devices, cigar: bool = True):
    _check_mode(mode)
    be = get_backend(backend, threads=threads, devices=devices)
    job = Job.create(mode, scoring, traceback, rows.sequences,
                     None if cols is None else cols.sequences, cigar=bool(cigar))
    return be, job


def plan_all(sequences: SequencesLike, *, mode: Mode = "local", matrix: MatrixLike | None = None,
             gap_open: int | None = None, gap_extend: int | None = None,
             match: int | None = None, mismatch: int | None = None,
             alphabet: Alphabet | None = None, traceback: bool = True, backend: str = "auto",
             threads: int | None = None, devices: Sequence[int] | None = None,
             max_memory: int | str = DEFAULT_MAX_MEMORY, window: int | None = None) -> Plan:
    """The plan of :func:`align_all` without running it: pairs, cells, windows per
    device, memory and predicted time (see :func:`pairalign.engine.plan`).

    Examples
    --------
    >>> import pairalign
    >>> plan = pairalign.plan_all(["MKVLAW", "MKVIAW", "PRQLAY"], backend="cpu")
    >>> plan.pairs, plan.cells
    (3, 108)
    """
    from .engine import plan

    recs = load(sequences, alphabet)
    scoring = make_scoring(recs.alphabet, matrix, gap_open, gap_extend, match, mismatch)
    be, job = _job(recs, None, mode, scoring, traceback, backend, threads, devices)
    return plan(job, be, parse_memory(max_memory), window)


def _run(rows: SequenceRecords, cols: SequenceRecords | None, mode: str, scoring: Scoring,
         traceback: bool, backend, threads, devices, max_memory, window,
         progress, client=None, cigar: bool = True) -> AlignmentResult:
    be, job = _job(rows, cols, mode, scoring, traceback, backend, threads, devices, cigar)
    pairs = run_job(job, be, max_memory=parse_memory(max_memory), width=window,
                    progress=progress, client=client)
    return _results(rows, cols, mode, job)(pairs)


def _results(rows: SequenceRecords, cols: SequenceRecords | None, mode: str,
             job: Job) -> Callable[[PairBatch], AlignmentResult]:
    """What makes the :class:`AlignmentResult` of pairs of ``job`` (``rows``
    against ``cols``, all-vs-all where None), the sequences' residue codes
    shared by every result it makes; its scoring the job's
    (:meth:`~pairalign.job.Job.create`)."""
    scoring = job.scoring
    targets = rows.sequences if cols is None else cols.sequences
    codes = ResidueCodes(rows.sequences, targets, scoring, sets=(job.rows, job.col_set))

    def result(pairs: PairBatch) -> AlignmentResult:
        return AlignmentResult(rows.ids, None if cols is None else cols.ids, pairs, mode,
                               scoring, job.traceback, rows.sequences, targets, codes=codes,
                               cigar=job.cigar)
    return result


def align_all(
    sequences: SequencesLike,
    *,
    mode: Mode = "local",
    matrix: MatrixLike | None = None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    match: int | None = None,
    mismatch: int | None = None,
    alphabet: Alphabet | None = None,
    traceback: bool = True,
    cigar: bool = True,
    backend: str = "auto",
    threads: int | None = None,
    devices: Sequence[int] | None = None,
    max_memory: int | str = DEFAULT_MAX_MEMORY,
    window: int | None = None,
    progress: Progress | None = None,
    client=None,
) -> AlignmentResult:
    """Align every pair of a set of sequences.

    Parameters
    ----------
    sequences : path, binary file, list of str, or scikit-bio sequences
        A FASTA/FASTQ file (plain or gzip, ``"-"`` for stdin; a path or a
        handle open in binary mode), records, or sequences.
    mode : {"global", "semiglobal", "local"}
        Needleman-Wunsch, overlap (end gaps free) or Smith-Waterman.
    matrix : str, path or skbio.SubstitutionMatrix, optional
        Substitution matrix: a name (``"BLOSUM62"``, the protein default;
        see :data:`pairalign.matrices.MATRIX_NAMES`), a file in the NCBI
        format, or a scikit-bio ``SubstitutionMatrix``; symmetric, of whole
        numbers.
    gap_open, gap_extend : int, optional
        A gap of length k costs ``gap_open + (k - 1) * gap_extend``
        (defaults: 11/1 protein, 5/2 DNA). BLAST's ``(o, e)`` is ``(o + e, e)``.
    match, mismatch : int, optional
        DNA scores instead of a matrix (defaults 2 and -3).
    alphabet : {"protein", "dna"}, optional
        Forces the alphabet; detected from the residues otherwise.
    traceback : bool
        Compute alignments (CIGAR, begins, identities), not only scores.
    cigar : bool
        With traceback, keep every pair's CIGAR (its operations); False keeps
        the begins, ends, identities and lengths only (what
        :func:`pairalign.pipelines.distance_matrix` needs), in less memory and
        time.
    backend : {"auto", "cpu", "gpu"}
    threads : int, optional
        CPU cores to use (all by default).
    devices : sequence of int, optional
        GPU ordinals to use (every visible one by default), one worker each,
        taking windows in LPT order; the output is the same on any number.
    max_memory : int or str
        Budget for the host's working buffers, e.g. ``"4G"``: the CPU's
        threads' traceback among them (fewer threads where it holds fewer:
        :class:`~pairalign.errors.MemoryBudgetWarning`). A GPU's windows
        follow its own free memory.
    window : int, optional
        Window width (a multiple of 16); sized from ``max_memory`` by default.
    progress : callable, optional
        Called as ``progress(pairs_done, pairs_total)`` after each window.
    client : dask.distributed.Client, optional
        Run the windows as Dask tasks on a cluster (see
        :func:`pairalign.scheduler.distributed.connect`); output is identical.

    Returns
    -------
    AlignmentResult

    Notes
    -----
    Each pair is aligned from its longer sequence's side (of two of one
    length, the first's), and the dynamic programming breaks ties in one
    order (diagonal, then gaps; the first best end cell). Where several
    alignments reach the best score, the one given may differ from
    :func:`align_pair`'s or :func:`align_many`'s for the same two sequences
    (which align the query as given); scores never differ.

    Examples
    --------
    >>> import pairalign
    >>> res = pairalign.align_all(["HEAGAWGHEE", "PAWHEAE", "HEAGAWGHEE"])
    >>> res.scores[0, 2], res.scores[0, 1]
    (np.int32(62), np.int32(17))
    >>> [(r.query_id, r.target_id, r.score) for r in res][:2]
    [('seq1', 'seq2', 17), ('seq1', 'seq3', 62)]
    """
    recs = load(sequences, alphabet)
    scoring = make_scoring(recs.alphabet, matrix, gap_open, gap_extend, match, mismatch)
    return _run(recs, None, mode, scoring, traceback, backend, threads, devices,
                max_memory, window, progress, client, cigar)


def iter_all(
    sequences: SequencesLike,
    *,
    mode: Mode = "local",
    matrix: MatrixLike | None = None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    match: int | None = None,
    mismatch: int | None = None,
    alphabet: Alphabet | None = None,
    traceback: bool = True,
    cigar: bool = True,
    backend: str = "auto",
    threads: int | None = None,
    devices: Sequence[int] | None = None,
    max_memory: int | str = DEFAULT_MAX_MEMORY,
    window: int | None = None,
    progress: Progress | None = None,
    client=None,
    timings: dict | None = None,
    ordered: bool = True,
    keep: Callable[[PairBatch], np.ndarray] | None = None,
) -> Iterator[AlignmentResult]:
    """:func:`align_all` in pieces, for more pairs than memory holds.

    Yields results over consecutive runs of pairs, together every pair once in
    input order; host memory stays within about ``max_memory`` (the pairs are
    bucket-sorted through temporary files, see :mod:`pairalign.streaming`).
    With ``ordered=False``, a result per window as the windows finish: every
    pair once, in no particular order (``query < target`` within each pair),
    with no temporary files, for a consumer that puts each pair in its place
    itself (a distance matrix). ``keep``, a function of a window's pairs (a
    :class:`~pairalign.pairs.PairBatch`) giving a boolean mask, filters each
    window as it finishes: only the pairs it keeps come, and only they are
    held or spilled (e.g. ``lambda b: b.score >= 50``); with a Dask
    ``client`` it runs on the workers, and only the kept pairs cross the
    network. Other parameters are those of :func:`align_all`; ``timings``, a
    dict, is filled with the run's predicted and measured times (see
    :func:`pairalign.engine.format_run_report`).

    Examples
    --------
    >>> import pairalign
    >>> [len(part) for part in pairalign.iter_all(["MKVLA", "MKVIA", "MRVLA"])]
    [3]
    """
    recs = load(sequences, alphabet)
    scoring = make_scoring(recs.alphabet, matrix, gap_open, gap_extend, match, mismatch)
    yield from _iter(recs, None, mode, scoring, traceback, backend, threads, devices,
                     max_memory, window, progress, client, cigar, timings, ordered, keep)


def iter_many(
    queries: SequencesLike,
    targets: SequencesLike,
    *,
    mode: Mode = "local",
    matrix: MatrixLike | None = None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    match: int | None = None,
    mismatch: int | None = None,
    alphabet: Alphabet | None = None,
    traceback: bool = True,
    cigar: bool = True,
    backend: str = "auto",
    threads: int | None = None,
    devices: Sequence[int] | None = None,
    max_memory: int | str = DEFAULT_MAX_MEMORY,
    window: int | None = None,
    progress: Progress | None = None,
    client=None,
    timings: dict | None = None,
    ordered: bool = True,
    keep: Callable[[PairBatch], np.ndarray] | None = None,
) -> Iterator[AlignmentResult]:
    """:func:`align_many` in pieces, as :func:`iter_all` gives
    :func:`align_all`'s: every query-target pair once, in input order
    (row-major), or with ``ordered=False`` a result per window as the windows
    finish. Parameters are those of :func:`iter_all`.

    Examples
    --------
    >>> import pairalign
    >>> [part.pairs.score.tolist()
    ...  for part in pairalign.iter_many(["HEAGAWGHEE"], ["PAWHEAE", "HEAGAWGHEE"])]
    [[17, 62]]
    """
    q, t = load_pair(queries, targets, alphabet)
    scoring = make_scoring(q.alphabet, matrix, gap_open, gap_extend, match, mismatch)
    yield from _iter(q, t, mode, scoring, traceback, backend, threads, devices, max_memory,
                     window, progress, client, cigar, timings, ordered, keep)


def _iter(rows: SequenceRecords, cols: SequenceRecords | None, mode: str, scoring: Scoring,
          traceback: bool, backend, threads, devices, max_memory, window, progress, client,
          cigar: bool, timings: dict | None, ordered: bool,
          keep=None) -> Iterator[AlignmentResult]:
    """The results of ``rows`` against ``cols`` (all-vs-all where None) in
    pieces: in input order, or (``ordered`` False) a window's as it finishes;
    the pairs that ``keep`` keeps."""
    from .streaming import in_input_order

    be, job = _job(rows, cols, mode, scoring, traceback, backend, threads, devices, cigar)
    result = _results(rows, cols, mode, job)
    run = dict(max_memory=parse_memory(max_memory), width=window, progress=progress,
               client=client, timings=timings)
    if ordered:
        batches = in_input_order(job, be, keep=keep, **run)
    else:
        batches = iter_windows(job, be, keep=keep, **run)
    for batch in batches:
        yield result(batch)


def align_many(
    queries: SequencesLike,
    targets: SequencesLike,
    *,
    mode: Mode = "local",
    matrix: MatrixLike | None = None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    match: int | None = None,
    mismatch: int | None = None,
    alphabet: Alphabet | None = None,
    traceback: bool = True,
    cigar: bool = True,
    backend: str = "auto",
    threads: int | None = None,
    devices: Sequence[int] | None = None,
    max_memory: int | str = DEFAULT_MAX_MEMORY,
    window: int | None = None,
    progress: Progress | None = None,
    client=None,
) -> AlignmentResult:
    """Align every query with every target (a rectangle of pairs).

    Parameters are those of :func:`align_all`; the alphabet is detected from
    both sets (protein where either reads as protein: :func:`load_pair`).

    Examples
    --------
    >>> import pairalign
    >>> res = pairalign.align_many(["HEAGAWGHEE"], ["PAWHEAE", "HEAGAWGHEE"])
    >>> res.scores.tolist()
    [[17, 62]]
    """
    q, t = load_pair(queries, targets, alphabet)
    scoring = make_scoring(q.alphabet, matrix, gap_open, gap_extend, match, mismatch)
    return _run(q, t, mode, scoring, traceback, backend, threads, devices, max_memory,
                window, progress, client, cigar)


def align_pair(
    query: SequenceLike,
    target: SequenceLike,
    *,
    mode: Mode = "local",
    matrix: MatrixLike | None = None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    match: int | None = None,
    mismatch: int | None = None,
    alphabet: Alphabet | None = None,
    traceback: bool = True,
    cigar: bool = True,
    backend: str = "cpu",
    devices: Sequence[int] | None = None,
    threads: int | None = 1,
    max_memory: int | str = DEFAULT_MAX_MEMORY,
) -> PairAlignment:
    """Align one pair of sequences (strings or scikit-bio sequences).

    The options are :func:`align_many`'s but for ``window``, ``progress``
    and ``client``, on the CPU by default (a pair is too little work to
    start a GPU for); ``threads`` 1 by default (a long pair runs on all of
    its thread's vector lanes).

    Examples
    --------
    >>> import pairalign
    >>> aln = pairalign.align_pair("HEAGAWGHEE", "PAWHEAE")
    >>> aln.score, aln.cigar
    (17, '3=')
    """
    both = records_from_python([query, target], ids=["query", "target"], alphabet=alphabet)
    res = align_many(records_from_python([both.sequences[0]], ids=["query"],
                                         alphabet=both.alphabet),
                     records_from_python([both.sequences[1]], ids=["target"],
                                         alphabet=both.alphabet),
                     mode=mode, matrix=matrix, gap_open=gap_open,
                     gap_extend=gap_extend, match=match, mismatch=mismatch,
                     alphabet=alphabet, traceback=traceback, cigar=cigar, backend=backend,
                     devices=devices, threads=threads, max_memory=max_memory)
    return res[0]
