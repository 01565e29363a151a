"""Columnar results for a batch of aligned pairs, and operations on them."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np
from numba import njit, prange

from .kernels.conventions import OP_DEL, OP_INS

_COLUMNS = ("query", "target", "score", "query_begin", "query_end", "target_begin",
            "target_end", "identities", "length")


@dataclass(frozen=True)
class PairBatch:
    """Results of many pairs, one numpy array per field.

    Coordinates are 0-based, ends exclusive. ``op_code``/``op_len`` hold the
    run-length alignment operations of every pair, pair ``p`` at
    ``op_offsets[p]:op_offsets[p + 1]`` (codes in
    :mod:`pairalign.kernels.conventions`). Without traceback the begins,
    identities and lengths are -1 and there are no operations.
    """

    query: np.ndarray
    target: np.ndarray
    score: np.ndarray
    query_begin: np.ndarray
    query_end: np.ndarray
    target_begin: np.ndarray
    target_end: np.ndarray
    identities: np.ndarray
    length: np.ndarray
    op_offsets: np.ndarray
    op_code: np.ndarray
    op_len: np.ndarray

    def __len__(self) -> int:
        return len(self.score)

    @property
    def n_ops(self) -> np.ndarray:
        return np.diff(self.op_offsets)

    @classmethod
    def empty(cls) -> "PairBatch":
        z = np.zeros(0, np.int32)
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), z, z, z, z, z, z, z,
                   np.zeros(1, np.int64), np.zeros(0, np.uint8), z)

    @classmethod
    def concat(cls, batches: list["PairBatch"]) -> "PairBatch":
        """One batch holding all pairs of ``batches``, in order."""
        batches = [b for b in batches if len(b)]
        if not batches:
            return cls.empty()
        if len(batches) == 1:
            return batches[0]
        cols = {name: np.concatenate([getattr(b, name) for b in batches]) for name in _COLUMNS}
        counts = np.concatenate([b.n_ops for b in batches])
        return cls(**cols, op_offsets=_offsets(counts),
                   op_code=np.concatenate([b.op_code for b in batches]),
                   op_len=np.concatenate([b.op_len for b in batches]))

    def take(self, index: np.ndarray) -> "PairBatch":
        """The pairs at ``index`` (an integer array or a boolean mask), in that order."""
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        index = index.astype(np.int64, copy=False)
        cols = {}
        for name in _COLUMNS:
            src = getattr(self, name)
            cols[name] = np.empty(len(index), src.dtype)
            _gather(src, index, cols[name])
        counts = self.n_ops[index]
        offsets = _offsets(counts)
        code = np.empty(int(offsets[-1]), self.op_code.dtype)
        length = np.empty(int(offsets[-1]), self.op_len.dtype)
        _gather_runs(self.op_offsets, index, offsets, self.op_code,
                     self.op_len, code, length)
        return PairBatch(**cols, op_offsets=offsets, op_code=code, op_len=length)

    def swapped(self, mask: np.ndarray) -> "PairBatch":
        """Pairs under ``mask`` seen from the other side: query and target exchanged."""
        mask = np.asarray(mask, dtype=bool)
        if not mask.any():
            return self
        pairs = {}
        for a, b in (("query", "target"), ("query_begin", "target_begin"),
                     ("query_end", "target_end")):
            x, y = getattr(self, a), getattr(self, b)
            pairs[a], pairs[b] = np.empty_like(x), np.empty_like(y)
            _exchange(mask, x, y, pairs[a], pairs[b])
        code = self.op_code.copy()
        _swap_ins_del(self.op_offsets, mask, code)
        return replace(self, **pairs, op_code=code)

    def save(self, path) -> None:
        """Write every array to an ``.npz`` file (see :meth:`load`)."""
        np.savez(path, **{f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def load(cls, path) -> "PairBatch":
        with np.load(path) as data:
            return cls(**{f.name: data[f.name] for f in fields(cls)})

    def ops(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """Operation codes and run lengths of pair ``p``."""
        s, e = self.op_offsets[p], self.op_offsets[p + 1]
        return self.op_code[s:e], self.op_len[s:e]

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f.name).nbytes for f in fields(self))


class Placement:
    """One batch built from several, each pair put at a given position.

    Columns are placed as batches arrive; operations once all are in (their
    offsets follow from every pair's count). Every position from 0 to ``total
    - 1`` must be given exactly once. Numba-parallel: hold the caller's guard
    where worker threads run numba too.
    """

    def __init__(self, total: int) -> None:
        template = PairBatch.empty()
        self.cols = {name: np.empty(total, getattr(template, name).dtype) for name in _COLUMNS}
        self.counts = np.zeros(total, np.int64)
        self.ops: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, batch: PairBatch, pos: np.ndarray) -> None:
        """Put ``batch``'s pair ``k`` at position ``pos[k]``."""
        pos = np.asarray(pos, np.int64)
        for name in _COLUMNS:
            _scatter(getattr(batch, name), pos, self.cols[name])
        self.counts[pos] = batch.n_ops
        if len(batch.op_code):
            self.ops.append((pos, batch.op_offsets, batch.op_code, batch.op_len))

    def finish(self) -> PairBatch:
        offsets = _offsets(self.counts)
        total = int(offsets[-1])
        code = np.empty(total, np.uint8)
        length = np.empty(total, np.int32)
        for pos, src_off, src_code, src_len in self.ops:
            _scatter_runs(src_off, pos, offsets, src_code, src_len, code, length)
        self.ops = []
        return PairBatch(**self.cols, op_offsets=offsets, op_code=code, op_len=length)


@njit(cache=True, parallel=True, boundscheck=False)
def _scatter(src, pos, out):
    """``out[pos[k]] = src[k]``, in parallel."""
    for k in prange(pos.shape[0]):
        out[pos[k]] = src[k]


@njit(cache=True, parallel=True, boundscheck=False)
def _scatter_runs(src_off, pos, dst_off, src_code, src_len, dst_code, dst_len):
    for k in prange(pos.shape[0]):
        s = src_off[k]
        d = dst_off[pos[k]]
        for x in range(src_off[k + 1] - s):
            dst_code[d + x] = src_code[s + x]
            dst_len[d + x] = src_len[s + x]


@njit(cache=True, parallel=True, boundscheck=False)
def _gather(src, index, out):
    """``out[k] = src[index[k]]``, in parallel (numpy's take is one thread)."""
    for k in prange(index.shape[0]):
        out[k] = src[index[k]]


@njit(cache=True, parallel=True, boundscheck=False)
def _exchange(mask, x, y, out_x, out_y):
    """``out_x, out_y = y, x`` where ``mask``, else ``x, y``; in parallel."""
    for k in prange(mask.shape[0]):
        if mask[k]:
            out_x[k] = y[k]
            out_y[k] = x[k]
        else:
            out_x[k] = x[k]
            out_y[k] = y[k]


@njit(cache=True, parallel=True, boundscheck=False)
def _swap_ins_del(offsets, mask, code):
    """Exchange insertions and deletions in the operations of the pairs under ``mask``."""
    for p in prange(mask.shape[0]):
        if mask[p]:
            for k in range(offsets[p], offsets[p + 1]):
                if code[k] == OP_INS:
                    code[k] = OP_DEL
                elif code[k] == OP_DEL:
                    code[k] = OP_INS


@njit(cache=True, parallel=True, boundscheck=False)
def _gather_runs(src_off, index, dst_off, src_code, src_len, dst_code, dst_len):
    for k in prange(index.shape[0]):
        s = src_off[index[k]]
        d = dst_off[k]
        for x in range(dst_off[k + 1] - d):
            dst_code[d + x] = src_code[s + x]
            dst_len[d + x] = src_len[s + x]


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _ranges(starts, counts, xp=np):
    """Concatenation of ``arange(s, s + c)`` for every start and count, vectorised.

    ``xp`` is the array module (numpy, or cupy for device arrays).
    """
    counts = xp.asarray(counts, dtype=xp.int64)
    total = int(counts.sum())
    if total == 0:
        return xp.zeros(0, xp.int64)
    nz = counts > 0
    starts, counts = xp.asarray(starts, xp.int64)[nz], counts[nz]
    step = xp.ones(total, xp.int64)
    ends = xp.cumsum(counts)
    step[0] = starts[0]
    step[ends[:-1]] = starts[1:] - (starts[:-1] + counts[:-1] - 1)
    return xp.cumsum(step)


def compact_ops(op_code: np.ndarray, op_len: np.ndarray, bound_offsets: np.ndarray,
                n_ops: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Squeeze per-pair operation slots (sized by a bound) down to what was written."""
    gather = _ranges(bound_offsets[:-1], n_ops)
    return _offsets(n_ops), op_code[gather], op_len[gather]
