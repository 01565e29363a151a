"""Run the GPU fill kernels on part of the proteome, for ``ncu``.

    ncu --clock-control none -k regex:fill python benchmarks/profile_fill.py

Workload: the first ``--n`` proteins of the proteome, or with ``--cells`` the
sampled proteins of :mod:`workloads` (``--cells 1e12``), or with ``--length``
too random proteins of that many residues to about ``--cells`` cells (whole
bands: against ``recurrence_ceiling.py``), local (``--mode``), BLOSUM62 11/1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pairalign  # noqa: E402
from workloads import PROTEOME, sampled_proteins, uniform_proteins  # noqa: E402


def command(length: int, cells: float, mode: str, traceback: bool = False) -> list[str]:
    """This script's command line for random proteins of ``length`` residues
    (0: the sampled workload) to about ``cells`` cells, for ``ncu`` to run."""
    return ([sys.executable, str(Path(__file__).resolve()), "--length", str(length),
             "--cells", str(cells), "--mode", mode] + (["--traceback"] if traceback else []))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--mode", default="local")
    ap.add_argument("--cells", type=float, default=0)
    ap.add_argument("--traceback", action="store_true")
    ap.add_argument("--length", type=int, default=0)
    args = ap.parse_args()
    if args.length:
        seqs = uniform_proteins(np.random.default_rng(5), args.cells or 1e11, args.length)
    else:
        seqs = (sampled_proteins(args.cells) if args.cells
                else pairalign.read_sequences(PROTEOME).sequences[: args.n])
    res = pairalign.align_all(seqs, mode=args.mode, traceback=args.traceback,
                              backend="gpu")
    print("pairs", len(res), "score sum", int(res.scores.sum()))


if __name__ == "__main__":
    main()
