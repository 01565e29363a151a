"""The host's cost of planning a window: NumPy's planner (``gpu_layout.
plan_window``) against numba's (``layout_jit.plan_window_jit``, the GIL
released in its compiled part), on the windows one GPU runs, counted on the
CPU (no device needed).

    python benchmarks/plan_cost.py --cells 3e13 --budget 56 [--mode local] [--no-traceback]

Prints, for each planner, the milliseconds a plan (best of ``--repeat``
passes over every window) and, for numba's, those spent in its compiled
function (without the GIL); plans compared field by field.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workloads import sampled_proteins  # noqa: E402


def windows_of(job, budget: int) -> list:
    """The windows one GPU plans before their launch, as a run fits them."""
    from pairalign import engine
    from pairalign.kernels.gpu_backend import GPUBackend, widest_window
    from pairalign.scheduler.windows import plan_windows

    be = GPUBackend.planner()
    width = widest_window(len(job.rows), len(job.col_set), job.triangle, 1, job.traceback)
    parents = plan_windows(job.rows.lengths, None if job.triangle else job.cols.lengths, width)
    return be, [w for p in parents
                for w, _ in engine.fit_window(job, be, p, budget, by_bound=True,
                                              defer=engine.DEFER_EXACT_FIT)]


def timed(be, job, windows, planner, repeat: int, clock=None) -> tuple[float, float, list]:
    """Seconds a plan in the best of ``repeat`` passes with ``planner``, the
    seconds a plan ``clock`` counted in that pass, and its plans."""
    from pairalign.kernels import gpu_backend

    saved = gpu_backend._PLANNER["plan"]
    gpu_backend._PLANNER["plan"] = planner
    best = (float("inf"), 0.0, [])
    try:
        for _ in range(repeat):
            if clock is not None:
                clock[0] = 0.0
            t = time.perf_counter()
            plans = [be._plan_for(job, w, job.traceback) for w in windows]
            took = (time.perf_counter() - t) / len(windows)
            if took < best[0]:
                best = (took, clock[0] / len(windows) if clock else 0.0, plans)
    finally:
        gpu_backend._PLANNER["plan"] = saved
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=float, default=3e13, help="DP cells of the workload")
    ap.add_argument("--budget", type=float, default=56, help="GB a stream slot")
    ap.add_argument("--mode", default="local", choices=("local", "global", "semiglobal"))
    ap.add_argument("--no-traceback", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from pairalign.job import Job, SortedSet
    from pairalign.kernels import layout_jit
    from pairalign.kernels.gpu_layout import plan_window
    from pairalign.scoring import Scoring

    seqs = sampled_proteins(args.cells)
    sc = Scoring.create("protein")
    job = Job(args.mode, sc, not args.no_traceback, SortedSet.encode(seqs, sc))
    be, windows = windows_of(job, int(args.budget * 1e9))
    be._job_plans(job)
    t = time.perf_counter()
    layout_jit.load()
    print(f"workload: {len(seqs):,} proteins, {args.cells:.3g} cells, {args.mode}, "
          f"{'score only' if args.no_traceback else 'traceback'}; {len(windows)} windows "
          f"at {args.budget:g} GB; numba's planner loaded in {time.perf_counter() - t:.2f} s")

    numpy_s, _, numpy_plans = timed(be, job, windows, plan_window, args.repeat)
    compiled = layout_jit._plan
    spent = [0.0]

    def clocked(*a):
        t0 = time.perf_counter()
        out = compiled(*a)
        spent[0] += time.perf_counter() - t0
        return out

    layout_jit._plan = clocked
    try:
        jit_s, nogil, jit_plans = timed(be, job, windows, layout_jit.plan_window_jit,
                                        args.repeat, spent)
    finally:
        layout_jit._plan = compiled
    for p, q in zip(numpy_plans, jit_plans):
        for f in dataclasses.fields(p):
            x, y = getattr(p, f.name), getattr(q, f.name)
            assert (np.array_equal(x, y) and x.dtype == y.dtype if isinstance(x, np.ndarray)
                    else x == y), f.name
    print(f"{'planner':>8} {'ms a plan':>10} {'of it without the GIL':>22}")
    print(f"{'numpy':>8} {numpy_s * 1e3:10.3f} {0.0:22.3f}")
    print(f"{'numba':>8} {jit_s * 1e3:10.3f} {nogil * 1e3:22.3f}")
    print(f"plans equal; numpy / numba {numpy_s / jit_s:.2f}x, "
          f"GIL-held {numpy_s * 1e3:.3f} / {(jit_s - nogil) * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
