"""The 16-bit score bound of v55 against v56's, in one process, alternating:
which pairs take 16 bits (and so pack two a warp on the GPU) decides their
rate where lengths pass ~1,230 residues or ~2,300 bp.

    python benchmarks/bound_ab.py [--reps 4]

Variants: ``old`` (v55's bound: the best pair's score times the shorter
length *plus* the two-gap path), ``all`` (v56's bound, every pair that fits
16 bits packed: ``PACK_TAIL_STEPS`` None) and ``rule`` (v56's bound and
``gpu_backend.packs``'s rule, the default). Workloads: the proteome (local),
400 simulated reads of 2.5-3.9 kb (``long_reads.py``'s, semiglobal) and 320
uniform proteins of 1,400 residues (local), each score-only and with
traceback. Prints each variant's wall times and GPU-busy milliseconds
(first repetition dropped) and the median GPU GCUPS.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from long_reads import simulated_reads  # noqa: E402
from workloads import DATA, cells_of, uniform_proteins, warm_gpu_backend  # noqa: E402

import pairalign  # noqa: E402
from pairalign import scoring  # noqa: E402
from pairalign.engine import run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.kernels import gpu_backend  # noqa: E402

NEW_BOUND = scoring.Scoring.score_bound
NEW_WITH_GAP = scoring.Scoring._bound_with_gap
RULE = gpu_backend.PACK_TAIL_STEPS


def old_bound(self, n, m):
    """v55's: the matrix's largest |score| times min(n, m) plus both gaps."""
    return (self.max_abs_score * np.minimum(n, m) + 2 * self.gap_open
            + self.gap_extend * (n + m))


def old_with_gap(self, n, m):
    return old_bound(self, n, m) + self.gap_open + self.gap_extend


def variant(name: str) -> None:
    old = name == "old"
    scoring.Scoring.score_bound = old_bound if old else NEW_BOUND
    scoring.Scoring._bound_with_gap = old_with_gap if old else NEW_WITH_GAP
    gpu_backend.PACK_TAIL_STEPS = RULE if name == "rule" else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    be = gpu_backend.GPUBackend()
    print(f"device: {be.describe()}", flush=True)
    for mode in ("local", "semiglobal"):
        warm_gpu_backend(mode, (True, False), be, sample_cells=2e9, modes=(mode,))
    work = [("proteome", "local", "protein",
             pairalign.read_sequences(DATA / "proteome_HG003687.faa").sequences),
            ("reads 2.5-3.9 kb", "semiglobal", "dna", simulated_reads(400, 2500, 3900, 0.05)),
            ("proteins of 1,400", "local", "protein",
             uniform_proteins(np.random.default_rng(1), 1e11, 1400))]
    res: dict = {}
    for rep in range(args.reps):
        for name in ("old", "all", "rule"):
            variant(name)
            for label, mode, alphabet, seqs in work:
                sc = scoring.Scoring.create(alphabet)
                for tb in (False, True):
                    job = Job(mode, sc, tb, SortedSet.encode(seqs, sc))
                    be.timings.clear()
                    t = time.perf_counter()
                    run_job(job, be)
                    wall = time.perf_counter() - t
                    if rep:
                        res.setdefault((label, tb, name), []).append(
                            (wall, be.timings.get("gpu_busy", 0.0)))
    variant("rule")
    cells = {label: cells_of(np.array([len(s) for s in seqs])) for label, _, _, seqs in work}
    for (label, tb, name), v in res.items():
        v = np.array(v)
        print(f"{label:<18} tb={int(tb)} {name:<4} wall {np.round(v[:, 0], 3)} "
              f"GPU ms {np.round(v[:, 1] * 1e3, 1)} GPU GCUPS (median) "
              f"{cells[label] / np.median(v[:, 1]) / 1e9:,.0f}")


if __name__ == "__main__":
    main()
