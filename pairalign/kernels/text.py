"""numba kernels that write text: integers, CIGARs and TSV lines, into byte
buffers, with integer arithmetic only (byte-identical on every machine).
Imported when first used, so that importing pairalign does not start numba."""

from __future__ import annotations

from numba import njit

from .conventions import OP_ALIGNED, OP_DEL, OP_INS
from ._numba_cache import drop_stale

drop_stale()

_EQ, _X = ord("="), ord("X")


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
def write_cigars(op_offsets, op_code, op_len, chars, eqx, qcodes, qpos, tcodes, tpos, out,
                 out_off):
    """Every pair's CIGAR (pair ``p``'s operations at
    ``op_offsets[p]:op_offsets[p + 1]``) into ``out``, pair ``p`` from
    ``out_off[p]`` (set for ``p + 1`` on the way); returns the bytes written.
    ``chars`` maps operation codes to letters. ``eqx`` writes each run of
    aligned pairs as runs of ``=`` (the same residue code) and ``X``: pair
    ``p`` aligns ``qcodes`` from ``qpos[p]`` and ``tcodes`` from
    ``tpos[p]``."""
    for p in range(op_offsets.shape[0] - 1):
        pos = out_off[p]
        i = qpos[p] if eqx else 0
        j = tpos[p] if eqx else 0
        for k in range(op_offsets[p], op_offsets[p + 1]):
            c = op_code[k]
            n = op_len[k]
            if eqx and c == OP_ALIGNED:
                x = 0
                while x < n:
                    same = qcodes[i + x] == tcodes[j + x]
                    y = x + 1
                    while y < n and (qcodes[i + y] == tcodes[j + y]) == same:
                        y += 1
                    pos = put_int(out, pos, y - x)
                    out[pos] = _EQ if same else _X
                    pos += 1
                    x = y
                i += n
                j += n
            else:
                pos = put_int(out, pos, n)
                out[pos] = chars[c]
                pos += 1
                if c == OP_INS:
                    i += n
                elif c == OP_DEL:
                    j += n
        out_off[p + 1] = pos
    return pos


@njit(cache=True, boundscheck=False, nogil=True)
def format_rows(q, t, qbuf, qoff, tbuf, toff, ints, ident, cig, cig_off, full, out):
    """TSV lines of a chunk of pairs into ``out``; returns the bytes written.

    ``ints[p]`` = score, length, query start, query end, target start, target
    end; ``ident[p]`` the identity in ten-thousandths; pair ``p``'s CIGAR is
    ``cig[cig_off[p]:cig_off[p + 1]]``. ``full`` 0 writes the score-only
    columns (score, query end, target end), 1 every column but the CIGAR,
    2 every column.
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
            if full > 1:
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
