"""How often a lane of the packed local kernel would take its end-cell search:
a CPU model of the lanes (numba), for the kernel's floor and tie logic.

    python benchmarks/lane_events.py [--n 60] [--rows 32]

All pairs of ``--n`` proteins sampled from the proteome (10% substitutions),
local, BLOSUM62 11/1. Each query is cut into stripes of ``--rows`` rows (one
lane each); after every column a stripe compares its column maximum with its
own best, as ``Stripe2::track`` does: a record (higher), a tie that may win
(equal, its best not in its first row), and how many of either lie below
the best its pair already holds in another stripe (what a shared floor
spares). Printed per stripe and column.
"""

from __future__ import annotations

import argparse

import numba
import numpy as np

from track_events import stripe_maxima
from workloads import sampled_proteins

from pairalign.scoring import Scoring


@numba.njit(cache=True)
def events(cmax, crow, rows):
    """(records, ties, ties that win, stripe-columns, events below the pair's
    best) from each stripe's column maxima and their first rows."""
    stripes, m1 = cmax.shape
    best = np.zeros(stripes, np.int32)
    best_row = np.zeros(stripes, np.int32)
    records = ties = wins = steps = below = 0
    pair_best = 0
    for j in range(1, m1):
        for s in range(stripes):
            i0 = s * rows
            c, first = cmax[s, j], crow[s, j]
            steps += 1
            tie = c == best[s] and c > 0 and best_row[s] > i0 + 1
            if (c > best[s] or tie) and c < pair_best:
                below += 1
            if c > best[s]:
                records += 1
                best[s], best_row[s] = c, first
            elif tie:
                ties += 1
                if first < best_row[s]:
                    wins += 1
                    best_row[s] = first
        for s in range(stripes):
            pair_best = max(pair_best, best[s])
    return records, ties, wins, steps, below


def lane_events(a, b, matrix, go, ge, rows):
    """(records, ties, ties that win, stripe-columns, events below the pair's
    best) of one pair, query ``a`` in the rows."""
    return events(*stripe_maxima(a, b, matrix, go, ge, rows), rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--rows", type=int, default=32)
    args = ap.parse_args()
    sc = Scoring.create("protein")
    matrix = np.asarray(sc.matrix, np.int32)
    seqs = sampled_proteins(2e11)
    pick = np.random.default_rng(1).choice(len(seqs), args.n, replace=False)
    enc = [np.asarray(sc.encode(seqs[k]), np.int64) for k in pick]
    total = np.zeros(5, np.int64)
    for x in range(len(enc)):
        for y in range(x + 1, len(enc)):
            total += np.array(lane_events(enc[x], enc[y], matrix, sc.gap_open, sc.gap_extend,
                                          args.rows))
    records, ties, wins, steps, below = total
    print(f"stripe-columns {steps:,}: records {records / steps:.3f}, ties {ties / steps:.3f} "
          f"(winning {wins / steps:.4f}); below the pair's best "
          f"{below / steps:.3f} ({below / max(records + ties, 1):.0%} of the events)")


if __name__ == "__main__":
    main()
