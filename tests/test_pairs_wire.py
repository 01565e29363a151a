"""A PairBatch's pickled form (how results leave a Dask worker): compact on the
wire (:meth:`pairalign.pairs.PairBatch.__reduce__`), and back whole."""

from __future__ import annotations

import pickle
from dataclasses import fields

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pairalign.pairs import PairBatch

#: Ranges of a column's values: all -1 (a column left behind on the wire), around
#: the 32-bit edge below which the indices travel narrowed, and wider.
EDGES = [(-1, -1), (0, 127), (-128, 127), (0, 128), (-129, 0), (0, 32767), (-32768, 32767),
         (0, 32768), (-1, 2**31 - 1), (-2**31, 0), (0, 2**31), (-2**40, 2**40)]


@st.composite
def batches(draw):
    n = draw(st.integers(0, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    def column(dtype):
        lo, hi = draw(st.sampled_from(EDGES))
        info = np.iinfo(dtype)
        lo, hi = max(lo, info.min), min(hi, info.max)
        col = rng.integers(lo, hi, n, dtype=dtype, endpoint=True)
        if n >= 2:  # both ends of the range present
            col[0], col[-1] = lo, hi
        return col

    cols = {f.name: column(np.int64 if f.name in ("query", "target") else np.int32)
            for f in fields(PairBatch) if f.name not in ("op_offsets", "op_code", "op_len")}
    counts = rng.integers(0, draw(st.sampled_from([0, 1, 5, 300])), n, endpoint=True)
    start = draw(st.sampled_from([0, 3]))
    offsets = np.concatenate([[start], start + np.cumsum(counts)]).astype(np.int64)
    total = int(offsets[-1])
    code = rng.integers(0, 3, total, dtype=np.uint8, endpoint=True)
    length = rng.integers(1, draw(st.sampled_from([100, 1000, 100000])), total,
                          dtype=np.int32, endpoint=True)
    return PairBatch(**cols, op_offsets=offsets, op_code=code, op_len=length)


@settings(max_examples=200, deadline=None)
@given(batches())
def test_a_batch_pickles_and_comes_back_whole(batch):
    """Every array of a batch comes back from its pickled form with its values
    and dtype, whatever their range (all -1, around the 32-bit edge where the
    indices travel narrowed, 64-bit values, offsets that start past 0)."""
    back = pickle.loads(pickle.dumps(batch, protocol=5))
    assert len(back) == len(batch)
    for f in fields(PairBatch):
        got, want = getattr(back, f.name), getattr(batch, f.name)
        assert got.dtype == want.dtype, f.name
        assert np.array_equal(got, want), f.name
