"""Where a read set's GPU time goes, window by window, under packing variants.

    python benchmarks/pack_windows.py [--reads 200] [--span 5000-12000]
                                      [--variants v55,v57,v59] [--traceback] [--runs 2]

Runs ``run_job`` on simulated reads (semiglobal, as ``long_reads.py``) under
each of ``bound_ab.py``'s variants, alternating, and prints for each
variant's last run its GPU-busy time and, per launched window, its sorted
positions, pairs, cells, packed and wide pairs (its plan), and its span on
the GPU (CUDA events): which windows the packing rule's choice makes slower.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bound_ab import variant  # noqa: E402
from long_reads import simulated_reads  # noqa: E402
from workloads import cells_of, warm_gpu_backend  # noqa: E402

from pairalign.engine import run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.kernels.gpu_backend import GPUBackend  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402


def traced_run(be: GPUBackend, job: Job) -> tuple[float, list]:
    """One run: its GPU-busy seconds and, per launched window, (window, plan,
    GPU start, GPU end) in launch order."""
    launched: list = []
    spans: list = []
    plans: dict = {}
    run_windows, plan_for = GPUBackend.run_windows, GPUBackend._plan_for

    def mark(self, job, state, ws, *a, **k):
        def seen(ws):
            for w in ws:
                launched.append(w)
                yield w
        t = time.perf_counter()
        yield from run_windows(self, job, state, seen(ws), *a, **k)
        spans.extend((s + t, e + t) for s, e in self._spans)

    def plan(self, job, w, *a, **k):
        p = plans[w] = plan_for(self, job, w, *a, **k)
        return p

    GPUBackend.run_windows, GPUBackend._plan_for = mark, plan
    be.timings.clear()
    t0 = time.perf_counter()
    try:
        run_job(job, be)
    finally:
        GPUBackend.run_windows, GPUBackend._plan_for = run_windows, plan_for
    rows = [(w, plans.get(w), s - t0, e - t0)
            for (s, e), w in zip(sorted(spans), launched)]
    return be.timings.get("gpu_busy", 0.0), rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reads", type=int, default=200)
    ap.add_argument("--span", default="5000-12000", help="read lengths, LO-HI bp")
    ap.add_argument("--variants", default="v55,v57,v59")
    ap.add_argument("--traceback", action="store_true")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    lo, hi = (int(x) for x in args.span.split("-"))
    seqs = simulated_reads(args.reads, lo, hi, 0.05)
    cells = cells_of(np.array([len(s) for s in seqs]))
    sc = Scoring.create("dna")
    be = warm_gpu_backend("semiglobal", args.traceback)
    print(f"backend: {be.describe()}; {args.reads} reads of {lo}-{hi} bp, {cells:.3g} cells, "
          f"{'with' if args.traceback else 'without'} traceback", flush=True)
    last: dict = {}
    for run in range(args.runs):
        for name in args.variants.split(","):
            variant(name)
            busy, rows = traced_run(be, Job("semiglobal", sc, args.traceback,
                                            SortedSet.encode(seqs, sc)))
            print(f"run {run} {name}: GPU busy {busy * 1e3:.1f} ms "
                  f"({cells / busy / 1e9:,.0f} GCUPS)", flush=True)
            last[name] = rows
    variant("v59")
    for name, rows in last.items():
        print(f"{name}: windows in launch order")
        print("   rows        cols          pairs   Gcells  packed    wide   start    end     ms")
        for w, p, s, e in rows:
            packed = p.npack if p is not None else -1
            wide = p.nwide if p is not None else -1
            print(f"  {w.r0:4}-{w.r1:<4} {w.c0:5}-{w.c1:<5} {w.pairs:8,} {w.cells / 1e9:8.1f} "
                  f"{packed:7,} {wide:7,} {s:7.3f} {e:7.3f} {(e - s) * 1e3:6.1f}")


if __name__ == "__main__":
    main()
