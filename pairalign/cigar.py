"""CIGAR strings from run-length operations, and scores re-computed from them."""

from __future__ import annotations

import numpy as np

from .kernels.conventions import OP_CHARS, OP_DEL, OP_INS


def format_cigars(op_offsets: np.ndarray, op_code: np.ndarray, op_len: np.ndarray,
                  use_m: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """All CIGARs of a batch as one byte buffer and per-pair offsets.

    Parameters
    ----------
    use_m : bool
        Write ``M`` for matches and mismatches alike instead of ``=``/``X``.
    """
    from .kernels import text

    out = np.empty(int(len(op_code) * 11), np.uint8)
    out_off = np.zeros(len(op_offsets), np.int64)
    chars = np.frombuffer(OP_CHARS, np.uint8)
    end = text.write_cigars(op_offsets, op_code, op_len, chars, use_m, out, out_off)
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
