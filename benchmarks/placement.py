"""The consumer's placement alone (no GPU): pairs put in input order as
``run_job`` puts them, their columns as columns or staged as a row a pair.

    python benchmarks/placement.py [--sequences 9000] [--width 1024] [--traceback] [--sorted]

Batches as a device backend yields them: windows of ``--width`` x ``--width``
sorted positions over the all-vs-all triangle, the sequences' input order a
random permutation of their sorted order (so a window's pairs land all over
the input-order arrays), every column filled with made-up values. Each mode
runs twice, alternating; printed: seconds adding the batches
(``Placement.add``, as the consumer does while the windows run) and finishing
(``Placement.finish``: the staged rows made columns, the operation offsets),
millions of pairs a second, and whether both modes give the same columns.
``--sorted`` runs each mode on the batches sorted by rank in input order too
(as ``gpu_backend.SORT_BY_RANK`` has the device send them).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pairalign.pairs import PairBatch, Placement


def batches(n: int, width: int, traceback: bool, seed: int = 1):
    """The batches of an all-vs-all of ``n`` sequences in windows of ``width``."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    for r0 in range(0, n, width):
        for c0 in range(r0, n, width):
            r, c = np.arange(r0, min(n, r0 + width)), np.arange(c0, min(n, c0 + width))
            rr, cc = np.meshgrid(r, c, indexing="ij")
            keep = rr < cc
            a, b = order[rr[keep]], order[cc[keep]]
            q, t = np.minimum(a, b), np.maximum(a, b)
            k = len(q)
            v = rng.integers(0, 1000, (7, k)).astype(np.int32)
            counts = (rng.integers(1, 9, k) if traceback else np.zeros(k, np.int64))
            off = np.zeros(k + 1, np.int64)
            np.cumsum(counts, out=off[1:])
            total = int(off[-1])
            yield PairBatch(q.astype(np.int64), t.astype(np.int64), *v, op_offsets=off,
                            op_code=np.zeros(total, np.uint8),
                            op_len=np.ones(total, np.int32))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sequences", type=int, default=9000)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--traceback", action="store_true")
    ap.add_argument("--sorted", action="store_true",
                    help="also place the batches sorted by rank in input order")
    args = ap.parse_args()
    work = list(batches(args.sequences, args.width, args.traceback))
    orders = {"unsorted": work}
    if args.sorted:
        n = args.sequences

        def by_rank(b):
            q, t = b.query, b.target
            return b.take(np.argsort(q * (2 * n - q - 1) // 2 + (t - q - 1), kind="stable"))

        orders["sorted"] = [by_rank(b) for b in work]
    pairs = sum(len(b) for b in work)
    print(f"{pairs:,} pairs in {len(work)} batches, traceback {args.traceback}")
    got = {}
    for rep in range(2):
        for order, batch_list in orders.items():
            for staged in (False, True):
                place = Placement(args.sequences, None, args.traceback, staged=staged)
                t = time.perf_counter()
                for b in batch_list:
                    place.add(b)
                added = time.perf_counter() - t
                out = place.finish()
                finished = time.perf_counter() - t - added
                got[order, staged] = out
                print(f"run {rep} {order:8} {'staged ' if staged else 'columns'}: add "
                      f"{added:.3f} s ({pairs / added / 1e6:.0f} M pairs/s), finish "
                      f"{finished:.3f} s, together {added + finished:.3f} s")
    first = next(iter(got.values()))
    same = all(np.array_equal(getattr(first, f), getattr(other, f))
               for other in got.values() for f in first.__dataclass_fields__)
    print("same columns every way:", same)


if __name__ == "__main__":
    main()
