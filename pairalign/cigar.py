"""CIGAR strings from run-length operations, and scores re-computed from them."""

from __future__ import annotations

import numpy as np

from .kernels.conventions import OP_ALIGNED, OP_CHARS, OP_DEL, OP_INS

_NONE = np.zeros(0, np.uint8)


def format_cigars(op_offsets: np.ndarray, op_code: np.ndarray, op_len: np.ndarray,
                  use_m: bool = False,
                  residues: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
                  ) -> tuple[np.ndarray, np.ndarray]:
    """All CIGARs of a batch as one byte buffer and per-pair offsets.

    Parameters
    ----------
    op_offsets, op_code, op_len : numpy.ndarray
        The pairs' operations (:class:`~pairalign.pairs.PairBatch`).
    use_m : bool
        Write ``M`` for matches and mismatches alike instead of ``=``/``X``.
    residues : tuple of numpy.ndarray, optional
        ``(qcodes, qpos, tcodes, tpos)``, needed for ``=``/``X``: residue
        codes (:meth:`~pairalign.scoring.Scoring.encode`) in which pair ``p``
        aligns ``qcodes`` from ``qpos[p]`` and ``tcodes`` from ``tpos[p]``
        (its begins).
    """
    from .kernels import text

    if use_m:
        residues = (_NONE, np.zeros(len(op_offsets), np.int64), _NONE,
                    np.zeros(len(op_offsets), np.int64))
        size = 11 * len(op_code)
    elif residues is None:
        raise ValueError("=/X CIGARs need the residues (or use_m=True)")
    else:  # a run of k =/X columns takes at most 2 k bytes
        size = 11 * len(op_code) + 2 * int(op_len[op_code == OP_ALIGNED].sum())
    out = np.empty(size, np.uint8)
    out_off = np.zeros(len(op_offsets), np.int64)
    chars = np.frombuffer(OP_CHARS, np.uint8)
    qcodes, qpos, tcodes, tpos = residues
    end = text.write_cigars(op_offsets, op_code, op_len, chars, not use_m, qcodes,
                            np.asarray(qpos, np.int64), tcodes, np.asarray(tpos, np.int64),
                            out, out_off)
    return out[:end], out_off


def cigar_string(op_code: np.ndarray, op_len: np.ndarray, use_m: bool = False,
                 query: np.ndarray | None = None, target: np.ndarray | None = None) -> str:
    """The CIGAR of one pair; ``=``/``X`` need ``query`` and ``target``, the
    residue codes from the pair's begins on."""
    offsets = np.array([0, len(op_code)], np.int64)
    residues = None
    if not use_m:
        if query is None or target is None:
            raise ValueError("=/X CIGARs need the query and target residues (or use_m=True)")
        residues = (query, np.zeros(1, np.int64), target, np.zeros(1, np.int64))
    buf, _ = format_cigars(offsets, op_code, op_len, use_m, residues)
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
           "OP_ALIGNED", "OP_DEL", "OP_INS"]
