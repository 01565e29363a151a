"""CIGAR strings from run-length operations, and scores re-computed from them."""

from __future__ import annotations

import numpy as np
from numba import njit

from .kernels.conventions import OP_CHARS, OP_DEL, OP_INS, OP_MATCH, OP_MISMATCH

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


@njit(cache=True, boundscheck=False, nogil=True)
def _format(op_offsets, op_code, op_len, chars, merge_m, out, out_off):
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


def format_cigars(op_offsets: np.ndarray, op_code: np.ndarray, op_len: np.ndarray,
                  use_m: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """All CIGARs of a batch as one byte buffer and per-pair offsets.

    Parameters
    ----------
    use_m : bool
        Write ``M`` for matches and mismatches alike instead of ``=``/``X``.
    """
    out = np.empty(int(len(op_code) * 11), np.uint8)
    out_off = np.zeros(len(op_offsets), np.int64)
    chars = np.frombuffer(OP_CHARS, np.uint8)
    end = _format(op_offsets, op_code, op_len, chars, use_m, out, out_off)
    return out[:end], out_off


def cigar_string(op_code: np.ndarray, op_len: np.ndarray, use_m: bool = False) -> str:
    """The CIGAR of one pair."""
    buf, _ = format_cigars(np.array([0, len(op_code)], np.int64), op_code, op_len, use_m)
    return buf.tobytes().decode("ascii")


def parse_cigar(cigar: str) -> list[tuple[int, str]]:
    """``[(length, op), ...]`` of a CIGAR string."""
    import re

    return [(int(n), op) for n, op in re.findall(r"(\d+)([MIDX=])", cigar)]


def rescore(cigar: str, query: str, target: str, query_begin: int, target_begin: int,
            scoring) -> int:
    """The score of an alignment re-computed from its CIGAR (an independent check).

    Gap runs cost ``open + (k - 1) * extend``; an ``I`` run next to a ``D`` run
    is two gaps.
    """
    q = scoring.encode(query)
    t = scoring.encode(target)
    i, j, score = query_begin, target_begin, 0
    for n, op in parse_cigar(cigar):
        if op in "M=X":
            score += int(scoring.matrix[q[i:i + n], t[j:j + n]].sum())
            i += n
            j += n
        else:
            score -= scoring.gap_open + (n - 1) * scoring.gap_extend
            if op == "I":
                i += n
            else:
                j += n
    return score


__all__ = ["format_cigars", "cigar_string", "parse_cigar", "rescore",
           "OP_DEL", "OP_INS"]
