"""numba kernels over the columns of a :class:`~pairalign.pairs.PairBatch`:
gathering pairs, orienting them (a flipped pair's I and D runs swapped),
placing them at their ranks. Imported when first used, so that importing
pairalign does not start numba (a GPU run from the command line starts it at
the first window's results)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .conventions import OP_DEL, OP_INS
from ._numba_cache import drop_stale

drop_stale()


@njit(inline="always")
def _rank(a, b, n, ncols, triangle):
    """Pair (a, b)'s rank in input order: row-major, ``a < b`` in a triangle."""
    return a * (2 * n - a - 1) // 2 + (b - a - 1) if triangle else a * ncols + b


@njit(cache=True, parallel=True, nogil=True, boundscheck=False)
def place(n, ncols, triangle, traceback, q, t, score, qb, qe, tb, te, ident, length, op_off,
          o_score, o_qb, o_qe, o_tb, o_te, o_ident, o_length, counts, pos):
    """Each pair's columns at its rank (written to ``pos`` unless it is
    empty); without ``traceback`` only the score and the ends (the rest is -1
    and no operations). The indices follow from the rank:
    :func:`pair_indices`."""
    ranks = pos.shape[0] > 0
    for k in prange(q.shape[0]):
        p = _rank(q[k], t[k], n, ncols, triangle)
        if ranks:
            pos[k] = p
        o_score[p] = score[k]
        o_qe[p] = qe[k]
        o_te[p] = te[k]
        if traceback:
            o_qb[p] = qb[k]
            o_tb[p] = tb[k]
            o_ident[p] = ident[k]
            o_length[p] = length[k]
            counts[p] = op_off[k + 1] - op_off[k]


@njit(cache=True, parallel=True, nogil=True, boundscheck=False)
def place_rows(n, ncols, triangle, traceback, q, t, score, qb, qe, tb, te, ident, length,
               op_off, rows, pos):
    """:func:`place` into one row a rank (``rows``, int32): the score and the
    ends, or with ``traceback`` the score, begins and ends, identities,
    length and operation count, so that a pair's scattered stores touch one
    cache line or two instead of one a column (``pos`` as :func:`place`)."""
    ranks = pos.shape[0] > 0
    for k in prange(q.shape[0]):
        p = _rank(q[k], t[k], n, ncols, triangle)
        if ranks:
            pos[k] = p
        rows[p, 0] = score[k]
        if traceback:
            rows[p, 1] = qb[k]
            rows[p, 2] = qe[k]
            rows[p, 3] = tb[k]
            rows[p, 4] = te[k]
            rows[p, 5] = ident[k]
            rows[p, 6] = length[k]
            rows[p, 7] = op_off[k + 1] - op_off[k]
        else:
            rows[p, 1] = qe[k]
            rows[p, 2] = te[k]


@njit(cache=True, nogil=True, boundscheck=False)
def _row_indices(a, n, ncols, triangle, o_q, o_t):
    if triangle:
        start = a * (2 * n - a - 1) // 2 - a - 1  # pair (a, b) at start + b
        for b in range(a + 1, n):
            o_q[start + b] = a
            o_t[start + b] = b
    else:
        for b in range(ncols):
            o_q[a * ncols + b] = a
            o_t[a * ncols + b] = b


@njit(cache=True, parallel=True, nogil=True, boundscheck=False)
def pair_indices(n, ncols, triangle, o_q, o_t):
    """Query and target of every pair in input order: ``q < t`` row-major
    (``triangle``, ``n`` sequences) or every ``(q, t)`` of ``n`` x ``ncols``.
    Rows ``i`` and ``n - 1 - i`` go to one iteration, so that the threads'
    shares of a triangle are even."""
    for i in prange((n + 1) // 2):
        _row_indices(i, n, ncols, triangle, o_q, o_t)
        if n - 1 - i != i:
            _row_indices(n - 1 - i, n, ncols, triangle, o_q, o_t)


@njit(cache=True, parallel=True, nogil=True, boundscheck=False)
def fill(out, value):
    """``out[:] = value`` on every thread (numpy's is one)."""
    for k in prange(out.shape[0]):
        out[k] = value


@njit(cache=True, parallel=True, nogil=True, boundscheck=False)
def prefix_sums(counts, out):
    """``out[0] = 0``, ``out[k + 1] = counts[:k + 1].sum()``, in parallel: each
    piece's total, the pieces' running sums, then each piece's own (numpy's
    cumsum is one thread, and first-touches ``out`` page by page on it)."""
    n = counts.shape[0]
    pieces = 256
    step = (n + pieces - 1) // pieces
    base = np.zeros(pieces + 1, np.int64)
    for c in prange(pieces):
        s = 0
        for k in range(c * step, min(n, (c + 1) * step)):
            s += counts[k]
        base[c + 1] = s
    for c in range(pieces):
        base[c + 1] += base[c]
    out[0] = 0
    for c in prange(pieces):
        s = base[c]
        for k in range(c * step, min(n, (c + 1) * step)):
            s += counts[k]
            out[k + 1] = s


@njit(cache=True, parallel=True, nogil=True, boundscheck=False)
def scatter_runs(src_off, pos, dst_off, src_code, src_len, dst_code, dst_len):
    for k in prange(pos.shape[0]):
        s = src_off[k]
        d = dst_off[pos[k]]
        for x in range(src_off[k + 1] - s):
            dst_code[d + x] = src_code[s + x]
            dst_len[d + x] = src_len[s + x]


@njit(cache=True, parallel=True, boundscheck=False)
def gather(src, index, out):
    """``out[k] = src[index[k]]``, in parallel (numpy's take is one thread)."""
    for k in prange(index.shape[0]):
        out[k] = src[index[k]]


@njit(cache=True, parallel=True, nogil=True, boundscheck=False)
def orient(row_order, col_order, triangle, q, t, qb, qe, tb, te, op_off, code,
           out_q, out_t, out_qb, out_qe, out_tb, out_te, out_code):
    for k in prange(q.shape[0]):
        a = row_order[q[k]]
        b = col_order[t[k]]
        flip = triangle and a > b
        if flip:
            out_q[k], out_t[k] = b, a
            out_qb[k], out_qe[k], out_tb[k], out_te[k] = tb[k], te[k], qb[k], qe[k]
        else:
            out_q[k], out_t[k] = a, b
            out_qb[k], out_qe[k], out_tb[k], out_te[k] = qb[k], qe[k], tb[k], te[k]
        for x in range(op_off[k], op_off[k + 1]):
            c = code[x]
            if flip and c == OP_INS:
                c = OP_DEL
            elif flip and c == OP_DEL:
                c = OP_INS
            out_code[x] = c


@njit(cache=True, parallel=True, boundscheck=False)
def gather_runs(src_off, index, dst_off, src_code, src_len, dst_code, dst_len):
    for k in prange(index.shape[0]):
        s = src_off[index[k]]
        d = dst_off[k]
        for x in range(dst_off[k + 1] - d):
            dst_code[d + x] = src_code[s + x]
            dst_len[d + x] = src_len[s + x]
