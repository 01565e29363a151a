"""Read overlaps (pairalign.pipelines.overlap), PAF, and the ``overlap`` command."""

from __future__ import annotations

import csv
import random

import numpy as np
import pytest
from click.testing import CliRunner

from pairalign.cli import main
from pairalign.cigar import parse_cigar
from pairalign.pipelines.overlap import (find_overlaps, overlap_table, reverse_complement,
                                         write_paf)
from pairalign.sequences import records_from_python

#: The deterministic subset of reads_cdiph.fa tested: reads whose true genome
#: start is below this (79 reads, ~8 s on 2 cores).
MAX_START = 10_000
RECALL_MIN = 150


@pytest.fixture(scope="module")
def truth(data_dir):
    with open(data_dir / "reads_cdiph.truth.tsv") as fh:
        return {r["id"]: (int(r["start"]), int(r["end"]), r["strand"])
                for r in csv.DictReader(fh, delimiter="\t")}


@pytest.fixture(scope="module")
def subset(records, truth):
    r = records("reads_cdiph.fa")
    keep = [k for k, i in enumerate(r.ids) if truth[i][0] < MAX_START]
    return records_from_python([r.sequences[k] for k in keep], ids=[r.ids[k] for k in keep],
                               alphabet="dna")


@pytest.fixture(scope="module")
def table(subset):
    return overlap_table(subset, backend="cpu")


def _true_pairs(ids, truth, min_len):
    s = np.array([truth[i][0] for i in ids])
    e = np.array([truth[i][1] for i in ids])
    ov = np.minimum(e[:, None], e[None, :]) - np.maximum(s[:, None], s[None, :])
    a, b = np.nonzero(np.triu(ov >= min_len, k=1))
    return {(ids[i], ids[j]) for i, j in zip(a.tolist(), b.tolist())}


def test_recall_precision_on_cdiph_subset(subset, table, truth):
    assert len(subset) == 79
    recs = table.records()
    reported = {(o.query, o.target) for o in recs}
    assert len(reported) == len(recs)  # one strand per pair
    true_long = _true_pairs(subset.ids, truth, RECALL_MIN)
    true_any = _true_pairs(subset.ids, truth, 1)
    recall = len(true_long & reported) / len(true_long)
    precision = len(reported & true_any) / len(reported)
    assert len(true_long) > 300
    assert recall >= 0.99, sorted(true_long - reported)[:10]
    assert precision >= 0.99, sorted(reported - true_any)[:10]
    # strands: + when both reads come from the same genome strand
    for o in recs:
        assert (o.strand == "+") == (truth[o.query][2] == truth[o.target][2]), o


def test_kinds_from_truth(subset, table, truth):
    """Containments and overlaps agree with the genome intervals (10 bp slack)."""
    for o in table.records():
        (qs, qe, _), (ts, te, _) = truth[o.query], truth[o.target]
        q_in = qs >= ts - 10 and qe <= te + 10
        t_in = ts >= qs - 10 and te <= qe + 10
        if o.kind == "containment":
            assert q_in or t_in, o
            assert o.contained == (o.query if q_in and (not t_in or o.query_length
                                                         <= o.target_length) else o.target)
        else:
            assert o.contained is None


def test_records_consistent_with_sequences(subset, table):
    seqs = dict(zip(subset.ids, subset.sequences))
    for o in table.records():
        q, t = seqs[o.query], seqs[o.target]
        assert o.query_length == len(q) and o.target_length == len(t)
        assert 0 <= o.query_start < o.query_end <= len(q)
        assert 0 <= o.target_start < o.target_end <= len(t)
        assert o.overlap_length >= 100 and o.identity >= 0.8
        # the CIGAR (minimap2's convention: along the target's forward strand, the
        # query reverse-complemented for '-') spells the reported segments
        assert_spelled(o, q, t)


def assert_spelled(o, q: str, t: str) -> None:
    """The CIGAR (minimap2's convention: along the target's forward strand, the
    query reverse-complemented for '-') spells the reported segments, and its
    columns of a base (A, C, G, T) against the same base are the matches."""
    qseg = q[o.query_start:o.query_end].upper()
    if o.strand == "-":
        qseg = reverse_complement(qseg)
    tseg = t[o.target_start:o.target_end].upper()
    i = j = same = cols = 0
    for n, op in parse_cigar(o.cigar):
        cols += n
        if op == "M":
            same += sum(a == b and a in "ACGT" for a, b in zip(qseg[i:i + n], tseg[j:j + n]))
            i += n
            j += n
        elif op == "I":
            i += n
        else:
            j += n
    assert (i, j) == (len(qseg), len(tseg)), o
    assert (same, cols) == (o.matches, o.aligned_length), o
    assert o.identity == o.matches / o.aligned_length


def test_ambiguity_codes_are_no_matches():
    """N against N (and R against R) is identical but no match in PAF: the
    matches, the identity and its threshold leave those columns out, on both
    strands, whichever read holds the run (minimap2 counts so)."""
    rng = random.Random(11)
    g = list("".join(rng.choice("ACGT") for _ in range(1000)))
    g[300:320] = "N" * 20
    g[350:352] = "RR"
    g = "".join(g)
    # the runs lie in every overlap; a lower-case read and an N elsewhere too
    reads = [g[:400], g[250:700], reverse_complement(g[280:600]).lower(),
             "N" + g[500:900]]
    found = find_overlaps(reads, min_overlap=50, min_identity=0.5, backend="cpu")
    pairs = {(o.query, o.target) for o in found}
    assert {("seq1", "seq2"), ("seq1", "seq3"), ("seq2", "seq3"), ("seq2", "seq4"),
            ("seq3", "seq4")} <= pairs
    for o in found:
        assert_spelled(o, reads[int(o.query[3:]) - 1], reads[int(o.target[3:]) - 1])
    o = next(o for o in found if (o.query, o.target) == ("seq1", "seq2"))
    assert (o.strand, o.matches, o.aligned_length) == ("+", 150 - 22, 150)
    o = next(o for o in found if (o.query, o.target) == ("seq1", "seq3"))
    assert (o.strand, o.matches, o.aligned_length) == ("-", 120 - 22, 120)
    # identities 128 / 150 = 0.853 and 98 / 120 = 0.817 (1 if N and R matched)
    strict = find_overlaps(reads, min_overlap=50, min_identity=0.84, backend="cpu")
    assert {(o.query, o.target) for o in strict} == pairs - {("seq1", "seq3")}


def test_gap_only_alignments_are_no_overlaps():
    """With free gaps two unrelated 1 bp reads align as a gap only: nothing
    of one read is aligned, so it is no overlap even at min_overlap 0."""
    assert find_overlaps(["A", "C"], min_overlap=0, min_identity=0, gap_open=1,
                         gap_extend=0, backend="cpu") == []
    (o,) = find_overlaps(["A", "A"], min_overlap=0, min_identity=0, backend="cpu")
    assert (o.query_start, o.query_end, o.target_start, o.target_end) == (0, 1, 0, 1)


def test_a_negative_end_tolerance_is_refused():
    import pairalign

    with pytest.raises(pairalign.OptionError, match="end_tolerance"):
        find_overlaps(["ACGTACGT", "ACGTACGT"], min_overlap=0, end_tolerance=-5)


def test_windows_are_filtered_as_they_come(subset, table, monkeypatch):
    """Every window's pairs are filtered as the window finishes (both strands,
    in windows of 16 here: many of them, in no particular order), and the
    table is the one of the default windows, to the CIGAR; no more pairs
    are held than the candidates."""
    import pairalign.api

    seen = {"iter_all": [], "iter_many": []}  # each window's pairs
    held = {"iter_all": [], "iter_many": []}  # those its filter kept
    for name in seen:
        real = getattr(pairalign.api, name)

        def spy(*a, _real=real, _name=name, **kw):
            assert kw["ordered"] is False and kw["keep"] is not None
            keep = kw.pop("keep")  # applied here, as the API does, to count both
            for part in _real(*a, **kw):
                seen[_name].append(len(part))
                part = part.with_pairs(part.pairs.kept(keep))
                held[_name].append(len(part))
                yield part
        monkeypatch.setattr(pairalign.api, name, spy)
    small = overlap_table(subset, backend="cpu", window=16)
    n = len(subset)
    assert len(seen["iter_all"]) > 1 and sum(seen["iter_all"]) == n * (n - 1) // 2
    assert len(seen["iter_many"]) > 1
    assert sum(held["iter_all"]) < sum(seen["iter_all"]) // 10
    for name in ("query", "target", "query_start", "query_end", "target_start",
                 "target_end", "reverse", "contained", "matches", "aligned_length",
                 "score", "cigar_bytes", "cigar_offsets"):
        assert np.array_equal(getattr(small, name), getattr(table, name)), name


def test_synthetic_cases():
    rng = random.Random(7)
    g = "".join(rng.choice("ACGT") for _ in range(1200))
    reads = [g[0:600], reverse_complement(g[400:1000]), g[100:400], g[900:1200]]
    ovl = {(o.query, o.target): o for o in find_overlaps(reads, min_overlap=90,
                                                         backend="cpu")}
    assert set(ovl) == {("seq1", "seq2"), ("seq1", "seq3"), ("seq2", "seq4")}
    o = ovl["seq1", "seq2"]
    assert (o.strand, o.kind, o.query_start, o.query_end, o.target_start, o.target_end) == \
        ("-", "overlap", 400, 600, 400, 600)
    o = ovl["seq1", "seq3"]
    assert (o.strand, o.kind, o.contained) == ("+", "containment", "seq3")
    assert (o.query_start, o.query_end, o.target_start, o.target_end) == (100, 400, 0, 300)
    o = ovl["seq2", "seq4"]  # g[900:1000] lies at rc positions 0-100 of read 2
    assert (o.strand, o.kind, o.query_start, o.query_end) == ("-", "overlap", 0, 100)
    assert (o.target_start, o.target_end) == (0, 100)
    assert find_overlaps(reads, min_overlap=301, backend="cpu") == []


def test_paf_and_cli(tmp_path, subset, table):
    fasta = tmp_path / "reads.fa"
    n = 25
    fasta.write_text("".join(f">{i}\n{s}\n" for i, s in
                             zip(subset.ids[:n], subset.sequences[:n])))
    res = CliRunner().invoke(main, ["overlap", str(fasta), "-o", str(tmp_path / "o.paf"),
                                    "--min-overlap", "100", "--min-identity", "0.8",
                                    "--backend", "cpu"])
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "o.paf").read_text().splitlines()
    ids = set(subset.ids[:n])
    expected = [o for o in table.records() if o.query in ids and o.target in ids]
    assert len(lines) == len(expected) > 0
    for line, o in zip(lines, expected):
        f = line.split("\t")
        assert f[:12] == [o.query, str(o.query_length), str(o.query_start),
                          str(o.query_end), o.strand, o.target, str(o.target_length),
                          str(o.target_start), str(o.target_end), str(o.matches),
                          str(o.aligned_length), "255"]
        assert f[12] == "tp:A:S" and f[13] == f"AS:i:{o.score}" and f[14] == f"cg:Z:{o.cigar}"
    res = CliRunner().invoke(main, ["overlap", str(fasta), "--mode", "local"])
    assert res.exit_code == 2  # overlaps are semiglobal: no --mode to give
    assert "--mode" not in CliRunner().invoke(main, ["overlap", "--help"]).output
    prot = tmp_path / "p.fa"
    prot.write_text(">a\nMKVLAWHEQ\n>b\nMKVLAWHEQ\n")
    res = CliRunner().invoke(main, ["overlap", str(prot)])
    assert res.exit_code == 2 and "DNA" in res.output


@pytest.mark.parametrize("key", ["mode", "traceback", "cigar"])
def test_fixed_alignment_options_are_refused(key):
    """Overlaps are semiglobal alignments with CIGARs (PAF's cg tag): those
    options are not the caller's."""
    import pairalign

    reads = records_from_python(["ACGTACGTTTGACCA", "TTGACCAGGACGTAA"])
    with pytest.raises(pairalign.OptionError, match=f"{key} is fixed"):
        overlap_table(reads, **{key: False})


def test_write_paf_handle(table):
    import io
    b = io.BytesIO()
    write_paf(b, table)
    assert b.getvalue().decode().count("\n") == len(table)


def test_an_identity_equal_to_the_threshold_passes():
    """55 identical columns of 100 pass min_identity=0.55 (0.55 * 100 is
    55.00000000000001 in floating point)."""
    rng = random.Random(3)
    a = "".join(rng.choice("ACGT") for _ in range(100))
    b = list(a)
    for k in rng.sample(range(100), 45):
        b[k] = rng.choice("ACGT".replace(a[k], ""))
    kw = dict(min_overlap=50, match=5, mismatch=-1, gap_open=50, gap_extend=10, backend="cpu")
    (o,) = find_overlaps([a, "".join(b)], min_identity=0.54, **kw)
    assert (o.matches, o.aligned_length) == (55, 100)
    assert len(find_overlaps([a, "".join(b)], min_identity=0.55, **kw)) == 1
    assert find_overlaps([a, "".join(b)], min_identity=0.56, **kw) == []
