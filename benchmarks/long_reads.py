"""All-vs-all of long simulated reads (the overlap users' mode, semiglobal):
GPU GCUPS with and without traceback, its windows and busy time, against
parasail on the machine's cores in the same process.

    python benchmarks/long_reads.py [--sets 64:15000-25000,200:5000-12000]
                                    [--error 0.05] [--runs 2] [--no-parasail]
                                    [--wide-warps rule,1]

Each set, ``COUNT:LO-HI``, is COUNT reads of LO to HI bp cut from one random
400 kb genome at random places, with ``--error`` of their bases replaced at
random. Long reads differ from the proteins of ``gpu.py`` in what bounds the
GPU: a pair of two 20 kb reads is one warp's work, of 0.2 GB of traceback,
so a window holds few pairs (the device's memory) and the GPU runs few warps.
Printed per set and setting: wall time (the best of ``--runs``, after one
warm-up), GCUPS, the GPU's busy time, the windows run and their pairs.
``--wide-warps`` runs each set under each setting of the warps a wide pair
takes (``rule``: ``gpu_backend.wide_warps``; a number forces it), in one
process: an A/B of several warps a pair against one.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time

import numpy as np

from pairalign.engine import run_job
from pairalign.job import Job, SortedSet
from pairalign.kernels import gpu_backend
from pairalign.kernels.gpu_backend import GPUBackend
from pairalign.scoring import Scoring

from workloads import cells_of


def simulated_reads(count: int, lo: int, hi: int, error: float, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    bases = np.frombuffer(b"ACGT", np.uint8)
    genome = rng.choice(bases, 400_000)
    reads = []
    for start, n in zip(rng.integers(0, genome.size - hi, count), rng.integers(lo, hi, count)):
        read = genome[start:start + n].copy()
        hit = rng.random(n) < error
        read[hit] = rng.choice(bases, int(hit.sum()))
        reads.append(read.tobytes().decode())
    return reads


def read_sets(sets: str, error: float):
    """``(spec, reads, cells)`` for each ``COUNT:LO-HI`` of ``sets`` (comma
    separated): :func:`simulated_reads` and the cells of their all-vs-all."""
    for spec in sets.split(","):
        count, span = spec.split(":")
        lo, hi = (int(x) for x in span.split("-"))
        reads = simulated_reads(int(count), lo, hi, error)
        yield spec, reads, cells_of(np.array([len(r) for r in reads]))


def parasail_worker(args):
    import parasail

    pairs, reads, traceback = args
    matrix = parasail.matrix_create("ACGT", 2, -3)
    fn = parasail.sg_trace_scan_32 if traceback else parasail.sg_striped_32
    cells, t = 0, time.perf_counter()
    for i, j in pairs:
        r = fn(reads[i], reads[j], 5, 2, matrix)
        if traceback:
            r.cigar  # decode the alignment too
        cells += len(reads[i]) * len(reads[j])
    return cells, time.perf_counter() - t


def parasail_gcups(reads, traceback, cores, pairs_per_core=2) -> float:
    """parasail's semiglobal 32-bit kernels on ``cores`` processes; GCUPS =
    all cells / the slowest worker's time (start-up excluded)."""
    rng = np.random.default_rng(3)
    jobs = [([tuple(rng.choice(len(reads), 2, replace=False).tolist())
              for _ in range(pairs_per_core)], reads, traceback) for _ in range(cores)]
    with mp.get_context("spawn").Pool(cores) as pool:
        res = pool.map(parasail_worker, jobs)
    return sum(c for c, _ in res) / max(t for _, t in res) / 1e9


def timed(be: GPUBackend, reads: list[str], traceback: bool, runs: int) -> dict:
    sc = Scoring.create("dna")
    best = None
    for _ in range(runs + 1):  # the first warms up
        be.timings.clear()
        stages: dict = {}
        t = time.perf_counter()
        run_job(Job("semiglobal", sc, traceback, SortedSet.encode(reads, sc)), be,
                timings=stages)
        wall = time.perf_counter() - t
        if best is None or wall < best["wall"]:
            sched = stages["scheduler"]
            best = {"wall": wall, "busy": be.timings.get("gpu_busy", 0.0),
                    "windows": sched["windows"], "planned": sched["planned_windows"],
                    "stages": {k: round(v, 3) for k, v in be.timings.items()
                               if isinstance(v, float)} | {"order": round(stages["order"], 3)}}
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="64:15000-25000,200:5000-12000")
    ap.add_argument("--error", type=float, default=0.05)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-parasail", action="store_true")
    ap.add_argument("--wide-warps", default="rule",
                    help="comma-separated settings of the warps a wide pair takes: rule or 1-64")
    ap.add_argument("--stages", action="store_true",
                    help="print the backend's stage times (seconds) of each best run")
    args = ap.parse_args()
    be = GPUBackend()
    print(f"device: {be.describe()}; budget a window {be.device_budget() / 1e9:.1f} GB")
    rows = []
    for spec, reads, cells in read_sets(args.sets, args.error):
        pairs = len(reads) * (len(reads) - 1) // 2
        for tb in (True, False):
            ps = None
            for setting in args.wide_warps.split(","):
                gpu_backend.WIDE_WARPS = None if setting == "rule" else int(setting)
                r = timed(be, reads, tb, args.runs)
                if args.stages:
                    print(spec, "traceback" if tb else "score only", setting, r["stages"],
                          flush=True)
                if ps is None:
                    ps = (0.0 if args.no_parasail else
                          parasail_gcups(reads, tb, os.cpu_count() or 1))
                gcups = cells / r["wall"] / 1e9
                rows.append((spec, "y" if tb else "n", setting, cells, r["wall"], gcups,
                             cells / max(r["busy"], 1e-9) / 1e9, r["windows"],
                             pairs / max(r["windows"], 1), ps, gcups / ps if ps else 0.0))
    print(f"{'reads':<18} {'tb':>2} {'warps':>5} {'cells':>9} {'wall s':>7} {'GCUPS':>7} "
          f"{'GPU GCUPS':>9} {'windows':>7} {'pairs/w':>7} {'parasail':>8} {'x':>5}")
    for spec, tb, setting, cells, wall, g, gg, w, pw, ps, x in rows:
        print(f"{spec:<18} {tb:>2} {setting:>5} {cells:9.2e} {wall:7.2f} {g:7.0f} {gg:9.0f} "
              f"{w:7d} {pw:7.1f} {ps:8.1f} {x:5.0f}")


if __name__ == "__main__":
    main()
