"""The GPU backend's launch order of a window's pairs, on the CPU: its array code
runs on NumPy as on CuPy, so these checks need no device."""

from __future__ import annotations

import numpy as np
import pytest

from pairalign.kernels.gpu_backend import GPUBackend


@pytest.fixture
def backend():
    be = object.__new__(GPUBackend)  # no CUDA: only the array module
    be.cp = np
    return be


def window(rng, rows=7, cols=90, triangle=False, longest=900):
    """Row-major pairs of a window, targets sorted longest first as in a job."""
    lengths = np.sort(rng.integers(1, longest, max(rows, cols)))[::-1]
    r = np.repeat(np.arange(rows), cols)
    c = np.tile(np.arange(cols), rows)
    if triangle:
        keep = r < c
        r, c = r[keep], c[keep]
    return r.astype(np.int32), lengths[r].astype(np.int64), lengths[c].astype(np.int64)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("triangle", [False, True])
@pytest.mark.parametrize("longest", [300, 900])
def test_pair_order_couples_and_warps(backend, seed, triangle, longest):
    rng = np.random.default_rng(seed)
    rows, n, m = window(rng, triangle=triangle, longest=longest)
    wide = (n + 7) // 8 * m >= 2048
    packed = wide & (rng.random(rows.size) < 0.8)
    order, npack = backend._pair_order(rows, n, m, wide, packed)
    # every pair once
    assert np.array_equal(np.sort(order), np.arange(rows.size))
    nwide = int(wide.sum())
    # packed pairs first, in couples of one row, adjacent targets of that row
    assert npack % 2 == 0 and packed[order[:npack]].all()
    first, second = order[:npack:2], order[1:npack:2]
    assert (rows[first] == rows[second]).all() and (second > first).all()
    assert (m[first] >= m[second]).all()  # the couple's first target is the longer
    # each row leaves at most one packed pair uncoupled, among the other wide ones
    left = order[npack:nwide]
    assert wide[left].all() and np.bincount(rows[left[packed[left]]], minlength=7).max() <= 1
    assert (np.diff(left) > 0).all()  # row-major
    # then the narrow ones: each row's first pairs in whole warps of 32, in row
    # order, then what is left of every row, longest targets first
    narrow = order[nwide:]
    pool = np.flatnonzero(~wide)
    grouped = [pool[rows[pool] == r][:k - k % 32]
               for r, k in zip(*np.unique(rows[pool], return_counts=True))]
    grouped = np.concatenate(grouped) if grouped else pool[:0]
    assert np.array_equal(narrow[:len(grouped)], grouped)
    assert (np.diff(m[narrow[len(grouped):]]) <= 0).all()

def test_pair_order_without_packing_keeps_wide_first(backend):
    rows, n, m = window(np.random.default_rng(9))
    wide = (n + 7) // 8 * m >= 2048
    order, npack = backend._pair_order(rows, n, m, wide, None)
    assert npack == 0
    assert wide[order[:wide.sum()]].all() and not wide[order[wide.sum():]].any()
    assert np.array_equal(np.sort(order), np.arange(rows.size))
