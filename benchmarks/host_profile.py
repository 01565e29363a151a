"""Where the host's time goes in an in-process GPU run (for the device).

    python benchmarks/host_profile.py [--cells 1e12] [--traceback]

Prints the backend's stage times (host: launch, download; device: fill,
traceback) and the main thread's profile (the consumer: orientation, ordering,
waiting on the workers), top 25 by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from workloads import DATA, sampled_proteins  # noqa: E402

import pairalign  # noqa: E402
from pairalign.engine import run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.kernels import gpu_backend  # noqa: E402
from pairalign.kernels.gpu_backend import GPUBackend  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", type=float, default=0, help="0: the proteome")
    ap.add_argument("--traceback", action="store_true")
    ap.add_argument("--pinned", action="store_true", help="downloads through pinned memory")
    args = ap.parse_args()
    gpu_backend.PINNED_DOWNLOADS = args.pinned
    seqs = (sampled_proteins(args.cells) if args.cells else
            pairalign.read_sequences(DATA / "proteome_HG003687.faa").sequences)
    be = GPUBackend()
    sc = Scoring.create("protein")
    for warm in (True, False):
        job = Job("local", sc, args.traceback, SortedSet.encode(seqs, sc))
        be.timings.clear()
        prof = cProfile.Profile()
        t = time.perf_counter()
        with prof:
            run_job(job, be)
        wall = time.perf_counter() - t
    print(f"wall {wall:.3f} s;", {k: round(v, 3) for k, v in be.timings.items() if k != "cells"})
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
