"""Scaling over GPUs: one workload on 1, 2, 4 ... GPUs (as many as are visible).

    python benchmarks/scaling.py --cells 1e13            # score only, local
    python benchmarks/scaling.py --cells 2e12 --traceback
    python benchmarks/scaling.py --cells 1e13 --dask     # also through a LocalCluster
    python benchmarks/scaling.py --cells 1e13 --traceback --dask --keep-score 60  # a filter
    python benchmarks/scaling.py --cells 1e14 --gpus 4 --consumer place --set pairs.TOUCH_THREADS=1

Workload: proteins sampled (seed 1) from ``shared/data/proteome_HG003687.faa``
with 10% substitutions (random proteins of proteome-like lengths if the file is
absent), as many as it takes for the all-vs-all to reach ``--cells`` DP cells;
BLOSUM62, gaps 11/1. Each GPU count runs the same job through the scheduler
(``iter_windows``: windows in LPT order, one worker thread per GPU), its results
streamed and checksummed, not kept: the time is the windows' (kernels, transfers,
results to the host in input indices), from the first window to the last batch;
reading and encoding the sequences, and sorting into input order, are left out.
NVRTC compilation is excluded (every device runs a small job first). The
Dask runs (``--dask``) come after the local ones, whose device memory is freed
first: a worker process fits its windows to its device's free memory.

Reported per GPU count: seconds, GCUPS (cells / seconds / 1e9), speedup over one
GPU, efficiency (speedup / GPUs), and per GPU: windows, busy (the fraction of the
run its worker spent inside the backend: launching, waiting for and collecting
windows), GPU busy (the fraction of the run in which any of its kernels ran:
the union of their CUDA-event spans) and the seconds its results waited for
the consumer (``blocked``: meanwhile that worker launches nothing) or, through
Dask, the client's wait for the next result (``wait``), attributed to the
worker whose result it was. Each run also
prints the consumer's own seconds (the checksum) and the cost model's predicted
seconds. ``--keep-score N`` keeps only the pairs
that score N or more, each window filtered where it ran (on the Dask workers
for ``--dask``). ``--buffer`` sets how many results may wait for the consumer;
``--consumer place`` puts the batches in input order as ``run_job`` does
(numba's parallel passes in the consumer's thread, beside the workers', on its
share of the cores; staged as a row a pair where several GPUs run), instead of
only hashing them. Suffixes change one setting of ``place`` each, combined as
in ``place-staged-all``:
``-all`` the consumer's numba passes on all of its thread's numba threads
(``engine.SHARE_CORES_WITH_WORKERS`` off), ``-staged`` / ``-columns`` the
columns always / never staged (``engine.STAGED_PLACEMENT``), ``-beside`` /
``-serial`` the known columns written on a thread of their own beside the
placing / before the first batch is placed (``engine.KNOWN_COLUMNS_BESIDE``),
``-sorted`` each window's pairs sorted by rank on the device before they
come (``gpu_backend.SORT_BY_RANK``), ``-lpt`` the windows largest first
instead of interleaved (``lpt.INTERLEAVE`` off). The checksum of all pairs (query, target,
score) must be the same for every count. ``--set ATTR=VALUE`` (repeated) sets
a setting of ``gpu_backend``, or ``module.ATTR`` of ``pairalign.module``, for
the whole process: an A/B is two processes on one machine.

On a machine without a GPU the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

from kernel_ab import set_all  # noqa: E402
from workloads import cells_of, sampled_proteins as workload  # noqa: E402

@numba.njit(nogil=True, cache=True)
def _hash_sums(q, t, score):
    s = np.uint64(0)
    x = np.uint64(0)
    for k in range(q.shape[0]):
        h = (np.uint64(q[k]) * np.uint64(0x9E3779B97F4A7C15)
             ^ np.uint64(t[k]) * np.uint64(0xC2B2AE3D27D4EB4F)
             ^ np.uint64(np.int64(score[k])) * np.uint64(0x165667B19E3779F9))
        s += h
        x ^= h
    return s, x


def checksum(batch) -> tuple[int, int]:
    """Order-independent: sum and xor of a hash of (query, target, score), in
    one numba pass without the GIL, on the consumer's thread alone, so that the
    consumer keeps up with several GPUs (numpy's passes took ~16 ns a pair,
    1.5 s of a 1.8 s two-GPU run on the H100s; a parallel pass oversubscribed
    the cores beside the workers' own)."""
    s, x = _hash_sums(batch.query, batch.target, batch.score)
    return int(s), int(x)


class ScoreAtLeast:
    """A ``keep`` filter: the pairs of score ``min_score`` or more."""

    def __init__(self, min_score: int):
        self.min_score = min_score

    def __call__(self, batch):
        return batch.score >= self.min_score


def _numba_threads() -> tuple:
    """This process's numba threads, threading layer and GPU window planner
    (on a Dask worker)."""
    from pairalign.kernels import gpu_backend

    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel function ran yet
        layer = None
    planner = gpu_backend._PLANNER
    return (numba.get_num_threads(), layer,
            "numpy" if planner["plan"] is gpu_backend.plan_window else "numba",
            repr(planner.get("failed")))


def run(job, backend=None, client=None, buffer=None, consumer="checksum", keep=None) -> dict:
    """One run of ``job``; ``consumer`` ``checksum`` (each batch hashed as it
    comes), ``place`` (each batch put in input order as ``run_job`` does,
    :func:`pairalign.engine.assemble`, and hashed after the clock stops) or
    ``place`` with suffixes that change its settings (see the module's
    docstring); ``keep`` filters each window (checksum only)."""
    from pairalign import engine

    timings: dict = {}
    placing = consumer.startswith("place")
    t = time.perf_counter()
    arrivals: list[tuple[float, float]] = []  # (asked, got) per batch, from t

    def watched(batches):
        it = iter(batches)
        while True:
            asked = time.perf_counter()
            try:
                b = next(it)
            except StopIteration:
                return
            arrivals.append((asked - t, time.perf_counter() - t))
            yield b

    batches = watched(engine.iter_windows(job, backend, timings=timings, client=client,
                                          buffer=buffer, keep=keep,
                                          device_ops=placing and client is None))
    if placing:
        spent: dict = {}
        from pairalign.kernels import gpu_backend
        from pairalign.scheduler import lpt as _lpt

        settings = ("SHARE_CORES_WITH_WORKERS", "STAGED_PLACEMENT", "KNOWN_COLUMNS_BESIDE")
        saved = {k: getattr(engine, k) for k in settings}
        saved_sort = gpu_backend.SORT_BY_RANK
        kinds = consumer.split("-")[1:]
        saved_interleave = _lpt.INTERLEAVE
        if "lpt" in kinds:
            _lpt.INTERLEAVE = False
        if "sorted" in kinds:
            gpu_backend.SORT_BY_RANK = True
        if "all" in kinds:
            engine.SHARE_CORES_WITH_WORKERS = False
        if "staged" in kinds or "columns" in kinds:
            engine.STAGED_PLACEMENT = "staged" in kinds
        if "serial" in kinds or "beside" in kinds:
            engine.KNOWN_COLUMNS_BESIDE = "beside" in kinds
        try:
            out = engine.assemble(job, batches, spent,
                                  workers=engine.run_workers(backend, client))
        finally:
            for k, v in saved.items():
                setattr(engine, k, v)
            gpu_backend.SORT_BY_RANK = saved_sort
            _lpt.INTERLEAVE = saved_interleave
        wall = time.perf_counter() - t
        s, x = checksum(out)
        return {"wall": wall, "pairs": len(out), "checksum": f"{s:016x}{x:016x}",
                "timings": timings, "consumer": spent["order"],
                "placement": spent["placement"], "arrivals": _arrivals(arrivals, wall),
                "t0": t}
    pairs = 0
    s = x = 0
    spent_s = 0.0  # seconds the consumer spent on batches (the checksum)
    for batch in batches:
        c = time.perf_counter()
        pairs += len(batch)
        a, b = checksum(batch)
        s = (s + a) % (1 << 64)
        x ^= b
        spent_s += time.perf_counter() - c
    wall = time.perf_counter() - t
    return {"wall": wall, "pairs": pairs, "checksum": f"{s:016x}{x:016x}", "timings": timings,
            "consumer": spent_s, "arrivals": _arrivals(arrivals, wall), "t0": t}


def _print_window_spans(job, backends) -> None:
    """Each GPU's last windows (CUDA events, seconds from its first launch)
    and the windows of the run slowest per cell: where its end went."""
    lengths = job.rows.lengths
    spans = {be.describe().split(" (")[0]: be.window_spans for be in backends}
    rows = [(dev, *x) for dev, xs in spans.items() for x in xs]

    def line(dev, w, start, end):
        return (f"  {dev}: rows {lengths[w.r0:w.r1].max()}-{lengths[w.r0:w.r1].min()} x cols "
                f"{lengths[w.c0:w.c1].max()}-{lengths[w.c0:w.c1].min()}, {w.pairs:,} pairs, "
                f"{w.cells:.2g} cells, {start:.3f}-{end:.3f} s "
                f"({w.cells / max(end - start, 1e-9) / 1e12:.2f} TCUPS)")

    for dev, xs in spans.items():
        print(f"  last windows of {dev}:")
        for x in xs[-3:]:
            print("  " + line(dev, *x))
    print("  slowest windows per cell (span):")
    for x in sorted(rows, key=lambda x: x[1].cells / max(x[3] - x[2], 1e-9))[:6]:
        print("  " + line(*x))


def _arrivals(arrivals: list[tuple[float, float]], wall: float) -> dict:
    """When the consumer got its batches (seconds from the run's start):
    the first and the last, the seconds it waited for them in all, the
    batches it found waiting (got at once) in the last 0.3 s of the GPU
    work, and the run's tail after the last batch came."""
    if not arrivals:
        return {}
    last = arrivals[-1][1]
    return {"first": arrivals[0][1], "last": last,
            "waited": sum(got - asked for asked, got in arrivals),
            "queued_at_end": sum(1 for asked, got in arrivals
                                 if got > last - 0.3 and got - asked < 1e-4),
            "tail": wall - last}


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
    ap.add_argument("--dask-threads", default="1",
                    help="threads of each Dask worker, e.g. 1,2: each runs every GPU count "
                         "(a second thread fits its windows while the first's run)")
    ap.add_argument("--dask-processes", default="1",
                    help="whether the Dask workers are processes (1) or threads of this "
                         "process (0), e.g. 1,0: each runs every GPU count")
    ap.add_argument("--dask-malloc", default="dask",
                    help="the Dask workers' environment, e.g. dask,glibc,none: dask's "
                         "(MALLOC_TRIM_THRESHOLD_ set, which fixes glibc's mmap threshold "
                         "at 128 KB, and OMP/MKL/OPENBLAS_NUM_THREADS=1), glibc's allocator "
                         "(dynamic thresholds), none of dask's variables, or heap (glibc's "
                         "mmap threshold at its largest, 32 MB, its trim threshold at 1 GB: "
                         "freed results stay in the heap for the next window's); each runs "
                         "every GPU count")
    ap.add_argument("--dask-runs", type=int, default=1,
                    help="runs of the job on each cluster, one after another: the same "
                         "workers' first run against their later ones")
    ap.add_argument("--buffer", default=None,
                    help="results queued for the consumer, e.g. 6,32: each value runs every "
                         "GPU count (default the engine's, 2 x GPUs + 2)")
    ap.add_argument("--consumer", default="checksum",
                    help="checksum (each batch hashed as it comes), place (put in input "
                         "order as run_job does), place with suffixes -all, -staged, "
                         "-columns, -beside, -serial, -sorted (e.g. place-staged-all: see "
                         "above), "
                         "comma-separated: each runs every GPU count")
    ap.add_argument("--keep-score", type=int, default=None,
                    help="keep only pairs of this score or more (each window filtered where "
                         "it ran: the Dask workers for --dask); checksum consumer only")
    ap.add_argument("--timings", action="store_true",
                    help="print each worker's backend timings (s) under its run")
    ap.add_argument("--json", default=None, help="write the results to this file")
    ap.add_argument("--set", action="append", default=[],
                    help="ATTR=VALUE of gpu_backend (module.ATTR: of pairalign.module), for "
                         "every run of the process")
    args = ap.parse_args()
    set_all(args.set)
    keep = None if args.keep_score is None else ScoreAtLeast(args.keep_score)
    if keep is not None and args.consumer != "checksum":
        ap.error("--keep-score takes the checksum consumer only")

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
    from pairalign.scheduler import cost

    cost_key = cost.model_key(backends[0], job)  # the backends go before Dask's runs
    for d, be in backends.items():
        print(f"gpu {d}: {be.describe()}", flush=True)
    # small jobs (one window each) of the longest, the shortest and random
    # proteins, each device alone: the kernels of every score width compile
    # (a fresh machine's first 1e13-cell run took 11.4 s instead of 2.7 s with
    # a random warm-up alone), and the checksum compiles
    by_length = sorted(seqs, key=len)
    warm_jobs = [Job(args.mode, sc, args.traceback, SortedSet.encode(part, sc))
                 for part in (by_length[-300:], by_length[:300], seqs[:300])]
    for be in backends.values():
        for wj in warm_jobs:
            run(wj, [be])
    warm = warm_jobs[-1]
    consumers = args.consumer.split(",")
    # placing's numba passes compile: those of one worker and of several
    # (a staged placement's), each consumer as its runs will use it
    for c in dict.fromkeys(c for c in consumers if c.startswith("place")):
        for k in dict.fromkeys((1, max(counts))):
            run(warm, [backends[d] for d in range(k)], consumer=c)

    results = []
    buffers = [None] if not args.buffer else [int(b) for b in args.buffer.split(",")]
    for consumer, buffer in [(c, b) for c in consumers for b in buffers]:
        for k in counts:
            ws = [backends[d] for d in range(k)]
            for b in ws:
                b.timings.clear()
            r = run(job, ws, buffer=buffer, consumer=consumer, keep=keep)
            r["gpus"] = k
            r["buffer"] = buffer
            r["consumer_kind"] = consumer
            results.append(r)
            if k > 1:
                _print_window_spans(job, ws)
            sched = r["timings"]["scheduler"]
            print(f"{k} GPU(s), {consumer}, buffer {buffer or 'default'}: {r['wall']:.2f} s, "
                  f"{r['pairs']:,} pairs, "
                  f"{cells / r['wall'] / 1e9:.1f} GCUPS, {sched['windows']} windows "
                  f"({sched['planned_windows']} planned), {sched['failures']} failures, "
                  f"consumer {r['consumer']:.2f} s"
                  + (" (" + ", ".join(f"{k} {v:.2f}" for k, v in r["placement"].items()) + ")"
                     if "placement" in r else "")
                  + (", batches " + ", ".join(f"{k} {v:.3g}" for k, v in r["arrivals"].items())
                     if r.get("arrivals") else "")
                  + f", predicted {r['timings']['predicted']} "
                  f"({sched.get('model')})", flush=True)
            if sched.get("first_failure"):
                print(f"  first failure: {sched['first_failure']}", flush=True)

    if args.dask:
        # the local runs' device memory back first (their backends' stream
        # slots, CuPy's cached blocks): a worker process sees the device's free
        # memory, and fits its windows to it
        import gc

        import cupy as cp

        backends.clear()
        ws = b = be = None
        gc.collect()
        for d in range(visible):
            with cp.cuda.Device(d):
                cp.get_default_memory_pool().free_all_blocks()
                cp.get_default_pinned_memory_pool().free_all_blocks()
                free, total = cp.cuda.runtime.memGetInfo()
            print(f"gpu {d} before Dask: {free / 2**30:.1f} of {total / 2**30:.1f} GiB free",
                  flush=True)
        import dask
        from dask.distributed import Client, LocalCluster

        environ = dask.config.get("distributed.nanny.pre-spawn-environ")
        glibc = {k: v for k, v in environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
        heap = dict(glibc, MALLOC_MMAP_THRESHOLD_=32 << 20, MALLOC_TRIM_THRESHOLD_=1 << 30)
        dask_runs = [(k, int(t), m, bool(int(p))) for p in args.dask_processes.split(",")
                     for m in args.dask_malloc.split(",")
                     for t in args.dask_threads.split(",") for k in counts]
        for k, nthreads, malloc, processes in dask_runs:
            env = {"distributed.nanny.pre-spawn-environ":
                   {"glibc": glibc, "none": {}, "heap": heap}.get(malloc, environ)}
            with dask.config.set(env), LocalCluster(
                    n_workers=k, threads_per_worker=nthreads, processes=processes,
                    dashboard_address=":0") as cl, Client(cl) as client:
                client.run(set_all, args.set)  # the workers' own settings too
                run(warm, client=client, keep=keep)
                for n in range(args.dask_runs):
                    r = run(job, client=client, keep=keep)
                    r["gpus"] = k
                    r["dask"] = (f"{nthreads}t" + ("" if malloc == "dask" else f"-{malloc}")
                                 + ("" if processes else "-inproc")
                                 + (f"-run{n + 1}" if args.dask_runs > 1 else ""))
                    results.append(r)
                    print(f"dask, {k} worker {'process' if processes else 'thread'}(s) of "
                          f"{nthreads} thread(s), {malloc} malloc, run {n + 1}: "
                          f"{r['wall']:.2f} s, {r['pairs']:,} pairs", flush=True)
                if args.timings:
                    print("dask workers' numba threads, layer, planner (its failure):",
                          client.run(_numba_threads), flush=True)

    # speedups over one GPU with the same consumer and queue (Dask's over the first)
    # (the first such run where a consumer repeats; none where one GPU did not run)
    bases: dict = {}
    for r in results:
        if r["gpus"] == 1 and not r.get("dask"):
            bases.setdefault((r["consumer_kind"], r["buffer"]), r["wall"])
    base = next(iter(bases.values()), None)
    print()
    print(f"{'run':8} {'GPUs':>4} {'s':>8} {'GCUPS':>8} {'speedup':>8} {'eff.':>6}  "
          f"per GPU: windows [first-last result, s] / busy / GPU busy / blocked (local) or "
          f"wait (dask)")
    sums = set()
    pair_counts = set()  # pairs of each run (kept, where --keep-score filters)
    for r in results:
        per = []
        for w in r["timings"]["scheduler"]["workers"]:
            bt = w.get("backend_timings") or {}
            wait = w.get("wait_s", w.get("blocked_s", 0.0))
            ends = (f" [{w['first_at'] - r['t0']:.2f}-{w['last_at'] - r['t0']:.2f} s]"
                    if w.get("last_at") and "t0" in r else "")
            per.append(f"{w['label']} {w['windows']}{ends} / {w['busy_s'] / r['wall']:.0%}"
                       + (f" / {bt['gpu_busy'] / r['wall']:.0%}" if "gpu_busy" in bt else "")
                       + f" / {wait:.2f} s"
                       + (f" / {bt['slot_grown']:.0f} slot growths" if bt.get("slot_grown")
                          else ""))
        one = bases.get((r.get("consumer_kind"), r.get("buffer")), base)
        speed = one / r["wall"] if one else float("nan")
        kind = r.get("consumer_kind", "checksum")
        run_name = (f"dask{r['dask']}" if r.get("dask") else
                    ("local" if kind == "checksum" else kind)
                    + ("" if not r.get("buffer") else str(r["buffer"])))
        print(f"{run_name:8} {r['gpus']:>4} {r['wall']:8.2f} "
              f"{cells / r['wall'] / 1e9:8.1f} {speed:8.2f} {speed / r['gpus']:6.0%}  "
              + "; ".join(per))
        if r["gpus"] > 1 and not r.get("dask"):
            # each worker's last windows: cells and seconds between results
            print("         last windows: " + "; ".join(
                w["label"] + " " + ", ".join(f"{c:.2g}/{sec * 1e3:.0f}ms"
                                             for _, c, sec in w.get("measured", [])[-4:])
                for w in r["timings"]["scheduler"]["workers"]))
        if args.timings:
            for w in r["timings"]["scheduler"]["workers"]:
                bt = w.get("backend_timings") or {}
                print(f"         {w['label']}: " + ", ".join(
                    f"{k} {v:.3g}" for k, v in sorted(bt.items())
                    if isinstance(v, (int, float)) and not k.endswith("cells")))
        sums.add(r["checksum"])
        pair_counts.add(r["pairs"])
        if keep is None and r["pairs"] != pairs:
            print(f"ERROR: {r['pairs']} pairs, {pairs} expected")
            return 1
    same = len(sums) == 1 and len(pair_counts) == 1
    print(f"checksums {'identical' if same else 'DIFFER'} over every run "
          f"({next(iter(sums)) if same else sums})")
    if args.json:
        runs = [{"gpus": r["gpus"], "dask": bool(r.get("dask")), "buffer": r.get("buffer"),
                 "consumer_kind": r.get("consumer_kind", "checksum"),
                 "wall": r["wall"], "consumer": r["consumer"],
                 "predicted": r["timings"].get("predicted"), "checksum": r["checksum"],
                 "workers": r["timings"]["scheduler"]["workers"],
                 "placement": r.get("placement"), "arrivals": r.get("arrivals")}
                for r in results]
        Path(args.json).write_text(json.dumps({"cells": cells, "pairs": pairs,
                                               "traceback": args.traceback,
                                               "mode": args.mode, "runs": runs,
                                               "cost_key": cost_key,
                                               "cost_samples": cost.samples(cost_key)},
                                              indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
