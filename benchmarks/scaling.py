"""Scaling over GPUs: one workload on 1, 2, 4 ... GPUs (as many as are visible).

    python benchmarks/scaling.py --cells 1e13            # score only, local
    python benchmarks/scaling.py --cells 2e12 --traceback
    python benchmarks/scaling.py --cells 1e13 --dask     # also through a LocalCluster

Workload: proteins sampled (seed 1) from ``shared/data/proteome_HG003687.faa``
with 10% substitutions (random proteins of proteome-like lengths if the file is
absent), as many as it takes for the all-vs-all to reach ``--cells`` DP cells;
BLOSUM62, gaps 11/1. Each GPU count runs the same job through the scheduler
(``iter_windows``: windows in LPT order, one worker thread per GPU), its results
streamed and checksummed, not kept: the time is the windows' (kernels, transfers,
results to the host in input indices), from the first window to the last batch;
reading and encoding the sequences, and sorting into input order, are left out.
NVRTC compilation is excluded (every device runs a small job first).

Reported per GPU count: seconds, GCUPS (cells / seconds / 1e9), speedup over one
GPU, efficiency (speedup / GPUs), and per GPU: windows, busy (the fraction of the
run its worker spent inside the backend: launching, waiting for and collecting
windows) and kernel (the CUDA-event time of its fill and traceback kernels over
the run; windows overlap on streams, so this can exceed 100%). The checksum of
all pairs (query, target, score) must be the same for every count.

On a machine without a GPU the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from workloads import cells_of, sampled_proteins as workload  # noqa: E402

def checksum(batch) -> tuple[int, int]:
    """Order-independent: sum and xor of a hash of (query, target, score)."""
    h = (batch.query.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
         ^ batch.target.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
         ^ batch.score.astype(np.int64).astype(np.uint64) * np.uint64(0x165667B19E3779F9))
    return int(h.sum(dtype=np.uint64)), int(np.bitwise_xor.reduce(h)) if len(h) else 0


def run(job, backend=None, client=None) -> dict:
    from pairalign.engine import iter_windows

    timings: dict = {}
    pairs = 0
    s = x = 0
    t = time.perf_counter()
    for batch in iter_windows(job, backend, timings=timings, client=client):
        pairs += len(batch)
        a, b = checksum(batch)
        s = (s + a) % (1 << 64)
        x ^= b
    wall = time.perf_counter() - t
    return {"wall": wall, "pairs": pairs, "checksum": f"{s:016x}{x:016x}", "timings": timings}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=float, default=1e13, help="DP cells of the workload")
    ap.add_argument("--traceback", action="store_true", help="alignments, not only scores")
    ap.add_argument("--mode", default="local", choices=("local", "global", "semiglobal"))
    ap.add_argument("--gpus", default=None,
                    help="GPU counts to run, e.g. 1,2,4 (default 1, 2, 4, ... up to all visible)")
    ap.add_argument("--dask", action="store_true",
                    help="also run through a dask LocalCluster of one worker per GPU")
    ap.add_argument("--json", default=None, help="write the results to this file")
    args = ap.parse_args()

    from pairalign.backends import gpu_count

    visible = gpu_count()
    if visible == 0:
        print("scaling.py: no GPU visible (CuPy sees no CUDA device): nothing to measure.")
        return 0

    from pairalign.job import Job, SortedSet
    from pairalign.kernels.gpu_backend import GPUBackend
    from pairalign.scoring import Scoring

    if args.gpus:
        counts = [int(x) for x in args.gpus.split(",") if int(x) <= visible]
    else:
        counts = [k for k in (1, 2, 4, 8, 16) if k <= visible]
        if visible not in counts:
            counts.append(visible)

    t = time.perf_counter()
    seqs = workload(args.cells)
    sc = Scoring.create("protein")
    job = Job(args.mode, sc, args.traceback, SortedSet.encode(seqs, sc))
    cells = cells_of(job.rows.lengths)
    pairs = len(seqs) * (len(seqs) - 1) // 2
    print(f"workload: {len(seqs):,} proteins, {pairs:,} pairs, {cells:.4g} cells, "
          f"{args.mode}, {'traceback' if args.traceback else 'score only'} "
          f"(made in {time.perf_counter() - t:.1f} s)", flush=True)

    # one backend per device, kept: warm-up (NVRTC) once, on every device
    backends = {d: GPUBackend(devices=[d]) for d in range(max(counts))}
    for d, be in backends.items():
        print(f"gpu {d}: {be.describe()}", flush=True)
    warm = Job(args.mode, sc, args.traceback, SortedSet.encode(seqs[:300], sc))
    from pairalign.engine import run_job

    run_job(warm, [backends[d] for d in range(max(counts))])

    results = []
    for k in counts:
        ws = [backends[d] for d in range(k)]
        for b in ws:
            b.timings.clear()
        r = run(job, ws)
        r["gpus"] = k
        results.append(r)
        sched = r["timings"]["scheduler"]
        print(f"{k} GPU(s): {r['wall']:.2f} s, {cells / r['wall'] / 1e9:.1f} GCUPS, "
              f"{sched['windows']} windows ({sched['planned_windows']} planned), "
              f"{sched['failures']} failures", flush=True)

    if args.dask:
        from dask.distributed import Client, LocalCluster

        for k in counts:
            with LocalCluster(n_workers=k, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cl, Client(cl) as client:
                run(warm, client=client)
                r = run(job, client=client)
            r["gpus"] = k
            r["dask"] = True
            results.append(r)
            print(f"dask, {k} worker(s): {r['wall']:.2f} s", flush=True)

    base = next(r["wall"] for r in results if r["gpus"] == 1 and not r.get("dask"))
    print()
    print(f"{'run':8} {'GPUs':>4} {'s':>8} {'GCUPS':>8} {'speedup':>8} {'eff.':>6}  "
          f"per GPU: windows / busy / kernel")
    sums = set()
    for r in results:
        per = []
        for w in r["timings"]["scheduler"]["workers"]:
            bt = w.get("backend_timings") or {}
            kern = bt.get("fill", 0.0) + bt.get("traceback", 0.0)
            per.append(f"{w['label']} {w['windows']} / {w['busy_s'] / r['wall']:.0%}"
                       + (f" / {kern / r['wall']:.0%}" if bt else ""))
        speed = base / r["wall"]
        print(f"{'dask' if r.get('dask') else 'local':8} {r['gpus']:>4} {r['wall']:8.2f} "
              f"{cells / r['wall'] / 1e9:8.1f} {speed:8.2f} {speed / r['gpus']:6.0%}  "
              + "; ".join(per))
        sums.add(r["checksum"])
        if r["pairs"] != pairs:
            print(f"ERROR: {r['pairs']} pairs, {pairs} expected")
            return 1
    same = len(sums) == 1
    print(f"checksums {'identical' if same else 'DIFFER'} over every run "
          f"({next(iter(sums)) if same else sums})")
    if args.json:
        keep = [{"gpus": r["gpus"], "dask": bool(r.get("dask")), "wall": r["wall"],
                 "checksum": r["checksum"], "workers": r["timings"]["scheduler"]["workers"]}
                for r in results]
        Path(args.json).write_text(json.dumps({"cells": cells, "pairs": pairs,
                                               "traceback": args.traceback,
                                               "mode": args.mode, "runs": keep}, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
