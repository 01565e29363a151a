"""pairalign.host_memory: pages faulted in ahead, contents left alone."""

import os

import numpy as np
import pytest

from pairalign import host_memory


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="Linux only")
def test_populate_faults_a_new_array_in():
    a = np.empty(64 << 20, np.uint8)
    before = _resident_bytes()
    if not host_memory.populate(a):
        pytest.skip("MADV_POPULATE_WRITE needs Linux 5.14 or later")
    assert _resident_bytes() - before >= 60 << 20


def test_populate_leaves_what_is_written_and_stores_beside_it_stay():
    rng = np.random.default_rng(0)
    a = np.empty(8 << 20, np.int32)
    at = rng.choice(a.size, 50_000, replace=False)
    a[at[:25_000]] = 7  # before
    threads = host_memory.populate_soon([a])
    a[at[25_000:]] = 9  # while it runs
    for t in threads:
        t.join()
    assert (a[at[:25_000]] == 7).all() and (a[at[25_000:]] == 9).all()


def test_populate_takes_only_contiguous_arrays_and_small_ones_get_no_thread():
    a = np.zeros((64, 1 << 16), np.int32)
    assert not host_memory.populate(a[:, ::2])
    assert host_memory.populate_soon([np.zeros(16, np.int32), None]) == []
