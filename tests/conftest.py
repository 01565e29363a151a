"""Shared fixtures and reference helpers for the tests.

The data directory is found relative to the repository: CI clones the repository
with ``shared/`` beside it, so the data lie at ``<repo>/../shared/data``.

Helpers (exposed as session fixtures, so hypothesis tests can use them too):

- ``parasail_ref``: scores from parasail (an independent implementation with our
  gap convention: a gap of length k costs ``open + (k - 1) * extend``);
- ``check_result``: vectorised checks of every alignment of an
  :class:`~pairalign.AlignmentResult` (re-scoring from the operations, consumed
  lengths against coordinates, identities and lengths, mode-specific shape), plus
  :func:`pairalign.cigar.rescore` on the CIGAR strings of a sample of pairs.
"""

from __future__ import annotations

import dataclasses
import os
import re
import zlib
from pathlib import Path

import numpy as np
import pytest

from pairalign.cigar import parse_cigar, rescore
from pairalign.kernels.conventions import OP_ALIGNED, OP_DEL, OP_INS
from pairalign.pairs import PairBatch

_ROOT = Path(__file__).resolve().parents[1]
#: $PAIRALIGN_TEST_DATA, shared/ beside the repository (CI, developers), or a
#: copy inside it (device runs); tests that need it skip where it is missing
DATA = next((d for d in ([Path(os.environ["PAIRALIGN_TEST_DATA"])]
                         if os.environ.get("PAIRALIGN_TEST_DATA") else [])
             + [_ROOT.parent / "shared" / "data", _ROOT / "shared" / "data"]
             if d.is_dir()), _ROOT.parent / "shared" / "data")
#: the examples' copies of some of the data (adeno_fiber.faa)
EXAMPLES = _ROOT / "examples"

#: Residue letters of the 20 amino acids.
AMINO = "ACDEFGHIKLMNPQRSTVWY"
#: Every column of a run's results (PairBatch), for comparisons field by field.
FIELDS = tuple(f.name for f in dataclasses.fields(PairBatch))


def stable_seed(*parts) -> int:
    """A random seed from test parameters, the same in every process (``hash``
    of a string is salted per process, so its test data would change run to
    run)."""
    return zlib.crc32(repr(parts).encode())


def assert_same_pairs(got, want) -> None:
    """Two runs' results (``PairBatch``) equal column by column (FIELDS); a
    column that differs is named with the first places where it does."""
    for f in FIELDS:
        x, y = getattr(got, f), getattr(want, f)
        assert x.shape == y.shape, f"{f}: shapes {x.shape} and {y.shape}"
        bad = np.flatnonzero(x != y)
        assert bad.size == 0, (f"{f} differs at {bad.size} places, first {bad[:5]}: "
                               f"{x[bad[:5]]} vs {y[bad[:5]]}")


#: Protein letters that BLOSUM62 scores as X (no rows of their own).
STAND_INS = "UOJ"


def stand_in_sequences(count: int, seed: int, extra: str = "XU", rate: float = 0.08,
                       lengths: tuple[int, int] = (40, 300)) -> list[str]:
    """Related proteins (mutated copies of a few random ones) with ``extra``
    letters (stand-ins such as U, O, J, and X) put in at ``rate``, so that
    aligned columns pair them with each other, with themselves and with the
    amino acids; lower case here and there."""
    rng = np.random.default_rng(seed)
    pool = np.frombuffer(AMINO.encode(), np.uint8)
    rare = np.frombuffer(extra.encode(), np.uint8)
    roots = [rng.choice(pool, int(rng.integers(*lengths))) for _ in range(max(1, count // 6))]
    out = []
    for k in range(count):
        s = roots[k % len(roots)].copy()
        hit = rng.random(len(s)) < 0.2
        s[hit] = rng.choice(pool, int(hit.sum()))
        hit = rng.random(len(s)) < rate
        s[hit] = rng.choice(rare, int(hit.sum()))
        s = s[rng.random(len(s)) > 0.03]  # deletions
        text = s.tobytes().decode()
        out.append(text.lower() if k % 7 == 3 else text)
    return out


def assert_letter_identities(res) -> None:
    """Every pair's CIGAR has ``=`` exactly where the two letters are the same
    (either case; DNA reads U as T) and ``X`` where not, and its identities
    count those columns: read from the sequences' letters, not from residue
    codes."""
    import re

    def letters(seq: str) -> str:
        up = seq.upper()
        return up.replace("U", "T") if res.scoring.alphabet == "dna" else up

    for k in range(len(res)):
        rec = res[k]
        q = letters(res.sequences[rec.query_index])
        t = letters(res.target_sequences[rec.target_index])
        i, j, same = rec.query_begin, rec.target_begin, 0
        for n, op in re.findall(r"(\d+)([=XID])", rec.cigar):
            n = int(n)
            if op in "=X":
                equal = [q[i + c] == t[j + c] for c in range(n)]
                assert all(e == (op == "=") for e in equal), (
                    f"pair {k} ({rec.cigar}): {op} over {q[i:i + n]!r} / {t[j:j + n]!r}")
                same += sum(equal)
                i, j = i + n, j + n
            elif op == "I":
                i += n
            else:
                j += n
        assert same == rec.identities, f"pair {k}: {rec.identities} identities, letters {same}"


#: Letters of pairalign's match/mismatch DNA matrix (only A, C, G, T score a match).
DNA_MM_LETTERS = "ACGTRYKMSWBDHVN"


def int16_edge(scoring, other=None, mode="global") -> int:
    """The longest ``n`` whose ``n x other`` alignments in ``mode`` still take
    16 bits (``other=None``: ``n x n``), as the scoring's own rule decides."""
    from pairalign.scoring import INT16_LIMIT

    n = np.arange(1, INT16_LIMIT)
    fits = scoring.fits_int16(n, n if other is None else other, mode)
    return int(n[fits].max())


def int16_edge_sequences(scoring) -> list[str]:
    """Pairs at the 16-bit bound from above, for the 16-bit paths: poly-W of
    the longest equal length that fits (a score within ~30 of
    ``INT16_LIMIT``), a half-W neighbour, a mismatched one and shorter ones."""
    w = int16_edge(scoring)
    return ["W" * w, "W" * w, "W" * (w // 2) + "C" * (w - w // 2), "C" * (w - 50),
            "W" * 700, "CW" * 300]


def int16_far_pairs(scoring) -> tuple[list[str], list[str]]:
    """Pairs at the 16-bit bound from below: the longest query that takes 16
    bits against 6 residues, and three targets of 6 (global scores near
    ``-INT16_LIMIT``: every residue of the query in gaps but 6). A query
    against them alone: with traceback, a task or window of it against
    anything long would need gigabytes."""
    rng = np.random.default_rng(21)
    far = "".join(rng.choice(list(AMINO), int16_edge(scoring, 6)))
    return [far], ["WCWCWC", "".join(rng.choice(list(AMINO), 6)), "CCCCCC"]


# ---------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"test data not found at {DATA} (shared/ beside the repository, or "
                    f"PAIRALIGN_TEST_DATA)")
    return DATA


_RECORDS: dict = {}


def load_records(name: str):
    """Records of one data file (read once per session)."""
    from pairalign import read_sequences

    if name not in _RECORDS:
        path = next((d / name for d in (DATA, EXAMPLES) if (d / name).is_file()), None)
        if path is None:
            pytest.skip(f"test data not found: {DATA / name}")
        _RECORDS[name] = read_sequences(path)
    return _RECORDS[name]


@pytest.fixture(scope="session")
def records():
    """``records(name)``: the records of a file of the data directory (cached)."""
    return load_records


def sample_indices(n_total: int, n: int, seed: int, lengths=None, n_longest: int = 0) -> list[int]:
    """``n`` distinct indices chosen with a fixed seed, optionally including the
    ``n_longest`` longest sequences; in increasing order."""
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    if n_longest:
        chosen = [int(k) for k in np.argsort(-np.asarray(lengths), kind="stable")[:n_longest]]
    rest = [k for k in rng.permutation(n_total).tolist() if k not in chosen]
    chosen += rest[: n - len(chosen)]
    return sorted(chosen)


# ---------------------------------------------------------------------------------
# parasail reference
# ---------------------------------------------------------------------------------

_PARASAIL_NAMED = {"BLOSUM45": "blosum45", "BLOSUM50": "blosum50", "BLOSUM62": "blosum62",
                   "BLOSUM80": "blosum80", "BLOSUM90": "blosum90", "PAM30": "pam30",
                   "PAM70": "pam70", "PAM250": "pam250"}
_PMATRIX: dict = {}


def parasail_matrix(scoring):
    """The parasail matrix for a pairalign scoring.

    Protein: parasail's own matrix of the same name (an independent copy of the
    table). DNA match/mismatch: built from the documented rule (a match only for
    identical A, C, G, T; every other pair, ambiguity codes included, a
    mismatch), not from ``scoring.matrix``. Other DNA matrices (NUC.4.4): copied
    from ``scoring.matrix``.
    """
    import parasail

    key = (scoring.name, scoring.alphabet, int(scoring.matrix[0, 0]), int(scoring.matrix[0, 1]))
    if key in _PMATRIX:
        return _PMATRIX[key]
    if scoring.alphabet == "protein" and scoring.name.upper() in _PARASAIL_NAMED:
        m = getattr(parasail, _PARASAIL_NAMED[scoring.name.upper()])
    elif scoring.alphabet == "dna" and scoring.name == "match/mismatch":
        match, mismatch = int(scoring.matrix[0, 0]), int(scoring.matrix[0, 1])
        m = parasail.matrix_create(DNA_MM_LETTERS, match, mismatch)
        for k in range(4, len(DNA_MM_LETTERS)):
            m.set_value(k, k, mismatch)
    else:
        m = parasail.matrix_create(scoring.letters, 0, 0)
        for a in range(len(scoring.letters)):
            for b in range(len(scoring.letters)):
                m.set_value(a, b, int(scoring.matrix[a, b]))
    _PMATRIX[key] = m
    return m


_PARASAIL_FN = {"local": "sw", "global": "nw", "semiglobal": "sg"}


def _kind(scoring) -> str:
    """parasail's vectorisation to trust: striped, except where open <= extend.

    parasail 1.3.4's striped functions under-report scores when open == extend
    (seen: BLOSUM80 3/3, ``nw_striped_32`` 398 where ``nw``, ``nw_scan_32``,
    ``nw_diag_32`` and Biopython give 401); the scan functions agree with the
    plain ones there.
    """
    return "striped" if scoring.gap_open > scoring.gap_extend else "scan"


def parasail_score(mode: str, query: str, target: str, scoring) -> int:
    """parasail's optimal score (32-bit) of one pair."""
    import parasail

    fn = getattr(parasail, f"{_PARASAIL_FN[mode]}_{_kind(scoring)}_32")
    r = fn(query, target, scoring.gap_open, scoring.gap_extend, parasail_matrix(scoring))
    return int(r.score)


def parasail_pair_scores(mode: str, queries: list[str], targets: list[str], qidx, tidx,
                         scoring) -> np.ndarray:
    """parasail scores of the pairs ``(queries[qidx[k]], targets[tidx[k]])``, with
    one profile per distinct query (profile reuse)."""
    import parasail

    fn = getattr(parasail, f"{_PARASAIL_FN[mode]}_{_kind(scoring)}_profile_32")
    matrix = parasail_matrix(scoring)
    qidx = np.asarray(qidx)
    tidx = np.asarray(tidx)
    out = np.empty(len(qidx), np.int64)
    order = np.argsort(qidx, kind="stable")
    go, ge = scoring.gap_open, scoring.gap_extend
    start = 0
    while start < len(order):
        q = qidx[order[start]]
        end = start
        while end < len(order) and qidx[order[end]] == q:
            end += 1
        prof = parasail.profile_create_32(queries[q], matrix)
        for k in order[start:end]:
            out[k] = fn(prof, targets[tidx[k]], go, ge).score
        start = end
    return out


@pytest.fixture(scope="session")
def parasail_ref():
    """Namespace of parasail helpers: ``score``, ``pair_scores``, ``matrix``."""
    pytest.importorskip("parasail")

    class Ref:
        score = staticmethod(parasail_score)
        pair_scores = staticmethod(parasail_pair_scores)
        matrix = staticmethod(parasail_matrix)

    return Ref


def result_parasail_scores(res) -> np.ndarray:
    """parasail scores of every pair of an AlignmentResult, in its order."""
    p = res.pairs
    return parasail_pair_scores(res.mode, res.sequences, res.target_sequences, p.query,
                                p.target, res.scoring)


# ---------------------------------------------------------------------------------
# alignment checks
# ---------------------------------------------------------------------------------


def _expand(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` for each start and count."""
    counts = np.asarray(counts, np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    rep_start = np.repeat(np.asarray(starts, np.int64), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    return rep_start + (np.arange(total) - first)


def _concat_codes(sequences: list[str], scoring) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter((len(s) for s in sequences), np.int64, len(sequences))
    offsets = np.zeros(len(sequences) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return scoring.encode("".join(sequences)), offsets


def check_pairs(res, *, cigar_sample: int = 50, seed: int = 0) -> None:
    """Check every alignment of a traceback result against its sequences.

    For every pair: the operations (``M``, ``I``, ``D``) re-score to the
    reported score (gap runs ``open + (k - 1) * extend``, matrix scores for
    aligned columns); run-length operations (no two neighbours alike, lengths
    > 0); consumed lengths equal ``end - begin`` on both sequences, within the
    sequences; identities = count of aligned columns of the same residue code,
    length = all columns. Global: the alignment spans both sequences. Semiglobal:
    it starts on the first row or column and ends on the last row or column.
    Local: score >= 0; empty iff the score is 0; first and last columns are
    aligned residues of positive score. Every pair's CIGAR string parses to
    exactly those operations once its ``=`` and ``X`` runs are merged into
    ``M`` (so each CIGAR re-scores to its score), with ``=`` exactly where the
    residue codes are the same and no two neighbouring runs alike; a sample of
    pairs is also re-scored with :func:`pairalign.cigar.rescore` and through its
    gapped strings.
    """
    assert res.traceback
    p = res.pairs
    P = len(p)
    if P == 0:
        return
    sc = res.scoring
    qcodes, qoff = _concat_codes(res.sequences, sc)
    if res.all_vs_all:
        tcodes, toff = qcodes, qoff
    else:
        tcodes, toff = _concat_codes(res.target_sequences, sc)
    q = np.asarray(p.query, np.int64)
    t = np.asarray(p.target, np.int64)
    qlen = qoff[q + 1] - qoff[q]
    tlen = toff[t + 1] - toff[t]
    qb, qe = p.query_begin.astype(np.int64), p.query_end.astype(np.int64)
    tb, te = p.target_begin.astype(np.int64), p.target_end.astype(np.int64)
    score = p.score.astype(np.int64)

    def bad(mask, what):
        k = int(np.flatnonzero(mask)[0])
        rec = res[k]
        return (f"{what}: {int(mask.sum())} of {P} pairs, first pair {k}: {rec}\n"
                f"query {res.sequences[rec.query_index]!r}\n"
                f"target {res.target_sequences[rec.target_index]!r}")

    m = (qb < 0) | (qb > qe) | (qe > qlen) | (tb < 0) | (tb > te) | (te > tlen)
    assert not m.any(), bad(m, "coordinates outside the sequences")

    n_ops = np.diff(p.op_offsets)
    assert len(p.op_code) == len(p.op_len) == int(p.op_offsets[-1])
    code = p.op_code.astype(np.int64)
    ln = p.op_len.astype(np.int64)
    assert (ln > 0).all(), "operation of length 0"
    assert np.isin(code, [OP_ALIGNED, OP_INS, OP_DEL]).all(), "unknown operation code"
    pair_of_op = np.repeat(np.arange(P), n_ops)
    same_as_prev = np.zeros(len(code), bool)
    same_as_prev[1:] = (code[1:] == code[:-1]) & (pair_of_op[1:] == pair_of_op[:-1])
    m = np.zeros(P, bool)
    m[pair_of_op[same_as_prev]] = True
    assert not m.any(), bad(m, "two neighbouring operations alike (not run-length)")

    is_m = code == OP_ALIGNED
    q_adv = np.where(is_m | (code == OP_INS), ln, 0)
    t_adv = np.where(is_m | (code == OP_DEL), ln, 0)
    q_used = np.bincount(pair_of_op, q_adv, minlength=P).astype(np.int64)
    t_used = np.bincount(pair_of_op, t_adv, minlength=P).astype(np.int64)
    m = (q_used != qe - qb) | (t_used != te - tb)
    assert not m.any(), bad(m, "consumed lengths differ from end - begin")

    # positions of each op's first column, per sequence
    op_start = p.op_offsets[:-1]
    q_cum = np.cumsum(q_adv) - q_adv
    t_cum = np.cumsum(t_adv) - t_adv
    first_q = np.zeros(P, np.int64)
    first_t = np.zeros(P, np.int64)
    has = n_ops > 0
    first_q[has] = q_cum[op_start[has]]
    first_t[has] = t_cum[op_start[has]]
    op_q = qoff[q][pair_of_op] + qb[pair_of_op] + q_cum - first_q[pair_of_op]
    op_t = toff[t][pair_of_op] + tb[pair_of_op] + t_cum - first_t[pair_of_op]

    # aligned columns
    mi = np.flatnonzero(is_m)
    cq = _expand(op_q[mi], ln[mi])
    ct = _expand(op_t[mi], ln[mi])
    c_pair = np.repeat(pair_of_op[mi], ln[mi])
    a, b = qcodes[cq], tcodes[ct]
    same = a == b
    sub = sc.matrix[a, b].astype(np.int64)
    col_score = np.bincount(c_pair, sub, minlength=P)
    gi = ~is_m
    gap_cost = np.bincount(pair_of_op[gi], sc.gap_open + (ln[gi] - 1) * sc.gap_extend,
                           minlength=P)
    rescored = np.rint(col_score - gap_cost).astype(np.int64)
    m = rescored != score
    assert not m.any(), bad(m, f"re-scored {rescored[m][:5]} != reported {score[m][:5]}")

    ident = np.bincount(c_pair[same], minlength=P)
    m = ident.astype(np.int64) != p.identities
    assert not m.any(), bad(m, "identities != count of identical aligned columns")
    total = np.bincount(pair_of_op, ln, minlength=P)
    m = total.astype(np.int64) != p.length
    assert not m.any(), bad(m, "length != number of columns")

    if res.mode == "global":
        m = (qb != 0) | (tb != 0) | (qe != qlen) | (te != tlen)
        assert not m.any(), bad(m, "global alignment does not span both sequences")
    elif res.mode == "semiglobal":
        m = ~(((qb == 0) | (tb == 0)) & ((qe == qlen) | (te == tlen)))
        assert not m.any(), bad(m, "semiglobal alignment does not run edge to edge")
    else:
        m = score < 0
        assert not m.any(), bad(m, "negative local score")
        m = (n_ops == 0) != (score == 0)
        assert not m.any(), bad(m, "local: empty alignment iff score 0 violated")
        m = (n_ops == 0) & ((qb != qe) | (tb != te))
        assert not m.any(), bad(m, "empty local alignment with a non-empty range")
        nz = np.flatnonzero(n_ops > 0)
        firsts = p.op_offsets[nz]
        lasts = p.op_offsets[nz + 1] - 1
        m = np.zeros(P, bool)
        m[nz] = ~is_m[firsts] | ~is_m[lasts]
        assert not m.any(), bad(m, "local alignment begins or ends with a gap")
        # the first and last columns score > 0 (else a shorter alignment ties)
        fq, ft = op_q[firsts], op_t[firsts]
        lq = op_q[lasts] + ln[lasts] - 1
        lt = op_t[lasts] + ln[lasts] - 1
        m[nz] = (sc.matrix[qcodes[fq], tcodes[ft]] <= 0) | (sc.matrix[qcodes[lq], tcodes[lt]] <= 0)
        assert not m.any(), bad(m, "local alignment begins or ends with a column scoring <= 0")

    # every CIGAR string spells exactly the operations re-scored above, its
    # M runs as = where the residue codes are the same and X where not
    cigars = [res[k].cigar for k in range(P)]
    joined = "".join(cigars)
    toks = re.findall(r"(\d+)([=XID])", joined)
    assert sum(len(n) + 1 for n, _ in toks) == len(joined), "CIGAR holds other than [0-9=XID]"
    tok_len = np.array([int(n) for n, _ in toks], np.int64)
    tok_op = np.frombuffer(b"".join(op.encode() for _, op in toks), np.uint8)
    tok_pair = np.repeat(np.arange(P), [len(re.findall(r"[=XID]", c)) for c in cigars])
    eqx = (tok_op == ord("=")) | (tok_op == ord("X"))
    # the column-by-column =/X of the CIGARs against the residues
    col_eq = np.repeat(tok_op[eqx] == ord("="), tok_len[eqx])
    assert len(col_eq) == len(same), "CIGAR =/X columns differ from the aligned columns"
    m = np.zeros(P, bool)
    m[c_pair[col_eq != same]] = True
    assert not m.any(), bad(m, "'=' / 'X' disagree with the residues")
    # =/X runs maximal; merged into M runs they are the operations
    lut = np.full(256, -1, np.int64)
    for c, v in zip(b"=XID", (OP_ALIGNED, OP_ALIGNED, OP_INS, OP_DEL)):
        lut[c] = v
    tok_code = lut[tok_op]
    again = np.zeros(len(toks), bool)
    again[1:] = (tok_op[1:] == tok_op[:-1]) & (tok_pair[1:] == tok_pair[:-1])
    m = np.zeros(P, bool)
    m[tok_pair[again]] = True
    assert not m.any(), bad(m, "two neighbouring CIGAR operations alike")
    start = np.ones(len(toks), bool)
    start[1:] = (tok_code[1:] != tok_code[:-1]) | (tok_pair[1:] != tok_pair[:-1])
    run = np.cumsum(start) - 1
    merged_code = tok_code[start]
    merged_len = np.bincount(run, tok_len).astype(np.int64) if len(toks) else tok_len
    assert np.array_equal(np.bincount(tok_pair[start], minlength=P), n_ops), \
        "CIGAR op counts differ from the operations"
    assert np.array_equal(merged_code, code), "CIGAR ops differ from the operations"
    assert np.array_equal(merged_len, ln), "CIGAR run lengths differ from the operations"

    # pairalign.cigar.rescore and the gapped strings on a sample
    rng = np.random.default_rng(seed)
    ks = rng.choice(P, size=min(cigar_sample, P), replace=False)
    for k in ks.tolist():
        check_record(res, k)


def check_record(res, k: int) -> None:
    """One pair through its public record: CIGAR string re-scored by
    :func:`pairalign.cigar.rescore`, consumed lengths and gapped strings."""
    rec = res[k]
    qs = res.sequences[rec.query_index]
    ts = res.target_sequences[rec.target_index]
    ops = parse_cigar(rec.cigar)
    assert "".join(f"{n}{op}" for n, op in ops) == rec.cigar, rec
    assert rescore(rec.cigar, qs, ts, rec.query_begin, rec.target_begin, res.scoring) == rec.score, rec
    q_used = sum(n for n, op in ops if op in "M=XI")
    t_used = sum(n for n, op in ops if op in "M=XD")
    assert rec.query_end - rec.query_begin == q_used, rec
    assert rec.target_end - rec.target_begin == t_used, rec
    assert rec.identities == sum(n for n, op in ops if op == "=")
    assert rec.length == sum(n for n, _ in ops)
    ga, gb = res.aligned(k)
    assert len(ga) == len(gb) == rec.length
    assert ga.replace("-", "") == qs[rec.query_begin:rec.query_end]
    assert gb.replace("-", "") == ts[rec.target_begin:rec.target_end]
    assert gapped_score(ga, gb, res.scoring) == rec.score


def gapped_score(ga: str, gb: str, scoring) -> int:
    """The score of two gapped rows (``-`` for gaps), computed column by column."""
    total = 0
    prev = None  # "a" gap in the first row, "b" in the second, None no gap
    for x, y in zip(ga, gb):
        assert not (x == "-" and y == "-"), "column of two gaps"
        if x == "-" or y == "-":
            kind = "a" if x == "-" else "b"
            total -= scoring.gap_extend if kind == prev else scoring.gap_open
            prev = kind
        else:
            total += scoring.score(x, y)
            prev = None
    return total


@pytest.fixture(scope="session")
def check_result():
    """``check_result(res)``: :func:`check_pairs` on a traceback result."""
    return check_pairs


# ---------------------------------------------------------------------------------
# matrix files
# ---------------------------------------------------------------------------------


def random_matrix(rng, letters="ARNDCQEGHILKMFPSTWYVBZX*", low=-9, high=12, diagonal=(4, 15)):
    """A symmetric integer matrix, its diagonal mostly the largest of its row."""
    k = len(letters)
    m = rng.integers(low, high, (k, k))
    m = np.triu(m) + np.triu(m, 1).T
    m[np.diag_indices(k)] = rng.integers(*diagonal, k)
    return m


def write_ncbi(path, letters, scores, comment="# a matrix of the tests"):
    """The NCBI layout, with comments, blank lines and ragged spacing."""
    lines = [comment, "", "    " + "  ".join(letters)]
    for c, row in zip(letters, scores):
        lines.append(c + " " + " ".join(f"{int(x):>{3 + (i % 2)}}" for i, x in enumerate(row)))
    path.write_text("\n".join(lines) + "\n")
    return path
