"""The CPU's queries with few targets: tasks against waves (``cpu_wave``).

    python benchmarks/cpu_wave.py [--span 7000-8000] [--targets 1,2,4,8,16]
                                  [--mode semiglobal] [--runs 2]

A task aligns one query against as many targets as it has lanes; a query
with few targets can instead run a pair at a time on all of a thread's
lanes (``cpu_backend.WAVE_MAX_TARGETS``). For each count ``c`` of targets,
one simulated read (``long_reads.py``'s) against ``c`` others of
``--span``, with traceback and score-only, on all cores, both ways in one
process: wall (best of ``--runs`` after a warm-up) and GCUPS, and the wall
of the backend's own choice (``rule``).
"""

from __future__ import annotations

import argparse
import time

import pairalign
from pairalign.kernels import cpu_backend
from pairalign.kernels.cpu_backend import CPUBackend

from long_reads import simulated_reads

EVERY = {"WAVE_MAX_TARGETS": 1 << 30, "WAVE_MIN_TARGETS_TRACEBACK": 1 << 30,
         "WAVE_MAX_TARGETS_TRACEBACK": 1 << 30, "WAVE_MIN_ROWS": 1}
NONE = {"WAVE_MAX_TARGETS": None}


def timed(query, targets, mode, traceback, runs, settings) -> float:
    keep = {k: getattr(cpu_backend, k) for k in EVERY}
    for k, v in settings.items():
        setattr(cpu_backend, k, v)
    try:
        best = float("inf")
        for r in range(runs + 1):  # the first warms up
            t = time.perf_counter()
            pairalign.align_many(query, targets, mode=mode, backend="cpu", traceback=traceback,
                                 cigar=False)
            if r:
                best = min(best, time.perf_counter() - t)
        return best
    finally:
        for k, v in keep.items():
            setattr(cpu_backend, k, v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--span", default="7000-8000", help="read lengths, LO-HI bp")
    ap.add_argument("--targets", default="1,2,4,8,16")
    ap.add_argument("--mode", default="semiglobal")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    lo, hi = (int(x) for x in args.span.split("-"))
    print(f"CPU: {CPUBackend().describe()}, {args.mode}, reads of {lo}-{hi} bp")
    print(f"{'targets':>7} {'traceback':>9} {'task s':>7} {'GCUPS':>6} {'wave s':>7} "
          f"{'GCUPS':>6} {'wave x':>6} {'rule s':>7}")
    for c in (int(x) for x in args.targets.split(",")):
        reads = simulated_reads(c + 1, lo, hi, 0.05)
        query, targets = reads[:1], reads[1:]
        cells = sum(len(query[0]) * len(t) for t in targets)
        for traceback in (True, False):
            task = timed(query, targets, args.mode, traceback, args.runs, NONE)
            wave = timed(query, targets, args.mode, traceback, args.runs, EVERY)
            rule = timed(query, targets, args.mode, traceback, args.runs, {})
            print(f"{c:7} {'yes' if traceback else 'no':>9} {task:7.3f} {cells / task / 1e9:6.3f} "
                  f"{wave:7.3f} {cells / wave / 1e9:6.3f} {task / wave:6.2f} {rule:7.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
