"""The CPU's long reads with traceback: whole against checkpointed traceback.

    python benchmarks/cpu_checkpoint.py [--sets 2:19000-21000,33:5000-7000]
                                        [--mode semiglobal] [--whole-memory 16G]
                                        [--runs 2] [--no-parasail]

A CPU task aligns one query against 16-64 targets (its lanes) and holds their
traceback; where ``--max-memory`` cannot hold that whole on enough threads,
tasks are checkpointed (``cpu_backend.CHECKPOINT_COST``). Each set
(``COUNT:LO-HI`` reads of ``long_reads.py``) runs with traceback on all
cores three ways, in one process: at ``--whole-memory`` (every task whole,
if it holds them), at a budget that holds each thread's task checkpointed
alone (every long task checkpointed), and at the default 4 GiB. Printed: wall
(best of ``--runs`` after a warm-up), GCUPS, the ratio to the whole run, the
threads and checkpointing each ran with, and parasail's semiglobal traceback
kernel on the same cores.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import pairalign
from pairalign.engine import parse_memory
from pairalign.errors import MemoryBudgetWarning, OptionError
from pairalign.job import Job, SortedSet
from pairalign.kernels import cpu_backend
from pairalign.kernels.cpu_backend import CPUBackend
from pairalign.scheduler.plan import DEFAULT_MAX_MEMORY
from pairalign.scoring import Scoring

from long_reads import parasail_gcups, read_sets


def timed(reads: list[str], mode: str, budget: int, runs: int) -> float:
    best = float("inf")
    for _ in range(runs + 1):  # the first warms up
        t = time.perf_counter()
        pairalign.align_all(reads, mode=mode, backend="cpu", max_memory=budget, cigar=False)
        best = min(best, time.perf_counter() - t)
    return best


def how(reads: list[str], mode: str, budget: int) -> str:
    """Threads and checkpointing that the CPU backend picks for ``budget``."""
    sc = Scoring.create("dna")
    job = Job(mode, sc, True, SortedSet.encode(reads, sc))
    be = CPUBackend()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryBudgetWarning)
        be.fit_memory(job, budget)
    ck = "whole" if be.traceback_limit == cpu_backend.NO_CHECKPOINT else "checkpointed"
    return f"{be.threads}/{be.requested} threads, {ck}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="2:19000-21000,33:5000-7000")
    ap.add_argument("--mode", default="semiglobal")
    ap.add_argument("--whole-memory", default="16G")
    ap.add_argument("--error", type=float, default=0.05)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-parasail", action="store_true")
    args = ap.parse_args()
    whole_budget = parse_memory(args.whole_memory)
    rows = []
    for spec, reads, cells in read_sets(args.sets, args.error):
        sc = Scoring.create("dna")
        job = Job(args.mode, sc, True, SortedSet.encode(reads, sc))
        be = CPUBackend()
        tight = be.requested * be.task_memory(job) + (4 << 20)
        base = None
        for label, budget in (("whole", whole_budget), ("tight", tight),
                              ("default", DEFAULT_MAX_MEMORY)):
            try:
                wall = timed(reads, args.mode, budget, args.runs)
            except OptionError as e:
                print(spec, label, "refused:", e, flush=True)
                continue
            base = base or wall
            rows.append((spec, label, budget, how(reads, args.mode, budget), cells, wall,
                         base / wall))
            print(spec, label, f"{wall:.2f} s", flush=True)
        if not args.no_parasail:
            ps = parasail_gcups(reads, True, os.cpu_count() or 1)
            wall = cells / ps / 1e9  # at its rate on a few pairs a core
            rows.append((spec, "parasail", 0, f"{os.cpu_count()} processes", cells, wall,
                         (base or wall) / wall))
    print(f"\nCPU: {CPUBackend().describe()}, {args.mode}, traceback")
    print(f"{'reads':<16} {'run':<9} {'budget':>8} {'how':<30} {'wall s':>7} {'GCUPS':>6} "
          f"{'vs whole':>8}")
    for spec, label, budget, how_, cells, wall, x in rows:
        b = f"{budget / 2**30:.2f}G" if budget else ""
        print(f"{spec:<16} {label:<9} {b:>8} {how_:<30} {wall:7.2f} {cells / wall / 1e9:6.1f} "
              f"{x:8.2f}")


if __name__ == "__main__":
    main()
