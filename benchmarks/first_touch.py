"""What a machine's first touch of its memory costs, process by process.

    python benchmarks/first_touch.py [--gib 100] [--threads 16]

Writes a zero into every 4 KiB page of ``--gib`` GiB, twice, on ``--threads``
threads (``pairs.touch_pages``, the placement's own way), and prints the rate
of each pass. The first pass faults fresh pages in; the second runs on pages
already mapped. Run it twice on a fresh machine: if a virtual machine backs
its guest memory on first use, the first process's first pass is slower than
the second process's, whose pages the guest kernel already had backed.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pairalign.pairs import touch_pages

PAGE = 4096


def touch(a: np.ndarray, threads: int) -> float:
    """Seconds to write a zero into each page of ``a`` on ``threads`` threads."""
    step = -(-a.nbytes // threads) // PAGE * PAGE or PAGE
    t = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda lo: touch_pages(a, lo, min(lo + step, a.nbytes), PAGE),
                      range(0, a.nbytes, step)))
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gib", type=float, default=100.0)
    ap.add_argument("--threads", type=int, default=16)
    args = ap.parse_args()
    nbytes = int(args.gib * (1 << 30)) // PAGE * PAGE
    a = np.empty(nbytes, np.uint8)
    for label in ("fresh", "written"):
        seconds = touch(a, args.threads)
        print(f"{label}: {args.gib:g} GiB on {args.threads} threads in {seconds:.2f} s "
              f"({nbytes / seconds / 1e9:.2f} GB/s)", flush=True)


if __name__ == "__main__":
    main()
