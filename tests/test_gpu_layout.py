"""The GPU backend's host-side code on the CPU, no device needed: a window's
launch order (its array code runs on NumPy as on CuPy) and downloads through
the staging buffer (CuPy's copy calls done on host memory)."""

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


class _DeviceArray:
    """A host array that looks like a CuPy one to ``_download`` (``data.ptr``)."""

    def __init__(self, a: np.ndarray) -> None:
        self.host = np.ascontiguousarray(a)
        self.shape, self.dtype, self.nbytes = a.shape, a.dtype, a.nbytes
        self.data = type("Pointer", (), {"ptr": self.host.ctypes.data})()


def fake_cupy():
    """The CuPy calls ``_download`` makes, on host memory."""
    import ctypes
    from types import SimpleNamespace

    runtime = SimpleNamespace(memcpyDeviceToHost=2,
                              memcpyAsync=lambda dst, src, n, kind, stream: ctypes.memmove(dst, src, n))
    return SimpleNamespace(ascontiguousarray=lambda a: a, cuda=SimpleNamespace(runtime=runtime))


@pytest.mark.parametrize("staging", [7, 64, 4099, 1 << 20])
def test_download_through_staging_pieces(monkeypatch, staging):
    """Arrays of several types, empty ones among them, pass through a staging
    buffer smaller or larger than they are, cut mid-element: each comes back whole."""
    from types import SimpleNamespace

    from pairalign.kernels import gpu_backend

    monkeypatch.setattr(gpu_backend, "STAGING_BYTES", staging)
    be = object.__new__(GPUBackend)
    be.cp, be.timings, be._pinned = fake_cupy(), {}, None
    be.cupyx = SimpleNamespace(empty_pinned=lambda n, dtype: np.full(n, 0xAB, dtype))
    syncs = []
    be._host_stream = lambda: SimpleNamespace(ptr=0, synchronize=lambda: syncs.append(1))
    rng = np.random.default_rng(staging)
    arrays = [rng.integers(-2**31, 2**31, 1000).astype(np.int32), np.zeros(0, np.int64),
              rng.integers(0, 255, 333).astype(np.uint8), np.arange(1001, dtype=np.int64)]
    got = be._download([_DeviceArray(a) for a in arrays])
    for a, g in zip(arrays, got):
        assert g.dtype == a.dtype and np.array_equal(g, a)
    assert len(syncs) == max(1, -(-sum(a.nbytes for a in arrays) // staging))
    assert be._pinned.nbytes == staging
