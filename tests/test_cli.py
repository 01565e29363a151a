"""The command line: outputs checked against the API, errors, atomic files."""

from __future__ import annotations

import gzip
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import pairalign
from pairalign import output
from pairalign.cigar import cigar_string
from pairalign.cli import main


@pytest.fixture(scope="module")
def small_fasta(tmp_path_factory, records):
    recs = records("adeno_fiber.faa")
    path = tmp_path_factory.mktemp("cli") / "small.faa"
    path.write_text("".join(f">{i} desc\n{s[:40]}\n{s[40:]}\n"
                            for i, s in zip(recs.ids[:40], recs.sequences[:40])))
    return path


def run(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def parse_tsv(text):
    lines = text.rstrip("\n").split("\n")
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
def test_tsv_matches_api(small_fasta, mode):
    res = run("all-vs-all", small_fasta, "--mode", mode)
    assert res.exit_code == 0, res.output
    header, rows = parse_tsv(res.stdout)
    assert header == list(output.TSV_COLUMNS)
    api = pairalign.align_all(small_fasta, mode=mode)
    assert len(rows) == len(api) == 40 * 39 // 2
    p = api.pairs
    for k, row in enumerate(rows):
        assert row[0] == api.ids[p.query[k]] and row[1] == api.ids[p.target[k]]
        ints = [int(x) for x in row[2:3] + row[4:9]]
        assert ints == [p.score[k], p.length[k], p.query_begin[k], p.query_end[k],
                        p.target_begin[k], p.target_end[k]]
        assert abs(float(row[3]) - p.identities[k] / p.length[k]) <= 5e-5
        assert row[9] == cigar_string(*p.ops(k))


def test_cigar_m_and_score_only(small_fasta):
    _, rows = parse_tsv(run("all-vs-all", small_fasta, "--cigar-m").stdout)
    assert all(set(r[9]) <= set("0123456789MID") for r in rows)
    header, rows2 = parse_tsv(run("all-vs-all", small_fasta, "--no-traceback").stdout)
    assert header == list(output.TSV_SCORE_ONLY)
    assert [r[2] for r in rows2] == [r[2] for r in rows]


def test_filters(small_fasta):
    _, rows = parse_tsv(run("all-vs-all", small_fasta).stdout)
    _, kept = parse_tsv(run("all-vs-all", small_fasta, "--min-score", 100,
                            "--min-identity", 0.3).stdout)
    expect = [r for r in rows if int(r[2]) >= 100 and float(r[3]) >= 0.3 - 1e-4]
    assert [r[:2] for r in kept] == [r[:2] for r in expect]
    bad = run("all-vs-all", small_fasta, "--no-traceback", "--min-identity", 0.5)
    assert bad.exit_code == 2 and "--min-identity" in bad.stderr


def test_npy_matrix(small_fasta, tmp_path):
    out = tmp_path / "s.npy"
    assert run("all-vs-all", small_fasta, "--format", "npy", "-o", out).exit_code == 0
    m = np.load(out)
    assert m.shape == (40, 40) and (m == m.T).all() and (np.diag(m) == 0).all()
    assert (m == pairalign.align_all(small_fasta).scores).all()


def test_byte_identical_across_threads_and_windows(small_fasta, tmp_path):
    outs = []
    for extra in ([], ["--threads", 1], ["--threads", 2], ["--window", 16], ["--window", 64]):
        path = tmp_path / f"o{len(outs)}.tsv"
        assert run("all-vs-all", small_fasta, "-o", path, *extra).exit_code == 0
        outs.append(path.read_bytes())
    assert all(o == outs[0] for o in outs)


def test_stdin_and_gzip(small_fasta, tmp_path):
    plain = run("all-vs-all", small_fasta).stdout
    assert run("all-vs-all", "-", input=small_fasta.read_bytes()).stdout == plain
    gz = tmp_path / "s.faa.gz"
    gz.write_bytes(gzip.compress(small_fasta.read_bytes()))
    assert run("all-vs-all", gz).stdout == plain


@pytest.mark.parametrize("content,args,needle", [
    (b"", [], "empty file"),
    (b">a\nMKV\n>b\nMK1V\n", [], "record 2 (b): position 3"),
    (b">a\nMKV\n>a\nMKV\n", [], "duplicate id"),
    (b">a\nMKV\n>b\nMKV\n", ["--matrix", "PAM30", "--match", "2"], "--match"),
    (b">a\nMKV\n>b\nMKV\n", ["--gap-open", "-1"], "gap costs"),
    (b">a\nMKV\n>b\nMKV\n", ["--gap-open", "1", "--gap-extend", "2"], "at least gap extend"),
    (b">a\nMKV\n>b\nMKV\n", ["--window", "24"], "multiple of 16"),
])
def test_errors_are_one_line_exit_2(tmp_path, content, args, needle):
    path = tmp_path / "in.faa"
    path.write_bytes(content)
    res = run("all-vs-all", path, *args)
    assert res.exit_code == 2
    lines = res.stderr.strip().split("\n")
    assert len(lines) == 1 and needle in lines[0], res.stderr
    if "record" in needle or "empty" in needle or "duplicate" in needle:
        assert str(path) in lines[0]


def test_missing_file_exit_2(tmp_path):
    res = run("all-vs-all", tmp_path / "nope.faa")
    assert res.exit_code == 2 and "nope.faa" in res.stderr and "Traceback" not in res.stderr


def test_interrupted_write_leaves_no_file(small_fasta, tmp_path, monkeypatch):
    target = tmp_path / "out.tsv"
    real = output._format_rows

    def explode(*a, **k):
        real(*a, **k)
        raise KeyboardInterrupt

    monkeypatch.setattr(output, "_format_rows", explode)
    res = run("all-vs-all", small_fasta, "-o", target)
    assert res.exit_code == 130
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_console_script(small_fasta, tmp_path):
    out = tmp_path / "x.tsv"
    proc = subprocess.run([sys.executable, "-m", "pairalign", "all-vs-all", str(small_fasta),
                           "-o", str(out), "--mode", "global"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().count("\n") == 1 + 40 * 39 // 2
