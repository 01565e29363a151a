"""A/B of the warp-per-pair path: the threshold of steps that makes a pair wide.

    python benchmarks/wide_sweep.py [--cells 1e13] [--tb-cells 1e13] [--steps 0,256,512,2048]

Proteome all-vs-all (local, BLOSUM62 11/1) in process, with and without
traceback, for each setting of ``WIDE_STEPS`` / ``WIDE_STEPS_SCORE_ONLY``
(``--steps``; ``none``: every pair on one thread, 0: every pair on warps);
best of two runs after a warm-up. Scores must agree across settings
(checked). ``--cells`` adds a scaled score-only workload, ``--tb-cells`` one
with traceback.

Why again (v34): the threshold (2,048 steps) was set in v6, when the warp
path ran a few times the narrow one's rate; since then the packed warp
kernels went to ~4,300 GCUPS while the narrow pairs (6.2% of the pairs,
0.64% of the cells of the 1e13 workload) fill at 200-1,000 GCUPS
(``window_rates.py``: windows of pairs under the threshold alone). v35's
run of this script at 1e13 cells set both thresholds to 512 (NOTES.md).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from workloads import DATA, cells_of, sampled_proteins  # noqa: E402

import pairalign  # noqa: E402
from pairalign.engine import run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.kernels import gpu_backend as gb  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402


def run(be, seqs, tb, steps, reps=2):
    if tb:
        gb.WIDE_STEPS = steps
    else:
        gb.WIDE_STEPS_SCORE_ONLY = steps
    sc = Scoring.create("protein")
    best = None
    for _ in range(reps):
        job = Job("local", sc, tb, SortedSet.encode(seqs, sc))
        be.timings.clear()
        t = time.perf_counter()
        batch = run_job(job, be)
        wall = time.perf_counter() - t
        if best is None or wall < best[0]:
            best = (wall, be.timings.get("fill", 0.0), be.timings.get("traceback", 0.0),
                    be.timings.get("fill_wide", 0.0))
    order = np.lexsort((batch.target, batch.query))
    return best, batch.score[order]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", type=float, default=0)
    ap.add_argument("--tb-cells", type=float, default=0)
    ap.add_argument("--steps", default="0,256,512,1024,2048,4096",
                    help="settings to sweep, comma-separated (none: no pair wide)")
    args = ap.parse_args()
    settings = [None if x.strip() == "none" else int(x) for x in args.steps.split(",")]
    from pairalign.backends import gpu_available

    if not gpu_available():
        print("wide_sweep.py: no GPU visible (CuPy sees no CUDA device): nothing to measure.")
        return
    be = gb.GPUBackend()
    print(f"device: {be.describe()}", flush=True)
    prot = pairalign.read_sequences(DATA / "proteome_HG003687.faa").sequences
    run(be, prot[:300], True, 1 << 10, reps=1)
    run(be, prot[:300], False, 1 << 10, reps=1)
    work = [("proteome", prot, True), ("proteome", prot, False)]
    if args.cells:
        work.append((f"scaled {args.cells:g}", sampled_proteins(args.cells), False))
    if args.tb_cells:
        work.append((f"scaled {args.tb_cells:g}", sampled_proteins(args.tb_cells), True))
    for name, seqs, tb in work:
        ls = np.array([len(s) for s in seqs], np.int64)
        cells = cells_of(ls)
        steps_of = (ls[:, None] + 7) // 8 * ls[None, :]
        ref = None
        for steps in settings:
            (wall, fill, walk, fwide), scores = run(be, seqs, tb, steps)
            if ref is None:
                ref = scores
            ok = np.array_equal(ref, scores)
            if steps is None:
                frac = 0.0
            else:
                # pair (i, j), i < j: the longer one the query, i on equal lengths
                query_i = ls[:, None] >= ls[None, :]
                wide = np.triu(np.where(query_i, steps_of, steps_of.T) >= steps, 1)
                frac = float((np.outer(ls, ls) * wide).sum()) / cells
            print(f"{name:16} tb={'y' if tb else 'n'} steps={steps!s:>8} "
                  f"wide cells {frac:6.1%}  wall {wall:6.3f} s  fill {fill:6.3f} (wide {fwide:6.3f})  "
                  f"walk {walk:6.3f}  e2e {cells / wall / 1e9:6.0f} GCUPS  "
                  f"{'same' if ok else 'DIFFERENT SCORES'}", flush=True)


if __name__ == "__main__":
    main()
