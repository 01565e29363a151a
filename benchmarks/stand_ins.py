"""What letters of their own (U, O, J) cost a job: the proteome against itself
with selenocysteine.

Every X of every other protein of ``proteome_HG003687.faa`` that holds one
becomes U. U scores as X, so every pair's score stays the same; identities
differ where a U meets an X. The job with U runs on a scoring whose codes
tell U apart (``Scoring.for_residues``), the job's letters first. Prints each
run's wall time (best of ``--runs``, the two inputs taking turns), its scoring's letters
and whether the warp kernels' profile holds them, and checks the scores pair
by pair.

    python benchmarks/stand_ins.py --backend gpu
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from workloads import DATA

import pairalign
from pairalign.kernels.gpu_backend import _profile_fits


def with_selenocysteine(seqs: list[str]) -> list[str]:
    """Every other protein holding X with its X read as U."""
    out, k = [], 0
    for s in seqs:
        if "X" in s:
            k += 1
            if k % 2:
                s = s.replace("X", "U")
        out.append(s)
    return out


def best_of(jobs: list[list[str]], runs: int, **kw) -> tuple[list[float], list]:
    """Each set's best wall time of ``runs``, the sets taking turns (after a
    warm-up each), and its last result."""
    walls = [[] for _ in jobs]
    results = [pairalign.align_all(seqs, **kw) for seqs in jobs]  # warm-up
    for _ in range(runs):
        for k, seqs in enumerate(jobs):
            t = time.perf_counter()
            results[k] = pairalign.align_all(seqs, **kw)
            walls[k].append(time.perf_counter() - t)
    return [min(w) for w in walls], results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="gpu")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    plain = pairalign.read_sequences(DATA / "proteome_HG003687.faa").sequences
    seleno = with_selenocysteine(plain)
    print(f"{sum('U' in s for s in seleno)} of {len(seleno)} proteins hold U")
    for traceback in (True, False):
        kw = dict(backend=args.backend, mode="local", traceback=traceback)
        (a_s, b_s), (a, b) = best_of([plain, seleno], args.runs, **kw)
        sc = b.scoring
        letters = sc.letters[:sc.active] if sc.active else sc.letters
        same = np.array_equal(a.pairs.score, b.pairs.score)
        ident = int((a.pairs.identities != b.pairs.identities).sum()) if traceback else 0
        print(f"traceback {traceback}: plain {a_s:.3f} s, with U {b_s:.3f} s "
              f"({b_s / a_s:.2f}x); letters {len(letters)} ({letters}), warp profile "
              f"{_profile_fits(sc.kernel_matrix)}; scores equal {same}; pairs whose "
              f"identities differ {ident:,}")
        assert same


if __name__ == "__main__":
    main()
