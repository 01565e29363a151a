"""Where the host's time goes in an in-process GPU run (for the device).

    python benchmarks/host_profile.py [--cells 1e12] [--traceback] [--mode global]

Prints the backend's stage times (host: launch, download; device: fill,
traceback) of a plain run and of a profiled one, then that run's profile
(every thread's from Python 3.12, the main thread's before), top ``--top`` by
own time.
"""

from __future__ import annotations

import argparse
import contextlib
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
    ap.add_argument("--mode", default="local", choices=("local", "global", "semiglobal"))
    ap.add_argument("--top", type=int, default=25, help="functions listed")
    ap.add_argument("--pageable", action="store_true",
                    help="downloads with CuPy's get (default: through the pinned staging buffer)")
    args = ap.parse_args()
    gpu_backend.PINNED_DOWNLOADS = not args.pageable
    seqs = (sampled_proteins(args.cells) if args.cells else
            pairalign.read_sequences(DATA / "proteome_HG003687.faa").sequences)
    be = GPUBackend()
    sc = Scoring.create("protein")
    prof = cProfile.Profile()
    for run in ("warm-up", "plain", "profiled"):
        job = Job(args.mode, sc, args.traceback, SortedSet.encode(seqs, sc))
        be.timings.clear()
        t = time.perf_counter()
        with prof if run == "profiled" else contextlib.nullcontext():
            run_job(job, be)
        wall = time.perf_counter() - t
        if run != "warm-up":
            print(f"{run}: wall {wall:.3f} s;",
                  {k: round(v, 3) for k, v in be.timings.items() if k != "cells"})
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
