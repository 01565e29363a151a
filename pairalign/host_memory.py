"""Host memory faulted in ahead of its first use, without writing it.

A new large array's pages are faulted in (and zeroed by the kernel) at their
first store. Where many threads then store into it at random (a placement's
columns), the faults fall on them. ``madvise(MADV_POPULATE_WRITE)`` (Linux
5.14 and later) faults a range in as stores would, but leaves what is there
alone, so it can run on a thread of its own while others store into the
same range.
"""

from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np

#: ``MADV_POPULATE_WRITE`` of ``<linux/mman.h>``
MADV_POPULATE_WRITE = 23
PAGE = 4096
#: Arrays smaller than this are left to fault in as they are used.
LEAST_BYTES = 4 << 20

_madvise = None


def _libc_madvise():
    global _madvise
    if _madvise is None:
        fn = ctypes.CDLL(None, use_errno=True).madvise
        fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        fn.restype = ctypes.c_int
        _madvise = fn
    return _madvise


def populate(a: np.ndarray) -> bool:
    """Fault in the whole pages of ``a``'s memory (contiguous) for writing,
    leaving their contents as they are. Returns whether the system did (not
    on other systems than Linux, nor before 5.14)."""
    if not sys.platform.startswith("linux") or not a.flags.c_contiguous:
        return False
    start = a.ctypes.data
    lo = -(-start // PAGE) * PAGE
    hi = (start + a.nbytes) // PAGE * PAGE
    if hi <= lo:
        return True
    try:
        return _libc_madvise()(lo, hi - lo, MADV_POPULATE_WRITE) == 0
    except (OSError, AttributeError):
        return False


def populate_soon(arrays) -> list[threading.Thread]:
    """:func:`populate` each of ``arrays`` of at least :data:`LEAST_BYTES`
    on a thread of its own (ctypes lets the GIL go), started; the threads
    are returned. Other threads may store into the arrays meanwhile."""
    threads = [threading.Thread(target=populate, args=(a,), name="pairalign-populate",
                                daemon=True)
               for a in arrays if a is not None and a.nbytes >= LEAST_BYTES]
    for thread in threads:
        thread.start()
    return threads
