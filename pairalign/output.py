"""Writing results: TSV lines and the score matrix, each file appearing atomically."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import BinaryIO, Iterator

import numpy as np
from numba import njit

from .cigar import format_cigars
from .errors import OptionError
from .pairs import PairBatch
from .results import AlignmentResult

TSV_COLUMNS = ("query", "target", "score", "identity", "length", "query_start",
               "query_end", "target_start", "target_end", "cigar")
TSV_SCORE_ONLY = ("query", "target", "score", "query_end", "target_end")

#: Pairs formatted per chunk: bounds the text held in memory at once.
CHUNK = 100_000


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary handle whose file appears under ``path`` only once complete.

    The data go to a temporary file in the same folder, which is synced and
    renamed over ``path`` on success, and removed on any error (an interrupt
    too): an interrupted run leaves no half-written file that looks complete.
    ``"-"`` writes to standard output.
    """
    if str(path) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def filter_pairs(batch: PairBatch, min_score: int | None = None,
                 min_identity: float | None = None) -> PairBatch:
    """The pairs scoring at least ``min_score`` with identity at least ``min_identity``."""
    keep = np.ones(len(batch), bool)
    if min_score is not None:
        keep &= batch.score >= min_score
    if min_identity is not None:
        if len(batch) and (batch.length < 0).any():
            raise OptionError("--min-identity needs alignments: drop --no-traceback")
        keep &= batch.identities >= min_identity * np.maximum(batch.length, 1)
    return batch if keep.all() else batch.take(keep)


def identity_ten_thousandths(identities: np.ndarray, length: np.ndarray) -> np.ndarray:
    """identities / length in units of 1e-4, rounded half up with integers (exact)."""
    ident = identities.astype(np.int64)
    ln = length.astype(np.int64)
    return np.where(ln > 0, (20000 * ident + ln) // np.maximum(2 * ln, 1), 0)


def _id_buffer(ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    raw = [s.encode() for s in ids]
    offsets = np.zeros(len(raw) + 1, np.int64)
    np.cumsum([len(r) for r in raw], out=offsets[1:])
    return np.frombuffer(b"".join(raw), np.uint8), offsets


@njit(cache=True, boundscheck=False)
def _put_int(out, pos, v):
    if v < 0:
        out[pos] = 45  # '-'
        pos += 1
        v = -v
    digits = 1
    t = v
    while t >= 10:
        t //= 10
        digits += 1
    for d in range(digits - 1, -1, -1):
        out[pos + d] = 48 + v % 10
        v //= 10
    return pos + digits


@njit(cache=True, boundscheck=False)
def _put_bytes(out, pos, src, start, end):
    for k in range(start, end):
        out[pos] = src[k]
        pos += 1
    return pos


@njit(cache=True, boundscheck=False)
def _format_rows(q, t, qbuf, qoff, tbuf, toff, ints, ident, cig, cig_off, full, out):
    pos = 0
    for p in range(q.shape[0]):
        pos = _put_bytes(out, pos, qbuf, qoff[q[p]], qoff[q[p] + 1])
        out[pos] = 9
        pos += 1
        pos = _put_bytes(out, pos, tbuf, toff[t[p]], toff[t[p] + 1])
        out[pos] = 9
        pos += 1
        pos = _put_int(out, pos, ints[p, 0])  # score
        if full:
            out[pos] = 9
            v = ident[p]
            out[pos + 1] = 48 + v // 10000
            out[pos + 2] = 46  # '.'
            v %= 10000
            for d in range(4):
                out[pos + 6 - d] = 48 + v % 10
                v //= 10
            pos += 7
            for c in range(1, 6):  # length, query start/end, target start/end
                out[pos] = 9
                pos = _put_int(out, pos + 1, ints[p, c])
            out[pos] = 9
            pos = _put_bytes(out, pos + 1, cig, cig_off[p], cig_off[p + 1])
        else:
            for c in (3, 5):  # query end, target end
                out[pos] = 9
                pos = _put_int(out, pos + 1, ints[p, c])
        out[pos] = 10
        pos += 1
    return pos


def write_tsv(handle: BinaryIO, result: AlignmentResult, batch: PairBatch | None = None,
              use_m: bool = False) -> None:
    """One header line, then one line per pair (TSV_COLUMNS, or TSV_SCORE_ONLY
    without traceback). Starts are 0-based, ends exclusive; identity has four
    decimals."""
    batch = result.pairs if batch is None else batch
    full = result.traceback
    handle.write(("\t".join(TSV_COLUMNS if full else TSV_SCORE_ONLY) + "\n").encode())
    qbuf, qoff = _id_buffer(result.ids)
    tbuf, toff = (qbuf, qoff) if result.all_vs_all else _id_buffer(result.target_ids)
    longest_id = int(max(np.diff(qoff).max(initial=0), np.diff(toff).max(initial=0)))
    for s in range(0, len(batch), CHUNK):
        part = batch.take(np.arange(s, min(s + CHUNK, len(batch))))
        ints = np.stack([part.score, part.length, part.query_begin, part.query_end,
                         part.target_begin, part.target_end], axis=1).astype(np.int64)
        ident = identity_ten_thousandths(part.identities, part.length)
        if full:
            cig, cig_off = format_cigars(part.op_offsets, part.op_code, part.op_len, use_m)
        else:
            cig, cig_off = np.zeros(0, np.uint8), np.zeros(len(part) + 1, np.int64)
        size = len(part) * (2 * longest_id + 6 * 12 + 12) + len(cig)
        out = np.empty(size, np.uint8)
        end = _format_rows(part.query, part.target, qbuf, qoff, tbuf, toff, ints, ident,
                           cig, cig_off, full, out)
        handle.write(out[:end].tobytes())


def write_npy(path: str | os.PathLike, result: AlignmentResult) -> None:
    """The score matrix (int32; n x n for all-vs-all, queries x targets otherwise)."""
    if str(path) == "-":
        raise OptionError("--format npy needs a file: give -o PATH")
    with atomic_output(path) as handle:
        np.save(handle, result.scores)
