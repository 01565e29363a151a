"""A PairBatch's pickled form (how results leave a Dask worker): compact on the
wire (:meth:`pairalign.pairs.PairBatch.__reduce__`), and back whole."""

from __future__ import annotations

import pickle
from dataclasses import fields

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pairalign.pairs import PairBatch, constant_column, is_constant_column

#: Ranges of a column's values: all -1 (a column that travels as its value),
#: around the 32-bit edge below which the indices travel narrowed, and wider.
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


def test_constant_columns_travel_as_their_value_and_come_back_read_only():
    """A score-only batch's -1 columns and zero offsets, slices of
    :func:`constant_column`'s arrays, are known constant without a look at
    their entries and travel as the value alone; they come back as such
    slices, read-only. A column that holds one value without being such a
    slice travels the same way, found by its range."""
    n = 1000
    rng = np.random.default_rng(7)
    unset = constant_column(n, -1, np.int32)
    assert is_constant_column(unset) and not unset.flags.writeable
    assert not is_constant_column(np.full(n, -1, np.int32))
    batch = PairBatch(query=rng.integers(0, 50_000, n), target=rng.integers(0, 50_000, n),
                      score=rng.integers(-5, 3_000, n).astype(np.int32), query_begin=unset,
                      query_end=rng.integers(0, 1_000, n).astype(np.int32), target_begin=unset,
                      target_end=rng.integers(0, 1_000, n).astype(np.int32),
                      identities=np.full(n, -1, np.int32), length=unset,
                      op_offsets=constant_column(n + 1, 0, np.int64),
                      op_code=np.zeros(0, np.uint8), op_len=np.zeros(0, np.int32))
    wire = pickle.dumps(batch, protocol=5)
    # indices in four bytes each, score and ends as they are; the rest a value each
    assert len(wire) < 20 * n + 2048
    back = pickle.loads(wire)
    for f in fields(PairBatch):
        got, want = getattr(back, f.name), getattr(batch, f.name)
        assert got.dtype == want.dtype and np.array_equal(got, want), f.name
    for name in ("query_begin", "target_begin", "identities", "length", "op_offsets"):
        assert is_constant_column(getattr(back, name)), name


def test_a_batch_counts_its_arrays_in_its_size():
    """``sys.getsizeof`` (what Dask's ``sizeof`` uses for a worker's results)
    counts the batch's arrays."""
    import sys

    batch = PairBatch.empty()
    big = PairBatch(**{f.name: np.zeros(1000 + (f.name == "op_offsets"), np.int64)
                       for f in fields(PairBatch)})
    assert sys.getsizeof(big) >= big.nbytes == 12 * 1000 * 8 + 8 > sys.getsizeof(batch)


def test_read_only_columns_of_other_origins_are_not_taken_for_constant():
    """Read-only columns over a buffer, a two-dimensional array or a read-only
    array of several values are looked at, not taken for constant; a batch
    that came from the wire with its arrays out of band (read-only, over
    the pickle's buffers) pickles again whole."""
    n = 50
    rng = np.random.default_rng(3)
    over_bytes = np.frombuffer(rng.integers(0, 9, n, dtype=np.int32).tobytes(), np.int32)
    rows = rng.integers(0, 9, (n, 2)).astype(np.int32)
    rows.flags.writeable = False
    flat = rows.reshape(-1)[:n]
    several = rng.integers(0, 9, 2 * n).astype(np.int32)
    several.flags.writeable = False
    for col in (over_bytes, flat, several[:n]):
        assert not col.flags.writeable and not is_constant_column(col)
    batch = PairBatch(query=np.arange(n), target=np.arange(n)[::-1].copy(), score=over_bytes,
                      query_begin=flat, query_end=several[:n], target_begin=over_bytes,
                      target_end=flat, identities=constant_column(n, -1, np.int32),
                      length=np.full(n, 7, np.int32),
                      op_offsets=np.arange(n + 1, dtype=np.int64),
                      op_code=np.zeros(n, np.uint8), op_len=np.ones(n, np.int32))
    buffers = []
    wire = pickle.dumps(batch, protocol=5, buffer_callback=buffers.append)
    once = pickle.loads(wire, buffers=[b.raw().toreadonly() for b in buffers])
    again = pickle.loads(pickle.dumps(once, protocol=5))
    for f in fields(PairBatch):
        assert np.array_equal(getattr(again, f.name), getattr(batch, f.name)), f.name
