"""CPU kernels (numba): inter-sequence SIMD fill with a 4-bit traceback, and its walk.

One *task* aligns one query against a chunk of targets, one per lane. The inner loop
runs over the lanes, so LLVM turns it into 16-bit (or 32-bit) vector code: every
lane is one pair, as every thread is one pair on the GPU. Targets in a chunk are
padded on the right to the longest; padding never changes a real cell, since the
recurrence only looks up and left.

Conventions (shared with the GPU kernels, see ``pairalign.kernels.conventions``):
cells ``(i, j)`` are 1-based, ``i`` over the query (rows), ``j`` over the target;
the traceback nibble of a cell holds the origin of H in bits 0-1 (0 stop,
1 diagonal, 2 E, 3 F), in bit 2 "E extended E" and in bit 3 "F extended F".
Ties: H prefers diagonal, then E, then F (and stops at 0 in local mode); E and F
prefer opening over extending; the end cell is the first best in row-major order.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .simd import iadd, ieq, igt, imax, ior, isel, ishl, isub, nibbles
from .conventions import (GLOBAL, LOCAL, OP_DEL, OP_INS, OP_MATCH, OP_MISMATCH,
                          ORIGIN_DIAG, ORIGIN_E, ORIGIN_STOP, SEMIGLOBAL)

#: Lanes (pairs) per task, by the score type's size in bytes (measured best on
#: AVX-512: 64 lanes of 16 bits, 32 of 32 bits).
LANES = {2: 64, 4: 32}


@njit(cache=True, nogil=True, boundscheck=False)
def _boundary(i, gap_open, gap_extend):
    return 0 if i == 0 else -(gap_open + (i - 1) * gap_extend)


@njit(cache=True, parallel=True, boundscheck=False)
def build_profiles(codes, seq_off, chunk_cols, chunk_width, matrix, width, pad, out):
    """``out[ch, c, j, k]``: score of residue ``c`` against residue ``j`` of lane ``k``'s target.

    Columns past a target's end score ``pad`` (very negative), so that in local
    mode no padding cell can beat a real one.
    """
    nchunks, K, _, lanes = out.shape
    for ch in prange(nchunks):
        for k in range(lanes):
            m = 0
            base = 0
            if k < chunk_width[ch]:
                t = chunk_cols[ch, k]
                m = seq_off[t + 1] - seq_off[t]
                base = seq_off[t]
            for j in range(width):
                if j < m:
                    b = codes[base + j]
                    for c in range(K):
                        out[ch, c, j, k] = matrix[c, b]
                else:
                    for c in range(K):
                        out[ch, c, j, k] = pad


@njit(cache=True, nogil=True, boundscheck=False)
def _fill(mode, a, prof, mlen, M, consts, H, F, tb, want_tb, best, bi, bj):
    """Fill one query against ``lanes`` targets; ends and best scores per lane.

    ``consts`` holds, in the score type: 0, 1, 2, 3, gap open, gap extend,
    minus infinity.
    """
    n = a.shape[0]
    lanes = H.shape[1]
    half = lanes // 2
    zero, one, two, three = consts[0], consts[1], consts[2], consts[3]
    go, ge, neg = consts[4], consts[5], consts[6]
    sh2 = two
    sh3 = three
    gap_open = np.int64(go)
    gap_extend = np.int64(ge)
    e = np.empty(lanes, H.dtype)
    hd = np.empty(lanes, H.dtype)
    hl = np.empty(lanes, H.dtype)
    rb = np.empty(lanes, H.dtype)
    rj = np.empty(lanes, H.dtype)
    tv = np.empty(lanes, H.dtype)
    for j in range(M + 1):
        hb = _boundary(j, gap_open, gap_extend) if mode == GLOBAL else 0
        for k in range(lanes):
            H[j, k] = hb
            F[j, k] = neg
    for k in range(lanes):
        best[k] = 0 if mode == LOCAL else neg
        bi[k] = 0
        bj[k] = 0
    local = mode == LOCAL
    for i in range(1, n + 1):
        pr = prof[a[i - 1]]
        hb = _boundary(i, gap_open, gap_extend) if mode == GLOBAL else 0
        for k in range(lanes):
            hd[k] = H[0, k]
            hl[k] = hb
            e[k] = neg
            H[0, k] = hb
            rb[k] = zero
            rj[k] = zero
        jv = zero
        for j in range(1, M + 1):
            prj = pr[j - 1]
            Hj = H[j]
            Fj = F[j]
            jv = iadd(jv, one)
            for k in range(lanes):
                hup = Hj[k]
                diag = iadd(hd[k], prj[k])
                e_ext = isub(e[k], ge)
                e_open = isub(hl[k], go)
                ev = imax(e_ext, e_open)
                f_ext = isub(Fj[k], ge)
                f_open = isub(hup, go)
                fv = imax(f_ext, f_open)
                h = imax(imax(diag, ev), fv)
                org = isel(ieq(h, diag), one, isel(ieq(h, ev), two, three))
                if local:
                    org = isel(igt(h, zero), org, zero)
                    h = imax(h, zero)
                    t = igt(h, rb[k])
                    rb[k] = isel(t, h, rb[k])
                    rj[k] = isel(t, jv, rj[k])
                e[k] = ev
                Fj[k] = fv
                hd[k] = hup
                hl[k] = h
                Hj[k] = h
                tv[k] = ior(org, ior(ishl(igt(e_ext, e_open), sh2), ishl(igt(f_ext, f_open), sh3)))
            if want_tb:
                row = tb[i - 1, j - 1]
                for k in range(half):
                    row[k] = nibbles(tv[k], tv[k + half])
        # row-major order: the first strictly better cell wins
        if mode == LOCAL:
            for k in range(lanes):
                if rb[k] > best[k]:
                    best[k] = rb[k]
                    bi[k] = i
                    bj[k] = rj[k]
        elif mode == SEMIGLOBAL and i < n:
            for k in range(lanes):
                m = mlen[k]
                if m > 0 and H[m, k] > best[k]:
                    best[k] = H[m, k]
                    bi[k] = i
                    bj[k] = m
    for k in range(lanes):
        m = mlen[k]
        if m == 0:
            continue
        if mode == GLOBAL:
            best[k] = H[m, k]
            bi[k] = n
            bj[k] = m
        elif mode == SEMIGLOBAL:
            for j in range(1, m + 1):
                if H[j, k] > best[k]:
                    best[k] = H[j, k]
                    bi[k] = n
                    bj[k] = j


@njit(cache=True, nogil=True, boundscheck=False)
def _emit(op_code, op_len, pos, cur, count, op):
    """Run-length append ``op``; returns the new (pos, cur, count)."""
    if op == cur:
        return pos, cur, count + 1
    if count > 0:
        op_code[pos] = cur
        op_len[pos] = count
        pos += 1
    return pos, op, 1


@njit(cache=True, nogil=True, boundscheck=False)
def _walk(mode, a, b, tb, lane, ei, ej, op_code, op_len, start):
    """Trace one lane back from ``(ei, ej)``; ops are written forwards from ``start``.

    Returns ``(begin_i, begin_j, n_ops, identities, length)``.
    """
    half = tb.shape[2]
    kk = lane % half
    shift = 4 * (lane // half)
    i = ei
    j = ej
    state = 0  # 0 H, 1 E, 2 F
    pos = start
    cur = np.uint8(255)
    count = 0
    ident = 0
    length = 0
    while True:
        if i == 0 or j == 0:
            if mode == GLOBAL:
                if i > 0:
                    pos, cur, count = _emit(op_code, op_len, pos, cur, count, OP_INS)
                    count += i - 1
                    length += i
                    i = 0
                elif j > 0:
                    pos, cur, count = _emit(op_code, op_len, pos, cur, count, OP_DEL)
                    count += j - 1
                    length += j
                    j = 0
            break
        t = (tb[i - 1, j - 1, kk] >> shift) & 15
        if state == 0:
            org = t & 3
            if org == ORIGIN_STOP:
                break
            if org == ORIGIN_DIAG:
                if a[i - 1] == b[j - 1]:
                    op = OP_MATCH
                    ident += 1
                else:
                    op = OP_MISMATCH
                pos, cur, count = _emit(op_code, op_len, pos, cur, count, op)
                length += 1
                i -= 1
                j -= 1
            elif org == ORIGIN_E:
                state = 1
            else:
                state = 2
        elif state == 1:
            pos, cur, count = _emit(op_code, op_len, pos, cur, count, OP_DEL)
            length += 1
            if (t >> 2) & 1 == 0:
                state = 0
            j -= 1
        else:
            pos, cur, count = _emit(op_code, op_len, pos, cur, count, OP_INS)
            length += 1
            if (t >> 3) & 1 == 0:
                state = 0
            i -= 1
    if count > 0:
        op_code[pos] = cur
        op_len[pos] = count
        pos += 1
    # reverse in place: the walk ran from the end
    lo = start
    hi = pos - 1
    while lo < hi:
        c = op_code[lo]
        op_code[lo] = op_code[hi]
        op_code[hi] = c
        ln = op_len[lo]
        op_len[lo] = op_len[hi]
        op_len[hi] = ln
        lo += 1
        hi -= 1
    return i, j, pos - start, ident, length


@njit(cache=True, parallel=True, boundscheck=False)
def align_tasks(mode, want_tb, codes, seq_off, task_row, task_chunk, task_lane0,
                task_out, chunk_cols, chunk_width, profiles, consts, op_off, out_score, out_qb, out_qe, out_tb, out_te, out_ident,
                out_alen, out_nops, op_code, op_len):
    """Align every task (one query x one chunk of targets) of a window.

    Results of the task's active lanes ``task_lane0[t] .. chunk_width - 1`` go
    to consecutive pair slots from ``task_out[t]``; pair ``p`` writes its
    operations from ``op_off[p]``.
    """
    ntasks = task_row.shape[0]
    dtype = profiles.dtype
    lanes = profiles.shape[3]
    for t in prange(ntasks):
        r = task_row[t]
        ch = task_chunk[t]
        a = codes[seq_off[r]:seq_off[r + 1]]
        n = a.shape[0]
        width = chunk_width[ch]
        lane0 = task_lane0[t]
        mlen = np.zeros(lanes, np.int64)
        M = 0
        for k in range(lane0, width):
            c = chunk_cols[ch, k]
            mlen[k] = seq_off[c + 1] - seq_off[c]
            if mlen[k] > M:
                M = mlen[k]
        H = np.empty((M + 1, lanes), dtype)
        F = np.empty((M + 1, lanes), dtype)
        if want_tb:
            tb = np.empty((n, M, lanes // 2), np.uint8)
        else:
            tb = np.empty((1, 1, lanes // 2), np.uint8)
        best = np.empty(lanes, np.int64)
        bi = np.empty(lanes, np.int64)
        bj = np.empty(lanes, np.int64)
        _fill(mode, a, profiles[ch], mlen, M, consts, H, F, tb, want_tb, best, bi, bj)
        for k in range(lane0, width):
            p = task_out[t] + k - lane0
            out_score[p] = best[k]
            out_qe[p] = bi[k]
            out_te[p] = bj[k]
            if want_tb:
                c = chunk_cols[ch, k]
                b = codes[seq_off[c]:seq_off[c + 1]]
                qb, tbeg, nops, ident, alen = _walk(mode, a, b, tb, k, bi[k], bj[k],
                                                     op_code, op_len, op_off[p])
                out_qb[p] = qb
                out_tb[p] = tbeg
                out_nops[p] = nops
                out_ident[p] = ident
                out_alen[p] = alen
            else:
                out_qb[p] = -1
                out_tb[p] = -1
                out_nops[p] = 0
                out_ident[p] = -1
                out_alen[p] = -1
