"""Results do not depend on how the work is cut: threads, window size, memory
budget, traceback or not, all-vs-all or one pair at a time.

The data set mixes short proteins (16-bit windows), two long ones (their windows
take the 32-bit path; with small windows the short pairs do not), identical
duplicates and distinct sequences of equal length (ties in the length sort).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pairalign
from pairalign.kernels.conventions import OP_ALIGNED, OP_DEL, OP_INS
from pairalign.pairs import PairBatch
from pairalign.scoring import Scoring

from conftest import FIELDS, int16_edge, sample_indices

MODES = ("global", "semiglobal", "local")
CONFIGS = [
    {"threads": 1, "window": 16},
    {"threads": 2, "window": 16},
    {"threads": 2, "window": 32},
    {"threads": 1, "window": 128},
    {"threads": 2, "window": 128},
    {"threads": 1},
    {"threads": 2, "max_memory": "100M"},
]


@pytest.fixture(scope="module")
def seqs(records):
    recs = records("proteome_HG003687.faa")
    lengths = recs.lengths
    short = [k for k in range(len(recs)) if 30 <= lengths[k] <= 260]
    rng = np.random.default_rng(5)
    pick = [short[k] for k in sample_indices(len(short), 44, 5)]
    out = [recs.sequences[k] for k in pick]
    # the two shortest proteins past the 16-bit edge (1,600 and 1,629 aa: the
    # pair of them needs 32 bits)
    longest = np.argsort(-lengths, kind="stable")
    past = longest[lengths[longest] > int16_edge(Scoring.create("protein"))]
    long1, long2 = recs.sequences[int(past[-1])], recs.sequences[int(past[-2])]
    assert Scoring.create("protein").score_dtype(len(long1), len(long2)) == np.int32
    out.insert(7, long1)
    out.insert(30, long2)
    # identical duplicates and equal-length distinct sequences (ties in the sort)
    out.insert(3, out[20])
    out.append(out[10])
    out.append(out[25][:150])
    out.insert(15, out[26][:150])
    out.append(long2)  # a long duplicate
    rng.shuffle(out)
    return out


def run(seqs, mode, traceback=True, **kw):
    return pairalign.align_all(seqs, mode=mode, backend="cpu", traceback=traceback, **kw)


def assert_same_batch(a: PairBatch, b: PairBatch, what: str) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, f"{what}: {name} dtype {x.dtype} != {y.dtype}"
        if not np.array_equal(x, y):
            if len(x) == len(y):
                k = int(np.flatnonzero(x != y)[0])
                pytest.fail(f"{what}: {name} differs first at {k}: {x[k]} != {y[k]}")
            pytest.fail(f"{what}: {name} length {len(x)} != {len(y)}")


@pytest.fixture(scope="module")
def baselines(seqs):
    """Traceback and score-only runs with the defaults, per mode."""
    return {(mode, tb): run(seqs, mode, traceback=tb, threads=2)
            for mode in MODES for tb in (True, False)}


@pytest.mark.parametrize("traceback", [True, False], ids=["traceback", "score-only"])
@pytest.mark.parametrize("mode", MODES)
def test_threads_and_windows(mode, traceback, seqs, baselines, check_result):
    base = baselines[mode, traceback]
    if traceback:
        check_result(base)
    for cfg in CONFIGS:
        res = run(seqs, mode, traceback=traceback, **cfg)
        assert_same_batch(res.pairs, base.pairs, f"{mode} {cfg} vs defaults")


@pytest.mark.parametrize("mode", MODES)
def test_score_only_matches_traceback(mode, baselines):
    tb, so = baselines[mode, True].pairs, baselines[mode, False].pairs
    assert np.array_equal(so.query, tb.query) and np.array_equal(so.target, tb.target)
    assert np.array_equal(so.score, tb.score)
    # the end cell comes from the fill, with or without traceback
    assert np.array_equal(so.query_end, tb.query_end)
    assert np.array_equal(so.target_end, tb.target_end)
    for name in ("query_begin", "target_begin", "identities", "length"):
        assert (getattr(so, name) == -1).all(), name
    assert len(so.op_code) == len(so.op_len) == 0
    assert (so.op_offsets == 0).all()
    res = baselines[mode, False]
    assert all(r.cigar is None for r in res)


@pytest.mark.parametrize("mode", MODES)
def test_order_is_input_order(mode, seqs, baselines):
    p = baselines[mode, True].pairs
    n = len(seqs)
    iu, ju = np.triu_indices(n, 1)
    assert np.array_equal(p.query, iu) and np.array_equal(p.target, ju)
    res = baselines[mode, True]
    recs = list(res)
    assert [(r.query_index, r.target_index) for r in recs] == list(zip(iu.tolist(), ju.tolist()))
    assert all(r.query_id == res.ids[r.query_index] for r in recs)


def _swap_record(r: pairalign.PairAlignment) -> pairalign.PairAlignment:
    """The record seen from the other side (I <-> D, coordinates exchanged)."""
    cigar = r.cigar.translate(str.maketrans("ID", "DI")) if r.cigar is not None else None
    return dataclasses.replace(
        r, query_id=r.target_id, target_id=r.query_id, query_index=r.target_index,
        target_index=r.query_index, query_begin=r.target_begin, query_end=r.target_end,
        target_begin=r.query_begin, target_end=r.query_end, cigar=cigar)


def _strip_ids(r):
    return dataclasses.replace(r, query_id="", target_id="", query_index=0, target_index=0)


@pytest.mark.parametrize("mode", MODES)
def test_pairs_equal_single_runs(mode, seqs, baselines):
    """Pair (i, j) of all-vs-all equals align_many([s_i], [s_j]): the same score
    always, and the same alignment seen from i's side. The triangle computes each
    pair with the longer sequence (the earlier one on ties) as the query."""
    res = baselines[mode, True]
    n = len(seqs)
    lengths = np.array([len(s) for s in seqs])
    rng = np.random.default_rng(1)
    iu, ju = np.triu_indices(n, 1)
    picks = set(rng.choice(len(iu), 40, replace=False).tolist())
    # all pairs involving a long sequence, a duplicate or an equal-length tie
    special = [k for k in range(n) if lengths[k] > 1000 or lengths[k] == 150
               or seqs.count(seqs[k]) > 1]
    picks |= {k for k in range(len(iu)) if iu[k] in special and ju[k] in special}
    picks |= {k for k in range(len(iu)) if iu[k] == special[0]}
    swapped_seen = straight_seen = 0
    for k in sorted(picks):
        i, j = int(iu[k]), int(ju[k])
        rec = res[k]
        assert (rec.query_index, rec.target_index) == (i, j)
        fwd = pairalign.align_many([seqs[i]], [seqs[j]], mode=mode, backend="cpu", threads=1)[0]
        rev = pairalign.align_many([seqs[j]], [seqs[i]], mode=mode, backend="cpu", threads=1)[0]
        assert rec.score == fwd.score == rev.score, (i, j)
        if lengths[i] >= lengths[j]:
            assert _strip_ids(rec) == _strip_ids(fwd), (i, j)
            straight_seen += 1
        else:
            assert _strip_ids(rec) == _strip_ids(_swap_record(rev)), (i, j)
            swapped_seen += 1
    assert swapped_seen and straight_seen


@pytest.mark.parametrize("mode", MODES)
def test_orientation(mode, seqs, baselines):
    """Every record of (i, j) has query = i: its coordinates and CIGAR fit
    sequence i on the query side, also where j is longer (computed swapped)."""
    res = baselines[mode, True]
    lengths = np.array([len(s) for s in seqs])
    p = res.pairs
    assert (p.query < p.target).all()
    assert (p.query_end <= lengths[p.query]).all()
    assert (p.target_end <= lengths[p.target]).all()
    swapped = np.flatnonzero(lengths[p.query] < lengths[p.target])
    assert len(swapped) > 100
    for k in swapped[:: max(1, len(swapped) // 40)].tolist():
        r = res[k]
        q, t = seqs[r.query_index], seqs[r.target_index]
        used_q = sum(int(n) for n, op in _ops(r.cigar) if op in "=XI")
        used_t = sum(int(n) for n, op in _ops(r.cigar) if op in "=XD")
        assert used_q == r.query_end - r.query_begin and used_t == r.target_end - r.target_begin
        a, b = res.aligned(k)
        assert a.replace("-", "") == q[r.query_begin:r.query_end]
        assert b.replace("-", "") == t[r.target_begin:r.target_end]
        if mode == "global":
            assert (r.query_end, r.target_end) == (len(q), len(t))
    # the ops of swapped pairs are the I/D mirror of the computed ones, never a mix
    codes = set(np.unique(p.op_code).tolist())
    assert codes <= {OP_ALIGNED, OP_INS, OP_DEL}


def _ops(cigar):
    from pairalign.cigar import parse_cigar

    return parse_cigar(cigar)


# ---------------------------------------------------------------------------------
# query x target (rectangle)
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_rectangle_invariance(mode, seqs, check_result):
    queries, targets = seqs[:13], seqs[13:45]
    base = pairalign.align_many(queries, targets, mode=mode, backend="cpu", threads=2)
    check_result(base)
    p = base.pairs
    nq, nt = len(queries), len(targets)
    assert np.array_equal(p.query, np.repeat(np.arange(nq), nt))
    assert np.array_equal(p.target, np.tile(np.arange(nt), nq))
    for cfg in ({"threads": 1, "window": 16}, {"threads": 2, "window": 32},
                {"threads": 2, "window": 128}):
        res = pairalign.align_many(queries, targets, mode=mode, backend="cpu", **cfg)
        assert_same_batch(res.pairs, p, f"rectangle {mode} {cfg}")
    so = pairalign.align_many(queries, targets, mode=mode, backend="cpu", threads=2,
                              traceback=False)
    assert np.array_equal(so.pairs.score, p.score)
    # each rectangle pair is its own single run, query as query
    for k in range(0, len(p), 37):
        q, t = int(p.query[k]), int(p.target[k])
        one = pairalign.align_many([queries[q]], [targets[t]], mode=mode, backend="cpu")[0]
        assert _strip_ids(one) == _strip_ids(base[k])


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(seqs=st.lists(st.text("ACDEFGHIKLMNPQRSTVWYX", min_size=1, max_size=90),
                     min_size=2, max_size=40),
       mode=st.sampled_from(MODES), traceback=st.booleans())
def test_hyp_windows(seqs, mode, traceback):
    """Random sets (lengths 1..90, up to 40 sequences: several windows of 16)."""
    base = pairalign.align_all(seqs, mode=mode, backend="cpu", threads=2, window=16,
                               traceback=traceback, alphabet="protein")
    other = pairalign.align_all(seqs, mode=mode, backend="cpu", threads=1, window=128,
                                traceback=traceback, alphabet="protein")
    assert_same_batch(other.pairs, base.pairs, f"{mode} window 128/1 thread vs 16/2")
    n = len(seqs)
    iu, ju = np.triu_indices(n, 1)
    assert np.array_equal(base.pairs.query, iu) and np.array_equal(base.pairs.target, ju)
