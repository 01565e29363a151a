"""HostRegistry (``pairalign.kernels.host_registry``) with a stand-in driver:
which pages it registers, what it reports covered, what it releases, and the
operations' reserve registering what it faults in."""

from __future__ import annotations

import contextlib
import types

import numpy as np
import pytest

from pairalign.kernels.host_registry import HostRegistry

PAGE = HostRegistry.PAGE


class _Driver:
    """cupy.cuda.runtime's hostRegister and hostUnregister, recorded; a
    registration that overlaps a live one fails as the driver's does, and so
    does every one past ``refuse_after``."""

    class CUDARuntimeError(RuntimeError):
        pass

    def __init__(self, refuse_after: int | None = None) -> None:
        self.live: dict[int, int] = {}
        self.calls: list[tuple] = []
        self.refuse_after = refuse_after

    def hostRegister(self, ptr, size, flags):  # noqa: N802 (the CUDA runtime's name)
        self.calls.append(("register", ptr, size, flags))
        if self.refuse_after is not None and len(self.live) >= self.refuse_after:
            raise self.CUDARuntimeError("out of memory")
        if any(s < ptr + size and ptr < e for s, e in self.live.items()):
            raise self.CUDARuntimeError("already registered")
        self.live[ptr] = ptr + size

    def hostUnregister(self, ptr):  # noqa: N802
        self.calls.append(("unregister", ptr))
        del self.live[ptr]


def _registry(limit=1 << 40, refuse_after=None) -> tuple[HostRegistry, _Driver]:
    driver = _Driver(refuse_after)
    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=driver))
    return HostRegistry(cp, contextlib.nullcontext(), limit), driver


def test_ranges_that_meet_tile_whole_pages_and_are_released():
    reg, driver = _registry()
    base, end = 10 * PAGE + 100, 30 * PAGE + 7  # an array's bytes
    cuts = [base, base + 3 * PAGE, base + 3 * PAGE + 50, base + 11 * PAGE, end]
    starts = [reg.register(lo, hi, end) for lo, hi in zip(cuts, cuts[1:])]
    spans = sorted(driver.live.items())
    assert spans[0][0] == 11 * PAGE and spans[-1][1] == 30 * PAGE  # whole pages inside
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # no gap, no overlap
    assert all(s % PAGE == 0 and e % PAGE == 0 for s, e in spans)
    assert reg.held == reg.registered == 19 * PAGE
    # the second range lies within a page that the first one holds
    assert starts[1] is None and [s for s in starts if s is not None] == [s for s, _ in spans]
    assert reg.covered(base, end) == spans
    assert reg.covered(12 * PAGE + 5, 16 * PAGE) == [(12 * PAGE + 5, spans[0][1]),
                                                      (spans[1][0], 16 * PAGE)]
    assert reg.covered(12 * PAGE, 14 * PAGE) == [(12 * PAGE, 14 * PAGE)]
    assert reg.covered(0, 11 * PAGE) == []
    assert reg.start_of(15 * PAGE) == spans[1][0] and reg.start_of(30 * PAGE) is None
    reg.release([spans[1][0], spans[1][0], 12345])  # twice, and one never registered
    assert reg.held == 19 * PAGE - (spans[1][1] - spans[1][0])
    reg.release(list(driver.live))
    assert reg.held == 0 and driver.live == {} and reg.covered(base, end) == []


def test_limit_and_refusal():
    reg, driver = _registry(limit=4 * PAGE)
    assert reg.register(0, 3 * PAGE, 100 * PAGE) == 0
    assert reg.register(3 * PAGE, 5 * PAGE, 100 * PAGE) is None  # past the limit
    assert reg.register(3 * PAGE, 4 * PAGE, 100 * PAGE) == 3 * PAGE
    reg2, driver2 = _registry(refuse_after=1)
    assert reg2.register(0, PAGE, 10 * PAGE) == 0
    assert reg2.register(PAGE, 2 * PAGE, 10 * PAGE) is None and reg2.failed
    n = len(driver2.calls)
    assert reg2.register(2 * PAGE, 3 * PAGE, 10 * PAGE) is None and len(driver2.calls) == n


@pytest.mark.parametrize("wanted", [0, 5_000_000, 10_000_000])
def test_reserve_registers_what_it_faults_in_and_unpins(wanted):
    """The operations' reserve registers each piece it faults in, both
    arrays' pieces within their own bytes, and releases them all at unpin."""
    from pairalign.pairs import _OperationsReserve

    reg, driver = _registry()
    r = _OperationsReserve(10_000_000, pin=reg)
    r.want(wanted)
    code, length = r.take(wanted)
    assert not r._thread.is_alive() and len(code) == wanted
    done = r._done
    for a, size in ((r.code, 1), (r.length, 4)):
        lo, hi = a.ctypes.data, a.ctypes.data + a.nbytes
        inside = sorted((s, e) for s, e in driver.live.items() if lo <= s < hi)
        assert all(e <= hi for _, e in inside)
        if done:  # every whole page of the entries faulted in
            assert inside[0][0] == -(-lo // PAGE) * PAGE
            assert inside[-1][1] >= min(lo + done * size, hi // PAGE * PAGE)
            assert all(x[1] == y[0] for x, y in zip(inside, inside[1:]))
        else:
            assert inside == []
    r.unpin()
    assert driver.live == {} and reg.held == 0
    assert np.array_equal(code, r.code[:wanted])
