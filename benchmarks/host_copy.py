"""How fast the device's host takes downloaded results into numpy arrays.

    python benchmarks/host_copy.py [--gib 4] [--threads 8]

Results with traceback come back through a pinned staging buffer and are
copied out into fresh numpy arrays on ``--threads`` threads (``gpu_backend``:
``_download``, ``_copy_out``). This prints, in GB/s over ``--gib`` GiB: the
kernel's transparent huge page settings; a first write of fresh memory (page
faults) and a second one, on one thread and on several; the staging copy-out
into fresh and into written memory; and CuPy's device-to-host copies into a
pinned buffer and into fresh pageable memory, as bounds for what a download
path could reach. Then what the operations' arrays made ahead
(``pairs.RESERVE_OPERATIONS``) cost: their pages faulted in by
``pairs.touch_pages`` on one thread and on several, and, as another way
to download into them, registering written memory with the driver
(``cudaHostRegister``), the device's copy straight into it, and its
unregistering.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

PIECE = 8 << 20


def rate(nbytes: int, seconds: float) -> str:
    return f"{nbytes / seconds / 1e9:6.2f} GB/s"


def threaded(pool: ThreadPoolExecutor, dst: np.ndarray, src: np.ndarray | None) -> float:
    """Seconds to fill ``dst`` (from ``src``, else with a constant) in pieces."""
    def piece(at: int) -> None:
        if src is None:
            dst[at:at + PIECE] = 1
        else:
            dst[at:at + PIECE] = src[at % len(src):at % len(src) + PIECE]

    t = time.perf_counter()
    list(pool.map(piece, range(0, len(dst), PIECE)))
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gib", type=float, default=4.0)
    ap.add_argument("--threads", type=int, default=8)
    args = ap.parse_args()
    nbytes = int(args.gib * (1 << 30)) // PIECE * PIECE
    for name in ("enabled", "defrag"):
        path = Path("/sys/kernel/mm/transparent_hugepage") / name
        print(f"THP {name}: {path.read_text().strip() if path.exists() else 'absent'}")
    one = ThreadPoolExecutor(1)
    many = ThreadPoolExecutor(args.threads)
    for label, pool in (("1 thread", one), (f"{args.threads} threads", many)):
        a = np.empty(nbytes, np.uint8)
        first = threaded(pool, a, None)
        second = threaded(pool, a, None)
        print(f"write, {label}: fresh {rate(nbytes, first)}, written {rate(nbytes, second)}")
        del a

    import cupy as cp

    staging = np.ndarray((64 << 20,), np.uint8, buffer=cp.cuda.alloc_pinned_memory(64 << 20))
    staging[:] = 3
    a = np.empty(nbytes, np.uint8)
    fresh = threaded(many, a, staging)
    again = threaded(many, a, staging)
    print(f"copy-out from pinned staging, {args.threads} threads: fresh {rate(nbytes, fresh)}, "
          f"written {rate(nbytes, again)}")
    del a

    d = cp.ones(nbytes, cp.uint8)
    pinned = np.ndarray((nbytes,), np.uint8, buffer=cp.cuda.alloc_pinned_memory(nbytes))
    for label, out in (("pinned", pinned), ("fresh pageable", np.empty(nbytes, np.uint8))):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        d.get(out=out)
        print(f"device to host into {label}: {rate(nbytes, time.perf_counter() - t)}")
    del d, pinned
    reserve_paths(nbytes, args.threads)


def reserve_paths(nbytes: int, threads: int) -> None:
    """Faulting pages in ahead (``touch_pages``), and registered memory."""
    import cupy as cp

    from first_touch import touch

    for k in (1, threads):
        a = np.empty(nbytes, np.uint8)
        print(f"touch_pages, {k} thread(s): {rate(nbytes, touch(a, k))}")
        del a
    a = np.empty(nbytes, np.uint8)
    a[:] = 0
    d = cp.ones(nbytes, cp.uint8)
    runtime = cp.cuda.runtime
    t = time.perf_counter()
    runtime.hostRegister(a.ctypes.data, nbytes, 0)
    print(f"cudaHostRegister of written memory: {rate(nbytes, time.perf_counter() - t)}")
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    runtime.memcpy(a.ctypes.data, d.data.ptr, nbytes, runtime.memcpyDeviceToHost)
    print(f"device to host into registered memory: {rate(nbytes, time.perf_counter() - t)}")
    assert a[:: 1 << 20].min() == 1
    t = time.perf_counter()
    runtime.hostUnregister(a.ctypes.data)
    print(f"cudaHostUnregister: {rate(nbytes, time.perf_counter() - t)}")


if __name__ == "__main__":
    main()
