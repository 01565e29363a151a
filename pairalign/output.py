"""Writing results: TSV lines and the score matrix, each file appearing atomically.

The TSV writer never loops over pairs in Python: a numba formatter
(:func:`pairalign.kernels.text.format_rows`) builds the lines of a chunk of
pairs (:data:`CHUNK` at a time) into one byte buffer, from the ids as one
concatenated buffer with offsets, the integer columns, and the CIGARs of
:func:`pairalign.cigar.format_cigars`. Every number is formatted with
integer arithmetic, so the output is byte-identical on every machine, backend,
thread count and window size.

Examples
--------
>>> import io, pairalign
>>> res = pairalign.align_all(["HEAGAWGHEE", "PAWHEAE", "HEAGAWGHEE"])
>>> buf = io.BytesIO()
>>> write_tsv(buf, res, filter_pairs(res.pairs, min_score=20))
>>> print(buf.getvalue().decode(), end="")
query	target	score	identity	length	query_start	query_end	target_start	target_end	cigar
seq1	seq3	62	1.0000	10	0	10	0	10	10=
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO, Iterable, Iterator, Union

import numpy as np

from .cigar import format_cigars
from .errors import OptionError
from .pairs import PairBatch
from .results import AlignmentResult

#: Columns of a TSV line with traceback.
TSV_COLUMNS = ("query", "target", "score", "identity", "length", "query_start",
               "query_end", "target_start", "target_end", "cigar")
#: Columns of a TSV line without traceback (``--no-traceback``).
TSV_SCORE_ONLY = ("query", "target", "score", "query_end", "target_end")
#: Columns of a TSV line with traceback but no CIGAR (``--no-cigar``).
TSV_NO_CIGAR = TSV_COLUMNS[:-1]

#: Pairs formatted per chunk: bounds the text held in memory at once.
CHUNK = 100_000

#: Threads formatting chunks at once.
_FORMAT_THREADS = min(16, os.cpu_count() or 1)

#: Bytes a line may need besides the two ids and the CIGAR: six integers of at
#: most 11 characters (int32 with its sign), the identity (6) and 10 separators.
_LINE_FIXED = 6 * 11 + 6 + 10


#: Bytes written between two of the writeback thread's syncs (:func:`_written_back`).
WRITEBACK_STEP = 32 << 20


@contextlib.contextmanager
def _written_back(fd: int) -> Iterator[None]:
    """While the body writes to ``fd``, a thread puts what is written on disk
    (``fdatasync`` each time :data:`WRITEBACK_STEP` more bytes are there), so
    that the ``fsync`` that completes :func:`atomic_output` waits for the last
    bytes only, not for the whole file (the proteome's 200 MB TSV: 0.13-0.15
    s of ``fsync`` after the last line on the H100 machine). An error here is
    left to that ``fsync`` to report."""
    done = threading.Event()
    sync = getattr(os, "fdatasync", os.fsync)

    def run() -> None:
        synced = 0
        try:
            while not done.wait(0.02):
                size = os.fstat(fd).st_size
                if size - synced >= WRITEBACK_STEP:
                    sync(fd)
                    synced = size
        except OSError:
            pass

    thread = threading.Thread(target=run, name="pairalign-writeback", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _default_mode() -> int:
    """The permissions a new file gets under the current umask (0o666 & ~umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary handle whose file appears under ``path`` only once complete.

    The data go to a temporary file in the same folder (``.NAME.XXXX.part``),
    which is flushed, synced and renamed over ``path`` on success, and removed
    on any exception (``KeyboardInterrupt`` included), which is re-raised: no
    half-written file that looks complete ever exists, and an existing file at
    ``path`` is left as it was. The file gets the permissions of a newly created
    one (``0o666 & ~umask``). ``"-"`` writes to standard output (binary); a
    symbolic link is written through (its target replaced, the link kept); a
    path that exists and is not a regular file (a device, a FIFO such as
    ``/dev/stdout``) is written directly.

    Raises
    ------
    OptionError
        If ``path`` is a folder (or ends in ``/``) or the temporary file
        cannot be created (no such folder, no permission): entered before a
        long computation, this fails early.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> target = os.path.join(folder, "out.txt")
    >>> with atomic_output(target) as handle:
    ...     _ = handle.write(b"partial")
    ...     [name.endswith(".part") for name in os.listdir(folder)]  # not there yet
    [True]
    >>> open(target, "rb").read(), os.listdir(folder)
    (b'partial', ['out.txt'])
    """
    if str(path) == "-":
        if sys.stdout is None:  # started with standard output closed
            raise OptionError("standard output is closed: give -o PATH")
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    path = os.fspath(path)
    if os.path.isdir(path):
        raise OptionError(f"cannot write {path}: it is a folder")
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        raise OptionError(f"cannot write {path}: a path ending in {path[-1]} names a folder")
    if os.path.exists(path) and not os.path.isfile(path):  # a device, a FIFO: as it is
        with open(path, "wb") as handle:
            yield handle
        return
    real = os.path.realpath(path)  # a symbolic link is written through, not replaced
    folder = os.path.dirname(real)
    try:
        tmp = tempfile.NamedTemporaryFile(dir=folder, prefix=f".{os.path.basename(real)}.",
                                          suffix=".part", delete=False)
    except OSError as exc:
        raise OptionError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with tmp:
            os.fchmod(tmp.fileno(), _default_mode())
            with _written_back(tmp.fileno()):
                yield tmp
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp.name, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp.name)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: What the writers take: a path (written atomically; ``"-"``: standard
#: output) or a binary handle.
PathOrHandle = Union[str, "os.PathLike[str]", BinaryIO]


@contextlib.contextmanager
def writing_to(handle_or_path: PathOrHandle) -> Iterator[BinaryIO]:
    """A binary handle as it is, or a path (``"-"``: standard output) through
    :func:`atomic_output`: what the writers of the pipelines take."""
    if isinstance(handle_or_path, (str, os.PathLike)):
        with atomic_output(handle_or_path) as handle:
            yield handle
    else:
        yield handle_or_path


def write_all(handle: BinaryIO, data) -> None:
    """Every byte of ``data`` to ``handle``. A buffered writer to a pipe whose
    reader has gone returns a short count from the write that was blocked,
    and raises nothing: the rest is written again, which raises the
    BrokenPipeError (else the run would end with status 0, its output cut).
    A handle whose ``write`` returns None (codecs' writers, many wrappers)
    wrote it all."""
    view = memoryview(data).cast("B")
    while view.nbytes:
        n = handle.write(view)
        if n is None:
            return
        if n == 0:
            raise BrokenPipeError(32, f"no byte of {view.nbytes:,} written")
        view = view[n:]


def write_lines(handle: BinaryIO, lines: Iterable[str], chunk: int = 10_000) -> None:
    """Text lines to a binary handle, ``chunk`` lines a write."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= chunk:
            write_all(handle, "".join(batch).encode())
            batch.clear()
    write_all(handle, "".join(batch).encode())


@contextlib.contextmanager
def atomic_outputs(paths: dict[str, str | os.PathLike | None],
                   inputs: tuple[str | os.PathLike, ...] = ()) -> Iterator[dict]:
    """:func:`atomic_output` for each of several outputs at once, entered before
    any work so that a path that cannot be written fails early.

    ``paths`` maps each output's option name (for the messages) to its path,
    or None where that output was not asked for (None in the handles too).

    Raises
    ------
    OptionError
        Where two outputs name the same file (standard output included), or an
        output is one of ``inputs``.

    Examples
    --------
    >>> import os, tempfile
    >>> fasta = os.path.join(tempfile.mkdtemp(), "in.fa")
    >>> _ = open(fasta, "w").write(">a\\nMK\\n")
    >>> with atomic_outputs({"-o": fasta}, inputs=(fasta,)):
    ...     pass
    Traceback (most recent call last):
    ...
    pairalign.errors.OptionError: -o .../in.fa is an input file: give another path
    """
    given = {name: os.fspath(p) for name, p in paths.items() if p is not None}
    seen: dict[str, str] = {}
    for name, p in given.items():
        key = p if p == "-" else os.path.realpath(p)
        if key in seen:
            what = "standard output" if p == "-" else p
            raise OptionError(f"{seen[key]} and {name} both write {what}: give one of them "
                              f"another path")
        seen[key] = name
        for source in inputs:
            source = os.fspath(source)
            if (p != "-" and source != "-" and os.path.exists(p) and os.path.exists(source)
                    and os.path.samefile(p, source)):
                raise OptionError(f"{name} {p} is an input file: give another path")
    with contextlib.ExitStack() as stack:
        yield {name: None if p is None else stack.enter_context(atomic_output(p))
               for name, p in paths.items()}


def filter_pairs(batch: PairBatch, min_score: int | None = None,
                 min_identity: float | None = None) -> PairBatch:
    """The pairs scoring at least ``min_score`` with identity at least ``min_identity``.

    Identity is ``identities / length`` (0 for an empty alignment), compared
    exactly with any threshold of up to 9 significant digits (alignments of
    up to a million columns): a pair of identity 3/10 passes
    ``min_identity=0.3``. A longer threshold is taken as the float nearest
    it (``0.33333333333333334`` is 1/3's float, and 1/3 passes it).
    Vectorised; pairs keep their order.

    Raises
    ------
    OptionError
        ``min_identity`` on score-only results (no alignments), or outside [0, 1].

    Examples
    --------
    >>> import pairalign
    >>> res = pairalign.align_all(["MKVLAAGHW", "MKVLSAGHW", "PPPPPPPPP"], mode="global")
    >>> res.pairs.score.tolist()
    [48, -18, -18]
    >>> kept = filter_pairs(res.pairs, min_identity=0.5)
    >>> kept.query.tolist(), kept.target.tolist(), kept.identities.tolist(), kept.length.tolist()
    ([0], [1], [8], [9])
    """
    keep = pair_mask(batch, min_score, min_identity)
    return batch if keep.all() else batch.take(keep)


def pair_mask(batch: PairBatch, min_score: int | None = None,
              min_identity: float | None = None) -> np.ndarray:
    """Which pairs of ``batch`` :func:`filter_pairs` keeps (a boolean mask)."""
    keep = np.ones(len(batch), bool)
    if min_score is not None:
        keep &= batch.score >= min_score
    if min_identity is not None:
        if not 0 <= min_identity <= 1:
            raise OptionError(f"--min-identity must lie in [0, 1], got {min_identity}")
        if len(batch) and (batch.length < 0).any():
            raise OptionError("--min-identity needs alignments: drop --no-traceback")
        length = batch.length.astype(np.float64)
        # identities / length is correctly rounded, so it compares with the float
        # nearest the threshold as the two fractions compare wherever they lie
        # more than an ulp apart: for a threshold of d significant digits they
        # are at least 1 / (length 10^d) apart, so up to 9 digits for 1e6 columns
        ident = np.divide(batch.identities, length, out=np.zeros(len(batch)), where=length > 0)
        keep &= ident >= min_identity
    return keep


def identity_ten_thousandths(identities: np.ndarray, length: np.ndarray) -> np.ndarray:
    """``identities / length`` in units of 1e-4, rounded half up with integers.

    ``(20000 * identities + length) // (2 * length)``; 0 where ``length`` is 0
    (or -1: no traceback).

    Examples
    --------
    >>> identity_ten_thousandths(np.array([1, 2, 1, 0, 7]), np.array([32, 3, 3, 0, 7])).tolist()
    [313, 6667, 3333, 0, 10000]
    """
    ident = np.asarray(identities, np.int64)
    ln = np.asarray(length, np.int64)
    return np.where(ln > 0, (20000 * ident + ln) // np.maximum(2 * ln, 1), 0)


def _id_buffer(ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """All ids (UTF-8) as one byte buffer and ``n + 1`` offsets."""
    raw = [s.encode() for s in ids]
    offsets = np.zeros(len(raw) + 1, np.int64)
    np.cumsum([len(r) for r in raw], out=offsets[1:])
    return np.frombuffer(b"".join(raw), np.uint8), offsets


def tsv_header(traceback: bool = True, cigar: bool = True) -> bytes:
    """The TSV header line (with its newline)."""
    names = TSV_SCORE_ONLY if not traceback else TSV_COLUMNS if cigar else TSV_NO_CIGAR
    return ("\t".join(names) + "\n").encode()


def write_tsv(handle: BinaryIO, result: AlignmentResult, batch: PairBatch | None = None,
              use_m: bool = False, header: bool = True) -> None:
    """One header line (unless ``header`` is False), then one line per pair of
    ``batch`` (default: all of ``result``'s pairs), in the batch's order.

    Columns (:data:`TSV_COLUMNS`): query, target, score, identity (identical
    columns / alignment length, 4 decimals, rounded half up; 0.0000 for an empty
    alignment), length, query_start, query_end, target_start, target_end (starts
    0-based, ends exclusive) and the CIGAR (``=``/``X``, or ``M`` with
    ``use_m``; ``I`` consumes the query; empty for an empty local alignment).
    Score-only results (``result.traceback`` False) give
    :data:`TSV_SCORE_ONLY`: query, target, score, query_end, target_end;
    results without CIGARs (``result.cigar`` False) every column but the
    CIGAR (:data:`TSV_NO_CIGAR`).
    """
    from .kernels import text

    batch = result.pairs if batch is None else batch
    full = bool(result.traceback)
    cigars = full and result.cigar
    if header:
        write_all(handle, tsv_header(full, cigars))
    qbuf, qoff = _id_buffer(result.ids)
    tbuf, toff = (qbuf, qoff) if result.all_vs_all else _id_buffer(result.target_ids)
    qlen, tlen = np.diff(qoff), np.diff(toff)
    no_cigar = np.zeros(0, np.uint8)

    def chunk(s: int) -> np.ndarray:
        e = min(s + CHUNK, len(batch))
        q, t = batch.query[s:e].astype(np.int64), batch.target[s:e].astype(np.int64)
        ints = np.empty((e - s, 6), np.int64)
        for c, col in enumerate((batch.score, batch.length, batch.query_begin,
                                 batch.query_end, batch.target_begin, batch.target_end)):
            ints[:, c] = col[s:e]
        if full:
            ident = identity_ten_thousandths(batch.identities[s:e], batch.length[s:e])
        else:
            ident = np.zeros(e - s, np.int64)
        if cigars:
            o0, o1 = int(batch.op_offsets[s]), int(batch.op_offsets[e])
            residues = None
            if not use_m:
                (qcodes, qpos), (tcodes, tpos) = result.residue_codes()
                residues = (qcodes, qpos[q] + batch.query_begin[s:e], tcodes,
                            tpos[t] + batch.target_begin[s:e])
            cig, cig_off = format_cigars(batch.op_offsets[s:e + 1] - o0,
                                         batch.op_code[o0:o1], batch.op_len[o0:o1], use_m,
                                         residues)
        else:
            cig, cig_off = no_cigar, np.zeros(e - s + 1, np.int64)
        size = int(qlen[q].sum() + tlen[t].sum()) + (e - s) * _LINE_FIXED + len(cig)
        out = np.empty(size, np.uint8)
        end = text.format_rows(q, t, qbuf, qoff, tbuf, toff, ints, ident, cig, cig_off,
                               int(full) + int(cigars), out)
        return out[:end]

    # chunks formatted on several threads (the formatters release the GIL),
    # written in order; at most 2 x threads chunks held at once
    starts = range(0, len(batch), CHUNK)
    threads = min(_FORMAT_THREADS, len(starts))
    if threads <= 1:
        for s in starts:
            write_all(handle, chunk(s))
        return
    pool = ThreadPoolExecutor(threads)
    try:
        ahead: deque = deque()
        for s in starts:
            ahead.append(pool.submit(chunk, s))
            if len(ahead) >= 2 * threads:
                write_all(handle, ahead.popleft().result())
        while ahead:
            write_all(handle, ahead.popleft().result())
    finally:  # on an error or Ctrl-C, chunks not started are dropped
        pool.shutdown(wait=True, cancel_futures=True)


def write_npy(path_or_handle: str | os.PathLike | BinaryIO, result: AlignmentResult) -> None:
    """The score matrix ``result.scores`` as ``.npy`` (int32; ``n x n`` and
    symmetric with a zero diagonal for all-vs-all, ``queries x targets``
    otherwise), to a binary handle or, atomically, to a path.

    Examples
    --------
    >>> import io, pairalign
    >>> buf = io.BytesIO()
    >>> write_npy(buf, pairalign.align_all(["HEAGAWGHEE", "PAWHEAE"]))
    >>> np.load(io.BytesIO(buf.getvalue())).tolist()
    [[0, 17], [17, 0]]
    """
    if hasattr(path_or_handle, "write"):
        np.save(path_or_handle, result.scores)
        return
    if str(path_or_handle) == "-":
        raise OptionError("--format npy needs a file: give -o PATH")
    with atomic_output(path_or_handle) as handle:
        np.save(handle, result.scores)
