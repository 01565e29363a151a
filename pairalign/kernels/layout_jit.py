"""A window's launch layout in numba, without the GIL: the same plan as
:func:`.gpu_layout.plan_window` (the NumPy specification, to which the tests
hold it field by field), for the windows of large runs, where several GPUs'
launching threads each plan a window every ~20 ms and NumPy's calls on a
window's rows (~1 ms a window, the GIL held) are a third of their Python.

The per-row runs (wide, packed) come from :func:`.gpu_layout.row_runs`, as
the specification takes them; what follows them is one pass a row here.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .gpu_layout import (BND, COL, COUNT, COUPLE, KIND, NARROW, OPS, POS, QUERY_COUPLE, ROW,
                         STRIPE, TB, WIDE, JobLengths, LayoutPlan, band_words,
                         row_runs)
from ..scheduler.windows import Window
from ._numba_cache import drop_stale

drop_stale()  # and a cache folder numba can write (ensure_cache_folder)

_band_words = njit(cache=True, nogil=True)(band_words)


@njit(cache=True, nogil=True)
def _plan(rows_len, cols_len, col_prefix, q2, r0, c1, a, nw, npk, traceback, operations,
          score_bytes, couples_per_warp, couple_stripes, query_band, query_block):
    """Everything of :func:`.gpu_layout.plan_window` after the per-row runs."""
    nrows = a.size
    last_row, last_q2 = rows_len.size - 1, q2.size - 1
    lo = a + nw - npk
    hi = a + nw
    cl = lo.copy()
    cn = np.zeros(nrows, np.int64)
    if query_band and nrows > 1:
        for e in range(0, nrows - 1, 2):
            both_lo = max(lo[e], lo[e + 1])
            both_n = max(min(hi[e], hi[e + 1]) - both_lo, 0)
            n0, n1 = rows_len[r0 + e], rows_len[r0 + e + 1]
            if (n0 + query_band - 1) // query_band != (n1 + query_band - 1) // query_band:
                both_n = 0
            cl[e] = cl[e + 1] = both_lo
            cn[e] = cn[e + 1] = both_n
    run1 = np.empty(nrows, np.int64)
    start2 = cl + cn
    run2 = np.empty(nrows, np.int64)
    npack = 0
    nrest = 0
    ngroup_warps = 0
    for i in range(nrows):
        if cn[i] > 0:
            run1[i] = cl[i] - lo[i]
            run2[i] = hi[i] - start2[i]
        else:
            run1[i] = npk[i]
            run2[i] = 0
        npack += run1[i] - run1[i] % 2 + run2[i] - run2[i] % 2
        if i % 2 == 0:
            npack += 2 * cn[i]
        narrow = c1 - a[i] - nw[i]
        nrest += narrow % 32
        ngroup_warps += narrow // 32

    # the rest (step 4): one pair a segment, longest target first, then longest query
    rest_r = np.empty(nrest, np.int64)
    rest_c = np.empty(nrest, np.int64)
    k = 0
    for i in range(nrows):
        narrow = c1 - a[i] - nw[i]
        first = a[i] + nw[i] + narrow - narrow % 32
        for j in range(narrow % 32):
            rest_r[k] = r0 + i
            rest_c[k] = first + j
            k += 1
    key = np.empty(nrest, np.int64)
    for k in range(nrest):
        key[k] = -(cols_len[rest_c[k]] * (1 << 24) + rows_len[rest_r[k]])
    by = np.argsort(key, kind="mergesort")
    rest_r, rest_c = rest_r[by], rest_c[by]

    # segments in launch order: (row, first column, pairs, kind), the empty ones left out
    most = (nrows + 1) // 2 + 6 * nrows + nrest
    seg = np.zeros((most, 8), np.int64)
    nseg = 0
    for i in range(0, nrows, 2):
        if cn[i] > 0:
            seg[nseg, ROW], seg[nseg, COL] = r0 + i, cl[i]
            seg[nseg, COUNT], seg[nseg, KIND] = 2 * cn[i], QUERY_COUPLE
            nseg += 1
    for i in range(nrows):
        for col, pairs in ((lo[i], run1[i] - run1[i] % 2), (start2[i], run2[i] - run2[i] % 2)):
            if pairs > 0:
                seg[nseg, ROW], seg[nseg, COL] = r0 + i, col
                seg[nseg, COUNT], seg[nseg, KIND] = pairs, COUPLE
                nseg += 1
    for i in range(nrows):
        for col, pairs in ((a[i], nw[i] - npk[i]), (lo[i] + run1[i] - 1, run1[i] % 2),
                           (start2[i] + run2[i] - 1, run2[i] % 2)):
            if pairs > 0:
                seg[nseg, ROW], seg[nseg, COL] = r0 + i, col
                seg[nseg, COUNT], seg[nseg, KIND] = pairs, WIDE
                nseg += 1
    for i in range(nrows):
        narrow = c1 - a[i] - nw[i]
        if narrow >= 32:
            seg[nseg, ROW], seg[nseg, COL] = r0 + i, a[i] + nw[i]
            seg[nseg, COUNT], seg[nseg, KIND] = narrow - narrow % 32, NARROW
            nseg += 1
    for k in range(nrest):
        seg[nseg, ROW], seg[nseg, COL] = rest_r[k], rest_c[k]
        seg[nseg, COUNT], seg[nseg, KIND] = 1, NARROW
        nseg += 1
    seg = seg[:nseg]

    # each segment's words, boundary entries and operation slots, and where they start
    f = 4 // score_bytes
    npairs = 0
    wide_tb = 0
    wide_bnd = 0
    total_ops = 0
    ncouple_segs = 0
    pos = tb_at = bnd_at = ops_at = 0
    for s in range(nseg):
        row, c, pairs, kind = seg[s, ROW], seg[s, COL], seg[s, COUNT], seg[s, KIND]
        n = rows_len[row]
        query_couple = kind == QUERY_COUPLE
        packed = kind == COUPLE or query_couple
        cols = pairs // 2 if query_couple else pairs
        span = col_prefix[c + cols] - col_prefix[c]
        lanes = 32 // couples_per_warp if packed else 32
        stripes = couple_stripes if packed else 1
        tb = 0
        if traceback and kind != NARROW:
            tb = (2 if query_couple else 1) * _band_words(n, span, cols, lanes, stripes)
        if kind == COUPLE:
            bnd = f * (q2[min(c + pairs, last_q2)] - q2[c] + pairs // 2)
        elif query_couple:
            bnd = f * (span + cols)
        elif kind == WIDE:
            bnd = span + pairs
        else:
            bnd = 0
        ops = 0
        if operations:
            if query_couple:
                ops = cols * (n + rows_len[min(row + 1, last_row)]) + 2 * span
            else:
                ops = pairs * n + span
        seg[s, POS], seg[s, TB], seg[s, BND], seg[s, OPS] = pos, tb_at, bnd_at, ops_at
        pos += pairs
        tb_at += tb
        bnd_at += bnd
        ops_at += ops
        npairs += pairs
        total_ops += ops
        if kind != NARROW:
            wide_tb += tb
            wide_bnd += bnd
        if packed:
            ncouple_segs += 1

    # narrow warps: whole ones of one row (step 3), then the rest by 32
    nwarps = ngroup_warps + (nrest + 31) // 32
    warp_off = np.empty(nwarps + 1, np.int64)
    warp_boff = np.empty(nwarps + 1, np.int64)
    warp_m = np.empty(nwarps, np.int32)
    warp_off[0], warp_boff[0] = wide_tb, wide_bnd
    k = 0
    for i in range(nrows):
        narrow = c1 - a[i] - nw[i]
        for j in range(narrow // 32):
            n = rows_len[r0 + i]
            m = cols_len[a[i] + nw[i] + 32 * j]
            warp_m[k] = m
            warp_off[k + 1] = warp_off[k] + ((n + STRIPE - 1) // STRIPE * m * 32 if traceback
                                             else 0)
            warp_boff[k + 1] = warp_boff[k] + (m + 1) * 32
            k += 1
    for start in range(0, nrest, 32):
        n = 0
        m = 0
        for j in range(start, min(start + 32, nrest)):
            n = max(n, rows_len[rest_r[j]])
            m = max(m, cols_len[rest_c[j]])
        warp_m[k] = m
        warp_off[k + 1] = warp_off[k] + ((n + STRIPE - 1) // STRIPE * m * 32 if traceback else 0)
        warp_boff[k + 1] = warp_boff[k] + (m + 1) * 32
        k += 1

    # the packed kernel's warps: each segment's couples, couples_per_warp at a time;
    # a row couple's query couples in whole blocks of query_block warps
    cwarps = np.empty(ncouple_segs, np.int64)
    starts = np.empty(ncouple_segs, np.int64)
    ends = np.empty(ncouple_segs, np.int64)
    query_warps = 0
    total_couples = 0
    t = 0
    for s in range(nseg):
        kind = seg[s, KIND]
        if kind != COUPLE and kind != QUERY_COUPLE:
            continue
        couples = seg[s, COUNT] // 2
        warps = (couples + couples_per_warp - 1) // couples_per_warp
        if query_block > 1 and kind == QUERY_COUPLE:
            warps = (warps + query_block - 1) // query_block * query_block
        if kind == QUERY_COUPLE:
            query_warps += warps
        cwarps[t] = warps
        starts[t] = seg[s, POS] // 2
        ends[t] = starts[t] + couples
        total_couples += couples
        t += 1
    couple_warps = np.empty(cwarps.sum() + 1, np.int32)
    k = 0
    for t in range(ncouple_segs):
        for j in range(cwarps[t]):
            couple_warps[k] = min(starts[t] + couples_per_warp * j, ends[t])
            k += 1
    couple_warps[k] = total_couples
    return (seg, npairs, npack, warp_off, warp_boff, warp_m, couple_warps, query_warps,
            total_ops)


def plan_window_jit(lengths: JobLengths, w: Window, *, traceback: bool,
                    wide_steps: int | None, fits16, score_bytes: int,
                    couples_per_warp: int = 1, couple_stripes: int = 1, query_band: int = 0,
                    query_block: int = 1, operations: bool | None = None) -> LayoutPlan:
    """:func:`.gpu_layout.plan_window`, its arguments and its plan, with the
    segments, warps and sizes made in numba (the GIL released)."""
    if operations is None:
        operations = traceback
    a, nw, npk = row_runs(lengths, w, wide_steps, fits16)
    (seg, npairs, npack, warp_off, warp_boff, warp_m, couple_warps, query_warps,
     ops) = _plan(lengths.rows, lengths.cols, lengths.col_prefix, lengths.q2, int(w.r0),
                  int(w.c1), a, nw, npk, bool(traceback), bool(operations), int(score_bytes),
                  int(couples_per_warp), int(couple_stripes), int(query_band),
                  int(query_block))
    return LayoutPlan(segments=seg, npairs=int(npairs), nwide=int(nw.sum()), npack=int(npack),
                      warp_off=warp_off, warp_boff=warp_boff, warp_m=warp_m,
                      couple_warps=couple_warps, query_warps=int(query_warps),
                      couple_lanes=32 // couples_per_warp, couple_stripes=couple_stripes,
                      tb_words=int(warp_off[-1]), bnd=int(warp_boff[-1]), ops=int(ops),
                      score_bytes=score_bytes)


def load():
    """:func:`plan_window_jit`, compiled (or loaded from numba's cache) by a
    plan of one window of one pair."""
    one = np.ones(1, np.int64)
    plan_window_jit(JobLengths.of(one, one), Window(0, 1, 0, 1, False, 0, 0), traceback=True,
                    wide_steps=1, fits16=None, score_bytes=4)
    return plan_window_jit
