"""How many windows a job runs when windows over the device's budget are
quartered or halved (``engine.SPLIT_HALVES``), counted on the CPU.

    python benchmarks/split_model.py --cells 1e13 --budget 33.8,56 [--mode local] [--no-traceback]

A run fits its windows twice, as ``iter_windows`` does: before it
(``fit_window`` by each window's size bound, those within
``BOUND_SPLIT_FACTOR`` budgets left whole) and at each launch
(``_LocalRun._fits``, by the exact size of the window's layout plan, which
splits again where it must). This replays both with the GPU backend's own
planner (no device needed) for one GPU's windows, for each budget (GB a
stream slot: the H100's was 33.8 GB in v53's runs, an H200's ~56 GB), and
prints the windows run, the plans made (the parents split at launch had
theirs made too), how full of its slot the median window is, and the
planning's host seconds. At 1e13 cells and 33.8 GB, quartered, it gives the
411 windows that the H100 ran (v53).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workloads import sampled_proteins  # noqa: E402


def replay(job, budget: int, halves: bool) -> dict:
    """The windows one GPU runs for ``job`` at ``budget`` bytes a slot."""
    from pairalign import engine
    from pairalign.kernels.gpu_backend import GPUBackend, widest_window
    from pairalign.scheduler.windows import plan_windows

    saved = engine.SPLIT_HALVES
    engine.SPLIT_HALVES = halves
    try:
        be = GPUBackend.planner()
        rows = job.rows.lengths
        cols = None if job.triangle else job.cols.lengths
        width = widest_window(len(job.rows), len(job.col_set), job.triangle, 1, job.traceback)
        parents = plan_windows(rows, cols, width)
        t = time.perf_counter()
        pieces = [w for p in parents
                  for w, fits in engine.fit_window(job, be, p, budget, by_bound=True,
                                                   defer=engine.DEFER_EXACT_FIT)]
        run, fill, plans = [], [], 0
        stack = pieces[::-1]
        while stack:
            w = stack.pop()
            plans += 1
            size = be.window_bytes(job, w)
            if size <= budget or not w.splittable:
                run.append(w)
                fill.append(size / budget)
            else:
                stack.extend(engine.split_to_fit(w, job.rows.lengths,
                                                 job.col_set.lengths)[::-1])
        seconds = time.perf_counter() - t
    finally:
        engine.SPLIT_HALVES = saved
    return {"parents": len(parents), "pieces": len(pieces), "run": len(run), "plans": plans,
            "fill": float(np.median(fill)), "cells": sum(w.cells for w in run) / len(run),
            "seconds": seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=float, default=1e13, help="DP cells of the workload")
    ap.add_argument("--budget", default="33.8,56", help="GB a stream slot, comma-separated")
    ap.add_argument("--mode", default="local", choices=("local", "global", "semiglobal"))
    ap.add_argument("--no-traceback", action="store_true")
    args = ap.parse_args()

    from pairalign.job import Job, SortedSet
    from pairalign.scoring import Scoring

    seqs = sampled_proteins(args.cells)
    sc = Scoring.create("protein")
    job = Job(args.mode, sc, not args.no_traceback, SortedSet.encode(seqs, sc))
    print(f"workload: {len(seqs):,} proteins, {args.cells:.3g} cells, {args.mode}, "
          f"{'score only' if args.no_traceback else 'traceback'}")
    print(f"{'budget GB':>9} {'split':>8} {'parents':>8} {'pieces':>7} {'run':>6} {'plans':>6} "
          f"{'fill':>5} {'cells/window':>13} {'plan s':>7}")
    for gb in (float(x) for x in args.budget.split(",")):
        for halves in (False, True):
            r = replay(job, int(gb * 1e9), halves)
            print(f"{gb:9.1f} {'halves' if halves else 'quarters':>8} {r['parents']:8d} "
                  f"{r['pieces']:7d} {r['run']:6d} {r['plans']:6d} {r['fill']:5.2f} "
                  f"{r['cells']:13.3g} {r['seconds']:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
