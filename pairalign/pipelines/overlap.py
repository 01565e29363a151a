"""Read overlaps for assembly: semiglobal alignment of every read with every
other read, on both strands, classified and written as PAF.

Every pair of reads ``i < j`` is aligned twice in semiglobal mode (end gaps
free): read ``i`` against read ``j`` (strand ``+``) and read ``i`` against the
reverse complement of read ``j`` (strand ``-``). Per pair the better-scoring
strand of those that pass the thresholds below is kept (``+`` where both
score the same). With ``qb, qe`` the
aligned range of the query (read ``i``), ``tb, te`` that of the target in the
orientation aligned (``j`` or its reverse complement), and ``T`` =
:data:`END_TOLERANCE` bases:

- ``containment`` when one read is aligned end to end up to ``T`` unaligned
  bases at each of its ends (``qb <= T and qlen - qe <= T``: the query lies in
  the target; or the same for the target);
- ``overlap`` otherwise: a suffix-prefix (dovetail) overlap. A semiglobal
  alignment always starts at the start of one sequence and ends at the end of
  one, so there is no third, internal case.

An overlap is reported when its aligned length on the shorter side
(``min(qe - qb, te - tb)``) is at least ``min_overlap`` (and at least 1) and
its identity (``matches`` / alignment columns, gap columns included) at least
``min_identity``.

PAF (minimap2's format): 12 columns ``qname qlen qstart qend strand tname tlen
tstart tend matches block_length mapq`` (0-based starts, exclusive ends; target
coordinates on the target's forward strand, also for ``-``; ``matches`` is the
number of columns pairing a base (A, C, G, T) with the same base, as minimap2
counts them: N against N, or any ambiguity code against itself, is no match;
``block_length`` is the number of alignment columns,
mapq 255 for "not computed"), then ``tp:A:S``, ``AS:i:`` (the alignment score)
and ``cg:Z:`` (the CIGAR with ``M`` for matches and mismatches; for ``-`` the
operations run along the target's forward strand against the reverse
complement of the query, as in minimap2; ``I`` consumes the query).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from ..cigar import format_cigars
from ..errors import OptionError
from ..kernels.conventions import OP_ALIGNED, OP_DEL, OP_INS
from ..output import pair_mask, write_lines, writing_to
from ..pairs import _offsets, _ranges

if TYPE_CHECKING:
    from ..api import SequencesLike
    from ..output import PathOrHandle

#: Unaligned bases tolerated at each end of a read for it to count as contained.
END_TOLERANCE = 10

_COMPLEMENT = str.maketrans("ACGTURYKMSWBDHVN", "TGCAAYRMKSWVHDBN")


def reverse_complement(seq: str) -> str:
    """The reverse complement of a DNA sequence (IUPAC codes complemented)."""
    return seq.translate(_COMPLEMENT)[::-1]


@dataclass(frozen=True)
class Overlap:
    """One overlap between two reads (coordinates 0-based, ends exclusive).

    Target coordinates are on the target's forward strand for both strands.
    ``kind`` is ``"overlap"`` (suffix-prefix) or ``"containment"``;
    ``contained`` names the contained read (``None`` for an overlap).
    """

    query: str
    target: str
    query_length: int
    target_length: int
    query_start: int
    query_end: int
    target_start: int
    target_end: int
    strand: str
    kind: str
    contained: str | None
    identity: float
    matches: int
    aligned_length: int
    score: int
    cigar: str

    @property
    def overlap_length(self) -> int:
        """Aligned bases on the shorter side: ``min(qend - qstart, tend - tstart)``."""
        return min(self.query_end - self.query_start, self.target_end - self.target_start)


@dataclass
class OverlapTable:
    """Columnar overlaps (numpy arrays) with the read ids: what :func:`find_overlaps`
    builds its records from and :func:`write_paf` writes."""

    ids: list[str]
    lengths: np.ndarray
    query: np.ndarray
    target: np.ndarray
    query_start: np.ndarray
    query_end: np.ndarray
    target_start: np.ndarray
    target_end: np.ndarray
    reverse: np.ndarray
    contained: np.ndarray  # 0: none, 1: query contained, 2: target contained
    matches: np.ndarray
    aligned_length: np.ndarray
    score: np.ndarray
    cigar_bytes: np.ndarray
    cigar_offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.query)

    def cigar(self, k: int) -> str:
        return self.cigar_bytes[self.cigar_offsets[k]:self.cigar_offsets[k + 1]].tobytes().decode()

    def records(self) -> list[Overlap]:
        out = []
        for k in range(len(self)):
            q, t = int(self.query[k]), int(self.target[k])
            c = int(self.contained[k])
            n = int(self.aligned_length[k])
            out.append(Overlap(
                self.ids[q], self.ids[t], int(self.lengths[q]), int(self.lengths[t]),
                int(self.query_start[k]), int(self.query_end[k]),
                int(self.target_start[k]), int(self.target_end[k]),
                "-" if self.reverse[k] else "+", "containment" if c else "overlap",
                None if c == 0 else (self.ids[q] if c == 1 else self.ids[t]),
                int(self.matches[k]) / n if n else 0.0, int(self.matches[k]), n,
                int(self.score[k]), self.cigar(k)))
        return out


def _reverse_ops(op_offsets: np.ndarray, op_code: np.ndarray, op_len: np.ndarray):
    """The operations of every pair in reverse order (same offsets)."""
    counts = np.diff(op_offsets)
    pair = np.repeat(np.arange(len(counts)), counts)
    k = np.arange(len(op_code))
    src = op_offsets[pair + 1] - 1 - (k - op_offsets[pair])
    return op_code[src], op_len[src]


#: Blocks of reads for the reverse-strand rectangle (see :func:`_reverse_pairs`).
REVERSE_BLOCKS = 4


def _reverse_pairs(recs, rc, opts, keep):
    """Pairs ``i < j`` of read ``i`` against the reverse complement of read
    ``j`` that ``keep`` (a batch -> mask of the pairs, whatever their
    indices) keeps, each window filtered as it finishes.

    Only the upper triangle is needed (``i`` vs ``rc(j)`` is ``j`` vs ``rc(i)``
    reversed), so the reads are cut into :data:`REVERSE_BLOCKS` blocks and
    each block is aligned with the reverse complements of itself and of the
    later blocks: about ``n^2 / 2 + n^2 / 8`` pairs instead of ``n^2``.
    """
    from dataclasses import replace

    from ..api import iter_many
    from ..pairs import PairBatch
    from ..sequences import SequenceRecords

    n = len(recs)
    k = REVERSE_BLOCKS if n >= 16 * REVERSE_BLOCKS else 1
    bounds = np.linspace(0, n, k + 1).astype(int)
    parts = []

    def sub(r, a, b):
        return SequenceRecords(r.ids[a:b], r.descriptions[a:b], r.sequences[a:b],
                               r.alphabet, r.source)

    for b in range(k):
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        for part in iter_many(sub(recs, lo, hi), sub(rc, lo, n), ordered=False, keep=keep,
                              **opts):
            res = part.pairs
            res = replace(res, query=res.query.astype(np.int64) + lo,
                          target=res.target.astype(np.int64) + lo)
            parts.append(res.take(res.query < res.target))
    return PairBatch.concat(parts)


def _candidates(batch, qlen, tlen, min_overlap, min_identity):
    """Mask of the pairs passing the thresholds (the identity compared as
    :func:`~pairalign.output.pair_mask` compares it: an identity equal to the
    threshold passes). An alignment of gaps alone on one read is no overlap."""
    ov = np.minimum(batch.query_end - batch.query_begin, batch.target_end - batch.target_begin)
    return (ov >= max(min_overlap, 1)) & pair_mask(batch, None, min_identity)


#: Bytes of DNA reads as compared for PAF's matches: upper case, U read as T.
_BASES = bytes.maketrans(b"U", b"T")
_UNAMBIGUOUS = np.zeros(256, bool)
_UNAMBIGUOUS[np.frombuffer(b"ACGT", np.uint8)] = True

#: Aligned columns expanded at a time by :func:`_ambiguous_identities`.
AMBIGUOUS_CHUNK = 1 << 24


def _read_bytes(sequences: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The reads' bytes, upper case with U as T, concatenated, and each read's start."""
    joined = "".join(sequences).encode("ascii").upper().translate(_BASES)
    starts = np.zeros(len(sequences) + 1, np.int64)
    np.cumsum([len(x) for x in sequences], out=starts[1:])
    return np.frombuffer(joined, np.uint8), starts


def _ambiguous_identities(batch, is_rev, reads: list[str],
                          reverse_complements: list[str]) -> np.ndarray:
    """Per pair of ``batch`` (read ``query`` against read ``target``, or its
    reverse complement where ``is_rev``), the aligned columns that pair an
    ambiguity code with the same code: identical, so counted in the batch's
    identities, but no residue match in PAF."""
    out = np.zeros(len(batch), np.int64)
    codes, starts = _read_bytes(reads)
    seen = np.zeros(len(codes) + 1, np.int64)
    np.cumsum(~_UNAMBIGUOUS[codes], out=seen[1:])
    ambiguous = seen[starts[1:]] - seen[starts[:-1]]  # ambiguity codes a read
    q = batch.query.astype(np.int64)
    t = batch.target.astype(np.int64)
    counts = batch.n_ops
    aligned = batch.aligned_columns()
    pairs = np.flatnonzero((ambiguous[q] > 0) & (ambiguous[t] > 0) & (aligned > 0))
    if pairs.size == 0:
        return out
    both = np.concatenate([codes, _read_bytes(reverse_complements)[0]])
    cuts = np.searchsorted(np.cumsum(aligned[pairs]),
                           np.arange(AMBIGUOUS_CHUNK, int(aligned[pairs].sum()) + 1,
                                     AMBIGUOUS_CHUNK), side="right")
    for chunk in np.split(pairs, cuts):
        if chunk.size == 0:
            continue
        n_ops = counts[chunk]
        ops = _ranges(batch.op_offsets[chunk], n_ops)
        owner = np.repeat(np.arange(chunk.size), n_ops)
        code, length = batch.op_code[ops], batch.op_len[ops].astype(np.int64)
        q_step = np.where(code != OP_DEL, length, 0)
        t_step = np.where(code != OP_INS, length, 0)
        first = _offsets(n_ops)[:-1][owner]  # each operation's pair's first
        q_at = np.cumsum(q_step) - q_step
        t_at = np.cumsum(t_step) - t_step
        q_at -= q_at[first]
        t_at -= t_at[first]
        keep = code == OP_ALIGNED
        owner, length = owner[keep], length[keep]
        q_base = starts[q[chunk]] + batch.query_begin[chunk].astype(np.int64)
        t_base = (starts[t[chunk]] + batch.target_begin[chunk].astype(np.int64)
                  + np.where(is_rev[chunk], len(codes), 0))
        qc = both[_ranges(q_base[owner] + q_at[keep], length)]
        tc = both[_ranges(t_base[owner] + t_at[keep], length)]
        column_owner = np.repeat(owner, length)
        hit = (qc == tc) & ~_UNAMBIGUOUS[qc]
        out[chunk] = np.bincount(column_owner[hit], minlength=chunk.size)
    return out


def overlap_table(reads: SequencesLike, min_overlap: int = 100, min_identity: float = 0.8,
                  end_tolerance: int = END_TOLERANCE, **align_options: Any) -> OverlapTable:
    """The overlaps of all reads as columns (see :func:`find_overlaps`).

    Each window's pairs are filtered by the thresholds as the window
    finishes: only the candidates are held, not every pair's alignment."""
    from dataclasses import replace

    from ..api import iter_all, load
    from ..pairs import PairBatch
    from ..sequences import records_from_python

    if min_overlap < 0 or not 0 <= min_identity <= 1 or end_tolerance < 0:
        raise OptionError("min_overlap and end_tolerance must be >= 0 and min_identity "
                          "in [0, 1]")
    for key in ("mode", "traceback", "cigar"):
        if key in align_options:
            raise OptionError(f"overlaps are semiglobal with traceback and CIGARs: {key} "
                              "is fixed")
    recs = load(reads, align_options.pop("alphabet", None))
    if recs.alphabet != "dna":
        raise OptionError("overlaps need DNA reads (reverse complements)")
    n = len(recs)
    lengths = recs.lengths
    opts = dict(mode="semiglobal", traceback=True, alphabet="dna", **align_options)

    def keep(batch):
        return _candidates(batch, None, None, min_overlap, min_identity)

    if n < 2:
        fwd = rev = PairBatch.empty()
    else:
        fwd = PairBatch.concat([part.pairs for part in
                                iter_all(recs, ordered=False, keep=keep, **opts)])
        rc = records_from_python([reverse_complement(s) for s in recs.sequences],
                                 ids=recs.ids, alphabet="dna")
        rev = _reverse_pairs(recs, rc, opts, keep)
    both = PairBatch.concat([fwd, rev])
    is_rev = np.concatenate([np.zeros(len(fwd), bool), np.ones(len(rev), bool)])
    if len(both):  # PAF's matches: no ambiguity code matches, so the thresholds again
        ambiguous = _ambiguous_identities(both, is_rev, recs.sequences, rc.sequences)
        if ambiguous.any():
            both = replace(both, identities=(both.identities - ambiguous).astype(
                both.identities.dtype))
            passing = _candidates(both, None, None, min_overlap, min_identity)
            both, is_rev = both.take(passing), is_rev[passing]
    # one strand per pair: the higher score (forward on ties)
    if len(both):
        key = both.query.astype(np.int64) * n + both.target
        order = np.lexsort((is_rev, -both.score.astype(np.int64), key))
        first = np.ones(len(order), bool)
        first[1:] = key[order][1:] != key[order][:-1]
        keep = np.sort(order[first])
        # output order: by query, then target
        keep = keep[np.lexsort((both.target[keep], both.query[keep]))]
        both = both.take(keep)
        is_rev = is_rev[keep]
    q = both.query.astype(np.int64)
    t = both.target.astype(np.int64)
    qlen, tlen = lengths[q], lengths[t]
    qb, qe = both.query_begin.astype(np.int64), both.query_end.astype(np.int64)
    tb, te = both.target_begin.astype(np.int64), both.target_end.astype(np.int64)
    q_in = (qb <= end_tolerance) & (qlen - qe <= end_tolerance)
    t_in = (tb <= end_tolerance) & (tlen - te <= end_tolerance)
    contained = np.where(q_in & (~t_in | (qlen <= tlen)), 1, np.where(t_in, 2, 0))
    # target coordinates on the forward strand
    ts = np.where(is_rev, tlen - te, tb)
    tend = np.where(is_rev, tlen - tb, te)
    code, oplen = both.op_code, both.op_len
    if is_rev.any():
        rcode, rlen = _reverse_ops(both.op_offsets, code, oplen)
        op_rev = np.repeat(is_rev, both.n_ops)
        code = np.where(op_rev, rcode, code)
        oplen = np.where(op_rev, rlen, oplen)
    cig, cig_off = format_cigars(both.op_offsets, code, oplen, True)
    return OverlapTable(list(recs.ids), lengths, q, t, qb, qe, ts, tend, is_rev,
                        contained, both.identities.astype(np.int64),
                        both.length.astype(np.int64), both.score.astype(np.int64),
                        cig, cig_off)


def find_overlaps(reads: SequencesLike, min_overlap: int = 100, min_identity: float = 0.8,
                  end_tolerance: int = END_TOLERANCE, **align_options: Any) -> list[Overlap]:
    """The overlaps between reads, on both strands.

    Parameters
    ----------
    reads : path or sequences
        DNA reads, as for :func:`pairalign.align_all`.
    min_overlap : int
        Minimum aligned length (on the shorter side).
    min_identity : float
        Minimum identity (matches / alignment columns; a match pairs A, C, G
        or T with the same base, so N against N is none).
    end_tolerance : int
        Unaligned bases allowed at each end of a contained read.
    **align_options
        Scoring and run options of :func:`pairalign.align_all` (``mode``,
        ``traceback`` and ``cigar`` are fixed: semiglobal, with traceback and
        CIGARs).

    Returns
    -------
    list of Overlap

    Raises
    ------
    pairalign.InputError
        Where the reads do not read.
    pairalign.OptionError
        For reads that are not DNA, a bad threshold, or a fixed option.
        One per overlapping pair ``i < j`` (read ``i`` the query), ordered by
        query then target.

    Examples
    --------
    >>> from pairalign.pipelines import find_overlaps
    >>> import random
    >>> rng = random.Random(1)
    >>> genome = "".join(rng.choice("ACGT") for _ in range(400))
    >>> ovl = find_overlaps([genome[:250], genome[150:]], min_overlap=50)
    >>> [(o.query_start, o.query_end, o.target_start, o.target_end, o.strand, o.kind)
    ...  for o in ovl]
    [(150, 250, 0, 100, '+', 'overlap')]
    """
    return overlap_table(reads, min_overlap, min_identity, end_tolerance,
                         **align_options).records()


def write_paf(handle_or_path: PathOrHandle, overlaps: OverlapTable | Iterable[Overlap]) -> None:
    """Overlaps as PAF (see the module documentation), to a binary handle or a
    path (written atomically; ``"-"`` for standard output)."""
    with writing_to(handle_or_path) as handle:
        recs = overlaps.records() if isinstance(overlaps, OverlapTable) else overlaps
        write_lines(handle, map(_paf_line, recs))


def _paf_line(o: Overlap) -> str:
    """One overlap's PAF line (M runs for the CIGAR's = and X)."""
    cigar = o.cigar.replace("=", "M").replace("X", "M")
    if "=" in o.cigar or "X" in o.cigar:  # merge neighbouring M runs
        from ..cigar import parse_cigar
        merged: list[list] = []
        for n, op in parse_cigar(cigar):
            if merged and merged[-1][1] == op:
                merged[-1][0] += n
            else:
                merged.append([n, op])
        cigar = "".join(f"{n}{op}" for n, op in merged)
    return (f"{o.query}\t{o.query_length}\t{o.query_start}\t{o.query_end}\t"
            f"{o.strand}\t{o.target}\t{o.target_length}\t{o.target_start}\t"
            f"{o.target_end}\t{o.matches}\t{o.aligned_length}\t255\ttp:A:S\t"
            f"AS:i:{o.score}\tcg:Z:{cigar}\n")
