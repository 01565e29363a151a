"""Lane-rows of the packed score-only kernel's bands, counted on the CPU (no device).

    python benchmarks/band_rows.py [--cells 1e13] [--cost16 1.25] [--cost8 1.9]

A group of G = 4 lanes of 32 rows fills a band of 128 query rows a step; a
query's last band is partly empty. For every pair of the sampled-protein
workload (each pair's longer sequence the query, as the kernel takes it) this
counts the lane-rows the bands hold against the cells, and predicts the fill's
speed-up when a query's last band takes stripes of 8 or 16 rows where its rows
fit (``fill_pack``), each of their rows costing ``--cost8`` / ``--cost16``
times a 32-row stripe's (a step's bookkeeping is shared by fewer rows: 1.84-1.93
and 1.22-1.28 in the static SASS of the v25 loops, nvcc 13).
"""

from __future__ import annotations

import argparse

import numpy as np

from pack_shape import COST8, COST16  # noqa: E402
from workloads import sampled_proteins  # noqa: E402

BAND, GROUP = 128, 4


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=float, default=1e13)
    ap.add_argument("--cost16", type=float, default=COST16)
    ap.add_argument("--cost8", type=float, default=COST8)
    args = ap.parse_args()
    lengths = np.array([len(s) for s in sampled_proteins(args.cells)], np.int64)
    values, counts = np.unique(lengths, return_counts=True)
    counts = counts.astype(np.float64)
    # the targets' summed lengths of the pairs whose query has length values[k]:
    # every shorter sequence, and the other sequences of the same length
    shorter = np.concatenate([[0.0], np.cumsum(counts * values)[:-1]])
    target_sum = counts * shorter + counts * (counts - 1) / 2 * values
    bands = -(-values // BAND)
    left = values - BAND * (bands - 1)  # rows of the last band
    last = np.where(left <= GROUP * 8, GROUP * 8 * args.cost8,
                    np.where(left <= GROUP * 16, GROUP * 16 * args.cost16, BAND))
    cells = float((values * target_sum).sum())
    whole = float((BAND * bands * target_sum).sum())
    short = float(((BAND * (bands - 1) + last) * target_sum).sum())
    print(f"{lengths.size} sequences, median {np.median(lengths):.0f} residues, {cells:.3g} cells")
    print(f"lane-rows holding cells, bands of {BAND}: {cells / whole:.3f}")
    print(f"predicted score-only fill speed-up, short last bands: {whole / short:.3f}")


if __name__ == "__main__":
    main()
