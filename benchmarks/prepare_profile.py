"""Where ``prepare_work`` spends its time before a run's first launch (for
the device): the sampled workload's job, after a warm-up run, profiled.

    python benchmarks/prepare_profile.py [--cells 1e13] [--mode local] [--traceback]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from workloads import DATA, sampled_proteins  # noqa: E402

import pairalign  # noqa: E402
from pairalign.engine import prepare_work, run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.kernels.gpu_backend import GPUBackend  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", type=float, default=1e13)
    ap.add_argument("--mode", default="local", choices=("local", "global", "semiglobal"))
    ap.add_argument("--traceback", action="store_true")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    sc = Scoring.create("protein")
    be = GPUBackend()
    small = pairalign.read_sequences(DATA / "proteome_HG003687.faa").sequences
    run_job(Job(args.mode, sc, args.traceback, SortedSet.encode(small, sc)), be)
    seqs = SortedSet.encode(sampled_proteins(args.cells), sc)
    for k in range(3):  # a job's first call is a run's (plans are cached by job)
        job = Job(args.mode, sc, args.traceback, seqs)
        t0 = time.perf_counter()
        work = prepare_work(job, be)
        t1 = time.perf_counter()
        prepare_work(job, be)
        t2 = time.perf_counter()
        print(f"prepare_work, a new job: {t1 - t0:.4f} s, again {t2 - t1:.4f} s "
              f"({sum(len(p) for p in work.pieces)} windows)")
    prof = cProfile.Profile()
    job = Job(args.mode, sc, args.traceback, seqs)
    prof.enable()
    prepare_work(job, be)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
