"""CPU kernel for long pairs with few targets a query: one pair on all of a
thread's lanes.

A task of :mod:`.cpu` aligns one query against as many targets as it has
lanes; a query with few targets (a job of a few long reads, the last rows of
a triangle) leaves most lanes idle, and a lone pair runs on one lane. Here a
pair's rows are cut into ``lanes`` bands of ``R`` rows (``R`` even), lane
``k`` holding rows ``k R + 1 .. k R + R``; at step ``t`` lane ``k`` computes
column ``t - k + 1`` of its rows, from what lane ``k - 1`` computed of its
last row at the steps before (a wavefront across lanes, as a GPU warp runs
a wide pair). A step is the task kernel's own vector loop
(:func:`.cpu.make_segment`, ``transposed``) run down the lanes' rows, after
a gather of each lane's scores against its column's residue.

The recurrence, the traceback nibbles, the ties and the end cells are those
of :mod:`.cpu` (see its docstring): the same scores and alignments. The
traceback is a nibble a cell in the task kernel's layout, step by step:
``[t][r][k mod L/2]``, lane ``k``'s nibble the high one from ``L/2`` on,
about half a byte a cell; :func:`.cpu._walk_rows` (``wave_rows``) walks it.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .conventions import GLOBAL, LOCAL, SEMIGLOBAL
from .cpu import (QUARTERS, S_E, S_HD, S_HL, S_RB, S_RJ, S_ROWS, W_FIELDS, _boundary,
                  _col_s, _col_sl, _col_t, _col_tl, _gather_rows, _put_walk, _walk_begin, _walk_rows)

#: Substitution score of the rows past the query's end (the last lane's
#: padding): no real cell depends on them (they are below), and it keeps
#: their values far from overflow.
PAD_SCORE = -(1 << 20)


def traceback_bytes(n, m, lanes: int) -> np.ndarray:
    """Bytes of a pair's traceback of ``n`` rows and ``m`` columns on
    ``lanes`` lanes: a nibble a cell of each step's lanes, its rows a lane
    even."""
    n, m = np.asarray(n, np.int64), np.asarray(m, np.int64)
    rows = -(-n // lanes)
    return (m + lanes - 1) * (rows + (rows & 1)) * (lanes // 2)


@njit(cache=True, nogil=True, boundscheck=False)
def _wave_fill(mode, a, b, mat, K, go, ge, neg, want_tb, tb, H, Es, Hs, Ess, P, S, qrow,
               bcol, bot, res):
    """Fill one pair (query ``a`` of ``n`` rows, target ``b`` of ``m``) on a
    task's lanes (``L = cpu.LANES[4]``, 32-bit scores); its traceback
    (``want_tb``) into ``tb`` (:func:`traceback_bytes`); its score and end
    cell into ``res``. ``mat``: the matrix flat, ``K`` letters a row, and a
    row of PAD_SCORE after them; the others are the worker's scratch:
    ``H``, ``Es``, ``Hs``, ``Ess`` ``(R + 1) L``, ``P`` and ``qrow`` ``R L``,
    ``S`` ``S_ROWS L``, ``bcol`` ``L``, ``bot`` ``(6, L)``."""
    n = a.shape[0]
    m = b.shape[0]
    L = bot.shape[1]
    half = L // 2
    R = (n + L - 1) // L
    R += R & 1
    local = mode == LOCAL
    glob = mode == GLOBAL
    bot_h, bot_h2, bot_f, best, bi, bj = bot[0], bot[1], bot[2], bot[3], bot[4], bot[5]
    for r in range(R):
        for k in range(L):
            i = k * R + r  # the row's 0-based index
            qrow[r * L + k] = (a[i] if i < n else K) * K
            H[(r + 1) * L + k] = _boundary(i + 1, go, ge) if glob else 0
            Es[(r + 1) * L + k] = neg
    for k in range(L):  # each lane's last row before its first step: column 0
        bot_h[k] = _boundary((k + 1) * R, go, ge) if glob else 0
        bot_h2[k] = bot_h[k]
        bot_f[k] = neg
        best[k] = 0
        bi[k] = 0
        bj[k] = 0
    kn, rn = (n - 1) // R, (n - 1) % R  # where row n is
    zero, one, nq, rows = np.int64(0), np.int64(1), np.int64(QUARTERS), np.int64(R)
    best_n, bj_n = neg, 0
    for t in range(m + L - 1):
        # each lane takes in lane k - 1's last row at its column (step t - 1)
        # and the one before (t - 2); lane 0 takes row 0
        for k in range(L - 1, 0, -1):
            S[S_HD * L + k] = bot_h2[k - 1]
            S[S_HL * L + k] = bot_h[k - 1]
            S[S_E * L + k] = bot_f[k - 1]
        S[S_HD * L] = _boundary(t, go, ge) if glob else 0
        S[S_HL * L] = _boundary(t + 1, go, ge) if glob else 0
        S[S_E * L] = neg
        for k in range(L):
            S[S_RB * L + k] = 0
            S[S_RJ * L + k] = 0
        lo, hi = max(0, t - m + 1), min(L - 1, t)  # the lanes on the target
        ramp = lo > 0 or hi < L - 1
        for k in range(L):
            bcol[k] = b[t - k] if lo <= k <= hi else 0
        _gather_rows(P, mat, qrow, bcol, rows)  # the lanes' scores
        if ramp:
            Hs[:] = H
            Ess[:] = Es
        tboff = t * R * half
        if want_tb:
            if local:
                _col_tl(H, Es, P, zero, tb, tboff, S, zero, nq, one, rows, go, ge)
            else:
                _col_t(H, Es, P, zero, tb, tboff, S, zero, nq, one, rows, go, ge)
        elif local:
            _col_sl(H, Es, P, zero, tb, tboff, S, zero, nq, one, rows, go, ge)
        else:
            _col_s(H, Es, P, zero, tb, tboff, S, zero, nq, one, rows, go, ge)
        if ramp:  # a lane off the target keeps its rows (before it, column 0's)
            for k in range(L):
                if k < lo or k > hi:
                    for r in range(1, R + 1):
                        H[r * L + k] = Hs[r * L + k]
                        Es[r * L + k] = Ess[r * L + k]
                    S[S_HL * L + k] = H[R * L + k]
                    S[S_E * L + k] = neg
        for k in range(L):
            bot_h2[k] = bot_h[k]
            bot_h[k] = S[S_HL * L + k]
            bot_f[k] = S[S_E * L + k]
        if local:  # each lane's column: its first best; the lane's, row-major
            for k in range(lo, hi + 1):
                v = S[S_RB * L + k]
                i = k * R + S[S_RJ * L + k]
                if v > 0 and i <= n and (v > best[k] or (v == best[k] and i < bi[k])):
                    best[k] = v
                    bi[k] = i
                    bj[k] = t - k + 1
        elif mode == SEMIGLOBAL and lo <= kn <= hi:  # row n, its first best
            v = H[(rn + 1) * L + kn]
            if v > best_n:
                best_n = v
                bj_n = t - kn + 1
    # the end cell, as cpu._fill finds it (row-major order, first best)
    if glob:
        res[0], res[1], res[2] = H[(rn + 1) * L + kn], n, m
        return
    top, ti, tj = (0 if local else neg), 0, 0
    if local:
        for k in range(L):
            if best[k] > top:
                top, ti, tj = best[k], bi[k], bj[k]
    else:
        for i in range(n - 1):  # column m above row n
            v = H[(i % R + 1) * L + i // R]
            if v > top:
                top, ti, tj = v, i + 1, m
        if best_n > top:
            top, ti, tj = best_n, n, bj_n
    res[0], res[1], res[2] = top, ti, tj


@njit(cache=True, parallel=True, boundscheck=False)
def align_pairs(mode, want_tb, codes, seq_off, p_row, p_col, p_out, mat, K, go, ge, neg,
                lanes, order, wstart, op_off, out_score, out_qb, out_qe, out_tb, out_te,
                out_ident, out_alen, out_nops, op_code, op_len):
    """Align pairs (query ``p_row[p]``, target ``p_col[p]``, sequences of
    ``codes``) one at a time on ``lanes`` lanes, their results into slot
    ``p_out[p]`` of the ``out_*`` columns and their operations from
    ``op_off[p_out[p]]``. Worker ``w`` runs pairs ``order[wstart[w]:wstart[w +
    1]]`` with its own scratch (the largest of its pairs')."""
    nworkers = wstart.shape[0] - 1
    for w in prange(nworkers):
        L = lanes
        rmax = 2
        tbmax = 1
        for x in range(wstart[w], wstart[w + 1]):
            p = order[x]
            n = seq_off[p_row[p] + 1] - seq_off[p_row[p]]
            m = seq_off[p_col[p] + 1] - seq_off[p_col[p]]
            rows = (n + L - 1) // L
            rows += rows & 1
            rmax = max(rmax, rows)
            if want_tb:
                tbmax = max(tbmax, (m + L - 1) * rows * (L // 2))
        H = np.empty((rmax + 1) * L, np.int32)
        Es = np.empty((rmax + 1) * L, np.int32)
        Hs = np.empty((rmax + 1) * L, np.int32)
        Ess = np.empty((rmax + 1) * L, np.int32)
        P = np.empty(rmax * L, np.int32)
        S = np.empty(S_ROWS * L, np.int32)
        qrow = np.empty(rmax * L, np.int32)
        bcol = np.empty(L, np.int32)
        bot = np.empty((6, L), np.int32)
        tb = np.empty(tbmax, np.uint8)
        res = np.empty(3, np.int64)
        st = np.empty(W_FIELDS, np.int64)
        r0 = np.int64(0)  # not the literal 0: numba would compile _walk_rows for it
        for x in range(wstart[w], wstart[w + 1]):
            p = order[x]
            a = codes[seq_off[p_row[p]]:seq_off[p_row[p] + 1]]
            b = codes[seq_off[p_col[p]]:seq_off[p_col[p] + 1]]
            n = a.shape[0]
            m = b.shape[0]
            R = (n + L - 1) // L
            R += R & 1
            _wave_fill(mode, a, b, mat, K, go, ge, neg, want_tb, tb, H[:(R + 1) * L],
                       Es[:(R + 1) * L], Hs[:(R + 1) * L], Ess[:(R + 1) * L], P, S, qrow,
                       bcol, bot, res)
            q = p_out[p]
            out_score[q] = res[0]
            out_qe[q] = res[1]
            out_te[q] = res[2]
            if want_tb:
                _walk_begin(st, res[1], res[2], op_off[q])
                T = m + L - 1
                _walk_rows(mode, a, b, tb[:T * R * (L // 2)].reshape((T, R, L // 2)), r0, r0,
                           st, op_code, op_len, R)
            _put_walk(q, st, want_tb, op_code, op_len, out_qb, out_tb, out_nops, out_ident,
                      out_alen)
