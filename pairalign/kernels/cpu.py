"""CPU kernels (numba): inter-sequence SIMD fill with a 4-bit traceback, and its walk.

One *task* aligns one query against a chunk of targets, one per lane: every lane is
one pair, as every thread is one pair on the GPU. The row loop is written as LLVM
vector IR (``make_segment``): the lanes' H/E state stays in registers along a row,
no runtime alias checks, and separate code for score-only, traceback and local
tracking. Targets in a chunk are padded on the right to the longest; a column is
computed only for the quarters of lanes that still have a target residue there
(padding never changes a real cell, since the recurrence only looks up and left).
Tasks are split among workers longest first; each worker reuses its buffers.
A task too large to hold its whole traceback (``n * M * lanes / 2`` bytes) is
checkpointed: the fill keeps ``H`` and ``F`` every few rows and writes no
traceback, and the walk fills again, last first, from their checkpoints, the
blocks of rows that it passes through (:func:`align_tasks`), each lane to the
column its walk enters the block at: at most about half a fill more, in a
fraction of the memory.

Conventions (shared with the GPU kernels, see ``pairalign.kernels.conventions``):
cells ``(i, j)`` are 1-based, ``i`` over the query (rows), ``j`` over the target;
the traceback nibble of a cell holds the origin of H in bits 0-1 (0 stop,
1 diagonal, 2 E, 3 F), in bit 2 "E extended E" and in bit 3 "F extended F".
Ties: H prefers diagonal, then E, then F (and stops at 0 in local mode); E and F
prefer opening over extending; the end cell is the first best in row-major order.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from .conventions import (GLOBAL, LOCAL, OP_ALIGNED, OP_DEL, OP_INS,
                          ORIGIN_DIAG, ORIGIN_E, ORIGIN_STOP, SEMIGLOBAL)
from ._numba_cache import drop_stale

drop_stale()

# The vector code lives here, not in simd.py: numba's cache checks only the
# timestamp of the file that defines a cached function, so code generated for
# ``_fill`` must change with this file.

def _register_bits() -> int:
    """Bits of a vector register of the CPU that numba compiles for (its
    features as numba takes them): 512 with AVX-512 (BW, for 16-bit lanes),
    256 with AVX2, else 128."""
    from numba import config
    from numba.core.codegen import get_host_cpu_features

    features = config.CPU_FEATURES
    if features is None:
        features = get_host_cpu_features()
    have = {f[1:] for f in features.split(",") if f.startswith("+")}
    return 512 if "avx512bw" in have else 256 if "avx2" in have else 128


#: Lanes (pairs) per task by score byte width: two vector registers a vector,
#: which LLVM splits as the target needs. Measured on one machine of each
#: (400 proteome proteins, 2 threads): with AVX-512, 1024 bits (64 lanes of 16
#: bits) beat 512; with AVX2 only, 512 bits beat 1024 (local score-only 1.76x,
#: with traceback 1.16x) and 256 (1.5x).
TASK_LANES = {size: 2 * _register_bits() // (8 * size) for size in (2, 4)}
#: A task's lanes are handled in quarters: at column ``j`` only the quarters with a
#: target of at least ``j`` residues are computed.
QUARTERS = 4
#: Rows of the per-lane state scratch: H diagonal, H left, E, row best, its column.
S_HD, S_HL, S_E, S_RB, S_RJ = 0, 1, 2, 3, 4
S_ROWS = 5


def _splat(builder, vty, x):
    undef = ir.Constant(vty, ir.Undefined)
    v = builder.insert_element(undef, x, ir.Constant(ir.IntType(32), 0))
    zero = ir.Constant(ir.VectorType(ir.IntType(32), vty.count), None)
    return builder.shuffle_vector(v, undef, zero)


def _vptr(builder, base, offset, vty):
    return builder.bitcast(builder.gep(base, [offset]), vty.as_pointer())


def _smax(builder, x, y):
    return builder.select(builder.icmp_signed(">", x, y), x, y)


def make_segment(want_tb: bool, local: bool, transposed: bool = False):
    """An intrinsic computing columns ``j0..j1`` of one DP row for quarters ``q0..q1-1``.

    ``transposed``: the row is a column of the pair (:mod:`.cpu_wave`: ``j``
    runs down a lane's rows, ``H``/``F`` hold its rows' H and E of the column
    before, the running ``E`` is the pair's F), so the traceback's E and F
    trade places: its nibble is the pair's (E = this ``F``, ties ``diag``,
    then ``F``, then ``E`` here). Every lane then takes part (``q0``, ``q1``
    are 0 and QUARTERS): one loop, not one for each run of quarters, for
    numba to compile in its caller.

    ``segment(H, F, P, poff, TB, tboff, S, q0, q1, j0, j1, go, ge)``; every buffer
    is flat, a row of ``L`` lanes (``L = TASK_LANES[itemsize]``):

    - ``H``, ``F``: the previous row's H and F at columns ``0..M``, overwritten
      with this row's (row ``j`` at ``j * L``);
    - ``P[poff + (j - 1) * L + k]``: the substitution score of this row's residue
      against residue ``j`` of lane ``k``'s target;
    - ``TB[tboff + (j - 1) * L / 2 + k]``: the traceback byte of lanes ``k`` (low
      nibble) and ``k + L / 2`` (high nibble), written when ``want_tb``;
    - ``S[r * L + k]``: lane ``k``'s running state, row ``r`` one of ``S_*``,
      read at ``j0`` and written back after ``j1`` (``S_RB``/``S_RJ`` only when
      ``local``).

    Lanes outside the quarters are neither read nor written, except that their
    traceback nibbles in the bytes written become 0.
    """

    @intrinsic
    def segment(typingctx, H, F, P, poff, TB, tboff, S, q0, q1, j0, j1, go, ge):
        T = H.dtype
        if not (isinstance(T, types.Integer) and F.dtype == T and P.dtype == T
                and S.dtype == T and go == T and ge == T):
            return None
        sig = types.none(H, F, P, poff, TB, tboff, S, q0, q1, j0, j1, go, ge)

        def codegen(context, builder, sig, args):
            (H_, F_, P_, poff_, TB_, tboff_, S_, q0_, q1_, j0_, j1_, go_, ge_) = args
            at = sig.args
            i64 = ir.IntType(64)
            ity = context.get_value_type(T)
            bits = ity.width
            L = TASK_LANES[bits // 8]
            half = L // 2
            g = L // QUARTERS

            def data(k, val):
                return context.make_array(at[k])(context, builder, val).data

            def as64(k, val):
                return context.cast(builder, val, at[k], types.int64)

            Hp, Fp, Pp, TBp, Sp = data(0, H_), data(1, F_), data(2, P_), data(4, TB_), data(6, S_)
            poff64, tboff64 = as64(3, poff_), as64(5, tboff_)
            q0v, q1v = as64(7, q0_), as64(8, q1_)
            j0v, j1v = as64(9, j0_), as64(10, j1_)
            if transposed:
                _emit_loop(builder, ity, L, half, _parts(0, QUARTERS, g), Hp, Fp, Pp, poff64,
                           TBp, tboff64, Sp, j0v, j1v, go_, ge_, want_tb, local, transposed)
                return context.get_dummy_value()
            key = builder.add(builder.mul(q0v, i64(8)), q1v)
            fn = builder.function
            bb_end = fn.append_basic_block("seg.end")
            sw = builder.switch(key, bb_end)
            for a in range(QUARTERS):
                for b in range(a + 1, QUARTERS + 1):
                    bb = fn.append_basic_block(f"seg.q{a}{b}")
                    sw.add_case(i64(a * 8 + b), bb)
                    builder.position_at_end(bb)
                    _emit_loop(builder, ity, L, half, _parts(a, b, g), Hp, Fp, Pp, poff64,
                               TBp, tboff64, Sp, j0v, j1v, go_, ge_, want_tb, local,
                               transposed)
                    builder.branch(bb_end)
            builder.position_at_end(bb_end)
            return context.get_dummy_value()

        return sig, codegen

    return segment


def _parts(a, b, g):
    """Lanes of quarters ``a..b-1`` as ``(offset, width)`` parts of one or two quarters
    (power-of-two vectors: LLVM scalarises a 3-quarter vector)."""
    out = []
    q = a
    while q < b:
        n = 2 if b - q >= 2 else 1
        out.append((q * g, n * g))
        q += n
    return out


def _emit_loop(builder, ity, L, half, parts, Hp, Fp, Pp, poff, TBp, tboff, Sp, j0, j1,
               go, ge, want_tb, local, transposed=False):
    i64 = ir.IntType(64)
    i32 = ir.IntType(32)
    i8 = ir.IntType(8)
    align = ity.width // 8

    def vload(base, offset, vty):
        ld = builder.load(_vptr(builder, base, offset, vty))
        ld.align = align
        return ld

    def vstore(val, base, offset):
        st = builder.store(val, _vptr(builder, base, offset, val.type))
        st.align = align

    def const(vty, x):
        return ir.Constant(vty, [ir.Constant(ity, x)] * vty.count)

    state_rows = [S_HD, S_HL, S_E] + ([S_RB, S_RJ] if local else [])
    vtys = [ir.VectorType(ity, w) for _, w in parts]
    GO = [_splat(builder, v, go) for v in vtys]
    GE = [_splat(builder, v, ge) for v in vtys]
    init = [[vload(Sp, i64(r * L + off), v) for r in state_rows]
            for (off, _), v in zip(parts, vtys)]
    fn = builder.function
    pre = builder.block
    bb_loop = fn.append_basic_block("seg.loop")
    bb_done = fn.append_basic_block("seg.done")
    builder.cbranch(builder.icmp_signed("<=", j0, j1), bb_loop, bb_done)

    builder.position_at_end(bb_loop)
    j = builder.phi(i64)
    j.add_incoming(j0, pre)
    phis = []
    for vals, v in zip(init, vtys):
        row_phis = []
        for x in vals:
            p = builder.phi(v)
            p.add_incoming(x, pre)
            row_phis.append(p)
        phis.append(row_phis)
    jm1 = builder.sub(j, i64(1))
    rowj = builder.mul(j, i64(L))
    rowp = builder.add(poff, builder.mul(jm1, i64(L)))
    hvty = ir.VectorType(i8, half)
    packed = ir.Constant(hvty, None)
    nxt = []
    for pi, ((off, w), vty) in enumerate(zip(parts, vtys)):
        hd, hl, e = phis[pi][0], phis[pi][1], phis[pi][2]
        ZERO = const(vty, 0)
        row = builder.add(rowj, i64(off))
        hup = vload(Hp, row, vty)
        fup = vload(Fp, row, vty)
        prj = vload(Pp, builder.add(rowp, i64(off)), vty)
        diag = builder.add(hd, prj)
        e_ext = builder.sub(e, GE[pi])
        e_open = builder.sub(hl, GO[pi])
        ev = _smax(builder, e_ext, e_open)
        f_ext = builder.sub(fup, GE[pi])
        f_open = builder.sub(hup, GO[pi])
        fv = _smax(builder, f_ext, f_open)
        h = _smax(builder, _smax(builder, diag, ev), fv)
        if want_tb:
            pe = fv if transposed else ev  # the pair's E (transposed: fv here)
            org = builder.select(builder.icmp_signed("==", h, diag), const(vty, 1),
                                 builder.select(builder.icmp_signed("==", h, pe), const(vty, 2),
                                                const(vty, 3)))
            if local:
                org = builder.select(builder.icmp_signed(">", h, ZERO), org, ZERO)
            e_gt = builder.icmp_signed(">", e_ext, e_open)
            f_gt = builder.icmp_signed(">", f_ext, f_open)
            if transposed:
                e_gt, f_gt = f_gt, e_gt
            eb = builder.select(e_gt, const(vty, 4), ZERO)
            fb = builder.select(f_gt, const(vty, 8), ZERO)
            tv = builder.trunc(builder.or_(org, builder.or_(eb, fb)), ir.VectorType(i8, w))
            zb = ir.Constant(ir.VectorType(i8, w), None)
            # byte k holds lane k (low nibble) and lane k + L/2 (high nibble)
            lo = [x - off if off <= x < off + w else w for x in range(half)]
            hi = [x + half - off if off <= x + half < off + w else w for x in range(half)]
            if any(v < w for v in lo):
                packed = builder.or_(packed, builder.shuffle_vector(
                    tv, zb, ir.Constant(ir.VectorType(i32, half), lo)))
            if any(v < w for v in hi):
                hib = builder.shuffle_vector(tv, zb, ir.Constant(ir.VectorType(i32, half), hi))
                packed = builder.or_(packed, builder.shl(
                    hib, ir.Constant(hvty, [ir.Constant(i8, 4)] * half)))
        if local:
            h = _smax(builder, h, ZERO)
            rb, rj = phis[pi][3], phis[pi][4]
            t = builder.icmp_signed(">", h, rb)
            jv = _splat(builder, vty, builder.trunc(j, ity))
            nxt_rb = builder.select(t, h, rb)
            nxt_rj = builder.select(t, jv, rj)
        vstore(h, Hp, row)
        vstore(fv, Fp, row)
        nxt.append([hup, h, ev] + ([nxt_rb, nxt_rj] if local else []))
    if want_tb:
        tbp = builder.bitcast(builder.gep(TBp, [builder.add(tboff, builder.mul(jm1, i64(half)))]),
                              hvty.as_pointer())
        st = builder.store(packed, tbp)
        st.align = 1
    j_next = builder.add(j, i64(1))
    body_end = builder.block
    j.add_incoming(j_next, body_end)
    for pp, nn in zip(phis, nxt):
        for p, v in zip(pp, nn):
            p.add_incoming(v, body_end)
    builder.cbranch(builder.icmp_signed("<=", j_next, j1), bb_loop, bb_done)

    builder.position_at_end(bb_done)
    final = []
    for (off, _), v, ii, nn in zip(parts, vtys, init, nxt):
        for r, x0, x1 in zip(state_rows, ii, nn):
            p = builder.phi(v)
            p.add_incoming(x0, pre)
            p.add_incoming(x1, body_end)
            final.append((p, r * L + off))
    for p, at in final:
        vstore(p, Sp, i64(at))


@intrinsic
def _gather_rows(typingctx, P, mat, qrow, bcol, R):
    """``P[r * L + k] = mat[qrow[r * L + k] + bcol[k]]`` for ``r < R``, ``L =
    TASK_LANES[4]``, all int32 (:mod:`.cpu_wave`'s scores): one vector
    gather a row (``llvm.masked.gather``; LLVM picks the instructions), which
    numba's loop of it was not."""
    i32t = types.int32
    if not all(isinstance(x, types.Array) and x.dtype == i32t for x in (P, mat, qrow, bcol)):
        return None
    sig = types.none(P, mat, qrow, bcol, R)

    def codegen(context, builder, sig, args):
        at = sig.args
        Pp, Mp, Qp, Bp = (context.make_array(at[k])(context, builder, args[k]).data
                          for k in range(4))
        L = TASK_LANES[4]
        i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
        vty, v64 = ir.VectorType(i32, L), ir.VectorType(i64, L)
        pty = ir.VectorType(ir.PointerType(), L)
        name = f"llvm.masked.gather.v{L}i32.v{L}p0"
        fn = builder.module.globals.get(name) or ir.Function(
            builder.module, ir.FunctionType(vty, [pty, i32, ir.VectorType(i1, L), vty]), name)

        def vload(base, offset):
            ld = builder.load(_vptr(builder, base, offset, vty))
            ld.align = 4
            return ld

        bvec = vload(Bp, i64(0))
        base = _splat(builder, v64, builder.ptrtoint(Mp, i64))
        by4 = ir.Constant(v64, [ir.Constant(i64, 2)] * L)  # a shift: 4 bytes an entry
        mask = ir.Constant(ir.VectorType(i1, L), [ir.Constant(i1, 1)] * L)
        rows = context.cast(builder, args[4], at[4], types.int64)
        fn_ = builder.function
        pre = builder.block
        loop, done = fn_.append_basic_block("gather.loop"), fn_.append_basic_block("gather.done")
        builder.cbranch(builder.icmp_signed(">", rows, i64(0)), loop, done)
        builder.position_at_end(loop)
        r = builder.phi(i64)
        r.add_incoming(i64(0), pre)
        off = builder.mul(r, i64(L))
        idx = builder.sext(builder.add(vload(Qp, off), bvec), v64)
        ptrs = builder.inttoptr(builder.add(base, builder.shl(idx, by4)), pty)
        got = builder.call(fn, [ptrs, i32(4), mask, ir.Constant(vty, ir.Undefined)])
        st = builder.store(got, _vptr(builder, Pp, off, vty))
        st.align = 4
        nxt = builder.add(r, i64(1))
        r.add_incoming(nxt, builder.block)
        builder.cbranch(builder.icmp_signed("<", nxt, rows), loop, done)
        builder.position_at_end(done)
        return context.get_dummy_value()

    return sig, codegen


#: Lanes (pairs) per task, by the score type's size in bytes (see TASK_LANES).
LANES = dict(TASK_LANES)

_SEG = {(tb, lc): make_segment(tb, lc) for tb in (False, True) for lc in (False, True)}
_seg_s, _seg_sl = _SEG[False, False], _SEG[False, True]
_seg_t, _seg_tl = _SEG[True, False], _SEG[True, True]
#: The same down a pair's column, every lane (cpu_wave).
_COL = {(tb, lc): make_segment(tb, lc, True) for tb in (False, True) for lc in (False, True)}
_col_s, _col_sl = _COL[False, False], _COL[False, True]
_col_t, _col_tl = _COL[True, False], _COL[True, True]


@njit(cache=True, nogil=True, boundscheck=False)
def _boundary(i, gap_open, gap_extend):
    return 0 if i == 0 else -(gap_open + (i - 1) * gap_extend)


@njit(cache=True, parallel=True, boundscheck=False)
def build_profiles(codes, seq_off, chunk_cols, chunk_width, prof_off, prof_w, matrix, pad, out):
    """Flat profiles, one block per chunk from ``prof_off[ch]``: ``[c, j, k]`` with
    ``j < W`` (``W`` the chunk's longest target) holds the score of residue ``c``
    against residue ``j`` of lane ``k``'s target.

    Columns past a target's end score ``pad`` (very negative), so that in local
    mode no padding cell can beat a real one.
    """
    nchunks, lanes = chunk_cols.shape
    K = matrix.shape[0]
    for ch in prange(nchunks):
        base0 = prof_off[ch]
        width = prof_w[ch]
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
                        out[base0 + (c * width + j) * lanes + k] = matrix[c, b]
                else:
                    for c in range(K):
                        out[base0 + (c * width + j) * lanes + k] = pad


@njit(cache=True, nogil=True, boundscheck=False)
def _segments(mlen, lanes, seg):
    """Column ranges with the same quarters of lanes active: ``seg[s] = q0, q1, j0, j1``.

    A quarter is active at column ``j`` while one of its targets has ``j``
    residues or more; a segment spans the first to the last active quarter.
    """
    g = lanes // QUARTERS
    qmax = np.zeros(QUARTERS, np.int64)
    for q in range(QUARTERS):
        for k in range(q * g, (q + 1) * g):
            if mlen[k] > qmax[q]:
                qmax[q] = mlen[k]
    ns = 0
    j = 1
    while True:
        q0 = -1
        q1 = -1
        jend = 1 << 62
        for q in range(QUARTERS):
            if qmax[q] >= j:
                if q0 < 0:
                    q0 = q
                q1 = q + 1
                if qmax[q] < jend:
                    jend = qmax[q]
        if q0 < 0:
            break
        seg[ns, 0] = q0
        seg[ns, 1] = q1
        seg[ns, 2] = j
        seg[ns, 3] = jend
        ns += 1
        j = jend + 1
    return ns


@njit(cache=True, nogil=True, boundscheck=False)
def _fill_start(mode, lanes, M, go, ge, neg, H, F, best, bi, bj):
    """Row 0 of a task into ``H`` and ``F``; no end found yet."""
    gap_open = np.int64(go)
    gap_extend = np.int64(ge)
    for j in range(M + 1):
        hb = _boundary(j, gap_open, gap_extend) if mode == GLOBAL else 0
        for k in range(lanes):
            H[j * lanes + k] = hb
            F[j * lanes + k] = neg
    for k in range(lanes):
        best[k] = 0 if mode == LOCAL else neg
        bi[k] = 0
        bj[k] = 0


@njit(cache=True, nogil=True, boundscheck=False)
def _fill_end(mode, n, mlen, H, best, bi, bj):
    """The ends that only the last row decides (global, and semiglobal's last row)."""
    lanes = mlen.shape[0]
    for k in range(lanes):
        m = mlen[k]
        if m == 0:
            continue
        if mode == GLOBAL:
            best[k] = H[m * lanes + k]
            bi[k] = n
            bj[k] = m
        elif mode == SEMIGLOBAL:
            for j in range(1, m + 1):
                if H[j * lanes + k] > best[k]:
                    best[k] = H[j * lanes + k]
                    bi[k] = n
                    bj[k] = j


@njit(cache=True, nogil=True, boundscheck=False)
def _fill(mode, a, r0, prof, pbase, pwidth, mlen, M, go, ge, neg, H, F, S, tb, want_tb,
          best, bi, bj, seg, ck_rows, ckH, ckF):
    """Fill one query against ``lanes`` targets (``r0 < 0``): ends and best
    scores per lane; or fill block ``r0`` of a checkpointed task again.

    ``H``, ``F`` (``(M + 1) * lanes``) and ``S`` (state) are flat scratch
    buffers; ``prof[pbase + (c * pwidth + j) * lanes + k]`` is the chunk's
    profile. With ``ck_rows == 0`` the traceback (if ``want_tb``) goes to ``tb``
    (``n * M * lanes / 2`` bytes). Else the fill writes no traceback but keeps
    ``H`` and ``F`` every ``ck_rows`` rows from row 0 in ``ckH`` and ``ckF``;
    block ``r0 >= 0`` (rows ``r0 + 1 .. r0 + ck_rows``) then starts from its
    checkpoint and writes its traceback to ``tb``, from its first row, each
    lane's to its column ``mlen[k]`` (no cell depends on one to its right).
    """
    n = a.shape[0]
    lanes = mlen.shape[0]
    half = lanes // 2
    ns = _segments(mlen, lanes, seg)
    size = (M + 1) * lanes
    gap_open = np.int64(go)
    gap_extend = np.int64(ge)
    local = mode == LOCAL
    # One function, one loop of rows for the fill and a block again: numba
    # optimizes a jitted callee's code again in each caller, so every level
    # of calls above the vector loops adds to the first run's compile time.
    again = r0 >= 0
    track = r0 < 0
    if again:
        c = r0 // ck_rows * size
        for x in range(size):
            H[x] = ckH[c + x]
            F[x] = ckF[c + x]
        first, last = r0, min(n, r0 + ck_rows)
        write_tb = again
    else:
        _fill_start(mode, lanes, M, go, ge, neg, H, F, best, bi, bj)
        first, last = 0, n
        write_tb = want_tb and ck_rows == 0
    keep = track and ck_rows > 0
    step = ck_rows if keep else max(last - first, 1)
    rb = S[S_RB * lanes:(S_RB + 1) * lanes]
    rj = S[S_RJ * lanes:(S_RJ + 1) * lanes]
    for b0 in range(first, last, step):
        if keep:
            c = b0 // ck_rows * size
            for x in range(size):
                ckH[c + x] = H[x]
                ckF[c + x] = F[x]
        for i in range(b0 + 1, min(last, b0 + step) + 1):
            poff = pbase + a[i - 1] * pwidth * lanes
            hb = _boundary(i, gap_open, gap_extend) if mode == GLOBAL else 0
            for k in range(lanes):
                S[S_HD * lanes + k] = H[k]
                H[k] = hb
                S[S_HL * lanes + k] = hb
                S[S_E * lanes + k] = neg
                rb[k] = 0
                rj[k] = 0
            tboff = (i - 1 - first) * M * half
            for s in range(ns):
                q0 = seg[s, 0]
                q1 = seg[s, 1]
                j0 = seg[s, 2]
                j1 = seg[s, 3]
                if write_tb:
                    if local:
                        _seg_tl(H, F, prof, poff, tb, tboff, S, q0, q1, j0, j1, go, ge)
                    else:
                        _seg_t(H, F, prof, poff, tb, tboff, S, q0, q1, j0, j1, go, ge)
                else:
                    if local:
                        _seg_sl(H, F, prof, poff, tb, tboff, S, q0, q1, j0, j1, go, ge)
                    else:
                        _seg_s(H, F, prof, poff, tb, tboff, S, q0, q1, j0, j1, go, ge)
            # row-major order: the first strictly better cell wins (a block filled
            # again overwrites ends already taken; the walks hold their own)
            if mode == LOCAL:
                for k in range(lanes):
                    if mlen[k] > 0 and rb[k] > best[k]:
                        best[k] = rb[k]
                        bi[k] = i
                        bj[k] = rj[k]
            elif mode == SEMIGLOBAL and i < n:
                for k in range(lanes):
                    m = mlen[k]
                    if m > 0 and H[m * lanes + k] > best[k]:
                        best[k] = H[m * lanes + k]
                        bi[k] = i
                        bj[k] = m
    if track:
        _fill_end(mode, n, mlen, H, best, bi, bj)


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


#: A lane's walk, as :func:`_walk_rows` keeps it between blocks of rows: the
#: cell, the state (0 H, 1 E, 2 F), the next op's slot, the op being counted
#: and its count, identities, columns, and the slot of the first op.
W_I, W_J, W_STATE, W_POS, W_CUR, W_COUNT, W_IDENT, W_LENGTH, W_START = range(9)
W_FIELDS = 9


@njit(cache=True, nogil=True, boundscheck=False)
def _walk_begin(st, ei, ej, start):
    """A walk from the end ``(ei, ej)``, its ops written from ``start``."""
    st[W_I] = ei
    st[W_J] = ej
    st[W_STATE] = 0
    st[W_POS] = start
    st[W_CUR] = 255
    st[W_COUNT] = 0
    st[W_IDENT] = 0
    st[W_LENGTH] = 0
    st[W_START] = start


@njit(cache=True, nogil=True, boundscheck=False)
def _walk_rows(mode, a, b, tb, r0, lane, st, op_code, op_len, wave_rows):
    """Walk one lane back through the rows that ``tb`` holds (row ``i``'s bits
    at ``tb[i - 1 - r0]``); returns whether the walk is over (else it left for
    row ``r0``, which the block before holds). ``wave_rows > 0``: one pair's
    traceback from :mod:`.cpu_wave`, its rows in lanes of that many (cell
    ``(i, j)`` at step ``j - 1 + k`` of lane ``k = (i - 1) // wave_rows``)."""
    half = tb.shape[2]
    kk = lane % half
    shift = 4 * (lane // half)
    i = st[W_I]
    j = st[W_J]
    state = st[W_STATE]
    pos = st[W_POS]
    cur = np.uint8(st[W_CUR])
    count = st[W_COUNT]
    ident = st[W_IDENT]
    length = st[W_LENGTH]
    over = True
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
        if i <= r0:
            over = False
            break
        if wave_rows > 0:
            k = (i - 1) // wave_rows
            t = (tb[j - 1 + k, i - 1 - k * wave_rows, k % half] >> (4 * (k // half))) & 15
        else:
            t = (tb[i - 1 - r0, j - 1, kk] >> shift) & 15
        if state == 0:
            org = t & 3
            if org == ORIGIN_STOP:
                break
            if org == ORIGIN_DIAG:
                if a[i - 1] == b[j - 1]:
                    ident += 1
                pos, cur, count = _emit(op_code, op_len, pos, cur, count, OP_ALIGNED)
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
    st[W_I] = i
    st[W_J] = j
    st[W_STATE] = state
    st[W_POS] = pos
    st[W_CUR] = cur
    st[W_COUNT] = count
    st[W_IDENT] = ident
    st[W_LENGTH] = length
    return over


@njit(cache=True, nogil=True, boundscheck=False)
def _walk_end(st, op_code, op_len):
    """The last op of a finished walk, and its ops put in order (the walk ran
    from the end); returns ``(begin_i, begin_j, n_ops, identities, length)``."""
    pos = st[W_POS]
    if st[W_COUNT] > 0:
        op_code[pos] = st[W_CUR]
        op_len[pos] = st[W_COUNT]
        pos += 1
    start = st[W_START]
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
    return st[W_I], st[W_J], pos - start, st[W_IDENT], st[W_LENGTH]


@njit(cache=True, nogil=True, boundscheck=False)
def _put_walk(p, st, want_tb, op_code, op_len, out_qb, out_tb, out_nops, out_ident,
              out_alen):
    """Pair slot ``p``'s begins, operations, identities and length: its
    finished walk's (``st``), or -1 (0 operations) score-only."""
    if want_tb:
        qb, tbeg, nops, ident, alen = _walk_end(st, op_code, op_len)
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


@njit(cache=True, nogil=True, boundscheck=False)
def _next_block(st, over, mlen, lane0, ck_rows):
    """The first row of the block of a checkpointed task that a walk needs
    next (the highest: walks run up), or -1 when none does."""
    nxt = -1
    for k in range(lane0, mlen.shape[0]):
        if mlen[k] > 0 and not over[k] and st[k, W_I] > 0 and st[k, W_J] > 0:
            nxt = max(nxt, (st[k, W_I] - 1) // ck_rows * ck_rows)
    return nxt


def assign_workers(cost: np.ndarray, nworkers: int) -> tuple[np.ndarray, np.ndarray]:
    """Longest processing time first: tasks (by ``cost``) to workers; returns
    ``(order, start)``, worker ``w`` running ``order[start[w]:start[w + 1]]``."""
    # sorted by NumPy: numba's argsort took 3 s of a fresh install's first run
    return _assign_sorted(cost, np.argsort(-cost, kind="stable"), nworkers)


@njit(cache=True, boundscheck=False)
def _assign_sorted(cost, byc, nworkers):
    """:func:`assign_workers` of tasks ``byc`` (longest first)."""
    nt = cost.shape[0]
    load = np.zeros(nworkers, np.int64)
    owner = np.empty(nt, np.int64)
    count = np.zeros(nworkers + 1, np.int64)
    for x in range(nt):
        t = byc[x]
        w = 0
        for v in range(1, nworkers):
            if load[v] < load[w]:
                w = v
        load[w] += cost[t]
        owner[t] = w
        count[w + 1] += 1
    start = np.cumsum(count)
    fill = start[:-1].copy()
    order = np.empty(nt, np.int64)
    for x in range(nt):
        t = byc[x]
        w = owner[t]
        order[fill[w]] = t
        fill[w] += 1
    return order, start


@njit(cache=True, parallel=True, boundscheck=False)
def align_tasks(mode, want_tb, codes, seq_off, task_row, task_chunk, task_lane0,
                task_out, task_ck, chunk_cols, chunk_width, profiles, prof_off, prof_w, consts,
                order, wstart, op_off, out_score, out_qb, out_qe, out_tb, out_te, out_ident,
                out_alen, out_nops, op_code, op_len):
    """Align every task (one query x one chunk of targets) of a window.

    Results of the task's active lanes ``task_lane0[t] .. chunk_width - 1`` go
    to consecutive pair slots from ``task_out[t]``; pair ``p`` writes its
    operations from ``op_off[p]``. Worker ``w`` runs tasks
    ``order[wstart[w]:wstart[w + 1]]`` with its own scratch buffers. A task
    with ``task_ck[t] > 0`` keeps its traceback in blocks of that many rows,
    filled again from checkpoints as the walk needs them (0: all of it).
    """
    dtype = profiles.dtype
    lanes = chunk_cols.shape[1]
    half = lanes // 2
    go, ge, neg = consts[4], consts[5], consts[6]
    nworkers = wstart.shape[0] - 1
    for w in prange(nworkers):
        # scratch sizes: the largest task of this worker
        Mmax = 0
        cellmax = 0
        ckmax = 0
        for x in range(wstart[w], wstart[w + 1]):
            t = order[x]
            r = task_row[t]
            ch = task_chunk[t]
            M = np.int64(0)  # not the literal 0: numba would compile _fill for it
            for k in range(task_lane0[t], chunk_width[ch]):
                c = chunk_cols[ch, k]
                m = seq_off[c + 1] - seq_off[c]
                if m > M:
                    M = m
            if M > Mmax:
                Mmax = M
            n = seq_off[r + 1] - seq_off[r]
            rows = n
            if task_ck[t] > 0:
                rows = min(n, task_ck[t])
                ck = (n + task_ck[t] - 1) // task_ck[t] * (M + 1) * lanes
                if ck > ckmax:
                    ckmax = ck
            if rows * M > cellmax:
                cellmax = rows * M
        H = np.empty((Mmax + 1) * lanes, dtype)
        F = np.empty((Mmax + 1) * lanes, dtype)
        S = np.empty(S_ROWS * lanes, dtype)
        tbuf = np.empty(cellmax * half if want_tb else half, np.uint8)
        ckH = np.empty(ckmax, dtype)
        ckF = np.empty(ckmax, dtype)
        best = np.empty(lanes, np.int64)
        bi = np.empty(lanes, np.int64)
        bj = np.empty(lanes, np.int64)
        mlen = np.empty(lanes, np.int64)
        mcap = np.empty(lanes, np.int64)
        seg = np.empty((QUARTERS + 1, 4), np.int64)
        st = np.empty((lanes, W_FIELDS), np.int64)
        over = np.zeros(lanes, np.bool_)
        wave_rows = np.int64(0)  # a task's traceback (not the literal 0)
        for x in range(wstart[w], wstart[w + 1]):
            t = order[x]
            r = task_row[t]
            ch = task_chunk[t]
            a = codes[seq_off[r]:seq_off[r + 1]]
            n = a.shape[0]
            width = chunk_width[ch]
            lane0 = task_lane0[t]
            ck_rows = task_ck[t] if want_tb else 0
            M = np.int64(0)  # not the literal 0: numba would compile _fill for it
            for k in range(lanes):
                mlen[k] = 0
            for k in range(lane0, width):
                c = chunk_cols[ch, k]
                mlen[k] = seq_off[c + 1] - seq_off[c]
                if mlen[k] > M:
                    M = mlen[k]
            pwidth = prof_w[ch]
            # the fill (r0 = -1), then, checkpointed, each block that a walk needs;
            # r0 an int64, not the literal -1, which numba would compile _fill for
            r0 = np.int64(-1)
            while True:
                if r0 >= 0:
                    # a block again: only the lanes whose walks pass through it,
                    # each to its walk's column (walks go up and left)
                    for k in range(lanes):
                        mcap[k] = 0
                        if k >= lane0 and mlen[k] > 0 and not over[k] and st[k, W_I] > r0:
                            mcap[k] = st[k, W_J]
                _fill(mode, a, r0, profiles, prof_off[ch], pwidth, mlen if r0 < 0 else mcap, M,
                      go, ge, neg, H, F, S, tbuf, want_tb, best, bi, bj, seg, ck_rows, ckH,
                      ckF)
                if r0 < 0:
                    for k in range(lane0, width):
                        p = task_out[t] + k - lane0
                        out_score[p] = best[k]
                        out_qe[p] = bi[k]
                        out_te[p] = bj[k]
                        if want_tb:
                            _walk_begin(st[k], bi[k], bj[k], op_off[p])
                        over[k] = False
                    if not want_tb:
                        break
                rows = n if ck_rows == 0 else ck_rows
                tb = tbuf[:rows * M * half].reshape((rows, M, half))
                for k in range(lane0, width):
                    if not over[k] and st[k, W_I] > max(r0, 0) and (ck_rows == 0 or r0 >= 0):
                        c = chunk_cols[ch, k]
                        over[k] = _walk_rows(mode, a, codes[seq_off[c]:seq_off[c + 1]], tb,
                                             max(r0, 0), k, st[k], op_code, op_len, wave_rows)
                r0 = -1 if ck_rows == 0 else _next_block(st, over, mlen, lane0, ck_rows)
                if r0 < 0:  # the walks left are at row or column 0: nothing to read
                    for k in range(lane0, width):
                        if not over[k]:
                            c = chunk_cols[ch, k]
                            _walk_rows(mode, a, codes[seq_off[c]:seq_off[c + 1]], tb, 0, k,
                                       st[k], op_code, op_len, wave_rows)
                    break
            for k in range(lane0, width):
                _put_walk(task_out[t] + k - lane0, st[k], want_tb, op_code, op_len, out_qb,
                          out_tb, out_nops, out_ident, out_alen)
