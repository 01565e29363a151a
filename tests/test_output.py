"""pairalign.output: the numba TSV formatter against a plain-Python reference,
identity rounding, filters, the npy writer and atomic files."""

from __future__ import annotations

import io
import os
import time
from fractions import Fraction

import numpy as np
import pytest

import pairalign
from pairalign import output
from pairalign.cigar import cigar_string
from pairalign.kernels import text as text_kernels
from pairalign.errors import OptionError
from pairalign.pairs import PairBatch
from pairalign.results import AlignmentResult
from pairalign.scoring import Scoring

OPS = "MID"


# ---------------------------------------------------------------------------------
# an independent, per-pair reference for the TSV text
# ---------------------------------------------------------------------------------


def identity_text(identities: int, length: int) -> str:
    """identities / length with 4 decimals, rounded half up, from exact fractions."""
    if length <= 0:
        return "0.0000"
    tt = int(Fraction(identities * 10000, length) + Fraction(1, 2))  # floor(x + 1/2)
    return f"{tt // 10000}.{tt % 10000:04d}"


def reference_cigar(result: AlignmentResult, batch: PairBatch, k: int, use_m: bool) -> str:
    """Pair ``k``'s CIGAR, each M column told = or X by its residues' codes."""
    q = result.scoring.encode(result.sequences[batch.query[k]])
    t = result.scoring.encode(result.target_sequences[batch.target[k]])
    i, j = int(batch.query_begin[k]), int(batch.target_begin[k])
    letters = []
    for c, n in zip(*(x.tolist() for x in batch.ops(k))):
        if OPS[c] == "M":
            letters += ["M" if use_m else "=X"[int(q[i + x] != t[j + x])] for x in range(n)]
            i, j = i + n, j + n
        else:
            letters += [OPS[c]] * n
            i, j = (i + n, j) if OPS[c] == "I" else (i, j + n)
    runs = []
    for ch in letters:
        if runs and runs[-1][1] == ch:
            runs[-1][0] += 1
        else:
            runs.append([1, ch])
    return "".join(f"{n}{ch}" for n, ch in runs)


def reference_tsv(result: AlignmentResult, batch: PairBatch, use_m: bool = False) -> bytes:
    full = result.traceback
    lines = ["\t".join(output.TSV_COLUMNS if full else output.TSV_SCORE_ONLY)]
    for k in range(len(batch)):
        q, t = result.ids[batch.query[k]], result.target_ids[batch.target[k]]
        if full:
            fields = [q, t, batch.score[k], identity_text(int(batch.identities[k]),
                                                          int(batch.length[k])),
                      batch.length[k], batch.query_begin[k], batch.query_end[k],
                      batch.target_begin[k], batch.target_end[k],
                      reference_cigar(result, batch, k, use_m)]
        else:
            fields = [q, t, batch.score[k], batch.query_end[k], batch.target_end[k]]
        lines.append("\t".join(str(f) for f in fields))
    return ("\n".join(lines) + "\n").encode()


def tsv_bytes(result, batch=None, use_m=False) -> bytes:
    buf = io.BytesIO()
    output.write_tsv(buf, result, batch, use_m=use_m)
    return buf.getvalue()


def make_batch(rows, ops) -> PairBatch:
    """rows: (query, target, score, qb, qe, tb, te, identities, length);
    ops: one list of (code, run) per pair."""
    cols = np.array(rows, dtype=np.int64).reshape(-1, 9)
    counts = [len(o) for o in ops]
    offsets = np.zeros(len(ops) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    flat = [x for o in ops for x in o]
    i32 = [cols[:, c].astype(np.int32) for c in range(2, 9)]
    return PairBatch(cols[:, 0], cols[:, 1], *i32, op_offsets=offsets,
                     op_code=np.array([c for c, _ in flat], np.uint8),
                     op_len=np.array([n for _, n in flat], np.int32))


@pytest.fixture(scope="module")
def synthetic():
    """Edge cases: negative and extreme scores, half-up identities, an empty
    alignment, long runs, non-ASCII and long ids."""
    ids = ["a", "β-2", "x" * 300, "q|1/2"]
    i32 = np.iinfo(np.int32)
    rows = [  # coordinates consumed exactly by the operations below
        (0, 1, -7, 0, 5, 0, 5, 4, 6),            # negative score; 4/6 = 0.6667
        (0, 2, 0, 0, 0, 0, 0, 0, 0),             # empty local alignment
        (1, 3, i32.max, 0, 32, 2, 24, 1, 32),    # 1/32 = 0.03125 -> 0.0313 (half up)
        (2, 3, i32.min + 1, 3, 1005, 0, 1001, 1000, 1003),
        (3, 0, 123456, 10, 20, 30, 40, 3, 10),   # 3/10 exactly
        (1, 2, -1, 0, 2, 0, 2, 2, 2),            # 1.0000
    ]
    ops = [  # M 0, I 1, D 2
        [(0, 2), (1, 1), (0, 2), (2, 1)],
        [],
        [(0, 8), (1, 10), (0, 14)],
        [(0, 1000), (1, 2), (2, 1)],
        [(0, 10)],
        [(0, 2)],
    ]
    batch = make_batch(rows, ops)
    scoring = Scoring.create("protein")
    # residues of two letters: = and X runs of every length in the M runs
    rng = np.random.default_rng(5)
    sequences = ["".join(rng.choice(list("AC"), 1100)) for _ in ids]
    return AlignmentResult(ids, None, batch, "local", scoring, True, sequences)


# ---------------------------------------------------------------------------------
# formatter
# ---------------------------------------------------------------------------------


def test_identity_rounding_is_exact_half_up():
    rng = np.random.default_rng(3)
    length = rng.integers(0, 5000, 20000)
    ident = (rng.random(20000) * (length + 1)).astype(np.int64).clip(0, length)
    # fractions whose fifth decimal is exactly 5: float formatting rounds these to even
    length = np.concatenate([length, [32, 32, 160, 2000, 20000, 0, 1]])
    ident = np.concatenate([ident, [1, 3, 1, 1, 1, 0, 1]])
    got = output.identity_ten_thousandths(ident, length)
    want = [int(Fraction(10000 * int(i), int(n)) + Fraction(1, 2)) if n else 0
            for i, n in zip(ident, length)]
    assert got.tolist() == want
    assert got[-7:].tolist() == [313, 938, 63, 5, 1, 0, 10000]
    assert f"{1 / 32:.4f}" == "0.0312"  # why the formatter does not use floats


def test_synthetic_edge_cases(synthetic):
    got = tsv_bytes(synthetic)
    assert got == reference_tsv(synthetic, synthetic.pairs)
    lines = got.decode().split("\n")
    assert lines[1].split("\t")[2:4] == ["-7", "0.6667"]
    assert lines[2].endswith("\t0.0000\t0\t0\t0\t0\t0\t")  # empty alignment: empty CIGAR
    assert lines[3].split("\t")[2:4] == [str(np.iinfo(np.int32).max), "0.0313"]
    assert lines[4].split("\t")[2] == str(np.iinfo(np.int32).min + 1)
    assert lines[5].split("\t")[3] == "0.3000"
    assert lines[6].split("\t")[3] == "1.0000"
    assert tsv_bytes(synthetic, use_m=True) == reference_tsv(synthetic, synthetic.pairs, True)
    assert "\t1000M2I1D\n" in tsv_bytes(synthetic, use_m=True).decode()
    assert "=" in got.decode() and "X" in got.decode()


def test_score_only_columns(synthetic):
    res = AlignmentResult(synthetic.ids, None, synthetic.pairs, "local", synthetic.scoring,
                          False, synthetic.sequences)
    got = tsv_bytes(res)
    assert got == reference_tsv(res, res.pairs)
    assert got.split(b"\n")[0] == b"query\ttarget\tscore\tquery_end\ttarget_end"
    assert got.split(b"\n")[1] == "a\tβ-2\t-7\t5\t5".encode()


def test_empty_batch(synthetic):
    assert tsv_bytes(synthetic, synthetic.pairs.take(np.zeros(0, np.int64))) == \
        output.tsv_header(True)


@pytest.fixture(scope="module")
def real(records):
    recs = records("adeno_fiber.faa")
    return pairalign.align_all(recs.sequences[:24], mode="global", threads=2)


@pytest.fixture(scope="module")
def real_cross(records):
    recs = records("adeno_fiber.faa")
    return pairalign.align_many(pairalign.load(recs.sequences[:5]),
                                pairalign.load(recs.sequences[5:12]), mode="semiglobal",
                                threads=2)


def test_real_results_match_reference(real, real_cross):
    for res in (real, real_cross):
        got = tsv_bytes(res)
        assert got == reference_tsv(res, res.pairs)
        for k in (0, len(res) // 2, len(res) - 1):  # the records agree too
            assert got.split(b"\n")[k + 1].split(b"\t")[-1].decode() == res[k].cigar
    assert tsv_bytes(real_cross).split(b"\n")[1].startswith(b"seq1\tseq1\t")


def test_chunks_do_not_change_the_bytes(real, monkeypatch):
    whole = tsv_bytes(real)
    monkeypatch.setattr(output, "CHUNK", 7)
    assert tsv_bytes(real) == whole
    subset = real.pairs.take(np.arange(3, len(real), 5))
    assert tsv_bytes(real, subset) == reference_tsv(real, subset)


# ---------------------------------------------------------------------------------
# filters
# ---------------------------------------------------------------------------------


def test_filter_boundaries_are_exact(synthetic):
    p = synthetic.pairs

    def kept(**kw):
        return output.filter_pairs(p, **kw).score.tolist()

    assert output.filter_pairs(p) is p
    assert kept(min_score=0) == [0, p.score[2], 123456]
    assert kept(min_identity=0.3) == [-7, p.score[3], 123456, -1]
    # 3/10 passes 0.3 exactly (0.3 * 10 > 3 in floating point)
    assert 123456 in kept(min_identity=0.3) and 123456 not in kept(min_identity=0.30001)
    assert kept(min_identity=2 / 3) == [-7, p.score[3], -1]
    assert -7 not in kept(min_identity=0.66667)
    assert kept(min_identity=0.0) == p.score.tolist()  # empty alignment: identity 0
    assert kept(min_identity=1.0) == [-1]
    assert kept(min_score=0, min_identity=0.3) == [123456]


def test_filter_keeps_alignments_and_order(real):
    p = real.pairs
    out = output.filter_pairs(p, min_score=int(np.median(p.score)), min_identity=0.25)
    frac = [Fraction(int(i), int(n)) if n else Fraction(0)
            for i, n in zip(p.identities, p.length)]
    want = [k for k in range(len(p))
            if p.score[k] >= int(np.median(p.score)) and frac[k] >= Fraction(1, 4)]
    assert 0 < len(want) < len(p)
    assert out.query.tolist() == p.query[want].tolist()
    assert out.target.tolist() == p.target[want].tolist()
    for j, k in enumerate(want):
        assert cigar_string(*out.ops(j), use_m=True) == cigar_string(*p.ops(k), use_m=True)
        assert all(np.array_equal(x, y) for x, y in zip(out.ops(j), p.ops(k)))


def test_filter_errors(synthetic):
    res = pairalign.align_all(["MKVLA", "MKVIA", "MRVLA"], traceback=False)
    assert len(output.filter_pairs(res.pairs, min_score=1)) == 3
    with pytest.raises(OptionError, match="--no-traceback"):
        output.filter_pairs(res.pairs, min_identity=0.5)
    with pytest.raises(OptionError, match=r"\[0, 1\]"):
        output.filter_pairs(synthetic.pairs, min_identity=1.5)


# ---------------------------------------------------------------------------------
# npy
# ---------------------------------------------------------------------------------


def test_npy_to_path_and_handle(real, real_cross, tmp_path):
    path = tmp_path / "m.npy"
    output.write_npy(path, real)
    m = np.load(path)
    assert m.dtype == np.int32 and m.shape == (24, 24)
    assert (m == m.T).all() and (np.diag(m) == 0).all() and (m == real.scores).all()
    assert m[real.pairs.query, real.pairs.target].tolist() == real.pairs.score.tolist()
    buf = io.BytesIO()
    output.write_npy(buf, real_cross)
    assert (np.load(io.BytesIO(buf.getvalue())) == real_cross.scores).all()
    assert real_cross.scores.shape == (5, 7)
    with pytest.raises(OptionError, match="-o PATH"):
        output.write_npy("-", real)
    assert os.listdir(tmp_path) == ["m.npy"]


# ---------------------------------------------------------------------------------
# atomic files
# ---------------------------------------------------------------------------------


def test_atomic_success_has_normal_permissions(tmp_path):
    target = tmp_path / "out.tsv"
    with output.atomic_output(target) as handle:
        handle.write(b"abc")
        assert not target.exists()
        (tmp,) = os.listdir(tmp_path)
        assert tmp.startswith(".out.tsv.") and tmp.endswith(".part")
    assert target.read_bytes() == b"abc" and os.listdir(tmp_path) == ["out.tsv"]
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
@pytest.mark.parametrize("existing", [False, True])
def test_atomic_failure_leaves_nothing(tmp_path, exc, existing):
    target = tmp_path / "out.tsv"
    if existing:
        target.write_bytes(b"previous run\n")
    with pytest.raises(exc):
        with output.atomic_output(target) as handle:
            handle.write(b"x" * 100_000)
            raise exc()
    if existing:
        assert target.read_bytes() == b"previous run\n"
        assert os.listdir(tmp_path) == ["out.tsv"]
    else:
        assert os.listdir(tmp_path) == []


def test_atomic_write_tsv_interrupted_mid_file(real, tmp_path, monkeypatch):
    """The formatter raising after some chunks are written leaves no file."""
    monkeypatch.setattr(output, "CHUNK", 10)
    real_format, calls = text_kernels.format_rows, []

    def flaky(*args):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real_format(*args)

    monkeypatch.setattr(text_kernels, "format_rows", flaky)
    target = tmp_path / "out.tsv"
    with pytest.raises(KeyboardInterrupt):
        with output.atomic_output(target) as handle:
            output.write_tsv(handle, real)
    assert len(calls) >= 4 and os.listdir(tmp_path) == []


def test_tsv_threads_write_the_same_bytes(real, monkeypatch):
    """Chunks formatted on several threads come out in order, byte for byte."""
    outs = []
    for threads in (1, 4):
        monkeypatch.setattr(output, "CHUNK", 7)
        monkeypatch.setattr(output, "_FORMAT_THREADS", threads)
        buf = io.BytesIO()
        output.write_tsv(buf, real)
        outs.append(buf.getvalue())
    assert outs[0] == outs[1]
    assert outs[0].count(b"\n") == len(real.pairs) + 1


def test_atomic_output_syncs_while_written(tmp_path, monkeypatch):
    """What is written goes to disk while the file is still being written (the
    writeback thread's syncs come before the body ends), and the file is whole."""
    events = []
    real_sync = getattr(os, "fdatasync", os.fsync)
    monkeypatch.setattr(output, "WRITEBACK_STEP", 1 << 16)
    monkeypatch.setattr(output.os, "fdatasync",
                        lambda fd: (events.append("sync"), real_sync(fd))[1], raising=False)
    monkeypatch.setattr(output.os, "fsync", lambda fd: (events.append("fsync"), real_sync(fd))[1])
    target = tmp_path / "out.bin"
    data = os.urandom(1 << 18)
    with output.atomic_output(target) as handle:
        for k in range(0, len(data), 1 << 16):
            handle.write(data[k:k + (1 << 16)])
            handle.flush()
            deadline = time.monotonic() + 5
            while events.count("sync") < k // (1 << 16) + 1 and time.monotonic() < deadline:
                time.sleep(0.005)
        events.append("body done")
    assert events.index("sync") < events.index("body done")
    assert events.count("sync") == len(data) >> 16
    assert target.read_bytes() == data


def test_atomic_unwritable_folder(tmp_path):
    with pytest.raises(OptionError, match="cannot write .*nope"):
        with output.atomic_output(tmp_path / "nope" / "out.tsv"):
            pass


def test_atomic_stdout(capsysbinary):
    with output.atomic_output("-") as handle:
        handle.write(b"to stdout\n")
    assert capsysbinary.readouterr().out == b"to stdout\n"


def test_a_handle_whose_write_returns_none_takes_it_all():
    """codecs' writers and many wrappers return None from write: all was
    written (only a count of 0 means that nothing could be)."""
    import io

    from pairalign.output import write_all

    class Quiet:
        def __init__(self):
            self.out = io.BytesIO()

        def write(self, data):
            self.out.write(data)

    quiet = Quiet()
    write_all(quiet, b"x" * 100_000)
    assert quiet.out.getvalue() == b"x" * 100_000

    class Stuck:
        def write(self, data):
            return 0

    with pytest.raises(BrokenPipeError):
        write_all(Stuck(), b"abc")
