"""Substitution matrices from files (NCBI format) and scikit-bio objects:
scores against parasail reading the same file, errors that name the file and
the line, and the named matrices' cache."""

from __future__ import annotations

import os

import numpy as np
import pytest
from click.testing import CliRunner

import pairalign
from pairalign.cli import main
from pairalign.errors import OptionError
from pairalign.matrices import load_matrix

from conftest import AMINO, random_matrix, write_ncbi

parasail = pytest.importorskip("parasail")

LETTERS = "ARNDCQEGHILKMFPSTWYVBZX*"  # BLOSUM62's
MODES = ("global", "semiglobal", "local")
_PARASAIL = {"local": "sw", "global": "nw", "semiglobal": "sg"}


def protein_seqs(rng, n, lo=1, hi=120):
    return ["".join(rng.choice(list(AMINO), int(k))) for k in rng.integers(lo, hi, n)]


def parasail_scores(res, matrix_path):
    """parasail's scores of every pair of ``res``, with parasail's own reading
    of the matrix file."""
    pm = parasail.Matrix(str(matrix_path))
    fn = getattr(parasail, f"{_PARASAIL[res.mode]}_striped_32")
    sc = res.scoring
    return np.array([fn(res.sequences[q], res.target_sequences[t], sc.gap_open, sc.gap_extend,
                        pm).score for q, t in zip(res.pairs.query, res.pairs.target)])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scale", [1, 40])
def test_matrix_file_scores_equal_parasails(tmp_path, mode, scale, check_result):
    """Scores with a matrix file equal parasail's with the same file (scale 40:
    scores past a byte, as no named matrix holds), and every alignment
    re-scores to its score."""
    rng = np.random.default_rng(101 + scale)
    path = write_ncbi(tmp_path / "m.txt", LETTERS, random_matrix(rng) * scale)
    seqs = protein_seqs(rng, 30)
    res = pairalign.align_all(seqs, mode=mode, matrix=path, gap_open=7 * scale,
                              gap_extend=2 * scale, backend="cpu", threads=2)
    assert res.scoring.name == str(path)
    np.testing.assert_array_equal(res.pairs.score, parasail_scores(res, path))
    check_result(res)


def test_a_scikit_bio_matrix_is_its_file(tmp_path):
    """A scikit-bio SubstitutionMatrix and the file of the same scores give
    the same pairs; so does a file whose rows come in another order."""
    from skbio.sequence import SubstitutionMatrix

    from conftest import assert_same_pairs

    rng = np.random.default_rng(5)
    scores = random_matrix(rng)
    path = write_ncbi(tmp_path / "m.txt", LETTERS, scores)
    sm = SubstitutionMatrix(list(LETTERS), scores.astype(float))
    seqs = protein_seqs(rng, 25)
    kw = dict(mode="global", backend="cpu", threads=2)
    by_file = pairalign.align_all(seqs, matrix=path, **kw)
    assert_same_pairs(pairalign.align_all(seqs, matrix=sm, **kw).pairs, by_file.pairs)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:3] + lines[3:][::-1]) + "\n")
    assert_same_pairs(pairalign.align_all(seqs, matrix=str(path), **kw).pairs, by_file.pairs)


def test_a_dna_matrix_file(tmp_path):
    """A DNA matrix of A, C, G, T and N (every other code scored as N)."""
    letters = "ACGTN"
    scores = np.array([[5, -4, -2, -4, -1], [-4, 5, -4, -2, -1], [-2, -4, 5, -4, -1],
                       [-4, -2, -4, 5, -1], [-1, -1, -1, -1, -1]])
    path = write_ncbi(tmp_path / "dna.txt", letters, scores)
    rng = np.random.default_rng(9)
    seqs = ["".join(rng.choice(list("ACGTNRY"), int(k))) for k in rng.integers(5, 80, 20)]
    res = pairalign.align_all(seqs, mode="local", alphabet="dna", matrix=path, backend="cpu")
    assert res.scoring.score("R", "A") == -1 and res.scoring.score("A", "G") == -2
    reads_n = [s.translate(str.maketrans("RY", "NN")) for s in seqs]
    ref = pairalign.align_all(reads_n, mode="local", alphabet="dna", matrix=path, backend="cpu")
    np.testing.assert_array_equal(res.pairs.score, ref.pairs.score)
    np.testing.assert_array_equal(ref.pairs.score, parasail_scores(ref, path))


def _file_errors():
    head = "   A  C\n"
    return [
        ("", ["no matrix in the file"]),
        ("# only a comment\n\n", ["no matrix in the file"]),
        ("   AC  D\nA 1 2\n", ["line 1", "column letters"]),
        ("   A  A\nA 1 2\n", ["line 1", "a letter twice"]),
        (head + "A 1 2\nC 2 1.5\n", ["line 3", "whole numbers", "'1.5'"]),
        (head + "A 1 2\nC 2 x\n", ["line 3", "whole numbers", "'x'"]),
        (head + "A 1 2\nC 2 inf\n", ["line 3", "whole numbers"]),
        (head + "A 1 2\nC 2\n", ["line 3", "1 scores for 2 columns"]),
        (head + "A 1 2\nG 2 1\n", ["line 3", "one of the column letters", "'G'"]),
        (head + "A 1 2\nA 1 2\n", ["line 3", "a second row", "'A'"]),
        (head + "A 1 2\n", ["no row for C"]),
        (head + "A 1 2\nC 3 1\n", ["not symmetric", "A against C scores 2", "C against A 3"]),
        (head + "A 1 200000000\nC 200000000 1\n", ["too large"]),
    ]


@pytest.mark.parametrize("text,needles", _file_errors())
def test_a_bad_matrix_file_says_where(tmp_path, text, needles):
    """A bad file: one OptionError naming the file (and the line, where one
    is at fault), from the API and as the command line's one error line,
    before any sequence is read."""
    path = tmp_path / "bad.mat"
    path.write_text(text)
    with pytest.raises(OptionError) as err:
        pairalign.align_pair("MKV", "MKW", matrix=path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    for needle in needles:
        assert needle in message
    res = CliRunner().invoke(main, ["all-vs-all", str(tmp_path / "no such.faa"),
                                    "--matrix", str(path)])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("pairalign: error: ") and needles[0] in res.stderr


@pytest.mark.parametrize("matrix,kw,needles", [
    ("", {}, ["unknown matrix ''", "BLOSUM62"]),
    ("BLOSUM63", {}, ["unknown matrix 'BLOSUM63'", "or a matrix file"]),
    (62, {}, ["a name", "SubstitutionMatrix", "got int"]),
    (np.eye(4, dtype=int), {}, ["got ndarray"]),
    ("BLOSUM62", {"alphabet": "dna"}, ["BLOSUM62 scores", "no DNA sequence", "protein"]),
    ("PAM30", {"alphabet": "dna"}, ["PAM30 scores", "no DNA sequence"]),
    ("NUC.4.4", {}, ["does not score the 20 amino acids"]),
])
def test_matrices_refused(matrix, kw, needles):
    """Neither an empty name nor an object without letters stands for the
    default, and no matrix of the other alphabet scores a sequence."""
    a, b = ("ACGTACGT", "ACGTTCGT") if kw.get("alphabet") == "dna" else ("MKVLW", "MKVLW")
    with pytest.raises(OptionError) as err:
        pairalign.align_pair(a, b, matrix=matrix, **kw)
    for needle in needles:
        assert needle in str(err.value)


def test_a_protein_matrix_without_x(tmp_path):
    """A protein matrix of the 20 amino acids alone has no stand-in for B, Z,
    J, U, O and ``*``: refused, naming X; with X it scores them as X."""
    rng = np.random.default_rng(3)
    amino = LETTERS[:20]
    path = write_ncbi(tmp_path / "m20.txt", amino, random_matrix(rng, amino))
    with pytest.raises(OptionError, match=r"no score for 'B' nor for 'X', its stand-in"):
        pairalign.align_pair("MKV", "MKV", matrix=path)
    write_ncbi(path, amino + "X", random_matrix(rng, amino + "X"))
    read_as_x = pairalign.align_pair("MKBZ", "MKXX", matrix=path, mode="global")
    as_is = pairalign.align_pair("MKXX", "MKXX", matrix=path, mode="global")
    ref = parasail.nw_striped_32("MKXX", "MKXX", 11, 1, parasail.Matrix(str(path))).score
    assert read_as_x.score == as_is.score == ref
    assert (read_as_x.identities, as_is.identities) == (2, 4)


def test_the_command_line_takes_a_matrix_file(tmp_path):
    rng = np.random.default_rng(11)
    path = write_ncbi(tmp_path / "m.txt", LETTERS, random_matrix(rng))
    seqs = protein_seqs(rng, 12, 5, 60)
    fasta = tmp_path / "in.faa"
    fasta.write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(seqs)))
    res = CliRunner().invoke(main, ["all-vs-all", str(fasta), "--matrix", str(path),
                                    "--backend", "cpu", "-q"])
    assert res.exit_code == 0, res.stderr
    scores = [int(line.split("\t")[2]) for line in res.stdout.splitlines()[1:]]
    api = pairalign.align_all(str(fasta), matrix=path, backend="cpu")
    assert scores == api.pairs.score.tolist()


def test_a_damaged_matrix_cache_is_read_again(tmp_path, monkeypatch):
    """A cached named matrix that no longer reads as a whole .npz (cut short,
    or not one at all) is read from scikit-bio again and rewritten; the cache
    lies in PAIRALIGN_CACHE_DIR, as the cost model's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("PAIRALIGN_CACHE_DIR", str(tmp_path / "own"))
    fresh = load_matrix("PAM30")
    cached = tmp_path / "own" / "matrices" / "PAM30.npz"
    assert cached.is_file()
    whole = cached.read_bytes()
    for damage in (whole[:300], b"not a zip file"):
        cached.write_bytes(damage)
        scores, letters, name = load_matrix("PAM30")
        np.testing.assert_array_equal(scores, fresh[0])
        assert (letters, name) == fresh[1:]
        assert cached.read_bytes() != damage
    assert sorted(os.listdir(cached.parent)) == ["PAM30.npz"]
    assert not (tmp_path / "xdg").exists()


def test_a_file_with_a_byte_order_mark(tmp_path):
    """Editors on Windows start UTF-8 files with a BOM: it is no letter, and
    a first comment stays a comment."""
    rng = np.random.default_rng(21)
    path = write_ncbi(tmp_path / "m.txt", LETTERS, random_matrix(rng))
    plain = load_matrix(path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    marked = load_matrix(path)
    np.testing.assert_array_equal(marked[0], plain[0])
    assert marked[1] == plain[1] == LETTERS


def test_dna_reads_u_as_t_in_a_matrix_file(tmp_path):
    """A DNA matrix's U row scored as T's stands for T (U and T identical);
    one scored otherwise is refused: DNA reads U as T."""
    letters = "ACGTUN"
    base = np.array([[5, -4, -4, -4, -4, -1], [-4, 5, -4, -4, -4, -1],
                     [-4, -4, 5, -4, -4, -1], [-4, -4, -4, 5, 5, -1],
                     [-4, -4, -4, 5, 5, -1], [-1, -1, -1, -1, -1, -1]])
    path = write_ncbi(tmp_path / "u.txt", letters, base)
    res = pairalign.align_pair("ACGUACGU", "ACGTACGT", alphabet="dna", matrix=path,
                               mode="global")
    assert (res.score, res.identities, res.cigar) == (40, 8, "8=")
    other = base.copy()
    other[4, 4] = 3
    write_ncbi(path, letters, other)
    with pytest.raises(OptionError, match="scores U apart from T"):
        pairalign.align_pair("ACGU", "ACGT", alphabet="dna", matrix=path)


def test_a_file_named_as_a_matrix_is_named_by_its_path(tmp_path, monkeypatch):
    """A name of MATRIX_NAMES is scikit-bio's matrix; a path (``./BLOSUM62``
    or a Path) reads the file, whose scoring is named by its full path, not
    taken for the named matrix's."""
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(2)
    write_ncbi(tmp_path / "BLOSUM62", LETTERS, random_matrix(rng))
    named = load_matrix("BLOSUM62")
    by_path = load_matrix(Path("BLOSUM62"))
    assert named[2] == "BLOSUM62" and by_path[2] == str(tmp_path / "BLOSUM62")
    assert not np.array_equal(named[0][:24, :24], by_path[0])
