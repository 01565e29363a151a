"""An in-process GPU run's timeline across threads, with the GPU's window spans.

    python benchmarks/run_timeline.py [--cells 1e12] [--traceback] [--mode local] [--runs 2]

Runs ``run_job`` on the proteome (or ``--cells`` sampled cells) ``--runs`` times
after a small warm-up and prints, for the last run, each traced function's
spans (thread, start, end, seconds since the run began; see
``cli_timeline.py``), the GPU's busy spans per window (CUDA events, same
clock), and the run's operations per pair (what the host moves with
traceback).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from workloads import (add_run_arguments, cells_of, proteome_or_sampled,  # noqa: E402
                       warm_gpu_backend)  # the repository first on sys.path

import cli_timeline as tl  # noqa: E402

from pairalign.engine import run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.kernels import gpu_backend  # noqa: E402
from pairalign.kernels.gpu_backend import GPUBackend  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402

tl.TRACED += [
    ("pairalign.kernels.gpu_backend", "GPUBackend._slot_memory"),
    ("pairalign.kernels.gpu_backend", "GPUBackend._copy_out"),
    ("pairalign.engine", "assemble"),
    ("pairalign.engine", "_LocalRun._deliver"),
    ("pairalign.pairs", "Placement._known_columns"),
    ("pairalign.pairs", "Placement._finish_columns"),
    ("pairalign.pairs", "_OperationsReserve.take"),
    ("pairalign.kernels.batch_ops", "prefix_sums"),
    ("pairalign.kernels.gpu_backend", "GPUBackend.place_ops"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    add_run_arguments(ap)
    ap.add_argument("--detail", default="",
                    help="FROM,TO: every span of the last run that overlaps these seconds")
    ap.add_argument("--gpu-py-warmup", action="store_true",
                    help="warm up as gpu.py does (with traceback and without, 2e9 sampled "
                         "cells beside) and run the proteome with traceback and without before "
                         "the timed runs, as gpu.py's first run of a size has them (it waited "
                         "for CuPy's pool to release its cached blocks before v48)")
    ap.add_argument("--no-slot-floor", action="store_true",
                    help="slots grown window by window (as before v12), for an A/B")
    args = ap.parse_args()
    if args.no_slot_floor:
        GPUBackend._job_slot_bytes = lambda self, job: 0
    seqs = proteome_or_sampled(args.cells)
    cells = cells_of([len(s) for s in seqs])
    sc = Scoring.create("protein")
    if args.gpu_py_warmup:
        be = warm_gpu_backend(args.mode, (True, False), sample_cells=2e9)
        for tb in (True, False):
            run_job(Job(args.mode, sc, tb, SortedSet.encode(proteome_or_sampled(0), sc)), be)
    else:
        be = warm_gpu_backend(args.mode, args.traceback)
    tl.install()
    for run in range(args.runs):
        job = Job(args.mode, sc, args.traceback, SortedSet.encode(seqs, sc))
        tl.spans.clear()
        be.timings.clear()
        gpu: list = []  # every run_windows call's window spans, on the host's clock
        calls = []
        run_windows = GPUBackend.run_windows

        launched: list = []  # the windows, in launch order

        def mark(self, job, state, ws, *a, **k):  # the host's clock at the origin event
            def seen(ws):
                for w in ws:
                    launched.append(w)
                    yield w

            def windows():
                t = time.perf_counter() - tl.T0
                calls.append(t)
                yield from run_windows(self, job, state, seen(ws), *a, **k)
                gpu.extend((s + t, e + t) for s, e in self._spans)
            return windows()

        GPUBackend.run_windows = mark
        pool = be.cp.get_default_memory_pool()
        print(f"run {run} begins: CuPy's pool holds {pool.used_bytes() / 1e9:.2f} GB in use, "
              f"{pool.free_bytes() / 1e9:.2f} GB cached in {pool.n_free_blocks()} free blocks; "
              f"the device has {be.cp.cuda.runtime.memGetInfo()[0] / 1e9:.2f} GB free; "
              f"a slot's budget {be.device_budget() / 1e9:.3f} GB, the last job's slots "
              f"{(be._reservation or {}).get('bytes', 0) / 1e9:.3f} GB", flush=True)
        t0 = time.perf_counter() - tl.T0
        timings: dict = {}
        out = run_job(job, be, timings=timings)
        wall = time.perf_counter() - tl.T0 - t0
        GPUBackend.run_windows = run_windows
        print(f"run {run}: wall {wall:.3f} s, {cells / wall / 1e9:.0f} GCUPS end to end; "
              + " ".join(f"{k} {v:.3f}" for k, v in be.timings.items() if k != "cells"),
              flush=True)
        sched = timings.get("scheduler", {})
        print(f"  windows {sched.get('windows')}, planned {sched.get('planned_windows')}, "
              f"failures {sched.get('failures')}, retries {sched.get('retries')}", flush=True)
    tl.spans[:] = [(s - t0, e - t0, th, n) for s, e, th, n in tl.spans]
    tl.report(top_repeats=4)
    print("spans of at least 20 ms:")
    for s, e, th, n in sorted(tl.spans):
        if e - s >= 0.02:
            print(f"  {s:7.3f} {e:7.3f} {e - s:7.3f}  {th:24} {n}")
    if args.detail:
        lo, hi = (float(x) for x in args.detail.split(","))
        print(f"every span overlapping {lo:.3f}-{hi:.3f} s:")
        for s, e, th, n in sorted(tl.spans):
            if e >= lo and s <= hi:
                print(f"  {s:7.3f} {e:7.3f} {e - s:7.3f}  {th:24} {n}")
    gpu = np.array(gpu) - t0
    print(f"run_windows calls at {[round(c - t0, 3) for c in calls]}; GPU windows (s since "
          f"the run began): {len(gpu)}, first start {gpu[:, 0].min():.3f}, last end "
          f"{gpu[:, 1].max():.3f}, busy {gpu_backend._covered(gpu):.3f}")
    print("  GPU start, end (s), the window's pairs and cells per pair:")
    # spans come as windows are fetched (the first to end first): by start
    for (s, e), w in zip(sorted(map(tuple, gpu)), launched):
        print(f"  {s:7.3f} {e:7.3f} {w.pairs:10,} {w.cells / max(w.pairs, 1):10,.0f}")
    nops = np.diff(out.op_offsets)
    print(f"pairs {len(out):,}; operations {int(nops.sum()):,} ({nops.mean():.1f} a pair, "
          f"{out.op_code.nbytes + out.op_len.nbytes:,} bytes); alignment columns "
          f"{int(out.length.sum()):,}")


if __name__ == "__main__":
    main()
