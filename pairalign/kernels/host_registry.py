"""Host memory page-locked in place for a device's downloads.

A download into pageable memory goes through a pinned staging buffer and a
copy out of it on the host's cores (``GPUBackend._download``). Memory that the
driver has registered (``cudaHostRegister``: the pages of an existing array
locked where they are) takes the device's copy directly. On the H100 machine
(``benchmarks/host_copy.py``, 16 GiB): registering written memory 34 GB/s,
the device's copy into it 55 GB/s, unregistering 66 GB/s; the staging path's
copy-out 53 GB/s on eight idle cores, much less beside the host's own work at
the end of a run.
"""

from __future__ import annotations

import bisect
import threading

#: cudaHostRegisterPortable: the pages locked for every context
_PORTABLE = 1


class HostRegistry:
    """Host address ranges registered with the driver for one device
    (``cudaHostRegister``), at most ``limit`` bytes at once. Thread-safe: the
    operations' reserve registers from its own thread while a download
    releases what it has copied into.

    Parameters
    ----------
    cp
        The CuPy module.
    device
        The ``cupy.cuda.Device`` whose context registers (the memory is
        registered portable: every context sees it locked).
    limit
        The most bytes registered at once; a range past it is refused.
    """

    PAGE = 4096

    def __init__(self, cp, device, limit: int) -> None:
        self.cp = cp
        self.device = device
        self.limit = int(limit)
        self._starts: list[int] = []  # sorted
        self._ends: dict[int, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        #: the driver refused a range: no more are asked for
        self.failed = False
        #: bytes registered so far, released or not
        self.registered = 0

    def register(self, start: int, end: int, whole_end: int) -> int | None:
        """Register the pages from the first page boundary at or after
        ``start`` to the one at or after ``end``, or, where that passes
        ``whole_end`` (the end of the array that holds the range), to the
        last boundary before it: ranges that meet end to end tile without
        overlap. Returns the range's first address, or None where nothing
        was registered (none of it whole pages, over the limit, or refused).
        """
        lo = self._up(start)
        hi = min(self._up(end), whole_end // self.PAGE * self.PAGE)
        if hi <= lo:
            return None
        with self._lock:  # the bytes claimed first: the driver is not called under the lock
            if self.failed or self._bytes + (hi - lo) > self.limit:
                return None
            self._bytes += hi - lo
        try:
            with self.device:
                self.cp.cuda.runtime.hostRegister(lo, hi - lo, _PORTABLE)
        except self.cp.cuda.runtime.CUDARuntimeError:
            with self._lock:
                self.failed = True
                self._bytes -= hi - lo
            return None
        with self._lock:
            bisect.insort(self._starts, lo)
            self._ends[lo] = hi
            self.registered += hi - lo
        return lo

    def covered(self, start: int, end: int) -> list[tuple[int, int]]:
        """The registered ranges within ``[start, end)``, clipped to it, in
        address order."""
        with self._lock:
            k = bisect.bisect_right(self._starts, start) - 1
            if k < 0 or self._ends[self._starts[k]] <= start:
                k += 1
            out = []
            while k < len(self._starts) and self._starts[k] < end:
                s = self._starts[k]
                out.append((max(s, start), min(self._ends[s], end)))
                k += 1
        return out

    def release(self, starts) -> None:
        """Unregister the ranges that begin at ``starts`` (those still
        registered; others are ignored)."""
        for s in starts:
            with self._lock:
                hi = self._ends.pop(s, None)
                if hi is None:
                    continue
                self._starts.pop(bisect.bisect_left(self._starts, s))
            with self.device:
                self.cp.cuda.runtime.hostUnregister(s)
            with self._lock:
                self._bytes -= hi - s

    def start_of(self, address: int) -> int | None:
        """The start of the registered range that holds ``address``, or None."""
        with self._lock:
            k = bisect.bisect_right(self._starts, address) - 1
            if k >= 0 and self._ends[self._starts[k]] > address:
                return self._starts[k]
        return None

    @property
    def held(self) -> int:
        """Bytes registered now."""
        return self._bytes

    def _up(self, address: int) -> int:
        return -(-address // self.PAGE) * self.PAGE
