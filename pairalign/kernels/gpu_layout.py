"""A window's launch layout, planned on the host from sequence lengths alone.

The GPU kernels (``align.cu``) take a window's pairs in a launch order, each
with its share of the traceback words, boundary rows and operation slots. Since
sequences are sorted longest first, each row's pairs fall into runs of
consecutive targets: the wide ones first (longest targets), among them the ones
packed two by two (whose scores fit 16 bits: the shortest of the wide), then
the narrow ones. The plan therefore describes a window by *segments* (one row,
a run of consecutive targets, a kind, and the offsets at which the run starts)
and computes every total from column prefix sums, in work proportional to the
window's rows. The device kernel ``layout_pairs`` expands the segments to one
entry per pair; :func:`expand` is the same arithmetic in NumPy, its
specification.

Launch order (see :class:`LayoutPlan`):

0. with ``query_band``, query couples: rows ``2k`` and ``2k + 1`` of the
   window (where both take as many bands) against each target both pack, the
   pairs of a target one after the other (``fill2``'s first warps: one
   target, two queries in the 16-bit halves, so that each row's two scores
   are one profile word); a warp takes up to ``couples_per_warp`` targets of
   one row couple;
1. couples: each row's (other) packed pairs two by two (``fill2``), rows in
   order; a warp of ``fill2`` takes up to ``couples_per_warp`` couples of one
   row (:attr:`LayoutPlan.couple_warps`);
2. the other wide pairs, row-major (a row's unpacked wide targets, then its
   packed pairs left without a partner, if any);
3. the narrow pairs of each row in whole warps of 32 (one query, 32
   neighbouring targets), rows in order;
4. what is left of each row's narrow pairs (fewer than 32 a row), longest
   targets first, one segment each.

A warp runs as long as its longest pair and its buffers are sized by it, so a
warp across two rows (the shortest targets of one, the longest of the next)
would cost up to twice the time and memory: hence the whole warps of step 3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..pairs import _offsets, _ranges
from ..scheduler.windows import Window, first_columns

STRIPE = 8
#: Segment kinds (the ``kind`` column of :attr:`LayoutPlan.segments`).
WIDE, COUPLE, NARROW, QUERY_COUPLE = 0, 1, 2, 3
#: Columns of :attr:`LayoutPlan.segments`.
POS, ROW, COL, KIND, TB, BND, OPS, COUNT = range(8)


@dataclass(frozen=True)
class LayoutPlan:
    """A window's pairs in launch order, as segments, and its buffer sizes.

    Attributes
    ----------
    segments : numpy.ndarray
        ``(nseg, 8)`` int64, in launch order: first launch position, row,
        first column (sorted positions, columns without the job's column
        base), kind, then the segment's first traceback word, boundary entry
        and operation slot (wide pairs' words and entries; narrow pairs'
        are per warp), and its number of pairs.
    npairs, nwide, npack : int
        Pairs; wide ones (the first ``nwide``, couples included); packed ones
        (the first ``npack``, an even number: query couples, then couples).
    warp_off, warp_boff : numpy.ndarray
        ``nwarps + 1`` int64: the traceback word and boundary entry at which
        each narrow warp's block starts, and the totals last.
    warp_m : numpy.ndarray
        int32, each narrow warp's longest target.
    couple_warps : numpy.ndarray
        int32, ``nwarps + 1``: the first couple (pairs ``2c, 2c + 1``) of each
        warp of the packed kernels, whose couples are of one row (or one row
        couple), and the number of couples last. A warp that pads a row
        couple's query couples to a whole block (``query_block``) holds none:
        its first couple is the next warp's.
    query_warps : int
        The first ``query_warps`` warps of ``couple_warps`` hold query
        couples (and their padding), the others couples of targets (both
        ``fill2``).
    couple_lanes : int
        Lanes of a couple's group (``32 // couples_per_warp``): the couples'
        traceback words are laid out by bands of this many lanes (the other
        wide pairs', by 32).
    couple_stripes : int
        Stripes (8 rows each) a lane of a couple's group holds with traceback:
        a band of the couples' layout is ``couple_lanes * couple_stripes``
        stripes (the other wide pairs' one a lane). The kernel may fill a
        query's last band in stripes of one a lane, in fewer words
        (``align.cu``'s ``fill_pack``): the sizes here hold either.
    tb_words, bnd, ops : int
        Traceback words (uint32), boundary entries (one score each, H and F
        alike) and operation slots the window needs.
    score_bytes : int
        Bytes of one boundary entry (2 for 16-bit scores, 4 for 32-bit).
    """

    segments: np.ndarray
    npairs: int
    nwide: int
    npack: int
    warp_off: np.ndarray
    warp_boff: np.ndarray
    warp_m: np.ndarray
    couple_warps: np.ndarray
    query_warps: int
    couple_lanes: int
    couple_stripes: int
    tb_words: int
    bnd: int
    ops: int
    score_bytes: int


def stride2_prefix(lengths: np.ndarray) -> np.ndarray:
    """``q[c]`` = sum of ``lengths[c']`` over ``c' < c`` of the parity of ``c``
    (``len + 2`` entries), so that ``q[c + 2k] - q[c]`` sums every other length
    from ``c``: the couples' boundary rows, sized by each couple's first target."""
    lengths = np.asarray(lengths, np.int64)
    q = np.zeros(len(lengths) + 2, np.int64)
    np.cumsum(lengths[0::2], out=q[2::2])
    np.cumsum(lengths[1::2], out=q[3::2])
    return q


def band_words(n, span, count, lanes, stripes=1):
    """Traceback words of ``count`` wide pairs of a query of length ``n`` whose
    targets' lengths sum to ``span``, laid out by bands of ``lanes`` lanes of
    ``stripes`` stripes each: each band takes ``m + lanes - 1`` steps of
    ``lanes * stripes`` words a pair (the words of pair ``i`` of a run start
    at ``band_words(n, span_before_i, i, lanes, stripes)``). Integers or NumPy
    arrays."""
    per_band = lanes * stripes
    bands = ((n + STRIPE - 1) // STRIPE + per_band - 1) // per_band
    return bands * per_band * (span + (lanes - 1) * count)


def first_fit(n: np.ndarray, lengths: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               fits: Callable) -> np.ndarray:
    """Per row, the first column of ``[lo, hi)`` whose pair ``fits`` (``hi``
    where none does); ``fits(n, m)`` holds for every shorter target once it
    holds for one, and columns are sorted longest first."""
    first = lo.copy()
    # most rows fit at their longest target: a binary search for the others
    rows = np.flatnonzero(lo < hi)
    rows = rows[~np.asarray(fits(n[rows], lengths[lo[rows]]), bool)]
    n, lo, hi = n[rows], lo[rows] + 1, hi[rows]
    while True:
        open_ = lo < hi
        if not open_.any():
            first[rows] = lo
            return first
        mid = (lo + hi) // 2
        ok = np.asarray(fits(n, lengths[np.minimum(mid, len(lengths) - 1)]), bool)
        hi = np.where(open_ & ok, mid, hi)
        lo = np.where(open_ & ~ok, mid + 1, lo)


@dataclass(frozen=True)
class JobLengths:
    """A job's sequence lengths as the plans read them, and the column sums
    they take: computed once a job, not once a window (a job of 1e13 cells
    has ~100 windows of ~14,000 columns).

    Attributes
    ----------
    rows, cols : numpy.ndarray
        int64 lengths of the row and column sequences, sorted longest first.
    col_prefix : numpy.ndarray
        ``len(cols) + 1`` prefix sums of ``cols``.
    q2 : numpy.ndarray
        :func:`stride2_prefix` of ``cols``.
    """

    rows: np.ndarray
    cols: np.ndarray
    col_prefix: np.ndarray
    q2: np.ndarray

    @classmethod
    def of(cls, row_lengths: np.ndarray, col_lengths: np.ndarray) -> JobLengths:
        """The lengths of a job's rows and columns, sorted longest first (a
        ValueError otherwise: the runs of wide, packed and narrow targets,
        and so the 16-bit checks, rest on this order)."""
        rows = np.array(row_lengths, np.int64)
        cols = np.array(col_lengths, np.int64)
        if (np.diff(rows) > 0).any() or (np.diff(cols) > 0).any():
            raise ValueError("sequence lengths must be sorted longest first")
        arrays = (rows, cols, _offsets(cols), stride2_prefix(cols))
        for x in arrays:  # of every job alike (numba's planner types them so)
            x.flags.writeable = False
        return cls(*arrays)


def row_runs(lengths: JobLengths, w: Window, wide_steps: int | None,
             fits16: Callable | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's runs of targets in window ``w`` (arguments as
    :func:`plan_window`'s): its first column ``a`` (a triangle's after the
    diagonal), its wide targets ``nw`` (the first of its columns from ``a``)
    and the packed ones ``npk`` among them (the last of those), int64."""
    rows_len, cols_len = lengths.rows, lengths.cols
    r, a = first_columns(w)
    n = rows_len[r]
    count = w.c1 - a
    if wide_steps is None:
        nw = np.zeros(r.size, np.int64)
    else:
        steps = (n + STRIPE - 1) // STRIPE
        least = np.where(steps > 0, -(-wide_steps // np.maximum(steps, 1)), np.iinfo(np.int64).max)
        # columns c0.. with a target at least `least` long (sorted longest first)
        longer = np.searchsorted(-cols_len[w.c0:w.c1], -least, side="right")
        nw = np.clip(w.c0 + longer - a, 0, count)
    npk = np.zeros(r.size, np.int64)
    if fits16 is not None and nw.any():
        npk = a + nw - first_fit(n, cols_len, a, a + nw, fits16)
    return a, nw, npk


def plan_window(lengths: JobLengths, w: Window, *,
                traceback: bool, wide_steps: int | None, fits16: Callable | None,
                score_bytes: int, couples_per_warp: int = 1,
                couple_stripes: int = 1, query_band: int = 0, query_block: int = 1,
                operations: bool | None = None) -> LayoutPlan:
    """The launch layout of window ``w``.

    Parameters
    ----------
    lengths : JobLengths
        The job's sequence lengths.
    w : Window
        The window (a triangle keeps the pairs ``row < col``).
    traceback : bool
        Whether the window writes traceback words and operations.
    wide_steps : int or None
        Pairs of at least this many column steps (``ceil(n / 8) * m``) are
        wide, one warp each; None: none is.
    fits16 : callable or None
        ``fits16(n, m)``: whether the scores of pairs of these lengths fit 16
        bits; wide pairs that fit are packed two by two (couples). None: none is.
    score_bytes : int
        Bytes of one boundary entry.
    couples_per_warp : int
        Couples a warp of the packed kernel takes (of one row): 1, 2, 4 or 8.
    couple_stripes : int
        Stripes a lane of the packed kernel holds with traceback (1, 2 or 4).
    query_band : int
        Rows of a band of the query couples' kernel, or 0 for no query
        couples: the targets that rows ``2k`` and ``2k + 1`` of the window
        both pack are packed as query couples where the two queries take as
        many bands (a couple runs the longer one's). With traceback both
        pairs of a query couple take the words of the longer query (row
        ``2k``), in the couples' layout, one pair after the other a target.
    query_block : int
        Warps a block of the packed kernel, where its query couples share one
        profile a block: each row couple's warps of query couples are padded
        to whole blocks with empty warps (1: no padding).
    operations : bool, optional
        Whether the window has operation slots (``n + m`` a pair); by
        default with traceback only. A score-only plan with them lays out
        the score pass of a bounded traceback (``gpu_backend``).
    """
    if operations is None:
        operations = traceback
    rows_len, cols_len = lengths.rows, lengths.cols
    col_prefix, q2 = lengths.col_prefix, lengths.q2

    r = np.arange(w.r0, w.r1, dtype=np.int64)
    n = rows_len[r]
    a, nw, npk = row_runs(lengths, w, wide_steps, fits16)
    count = w.c1 - a
    unpacked = nw - npk
    lo, hi = a + unpacked, a + nw  # each row's packed targets
    # query couples: rows 2k and 2k + 1's common packed targets [cl, cl + cn)
    cl, cn = lo.copy(), np.zeros(r.size, np.int64)
    if query_band and r.size > 1:
        e = np.arange(0, r.size - 1, 2)
        both_lo = np.maximum(lo[e], lo[e + 1])
        both_n = np.maximum(np.minimum(hi[e], hi[e + 1]) - both_lo, 0)
        both_n[-(-n[e] // query_band) != -(-n[e + 1] // query_band)] = 0
        for x in (e, e + 1):
            cl[x], cn[x] = both_lo, both_n
    # what each row packs besides: the runs before and after the common ones
    run1 = np.where(cn > 0, cl - lo, npk)
    start2 = cl + cn
    run2 = np.where(cn > 0, hi - start2, 0)
    coupled = run1 - run1 % 2 + run2 - run2 % 2
    nn = count - nw
    grouped = nn - nn % 32
    left = nn % 32

    # rest (step 4): one segment per pair, longest target first, then longest query
    rest_r = np.repeat(r, left)
    rest_c = _ranges(a + nw + grouped, left)
    key = cols_len[rest_c] * (1 << 24) + rows_len[rest_r]
    by = np.argsort(-key, kind="stable")
    rest_r, rest_c = rest_r[by], rest_c[by]

    first = np.arange(0, r.size, 2)  # a row couple's first row, where it has any
    pieces = [  # (rows, first columns, pairs, kind) in launch order
        (r[first], cl[first], 2 * cn[first], QUERY_COUPLE),
        (np.repeat(r, 2), np.stack([lo, start2], 1).ravel(),
         np.stack([run1 - run1 % 2, run2 - run2 % 2], 1).ravel(), COUPLE),
        (np.repeat(r, 3), np.stack([a, lo + run1 - 1, start2 + run2 - 1], 1).ravel(),
         np.stack([unpacked, run1 % 2, run2 % 2], 1).ravel(), WIDE),
        (r, a + nw, grouped, NARROW),
        (rest_r, rest_c, np.ones(rest_r.size, np.int64), NARROW),
    ]
    seg_r, seg_c, seg_n = (np.concatenate([piece[k] for piece in pieces]) for k in range(3))
    seg_kind = np.concatenate([np.full(len(piece[0]), piece[3], np.int64) for piece in pieces])
    keep = seg_n > 0
    seg_r, seg_c, seg_n, seg_kind = seg_r[keep], seg_c[keep], seg_n[keep], seg_kind[keep]

    seg_len = rows_len[seg_r]
    query_couple = seg_kind == QUERY_COUPLE
    seg_cols = np.where(query_couple, seg_n // 2, seg_n)  # targets
    span = col_prefix[seg_c + seg_cols] - col_prefix[seg_c]  # sum of the targets' lengths
    wide = seg_kind != NARROW
    packed = (seg_kind == COUPLE) | query_couple
    lanes = np.where(packed, 32 // couples_per_warp, 32)
    stripes = np.where(packed, couple_stripes, 1)
    # a query couple's two pairs: each the words of its longer query, row 2k
    tb = (np.where(wide, (1 + query_couple) * band_words(seg_len, span, seg_cols, lanes,
                                                         stripes), 0) if traceback
          else 0 * seg_n)
    # a couple's boundary row: a word (both halves) per column of its longer target
    f = 4 // score_bytes
    couple_rows = f * (q2[np.minimum(seg_c + seg_n, len(q2) - 1)] - q2[seg_c] + seg_n // 2)
    bnd = np.where(seg_kind == COUPLE, couple_rows,
                   np.where(query_couple, f * (span + seg_cols), np.where(wide, span + seg_n, 0)))
    # operation slots: n + m a pair (a query couple's: n0 + m, n1 + m a target)
    second = rows_len[np.minimum(seg_r + 1, len(rows_len) - 1)]
    ops = (np.where(query_couple, seg_cols * (seg_len + second) + 2 * span, seg_n * seg_len + span)
           if operations else 0 * seg_n)

    segments = np.zeros((seg_n.size, 8), np.int64)
    segments[:, ROW], segments[:, COL], segments[:, KIND] = seg_r, seg_c, seg_kind
    segments[:, COUNT] = seg_n
    for col, sizes in ((POS, seg_n), (TB, tb), (BND, bnd), (OPS, ops)):
        np.cumsum(sizes[:-1], out=segments[1:, col])

    # narrow warps: whole ones of one row (step 3), then the rest by 32
    nwarps_row = grouped // 32
    warp_r = np.repeat(r, nwarps_row)
    warp_c = np.repeat(a + nw, nwarps_row) + 32 * _ranges(0 * r, nwarps_row)
    wn = rows_len[warp_r]
    wm = cols_len[warp_c]
    if rest_r.size:
        starts = np.arange(0, rest_r.size, 32)
        wn = np.concatenate([wn, np.maximum.reduceat(rows_len[rest_r], starts)])
        wm = np.concatenate([wm, np.maximum.reduceat(cols_len[rest_c], starts)])
    warp_tb = (wn + STRIPE - 1) // STRIPE * wm * 32 if traceback else 0 * wm
    warp_off = _offsets(warp_tb) + int(tb[wide].sum())
    warp_boff = _offsets((wm + 1) * 32) + int(bnd[wide].sum())
    # the packed kernel's warps: each row's couples, couples_per_warp at a time;
    # a row couple's query couples in whole blocks of query_block warps (the
    # last ones empty), so that a block's warps share one query couple
    couples = seg_n[packed] // 2
    cwarps = -(-couples // couples_per_warp)
    is_query = query_couple[packed]
    if query_block > 1:
        cwarps = np.where(is_query, -(-cwarps // query_block) * query_block, cwarps)
    query_warps = int(cwarps[is_query].sum())
    # warp k of a segment whose first couple is p, of the segments' warps
    # from w0 on: p + cpw (k - w0), up to the segment's end (empty warps)
    warp0 = _offsets(cwarps)
    start = segments[packed, POS] // 2
    couple_warps = np.empty(int(warp0[-1]) + 1, np.int64)
    couple_warps[:-1] = np.repeat(start - couples_per_warp * warp0[:-1], cwarps)
    couple_warps[:-1] += couples_per_warp * np.arange(couple_warps.size - 1)
    np.minimum(couple_warps[:-1], np.repeat(start + couples, cwarps), out=couple_warps[:-1])
    couple_warps[-1] = couples.sum()
    couple_warps = couple_warps.astype(np.int32)
    return LayoutPlan(segments=segments, npairs=int(seg_n.sum()), nwide=int(nw.sum()),
                      npack=int(coupled.sum() + 2 * cn[first].sum()), warp_off=warp_off,
                      warp_boff=warp_boff, warp_m=wm.astype(np.int32),
                      couple_warps=couple_warps, query_warps=query_warps,
                      couple_lanes=32 // couples_per_warp, couple_stripes=couple_stripes,
                      tb_words=int(warp_off[-1]),
                      bnd=int(warp_boff[-1]), ops=int(np.sum(ops)), score_bytes=score_bytes)


def expand(plan: LayoutPlan, lengths: JobLengths, col_base: int,
           traceback: bool, operations: bool | None = None) -> dict[str, np.ndarray | None]:
    """One entry per pair of ``plan``: what the device kernel ``layout_pairs``
    writes (its specification, in NumPy); ``operations`` as the plan's
    (by default, ``traceback``).

    Returns ``rows`` and ``cols`` (int32, sequence indices in the joined code
    array: columns after ``col_base``), ``off`` and ``boff`` (int64, the
    wide pairs' entries then :attr:`LayoutPlan.warp_off` and ``warp_boff``)
    and ``op_off`` (int64, ``npairs + 1``; None without operations).
    """
    if operations is None:
        operations = traceback
    seg = plan.segments
    rows_len, cols_len = lengths.rows, lengths.cols
    col_prefix, q2 = lengths.col_prefix, lengths.q2
    p = np.arange(plan.npairs, dtype=np.int64)
    s = np.searchsorted(seg[:, POS], p, side="right") - 1
    i = p - seg[s, POS]
    row, c0 = seg[s, ROW], seg[s, COL]
    query_couple = seg[s, KIND] == QUERY_COUPLE  # pairs (row, c), (row + 1, c)
    h = np.where(query_couple, i % 2, 0)  # a query couple's second pair
    n0 = rows_len[row]  # a query couple's longer query
    row = row + h
    k = np.where(query_couple, i // 2, i)  # the target's place in its segment
    c = c0 + k
    n = rows_len[row]
    span = col_prefix[c] - col_prefix[c0]
    m = cols_len[np.minimum(c, len(cols_len) - 1)]
    n1 = rows_len[np.minimum(seg[s, ROW] + 1, len(rows_len) - 1)]
    op_off = (np.append(seg[s, OPS] + np.where(query_couple,
                                               k * (n0 + n1) + 2 * span + h * (n0 + m),
                                               i * n + span), plan.ops)
              if operations else None)
    coupled = seg[s, KIND] == COUPLE
    packed = coupled | query_couple
    lanes = np.where(packed, plan.couple_lanes, 32)
    stripes = np.where(packed, plan.couple_stripes, 1)
    words = np.where(query_couple,
                     2 * band_words(n0, span, k, lanes, stripes)
                     + h * band_words(n0, m, 1, lanes, stripes),
                     band_words(n, span, i, lanes, stripes))
    off = seg[s, TB] + (words if traceback else 0)
    half = (i + 1) // 2  # couples before this pair's, or up to it
    f = 4 // plan.score_bytes
    couple = f * (q2[np.minimum(c0 + 2 * half, len(q2) - 1)] - q2[c0] + half)
    query = f * (col_prefix[np.minimum(c0 + half, len(col_prefix) - 1)] - col_prefix[c0] + half)
    boff = seg[s, BND] + np.where(coupled, couple, np.where(query_couple, query, span + i))
    nw = plan.nwide
    return {"rows": row.astype(np.int32), "cols": (c + col_base).astype(np.int32),
            "off": np.concatenate([off[:nw], plan.warp_off]),
            "boff": np.concatenate([boff[:nw], plan.warp_boff]), "op_off": op_off}
