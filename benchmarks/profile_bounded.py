"""One bounded local traceback run (gpu_backend.BOUNDED_TRACEBACK) on sampled
proteins, for a profiler: ``ncu --kernel-name regex:'bound_starts|fill_box'
python benchmarks/profile_bounded.py --cells 2e11``. A run on 200 proteins
first compiles and warms the kernels (skip its launches with ncu's
``--launch-skip``, or profile them: they are small)."""

from __future__ import annotations

import argparse

from workloads import sampled_proteins  # noqa: E402

from pairalign.engine import run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.kernels import gpu_backend  # noqa: E402
from pairalign.kernels.gpu_backend import GPUBackend  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", type=float, default=2e11)
    ap.add_argument("--source", help="another version of align.cu to compile")
    args = ap.parse_args()
    gpu_backend.BOUNDED_TRACEBACK = True  # off by default
    gpu_backend.SOURCE = args.source
    sc = Scoring.create("protein")
    be = GPUBackend()
    for seqs in (sampled_proteins(2e9, seed=2), sampled_proteins(args.cells)):
        job = Job("local", sc, True, SortedSet.encode(seqs, sc))
        be.timings.clear()
        run_job(job, be)
    t = be.timings
    print({k: round(v, 4) for k, v in t.items()
           if k in ("score_pass", "bound_pass", "box_order", "box_fill", "traceback",
                    "gpu_busy", "bound_cells", "box_cells", "cells")})


if __name__ == "__main__":
    main()
