"""A model of a run's end on several GPUs: windows in an order, one consumer.

    python benchmarks/order_model.py --cells 1e14
    python benchmarks/order_model.py --cells 3e13 --gpus 2,4 --rate 4.5e12 --per-pair 2.9e-9

No GPU needed. The workload is ``scaling.py``'s (proteins sampled from the
proteome), cut into the planned windows of ``--width`` sequences. Each GPU
takes the next window of the order when it falls idle and spends
``cells / rate + overhead`` on it; its result then goes to a queue of
``max(8, 2 x GPUs + 2)`` results (the engine's), waiting while the queue is
full, and the consumer places it in input order in ``pairs x per-pair``
seconds. The windows are the engine's: planned, ranked, interleaved or not,
and cut for several GPUs by :func:`~pairalign.scheduler.lpt.balance`, each
parent's pieces right after it. Printed per order and GPU count: when the last GPU ends, when the
consumer ends, the seconds the GPUs waited on the full queue, and the GPUs'
end with a consumer that takes no time (LPT's makespan alone).

The defaults are an H200's score-only local rate and the placing consumer's
rate measured at 1e14 cells on four H200s (``scaling.py --consumer place``,
v47-v49: 2.7 s for 939 M pairs). Memory does not cut windows here (the
engine fits each to the device's budget; at ``--width`` 2,048 score-only
windows fit an H100).
"""

from __future__ import annotations

import argparse
import heapq

import numpy as np
from workloads import sampled_proteins  # puts the repository on the path

from pairalign.engine import MIN_RESULTS_QUEUED  # noqa: E402
from pairalign.scheduler.lpt import balance, interleaved, lpt_order  # noqa: E402
from pairalign.scheduler.windows import plan_windows  # noqa: E402


def pieces_in_order(windows, order, lengths, gpus: int):
    """The windows the engine's queue hands out: the parents in ``order``,
    each followed by its pieces (:func:`balance` for ``gpus`` workers)."""
    parents = [windows[k] for k in order]
    return [w for ws in balance(parents, lengths, lengths, gpus) for w in ws]


def simulate(order, seconds, pairs, gpus: int, depth: int, per_pair: float):
    """(last GPU's end, consumer's end, seconds the GPUs waited to queue a
    result) for windows ``order`` (indices of ``seconds`` and ``pairs``)."""
    events = []
    it = iter(order)
    for k in range(gpus):
        w = next(it, None)
        if w is not None:
            heapq.heappush(events, (seconds[w], k, w))
    queued: list[int] = []  # windows in the order their results were queued
    ends: list[float] = []  # the consumer's end of each
    waited = gpu_end = 0.0
    while events:
        t, k, w = heapq.heappop(events)
        put = t
        if len(queued) >= depth:
            # room once the consumer has started on the result ``depth`` back
            j = len(queued) - depth
            put = max(t, ends[j] - pairs[queued[j]] * per_pair)
        waited += put - t
        queued.append(w)
        ends.append(max(put, ends[-1] if ends else 0.0) + pairs[w] * per_pair)
        gpu_end = max(gpu_end, t)
        nxt = next(it, None)
        if nxt is not None:
            heapq.heappush(events, (put + seconds[nxt], k, nxt))
    return gpu_end, ends[-1] if ends else 0.0, waited


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=float, default=1e14)
    ap.add_argument("--gpus", default="1,2,4")
    ap.add_argument("--width", type=int, default=2048, help="sequences a window side")
    ap.add_argument("--rate", type=float, default=4.5e12, help="cells a second a GPU")
    ap.add_argument("--overhead", type=float, default=0.5e-3, help="seconds a window")
    ap.add_argument("--per-pair", type=float, default=2.9e-9,
                    help="the consumer's seconds a pair")
    args = ap.parse_args()

    lengths = np.sort([len(s) for s in sampled_proteins(args.cells)])[::-1].copy()
    windows = plan_windows(lengths, None, args.width)
    total = sum(w.cost for w in windows)
    print(f"{len(lengths):,} proteins, {len(windows)} planned windows, {total:.4g} cells, "
          f"{sum(w.pairs for w in windows):,} pairs")
    largest_first = lpt_order([w.cost for w in windows])
    print(f"{'order':12} {'GPUs':>4} {'windows':>7} {'GPUs end':>9} {'consumer end':>13} "
          f"{'waited':>7} {'no consumer':>12}")
    for name, order in (("largest", largest_first), ("interleaved", interleaved(largest_first))):
        for n in (int(x) for x in args.gpus.split(",")):
            run = pieces_in_order(windows, order, lengths, n)
            seconds = np.array([w.cost for w in run], float) / args.rate + args.overhead
            pairs = np.array([w.pairs for w in run], float)
            depth = max(MIN_RESULTS_QUEUED, 2 * n + 2)
            every = range(len(run))
            g, c, w = simulate(every, seconds, pairs, n, depth, args.per_pair)
            g0, _, _ = simulate(every, seconds, pairs, n, depth, 0.0)
            print(f"{name:12} {n:>4} {len(run):>7} {g:9.2f} {c:13.2f} {w:7.2f} {g0:12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
