"""Distances and guide trees (pairalign.pipelines.tree) and the ``tree`` command."""

from __future__ import annotations

import io
import random
import shutil
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner

import pairalign
from pairalign.cli import main
from pairalign.pipelines.tree import (KIMURA_MAX, distance_matrix, guide_tree,
                                      newick_string, write_distances, write_newick)
from pairalign.sequences import records_from_python

from conftest import AMINO

N = 40  # adeno fiber proteins used (clustalo on all 242 takes ~10-20 s)


@pytest.fixture(scope="module")
def adeno(records):
    r = records("adeno_fiber.faa")
    return records_from_python(r.sequences[:N], ids=r.ids[:N])


@pytest.fixture(scope="module")
def result(adeno):
    return pairalign.align_all(adeno, mode="global", backend="cpu")


def _check_matrix(dm, ids):
    d = dm.data
    assert list(dm.ids) == list(ids)
    assert np.allclose(d, d.T)
    assert np.all(np.diag(d) == 0)
    assert np.all(d >= 0)


@pytest.mark.parametrize("kind", ["identity", "kimura"])
def test_distances_need_no_cigars(adeno, result, kind, monkeypatch):
    """guide_tree aligns without CIGARs (cigar=False) where the distance is
    made of identities and lengths, and puts each window's distances in the
    matrix as it comes (iter_all, ordered=False: several windows here): the
    distances are those of a full run's result."""
    import pairalign.api

    seen, parts = [], []
    iter_all = pairalign.api.iter_all

    def spy(*a, **kw):
        seen.append((kw.get("cigar"), kw.get("ordered")))
        for part in iter_all(*a, **kw):
            parts.append(len(part))
            yield part

    monkeypatch.setattr(pairalign.api, "iter_all", spy)
    dm, _ = guide_tree(adeno, distance=kind, backend="cpu", window=16)
    assert seen == [(False, False)] and len(parts) > 1 and sum(parts) == len(result)
    assert np.array_equal(dm.data, distance_matrix(result, kind).data)


def test_score_distances_of_the_tree_are_a_results(adeno, monkeypatch):
    """Score distances through guide_tree (score-only windows as they come)
    are those of a score-only result."""
    dm, _ = guide_tree(adeno, distance="score", backend="cpu", window=16)
    ref = pairalign.align_all(adeno, mode="global", traceback=False, backend="cpu")
    assert np.array_equal(dm.data, distance_matrix(ref, "score").data)


def test_identity_distance_is_one_minus_identity(result):
    dm = distance_matrix(result, "identity")
    _check_matrix(dm, result.ids)
    for rec in result:
        assert dm[rec.query_index, rec.target_index] == pytest.approx(
            1 - rec.identities / rec.length)


def test_kimura_distance(result):
    ident = distance_matrix(result, "identity").data
    kim = distance_matrix(result, "kimura")
    _check_matrix(kim, result.ids)
    p = ident
    arg = 1 - p - 0.2 * p * p
    with np.errstate(divide="ignore"):
        expected = np.where(arg > 0, np.minimum(-np.log(np.where(arg > 0, arg, 1)), KIMURA_MAX),
                            KIMURA_MAX)
    assert np.allclose(kim.data, expected)
    assert np.all(kim.data >= ident - 1e-12)  # the correction only stretches


def test_kimura_cap():
    res = pairalign.align_all(["WWWWWWWWWW", "PPPPPPPPPP", "WWWWWWWWWW"], mode="global",
                              backend="cpu")
    d = distance_matrix(res, "kimura")
    assert d[0, 1] == KIMURA_MAX and d[0, 2] == 0


def test_score_distance(result):
    dm = distance_matrix(result, "score")
    _check_matrix(dm, result.ids)
    sc = result.scoring
    self_s = [sum(int(sc.score(c, c)) for c in s) for s in result.sequences]
    for rec in list(result)[:50]:
        expected = max(0.0, 1 - rec.score / min(self_s[rec.query_index],
                                                 self_s[rec.target_index]))
        assert dm[rec.query_index, rec.target_index] == pytest.approx(expected)
    same = pairalign.align_all(["MKVLAW", "MKVLAW"], mode="global", backend="cpu",
                               traceback=False)
    assert distance_matrix(same, "score")[0, 1] == 0


def test_identity_needs_traceback():
    res = pairalign.align_all(["MKVLAW", "MKVIAW"], traceback=False, backend="cpu")
    with pytest.raises(pairalign.OptionError):
        distance_matrix(res, "identity")


@pytest.mark.parametrize("option", [{"keep": lambda b: b.score > 10}, {"ordered": True}])
def test_guide_tree_refuses_what_would_leave_distances_out(option):
    """keep would leave the pairs it drops at distance 0 (as if identical);
    ordered is the tree's own: both refused, by name."""
    with pytest.raises(pairalign.OptionError, match=f"{next(iter(option))} is not an option"):
        guide_tree(["MKVLAW", "MKVIAW", "PRQLAY"], **option)


@pytest.mark.parametrize("method", ["upgma", "nj"])
def test_tree_has_all_tips(adeno, method):
    dm, tree = guide_tree(adeno, method=method, backend="cpu")
    names = sorted(t.name for t in tree.tips())
    assert names == sorted(adeno.ids)
    assert len(tree.children) == 2  # rooted, as MSA tools want


@pytest.mark.parametrize("method", ["upgma", "nj"])
def test_a_tree_of_two_sequences(adeno, method):
    """Two tips (scikit-bio's methods need three): one edge, each tip at half
    the pair's distance."""
    two = records_from_python(adeno.sequences[:2], ids=adeno.ids[:2])
    dm, tree = guide_tree(two, method=method, backend="cpu")
    assert sorted(t.name for t in tree.tips()) == sorted(two.ids)
    assert [t.length for t in tree.tips()] == [dm[0, 1] / 2] * 2
    assert dm[0, 1] > 0


@pytest.mark.parametrize("seqs", [
    ["AKVLAWHEAG", "MAVLAWHEAG", "MKALAWHEAG"],  # the midpoint on a node
    ["NGQNQAIYNTIPNNLGGINA", "NGQNHAIYNTIPNNLWGINA", "NGQNQAIYNTIPWNWYGINA",
     "NGQNQAIYNTIPNNLYGINA", "NGQPQAIYNTIPNNLYGINA"],  # scikit-bio's climb fails
    "random"])
def test_nj_trees_are_rooted_at_the_midpoint_on_a_root_of_two(seqs):
    """Neighbour joining's tree rooted at the midpoint of its longest path, on
    a new node: a root of two children (Clustal Omega refuses three), the
    tips' distances those of scikit-bio's unrooted tree, and the deepest tip
    on each side of the root at half the longest path."""
    from skbio import TreeNode
    from skbio.tree import nj

    cases = [seqs]
    if seqs == "random":  # small sets of mutated copies: many ties of lengths
        rng = random.Random(5)
        cases = []
        for _ in range(60):
            base = [rng.choice(AMINO) for _ in range(20)]
            cases.append(["".join(c if rng.random() > 0.15 else rng.choice(AMINO)
                                  for c in base) for _ in range(rng.randint(3, 8))])
    for case in cases:
        dm, tree = guide_tree(case, method="nj", backend="cpu")
        ids = list(dm.ids)
        assert len(tree.children) == 2, newick_string(tree)
        assert sorted(t.name for t in tree.tips()) == sorted(ids)
        got = tree.tip_tip_distances(ids).data
        assert np.allclose(got, nj(dm).tip_tip_distances(ids).data)
        depth = [max(t.distance(tree) for t in side.tips(include_self=True))
                 for side in tree.children]
        assert np.allclose(depth, got.max() / 2), newick_string(tree)
        back = TreeNode.read(io.StringIO(newick_string(tree)), format="newick")
        assert len(back.children) == 2


def test_identical_sequences_are_at_zero_not_minus_zero(tmp_path):
    """-ln(1) is -0.0: neither the PHYLIP file nor the tree writes a -0."""
    recs = records_from_python(["MKVLAWHEAG", "MKVLAWHEAG", "MKVIAWHEAG", "PRQLAYHDKK"])
    dm, tree = guide_tree(recs, distance="kimura", backend="cpu")
    write_distances(tmp_path / "d.phylip", dm)
    assert "-0" not in (tmp_path / "d.phylip").read_text()
    assert "-0" not in newick_string(tree)


def test_newick_ids_verbatim():
    from skbio import TreeNode

    recs = records_from_python(["MKVLAWHE", "MKVIAWHE", "PRQLAYHE", "PRQLAYHD"],
                               ids=["SPIKE_ADE08/182-358", "P1;1knb", "c_d", "x'y"])
    dm, tree = guide_tree(recs, backend="cpu")
    text = newick_string(tree)
    assert "'SPIKE_ADE08/182-358':" in text and "'P1;1knb':" in text and "'x''y':" in text
    # quoted, an underscore is an underscore to every Newick reader (unquoted, a space)
    back = TreeNode.read(io.StringIO(text), format="newick")
    assert sorted(t.name for t in back.tips()) == sorted(recs.ids)


def test_score_distance_of_sequences_that_score_nothing_against_themselves():
    """A run of N scores below 0 against itself, so its score distances have
    no scale: two of them are at 0, and it is at 1 from anything else (not at
    a raw score difference, nor at 0 from an unrelated sequence)."""
    recs = records_from_python(["ACGTACGTAC", "NNNNNNNNNN", "NNNNNNNNNN", "ACGTACGTAA"],
                               alphabet="dna")
    dm, _ = guide_tree(recs, distance="score", backend="cpu")
    assert dm[1, 2] == 0 and dm[0, 1] == dm[0, 2] == dm[1, 3] == dm[2, 3] == 1
    assert 0 < dm[0, 3] < 1
    prot = records_from_python(["XXXX", "MKVLAWHEAGPRQLAYHDKKMKVLAWHEAGPR", "XXXXXXXX",
                                "MKVLAWHE"])
    dm, _ = guide_tree(prot, distance="score", backend="cpu")
    assert dm[0, 1] == dm[0, 2] == dm[0, 3] == dm[2, 3] == 1 and dm[1, 3] < 1


def test_writers(tmp_path, result):
    from skbio import DistanceMatrix, TreeNode

    dm = distance_matrix(result)
    write_distances(tmp_path / "d.phylip", dm)
    back = DistanceMatrix.read(str(tmp_path / "d.phylip"), format="phylip_dm")
    assert list(back.ids) == list(dm.ids)  # long ids kept (relaxed PHYLIP)
    assert np.allclose(back.data, dm.data)
    write_distances(tmp_path / "d.lsmat", dm, fmt="lsmat")
    assert np.allclose(DistanceMatrix.read(str(tmp_path / "d.lsmat")).data, dm.data)
    write_newick(tmp_path / "t.nwk", guide_tree(result.sequences)[1])
    TreeNode.read(str(tmp_path / "t.nwk"), format="newick")
    assert not list(tmp_path.glob(".*.part"))


@pytest.mark.parametrize("method", ["upgma", "nj"])
def test_clustalo_accepts_tree(tmp_path, data_dir, adeno, method):
    if shutil.which("clustalo") is None:
        pytest.skip("clustalo not installed (Debian package clustalo)")
    fasta = tmp_path / "in.fa"
    fasta.write_text("".join(f">{i}\n{s}\n" for i, s in zip(adeno.ids, adeno.sequences)))
    res = CliRunner().invoke(main, ["tree", str(fasta), "-o", str(tmp_path / "g.nwk"),
                                    "--distances", str(tmp_path / "d.phylip"),
                                    "--method", method, "--backend", "cpu"])
    assert res.exit_code == 0, res.output
    proc = subprocess.run(["clustalo", "-i", str(fasta), "--guidetree-in",
                           str(tmp_path / "g.nwk"), "-o", str(tmp_path / "msa.fa"),
                           "--force", "--threads", "2"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    msa = (tmp_path / "msa.fa").read_text()
    assert sorted(line[1:] for line in msa.splitlines() if line.startswith(">")) == \
        sorted(adeno.ids)


def test_clustalo_rejects_a_wrong_name(tmp_path, adeno):
    """The acceptance test means something: clustalo checks the tip names."""
    if shutil.which("clustalo") is None:
        pytest.skip("clustalo not installed")
    fasta = tmp_path / "in.fa"
    fasta.write_text("".join(f">{i}\n{s}\n" for i, s in zip(adeno.ids, adeno.sequences)))
    _, tree = guide_tree(adeno, backend="cpu")
    (tmp_path / "g.nwk").write_text(newick_string(tree).replace(adeno.ids[0], "nosuchid"))
    proc = subprocess.run(["clustalo", "-i", str(fasta), "--guidetree-in",
                           str(tmp_path / "g.nwk"), "-o", str(tmp_path / "msa.fa"),
                           "--force"], capture_output=True, text=True)
    assert proc.returncode != 0


def test_cli_tree_options(tmp_path, adeno):
    fasta = tmp_path / "in.fa"
    fasta.write_text("".join(f">{i}\n{s}\n" for i, s in zip(adeno.ids, adeno.sequences)))
    for distance in ("kimura", "score"):
        res = CliRunner().invoke(main, ["tree", str(fasta), "--distance", distance,
                                        "--backend", "cpu"])
        assert res.exit_code == 0, res.output
        assert res.stdout.strip().endswith(";")
    res = CliRunner().invoke(main, ["tree", str(fasta), "--method", "bogus"])
    assert res.exit_code == 2
