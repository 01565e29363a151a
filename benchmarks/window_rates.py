"""Each window of the scaled workload alone: diagonal windows (a block of rows
against itself, the pairs ``row < col``) against the others.

    python benchmarks/window_rates.py [--cells 1e13] [--mode local] [--traceback]

The cost-model samples of ``scaling.py`` on the H100s put the diagonal
windows at about half the GCUPS of the full ones beside them (1,928 against
4,414 over 52 and 306 windows), but those samples are times between
pipelined results. Here every window runs alone (``run_window``, after a
warm-up), twice; its fill's CUDA-event time (the backend's ``fill`` timing)
and its wall time give GCUPS per window. Prints the totals per kind of
window (diagonal, full, the others: the edges of the job) and, per block of
rows, the diagonal window against the full windows of that row block.
"""

from __future__ import annotations

import argparse
import time

from workloads import sampled_proteins  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=float, default=1e13)
    ap.add_argument("--mode", default="local", choices=("local", "global", "semiglobal"))
    ap.add_argument("--traceback", action="store_true")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--json", default=None,
                    help="write each window (its rows and columns, pairs, cells, fill and "
                         "wall seconds, the lengths of its rows and columns) to this file")
    args = ap.parse_args()

    from pairalign.backends import gpu_available

    if not gpu_available():
        print("window_rates.py: no GPU visible (CuPy sees no CUDA device): nothing to measure.")
        return 0
    from pairalign.engine import prepare_work
    from pairalign.job import Job, SortedSet
    from pairalign.kernels.gpu_backend import GPUBackend
    from pairalign.scoring import Scoring

    seqs = sampled_proteins(args.cells)
    sc = Scoring.create("protein")
    job = Job(args.mode, sc, args.traceback, SortedSet.encode(seqs, sc))
    be = GPUBackend(devices=[0])
    work = prepare_work(job, be)
    wins = [w for ws in work.pieces for w in ws]
    state = be.prepare(job)
    be.run_window(job, state, min(wins, key=lambda w: w.cells))  # compiles, loads
    best = {}
    for _ in range(args.reps):
        for w in wins:
            f0 = be.timings.get("fill", 0.0)
            t = time.perf_counter()
            be.run_window(job, state, w)
            wall = time.perf_counter() - t
            fill = be.timings.get("fill", 0.0) - f0
            old = best.get(w)
            best[w] = (min(fill, old[0]), min(wall, old[1])) if old else (fill, wall)
    full = max(w.pairs for w in wins)

    def kind(w) -> str:
        if w.r0 == w.c0 and w.r1 == w.c1:
            return "diagonal"
        return "full" if w.pairs == full else "edge"

    print(f"{len(seqs):,} proteins, {len(wins)} windows of width {work.width}, {args.mode}, "
          f"{'traceback' if args.traceback else 'score only'}; each window alone, best of "
          f"{args.reps}")
    print(f"{'kind':10} {'windows':>7} {'cells':>10} {'fill s':>8} {'wall s':>8} "
          f"{'fill GCUPS':>10} {'wall GCUPS':>10}")
    for k in ("diagonal", "full", "edge"):
        ws = [w for w in wins if kind(w) == k]
        if not ws:
            continue
        cells = sum(w.cells for w in ws)
        fill = sum(best[w][0] for w in ws)
        wall = sum(best[w][1] for w in ws)
        print(f"{k:10} {len(ws):7d} {cells:10.3g} {fill:8.3f} {wall:8.3f} "
              f"{cells / fill / 1e9:10.0f} {cells / wall / 1e9:10.0f}")
    print()
    print("per row block: the diagonal window's fill GCUPS against the full windows' of "
          "that block")
    for r0 in sorted({w.r0 for w in wins}):
        d = [w for w in wins if w.r0 == r0 and kind(w) == "diagonal"]
        f = [w for w in wins if w.r0 == r0 and kind(w) == "full"]
        if not d or not f:
            continue
        dg = sum(w.cells for w in d) / sum(best[w][0] for w in d) / 1e9
        fg = sum(w.cells for w in f) / sum(best[w][0] for w in f) / 1e9
        lengths = job.rows.lengths[r0:d[0].r1]
        print(f"rows {r0:6d}+ (lengths {lengths.min()}-{lengths.max()}): diagonal "
              f"{dg:6.0f}, full {fg:6.0f} ({len(f)} windows), ratio {dg / fg:.2f}")
    if args.json:
        import json

        lengths = job.rows.lengths.tolist()
        out = [{"r0": w.r0, "r1": w.r1, "c0": w.c0, "c1": w.c1, "triangle": w.triangle,
                "pairs": w.pairs, "cells": w.cells, "fill": best[w][0], "wall": best[w][1]}
               for w in wins]
        with open(args.json, "w") as f:
            json.dump({"lengths": lengths, "width": work.width, "mode": args.mode,
                       "traceback": args.traceback, "windows": out}, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
