"""numba kernels that write text: integers, CIGARs and TSV lines, into byte
buffers, with integer arithmetic only (byte-identical on every machine).
Imported when first used, so that importing pairalign does not start numba."""

from __future__ import annotations

from numba import njit

from .conventions import OP_MATCH, OP_MISMATCH
from ._numba_cache import drop_stale

drop_stale()

_M = ord("M")


@njit(cache=True, boundscheck=False)
def put_int(out, pos, v):
    """Write the decimal digits of ``v`` (sign first if negative) at ``pos``;
    returns the position after them."""
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
def put_bytes(out, pos, src, start, end):
    for k in range(start, end):
        out[pos] = src[k]
        pos += 1
    return pos


@njit(cache=True, boundscheck=False, nogil=True)
def write_cigars(op_offsets, op_code, op_len, chars, merge_m, out, out_off):
    """Every pair's CIGAR (pair ``p``'s operations at
    ``op_offsets[p]:op_offsets[p + 1]``) into ``out``, pair ``p`` from
    ``out_off[p]`` (set for ``p + 1`` on the way); returns the bytes written.
    ``chars`` maps operation codes to letters; ``merge_m`` writes runs of
    matches and mismatches as one ``M``."""
    for p in range(op_offsets.shape[0] - 1):
        pos = out_off[p]
        k = op_offsets[p]
        end = op_offsets[p + 1]
        while k < end:
            c = op_code[k]
            n = op_len[k]
            if merge_m and (c == OP_MATCH or c == OP_MISMATCH):
                k2 = k + 1
                while k2 < end and (op_code[k2] == OP_MATCH or op_code[k2] == OP_MISMATCH):
                    n += op_len[k2]
                    k2 += 1
                ch = _M
                k = k2
            else:
                ch = chars[c]
                k += 1
            pos = put_int(out, pos, n)
            out[pos] = ch
            pos += 1
        out_off[p + 1] = pos
    return pos


@njit(cache=True, boundscheck=False, nogil=True)
def format_rows(q, t, qbuf, qoff, tbuf, toff, ints, ident, cig, cig_off, full, out):
    """TSV lines of a chunk of pairs into ``out``; returns the bytes written.

    ``ints[p]`` = score, length, query start, query end, target start, target
    end; ``ident[p]`` the identity in ten-thousandths; pair ``p``'s CIGAR is
    ``cig[cig_off[p]:cig_off[p + 1]]``. ``full`` False writes the score-only
    columns (score, query end, target end).
    """
    pos = 0
    for p in range(q.shape[0]):
        pos = put_bytes(out, pos, qbuf, qoff[q[p]], qoff[q[p] + 1])
        out[pos] = 9
        pos = put_bytes(out, pos + 1, tbuf, toff[t[p]], toff[t[p] + 1])
        out[pos] = 9
        pos = put_int(out, pos + 1, ints[p, 0])  # score
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
                pos = put_int(out, pos + 1, ints[p, c])
            out[pos] = 9
            pos = put_bytes(out, pos + 1, cig, cig_off[p], cig_off[p + 1])
        else:
            out[pos] = 9
            pos = put_int(out, pos + 1, ints[p, 3])  # query end
            out[pos] = 9
            pos = put_int(out, pos + 1, ints[p, 5])  # target end
        out[pos] = 10
        pos += 1
    return pos
