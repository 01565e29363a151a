"""Run the GPU fill kernels on part of the proteome, for ``ncu``.

    ncu --clock-control none -k regex:fill python benchmarks/profile_fill.py

Workload: the first ``--n`` proteins of the proteome, local, BLOSUM62 11/1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pairalign  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--mode", default="local")
    ap.add_argument("--traceback", action="store_true")
    args = ap.parse_args()
    data = ROOT / "shared" / "data"
    if not data.exists():
        data = ROOT.parent / "shared" / "data"
    seqs = pairalign.read_sequences(data / "proteome_HG003687.faa").sequences[: args.n]
    res = pairalign.align_all(seqs, mode=args.mode, traceback=args.traceback,
                              backend="gpu")
    print("pairs", len(res), "score sum", int(res.scores.sum()))


if __name__ == "__main__":
    main()
