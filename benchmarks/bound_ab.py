"""Which pairs take 16 bits (and so pack two a warp on the GPU), by the
bound of each session since v55, in one process, alternating: their rate
where lengths pass ~1,230 residues or ~2,300 bp.

    python benchmarks/bound_ab.py [--reps 4] [--variants v55,v56,v57,v59]
                                  [--backend cpu --reads 60 --protein-cells 2e9
                                  --no-proteome] [--long-reads 300]
                                  [--long-span 4000-7900]

Variants: ``v55`` (the best pair's score times the shorter length *plus*
the two-gap path; every pair that fits packs), ``v56`` (the larger of the
two, in every mode; a score-only window's few pairs of long packed steps
unpacked, ``gpu_backend.packs``), ``v57`` (the bound by mode: no two-gap
path in local and semiglobal mode), ``v59`` (v57 with score-only long
pairs packed only where they make PACK_MIN_WARPS_A_SM warps a
multiprocessor; the code's rules as they are), ``tb-all`` (v59 with every
fitting pair packed with traceback),
``tb-rule:X`` (v59 with ``packs``' rule with traceback at X cells a step)
and ``so-rule:X`` (v59, score-only windows' rule at X cells a step).
Workloads: the proteome (local), 400 simulated reads of 2.5-3.9 kb and
``--long-reads`` of ``--long-span`` (4-7.9 kb; ``long_reads.py``'s,
semiglobal) and 320 uniform proteins of 1,400 residues (local; 0 reads or
cells leave a workload out), each score-only and with traceback. Prints
each variant's wall times and GPU-busy milliseconds (first repetition
dropped) and the median GPU GCUPS; with ``--backend cpu``, the wall times
and the median wall GCUPS (the CPU's 16-bit tasks take twice the lanes of
its 32-bit ones).
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
RULES = {k: getattr(gpu_backend, k) for k in (
    "PACK_TAIL_STEPS", "PACK_TAIL_STEPS_TRACEBACK", "PACK_TAIL_CELLS_A_STEP",
    "PACK_TAIL_CELLS_A_STEP_TRACEBACK", "PACK_MIN_WARPS_A_SM")}


def v55_bound(self, n, m, mode="global"):
    """v55's: the matrix's largest |score| times min(n, m) plus both gaps."""
    return (self.max_abs_score * np.minimum(n, m) + 2 * self.gap_open
            + self.gap_extend * (n + m))


def v55_with_gap(self, n, m, mode="global"):
    return v55_bound(self, n, m) + self.gap_open + self.gap_extend


def v56_bound(self, n, m, mode="global"):
    """v56's: v57's global bound, in every mode."""
    return NEW_BOUND(self, n, m, "global")


def variant(name: str) -> None:
    """Set the bound and the packing rules of variant ``name``."""
    scoring.Scoring.score_bound = {"v55": v55_bound, "v56": v56_bound}.get(name, NEW_BOUND)
    scoring.Scoring._bound_with_gap = v55_with_gap if name == "v55" else NEW_WITH_GAP
    for k, v in RULES.items():
        setattr(gpu_backend, k, v)
    if name == "v55":
        gpu_backend.PACK_TAIL_STEPS = gpu_backend.PACK_TAIL_STEPS_TRACEBACK = None
    elif name in ("v56", "tb-all"):
        gpu_backend.PACK_TAIL_STEPS_TRACEBACK = None
        if name == "v56":
            gpu_backend.PACK_MIN_WARPS_A_SM = 0
    elif name == "v57":
        gpu_backend.PACK_MIN_WARPS_A_SM = 0
    elif name.startswith("so-rule:"):
        gpu_backend.PACK_TAIL_CELLS_A_STEP = int(float(name.split(":")[1]))
    elif name.startswith("tb-rule:"):
        gpu_backend.PACK_TAIL_STEPS_TRACEBACK = RULES["PACK_TAIL_STEPS"]
        gpu_backend.PACK_TAIL_CELLS_A_STEP_TRACEBACK = int(float(name.split(":")[1]))
    elif name != "v59":
        raise SystemExit(f"unknown variant {name!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--backend", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--reads", type=int, default=400, help="reads of 2.5-3.9 kb")
    ap.add_argument("--protein-cells", type=float, default=1e11,
                    help="cells of the all-vs-all of proteins of 1,400 residues")
    ap.add_argument("--no-proteome", action="store_true")
    ap.add_argument("--long-reads", type=int, default=300, help="reads of --long-span (0: none)")
    ap.add_argument("--long-span", default="4000-7900", help="their lengths, LO-HI bp")
    ap.add_argument("--variants", default="v55,v56,v57,v59")
    args = ap.parse_args()
    names = args.variants.split(",")
    gpu = args.backend == "gpu"
    if gpu:
        be = gpu_backend.GPUBackend()
        for mode in ("local", "semiglobal"):
            warm_gpu_backend(mode, (True, False), be, sample_cells=2e9, modes=(mode,))
    else:
        from pairalign.kernels.cpu_backend import CPUBackend

        be = CPUBackend()
    print(f"backend: {be.describe()}", flush=True)
    work = [] if args.no_proteome else [
        ("proteome", "local", "protein",
         pairalign.read_sequences(DATA / "proteome_HG003687.faa").sequences)]
    if args.reads:
        work += [("reads 2.5-3.9 kb", "semiglobal", "dna",
                  simulated_reads(args.reads, 2500, 3900, 0.05))]
    if args.long_reads:
        lo, hi = (int(x) for x in args.long_span.split("-"))
        work += [(f"reads {lo / 1e3:g}-{hi / 1e3:g} kb", "semiglobal", "dna",
                  simulated_reads(args.long_reads, lo, hi, 0.05))]
    if args.protein_cells:
        work += [("proteins of 1,400", "local", "protein",
                  uniform_proteins(np.random.default_rng(1), args.protein_cells, 1400))]
    res: dict = {}
    for rep in range(args.reps):
        for name in names:
            variant(name)
            for label, mode, alphabet, seqs in work:
                sc = scoring.Scoring.create(alphabet)
                for tb in (False, True):
                    job = Job(mode, sc, tb, SortedSet.encode(seqs, sc))
                    if gpu:
                        be.timings.clear()
                    t = time.perf_counter()
                    run_job(job, be)
                    wall = time.perf_counter() - t
                    busy = be.timings.get("gpu_busy", 0.0) if gpu else wall
                    if rep or args.reps == 1:
                        res.setdefault((label, tb, name), []).append((wall, busy))
    variant("v59")
    cells = {label: cells_of(np.array([len(s) for s in seqs])) for label, _, _, seqs in work}
    for (label, tb, name), v in res.items():
        v = np.array(v)
        busy = f"GPU ms {np.round(v[:, 1] * 1e3, 1)} GPU " if gpu else "wall "
        gcups = cells[label] / np.median(v[:, 1]) / 1e9
        print(f"{label:<18} tb={int(tb)} {name:<12} wall {np.round(v[:, 0], 3)} "
              f"{busy}GCUPS (median) {gcups:,.{0 if gpu else 1}f}")


if __name__ == "__main__":
    main()
