"""What a checkpointed traceback (``gpu_backend.CHECKPOINT_TRACEBACK_MODES``)
would store and recompute, counted on the CPU from the CPU backend's
alignments of sampled proteins, for stripes of R rows and checkpoints K
columns apart.

    python benchmarks/checkpoint_model.py [--cells 1e10] [--mode local,global]

The walk (``align.cu``, ``CkptWalk``) fills again, each time its path enters a
block (a stripe of R rows, K columns), the block's columns up to the path's:
R x (j - j0) cells. The fill stores 4 / R bytes a cell (the words from above)
and 4 / K (the checkpoints), against the bits' 0.5. Query rows are taken as
the pair's query (the GPU may orient a pair the other way) and every stripe
as R rows (the short last band of 8-row stripes is not modelled).
"""

from __future__ import annotations

import argparse

import numpy as np

from workloads import cells_of, sampled_proteins  # noqa: E402

import pairalign  # noqa: E402

SHAPES = [(16, 16), (16, 32), (16, 64), (32, 16), (32, 32), (32, 64)]


def path_cells(pairs, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The cells (i, j), 1-based, at which pair k's walk reads a word, from its
    end cell back to its start."""
    lo, hi = pairs.op_offsets[k], pairs.op_offsets[k + 1]
    codes = pairs.op_code[lo:hi][::-1]
    lens = pairs.op_len[lo:hi][::-1].astype(np.int64)
    di = np.repeat(np.where(codes == 2, 0, 1), lens)  # M and I consume the query
    dj = np.repeat(np.where(codes == 1, 0, 1), lens)  # M and D the target
    i = int(pairs.query_end[k]) - np.concatenate([[0], np.cumsum(di)[:-1]])
    j = int(pairs.target_end[k]) - np.concatenate([[0], np.cumsum(dj)[:-1]])
    keep = (i > 0) & (j > 0)
    return i[keep], j[keep]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=float, default=1e10)
    ap.add_argument("--mode", default="local,global")
    args = ap.parse_args()
    seqs = sampled_proteins(args.cells)
    cells = cells_of([len(s) for s in seqs])
    print(f"{len(seqs)} sampled proteins, {cells:.3g} cells")
    for mode in args.mode.split(","):
        res = pairalign.align_all(seqs, mode=mode, traceback=True, backend="cpu")
        pairs = res.pairs
        refilled = {shape: 0 for shape in SHAPES}
        entries = {shape: 0 for shape in SHAPES}
        steps = 0
        for k in range(len(pairs)):
            i, j = path_cells(pairs, k)
            if i.size == 0:
                continue
            steps += i.size
            for rows, cols in SHAPES:
                s, c = (i - 1) // rows, (j - 1) // cols
                new = np.ones(i.size, bool)
                new[1:] = (s[1:] != s[:-1]) | (c[1:] != c[:-1])
                entries[(rows, cols)] += int(new.sum())
                refilled[(rows, cols)] += int(rows * (j[new] - c[new] * cols).sum())
        print(f"\n{mode}: {len(pairs)} pairs, {steps / len(pairs):.1f} walk steps a pair")
        print("rows  cols  bytes/cell  blocks/pair  refilled/pair  refilled share of cells")
        for rows, cols in SHAPES:
            print(f"{rows:4d}  {cols:4d}  {4 / rows + 4 / cols:10.3f}  "
                  f"{entries[(rows, cols)] / len(pairs):11.2f}  "
                  f"{refilled[(rows, cols)] / len(pairs):13.0f}  "
                  f"{refilled[(rows, cols)] / cells:23.4f}")


if __name__ == "__main__":
    main()
