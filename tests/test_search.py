"""Query-against-targets search (pairalign.pipelines.search) and the ``search`` command."""

from __future__ import annotations

import io

import numpy as np
import pytest
from click.testing import CliRunner

import pairalign
from pairalign.cli import main
from pairalign.pipelines.search import search, top_hits, write_blast6, write_search_tsv
from pairalign.sequences import records_from_python


@pytest.fixture(scope="module")
def genes(records):
    r = records("genes_CP040672.fna")
    return r


@pytest.fixture(scope="module")
def qt(records):
    r = records("adeno_fiber.faa")
    q = records_from_python(r.sequences[:242:40], ids=r.ids[:242:40])
    t = records_from_python(r.sequences[:120], ids=r.ids[:120])
    return q, t


@pytest.mark.parametrize("window, merge", [(None, None), (16, None), (16, 1)])
def test_top_k_by_score_then_target_order(qt, window, merge, monkeypatch):
    """The best 3 targets of each query by the scores of every pair (an
    align_many of them all), ties in target order; the windows' pairs
    merged into the best as they come (several windows with 16; with
    MERGE_PAIRS 1, each window as it comes), so that the result holds the
    hits alone."""
    import sys

    import pairalign.api

    if merge is not None:  # (the package's search is the function, not the module)
        monkeypatch.setattr(sys.modules["pairalign.pipelines.search"], "MERGE_PAIRS", merge)
    q, t = qt
    parts = []
    iter_many = pairalign.api.iter_many

    def spy(*a, **kw):
        for part in iter_many(*a, **kw):
            parts.append(len(part))
            assert np.bincount(part.pairs.query).max() <= 3
            yield part

    monkeypatch.setattr(pairalign.api, "iter_many", spy)
    result, hits = search(q, t, top=3, backend="cpu", window=window)
    # each window's best 3 of each of its queries only
    assert sum(parts) <= 3 * len(q) * len(parts) and (window is None or len(parts) > 1)
    assert len(result) == len(hits) == 3 * len(q)
    scores = pairalign.align_many(q, t, backend="cpu").scores
    got = {}
    for k in hits:
        rec = result[k]
        got.setdefault(rec.query_index, []).append(rec.target_index)
    assert sorted(got) == list(range(len(q)))
    for qi, targets in got.items():
        expected = sorted(range(len(t)), key=lambda j: (-scores[qi, j], j))[:3]
        assert targets == expected
        assert [result.scores[qi, j] for j in targets] == [scores[qi, j] for j in targets]


def test_ties_in_target_order():
    result, hits = search(["MKVLAW"], ["MKVLAW", "PPPP", "MKVLAW", "MKVLAW"], top=2,
                          backend="cpu")
    assert [result[k].target_index for k in hits] == [0, 2]
    _, every = search(["MKVLAW"], ["PPPP", "MKVLAW"], backend="cpu")
    assert len(every) == 2


def test_blast6_columns(qt):
    q, t = qt
    result, hits = search(q, t, top=2, backend="cpu")
    buf = io.BytesIO()
    write_blast6(buf, result, hits)
    lines = buf.getvalue().decode().splitlines()
    assert len(lines) == len(hits)
    for line, k in zip(lines, hits):
        f = line.split("\t")
        assert len(f) == 12
        rec = result[k]
        ops = pairalign.cigar.parse_cigar(rec.cigar)
        assert f[0] == rec.query_id and f[1] == rec.target_id
        assert float(f[2]) == pytest.approx(100 * rec.identities / rec.length, abs=5e-4)
        assert int(f[3]) == rec.length
        assert int(f[4]) == sum(n for n, op in ops if op == "X")
        assert int(f[5]) == sum(1 for _, op in ops if op in "ID")
        assert [int(x) for x in f[6:10]] == [rec.query_begin + 1, rec.query_end,
                                             rec.target_begin + 1, rec.target_end]
        assert f[10] == "NaN" and int(f[11]) == rec.score


def test_empty_local_alignments_are_no_blast6_hits():
    """A local alignment of score 0 (nothing scores above 0) has no residues
    and no coordinates: BLAST writes no line for it, and neither does
    write_blast6; the query's positive hits are still written, best first."""
    result, hits = search(["MKVLAW", "PPPP"], ["MKVLAW", "GG"], top=5, backend="cpu")
    assert [(result[k].query_id, result[k].score > 0) for k in hits] == [
        ("seq1", True), ("seq1", False), ("seq2", False), ("seq2", False)]
    buf = io.BytesIO()
    write_blast6(buf, result, hits)
    lines = buf.getvalue().decode().splitlines()
    assert [line.split("\t")[:2] + line.split("\t")[6:8] for line in lines] == [
        ["seq1", "seq1", "1", "6"]]


@pytest.mark.parametrize("identities, length, printed", [(201, 320, "62.813"),
                                                         (1, 3, "33.333"), (7, 7, "100.000")])
def test_blast6_pident_rounds_as_blast_prints_it(identities, length, printed):
    """BLAST+ prints ident / length * 100 with 3 decimals; 100 * ident / length
    rounds the other way at 201 / 320 (62.8125 is not exact either way)."""
    q = "A" * length
    t = "A" * identities + "C" * (length - identities)
    result, hits = search([q], [t], mode="global", alphabet="dna", backend="cpu")
    assert (result[0].identities, result[0].length) == (identities, length)
    buf = io.BytesIO()
    write_blast6(buf, result, hits)
    assert buf.getvalue().decode().split("\t")[2] == printed


def test_blast6_parsable_by_biopython(qt):
    SearchIO = pytest.importorskip("Bio.SearchIO")

    q, t = qt
    result, hits = search(q, t, top=2, backend="cpu")
    buf = io.BytesIO()
    write_blast6(buf, result, hits)
    parsed = list(SearchIO.parse(io.StringIO(buf.getvalue().decode()), "blast-tab"))
    assert [p.id for p in parsed] == list(q.ids)
    assert sum(len(p.hits) for p in parsed) == len(hits)


def test_dna_search_and_tsv(genes):
    q = records_from_python(genes.sequences[:3], ids=genes.ids[:3], alphabet="dna")
    t = records_from_python(genes.sequences[:10], ids=genes.ids[:10], alphabet="dna")
    result, hits = search(q, t, top=1, backend="cpu")
    # a gene's best hit is itself
    assert [result[k].target_id for k in hits] == list(q.ids)
    buf = io.BytesIO()
    write_search_tsv(buf, result, hits)
    lines = buf.getvalue().decode().splitlines()
    assert lines[0].startswith("query\ttarget\tscore") and len(lines) == 4


def test_cli_search(tmp_path, qt):
    q, t = qt
    qf, tf = tmp_path / "q.fa", tmp_path / "t.fa"
    qf.write_text("".join(f">{i}\n{s}\n" for i, s in zip(q.ids, q.sequences)))
    tf.write_text("".join(f">{i}\n{s}\n" for i, s in zip(t.ids, t.sequences)))
    out = tmp_path / "hits.tsv"
    res = CliRunner().invoke(main, ["search", str(qf), str(tf), "-o", str(out), "--top", "2",
                                    "--backend", "cpu"])
    assert res.exit_code == 0, res.output
    result, hits = search(q, t, top=2, backend="cpu")
    buf = io.BytesIO()
    write_blast6(buf, result, hits)
    assert out.read_bytes() == buf.getvalue()
    res = CliRunner().invoke(main, ["search", str(qf), str(tf), "--format", "tsv",
                                    "--mode", "global", "--backend", "cpu"])
    assert res.exit_code == 0, res.output
    assert len(res.stdout.splitlines()) == 1 + len(q) * len(t)
    res = CliRunner().invoke(main, ["search", str(qf), str(tf), "--top", "0"])
    assert res.exit_code == 2


def test_blast6_needs_cigars():
    """BLAST tabular's mismatches and gap opens come from the CIGARs: a run
    without them is refused, in words."""
    result = pairalign.align_many(["MKVLAW"], ["MKVIAW"], cigar=False, backend="cpu")
    with pytest.raises(pairalign.OptionError, match="keep traceback and cigar on"):
        write_blast6(io.BytesIO(), result)


def test_top_hits_validation():
    result = pairalign.align_many(["MKV"], ["MKV"], backend="cpu")
    with pytest.raises(pairalign.OptionError):
        top_hits(result, 0)
    assert np.array_equal(top_hits(result, None), [0])
