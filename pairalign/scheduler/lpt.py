"""LPT (longest processing time first) over workers, and the shared work queue.

The paper's task manager: windows sorted by estimated cost (their DP cells),
largest first; each worker (one per GPU, or the CPU) takes the next window as
soon as it falls idle. For ``m`` workers the makespan is at most
``(4/3 - 1/(3m))`` times the optimum (Graham 1969). Here the windows go
interleaved instead (:data:`INTERLEAVE`): in any order, workers that take
the next window as they fall idle end within ``(1 - 1/m)`` times the last
window's cost of ``total / m`` (Graham 1966), and interleaved, the last
windows are the middle-sized ones.

Windows are cut first by the engine (width from memory, see
:func:`pairalign.scheduler.windows.plan_windows`); here they are

- split further so that several workers get enough pieces to balance
  (:func:`balance`): no piece costs more than ``total / (granularity x workers)``,
  and none falls under ``min_pairs`` pairs (a GPU needs many pairs per launch);
- ordered: *parents* (the planned windows) by cost, largest first; a parent's
  pieces by cost, largest first, right after it (:func:`lpt_order`); the
  parents interleaved, largest, smallest, second largest, ...
  (:data:`INTERLEAVE`, except for an ordered stream), so that the host's
  work on the results of the many small pairs hides behind the device's on
  large ones;
- handed out by a :class:`WorkQueue`, in that order, to whichever worker asks.
  Work put back after a failure (a window split, or to be retried alone) keeps
  its parent's rank, so it runs before any later parent.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import threading
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from .windows import BLOCK, Window, split_window


# ---------------------------------------------------------------------------------
# LPT order and assignment
# ---------------------------------------------------------------------------------


def lpt_order(costs: Sequence[float]) -> list[int]:
    """Indices of ``costs``, largest first; ties keep their order (deterministic)."""
    return sorted(range(len(costs)), key=lambda k: (-costs[k], k))


#: Run the windows in :func:`interleaved` LPT order instead of largest
#: first, on any number of workers. A window's host work (its results'
#: download and placing) follows its pairs, its device work its cells;
#: largest first, the windows of the shortest sequences, many pairs of few
#: cells, come last, where the host's work on one outlasts the device's on
#: the next and nothing is left to hide the last ones behind. Interleaved,
#: each follows a large window. One H100, 1e13 cells score-only, one
#: process, best of 3: local 2.290 to 2.218 s, global 1.937 to 1.870,
#: semiglobal 2.412 to 2.279 (the GPU's span now its busy time); local with
#: traceback 5.729 and 5.754 s, global 9.026 and 8.879 s (level); NOTES.md,
#: v37. Several GPUs: largest first, the last windows come from every GPU
#: at once, each in a few milliseconds, faster than the host places their
#: pairs in input order, and the GPUs wait for it; interleaved, the last
#: are the middle-sized windows, whose makespan costs LPT's bound a window
#: of ~60 ms at most. Two H200s, 1e14 cells placed: 11.35 / 11.38 s against
#: 11.49 / 12.17 s; NOTES.md, v49. Not for an ordered stream
#: (``iter_windows(ordered=True)``), whose batches come largest first on any
#: number of workers.
INTERLEAVE = True


def interleaved(order: Sequence[int]) -> list[int]:
    """``order``'s first, its last, its second, its second last, and so on.

    >>> interleaved([5, 4, 3, 2, 1])
    [5, 1, 4, 2, 3]
    """
    out = []
    lo, hi = 0, len(order) - 1
    while lo <= hi:
        out.append(order[lo])
        if lo < hi:
            out.append(order[hi])
        lo, hi = lo + 1, hi - 1
    return out


@dataclass
class Assignment:
    """Which worker runs which job under list scheduling, and the loads."""

    workers: list[list[int]]
    loads: list[float]

    @property
    def makespan(self) -> float:
        return max(self.loads) if self.loads else 0.0


def lpt_assign(costs: Sequence[float], n_workers: int, order: Iterable[int] | None = None,
               ready: Sequence[float] | None = None) -> Assignment:
    """Simulate workers taking jobs in ``order`` (LPT order by default) as they fall idle.

    Each job goes to the worker that is idle first (least loaded; ties to the
    lowest worker index), which is what :class:`WorkQueue` does at run time when
    the costs are exact. ``ready`` gives each worker's start time (default 0).
    """
    if n_workers < 1:
        raise ValueError("need at least one worker")
    order = lpt_order(costs) if order is None else list(order)
    loads = [0.0] * n_workers if ready is None else [float(x) for x in ready]
    heap = [(loads[w], w) for w in range(n_workers)]
    heapq.heapify(heap)
    workers: list[list[int]] = [[] for _ in range(n_workers)]
    for k in order:
        load, w = heapq.heappop(heap)
        workers[w].append(k)
        loads[w] = load + float(costs[k])
        heapq.heappush(heap, (loads[w], w))
    return Assignment(workers, loads)


def lpt_bound(n_workers: int) -> float:
    """Graham's bound on LPT's makespan over the optimum: ``4/3 - 1/(3m)``."""
    return 4 / 3 - 1 / (3 * n_workers)


# ---------------------------------------------------------------------------------
# balancing: pieces small enough for several workers
# ---------------------------------------------------------------------------------


#: The share of the work, last in LPT order, whose pieces :func:`balance`
#: quarters once more: the workers' last windows, which decide how close
#: together they end. Their cost in cells can be a quarter of their time
#: (four H200s, 3e13 cells score-only: a window of 4.2 M pairs of 80-163
#: residues, 6.2e10 cells, ran 0.11-0.15 s, last on its GPU, which ended
#: 0.12 s after the others: most of its pairs are under the GPU's wide
#: threshold, one a thread, at a tenth of the warps' rate). Off: quartered,
#: the GPUs end within 0.02 s of each other, but the small windows keep them
#: busy less (83-91% against 86-98%), and the runs are slower (1/16: 1.91 s
#: with a checksum, 1.99-2.05 s placed; 1/32: 1.88, 1.96-1.99; none: 1.82,
#: 1.86-1.93; NOTES.md, v34). Since the wide threshold fell to 512 steps
#: (v35) such windows fill at 2,300-3,400 GCUPS alone, not a tenth of the
#: average, and unquartered the four GPUs end within 0.01-0.04 s of each
#: other (v36); the quartering has not been measured again since.
TAIL_SHARE = 0.0


def balance(windows: Sequence[Window], rows: np.ndarray, cols: np.ndarray, n_workers: int,
            min_pairs: int = BLOCK * BLOCK, granularity: int = 8,
            tail: float | None = None) -> list[list[Window]]:
    """Pieces of each window, such that several workers can share the work evenly.

    With one worker every window is its own single piece. Otherwise the largest
    piece is quartered (:func:`split_window`) while it costs more than
    ``total / (granularity * n_workers)`` and holds at least ``4 * min_pairs``
    pairs; then the pieces that come last in LPT order, ``tail`` of the total
    cost (:data:`TAIL_SHARE` by default), are quartered once more where they
    hold at least ``4 * min_pairs`` pairs, so that the last windows of each
    worker are short whatever their cost misjudges. Deterministic: the same
    windows, workers and limits give the same pieces.
    """
    tail = TAIL_SHARE if tail is None else tail
    pieces = [[w] for w in windows]
    if n_workers <= 1 or not windows:
        return pieces
    total = sum(w.cost for w in windows)
    target = total / (granularity * n_workers)
    # a max-heap of (cost, parent, seq) over pieces that may still be split
    heap = []
    counter = itertools.count()
    alive: dict[int, tuple[int, Window]] = {}
    for p, w in enumerate(windows):
        key = next(counter)
        alive[key] = (p, w)
        heap.append((-w.cost, key))
    heapq.heapify(heap)
    out: list[list[Window]] = [[] for _ in windows]
    while heap:
        neg, key = heapq.heappop(heap)
        p, w = alive.pop(key)
        if -neg <= target or not _quarterable(w, min_pairs):
            out[p].append(w)
            continue
        subs = split_window(w, rows, cols)
        if len(subs) <= 1:
            out[p].append(w)
            continue
        for sub in subs:
            k = next(counter)
            alive[k] = (p, sub)
            heapq.heappush(heap, (-sub.cost, k))
    for p in range(len(out)):
        out[p].sort(key=lambda w: (-w.cost, w.r0, w.c0))
    _quarter_tail(out, rows, cols, total * tail, min_pairs)
    return out


def _quarterable(w: Window, min_pairs: int) -> bool:
    """Whether :func:`balance` may quarter ``w``: it can be cut and holds at
    least ``4 * min_pairs`` pairs."""
    return w.splittable and w.pairs >= 4 * min_pairs


def _quarter_tail(pieces: list[list[Window]], rows, cols, share: float,
                  min_pairs: int) -> None:
    """Quarter (once) the pieces last in LPT order (parents in order, each
    parent's pieces in order) that make up ``share`` of the cost, in place."""
    left = share
    for p in range(len(pieces) - 1, -1, -1):
        if left <= 0:
            return
        cut = []
        for w in pieces[p]:
            cut.extend(split_window(w, rows, cols) if _quarterable(w, min_pairs) else [w])
        left -= sum(w.cost for w in pieces[p])
        cut.sort(key=lambda w: (-w.cost, w.r0, w.c0))
        pieces[p] = cut


# ---------------------------------------------------------------------------------
# the work queue
# ---------------------------------------------------------------------------------


@dataclass
class Item:
    """One window to run. ``key`` orders the queue: ``(parent rank, piece rank, ...)``."""

    key: tuple
    window: Window
    parent: int
    #: run alone (not pipelined with others): it was in flight when a worker failed
    solo: bool = False
    #: workers on which it failed, unsplittable: let another one try
    avoid: frozenset = frozenset()
    #: failures it (and the windows it was cut from) met
    failures: int = 0
    #: only the CPU fallback worker may take it
    cpu: bool = False
    seq: int = field(default=0, compare=False)

    def __lt__(self, other: "Item") -> bool:
        return (self.key, self.seq) < (other.key, other.seq)


class Cancelled(Exception):
    """The run was stopped (an error elsewhere, or the consumer went away)."""


class WorkQueue:
    """Items in LPT order, taken by workers as they fall idle; thread-safe.

    ``get`` blocks until an item this worker may take is there, or until all
    work is done (``None``). An item counts as outstanding from ``put`` until
    the worker that took it calls ``done`` (after putting its replacements back,
    if any), so the queue knows when nothing more can come.

    ``ahead`` (optional) holds back parents more than ``ahead`` ranks past the
    oldest parent the consumer still waits for (``release``): an ordered
    consumer's reorder buffer then stays bounded.
    """

    def __init__(self, ahead: int | None = None) -> None:
        self._items: list[Item] = []
        self._cv = threading.Condition()
        self._outstanding = 0
        self._seq = itertools.count()
        self.ahead = ahead
        self.released = 0  # parents below this rank have been consumed
        self.cancelled: BaseException | None = None
        self.workers_alive: set[str] = set()

    # producers ------------------------------------------------------------------
    def put(self, item: Item) -> None:
        with self._cv:
            item.seq = next(self._seq)
            bisect.insort(self._items, item)
            self._outstanding += 1
            self._cv.notify_all()

    def hold(self) -> None:
        """One more outstanding piece of work until :meth:`done`: no worker's
        ``get`` ends meanwhile (work may still be put back)."""
        with self._cv:
            self._outstanding += 1

    def done(self, n: int = 1) -> None:
        with self._cv:
            self._outstanding -= n
            self._cv.notify_all()

    def release(self, parent: int) -> None:
        """The consumer has everything below ``parent``: later parents may start."""
        with self._cv:
            self.released = max(self.released, parent)
            self._cv.notify_all()

    def cancel(self, exc: BaseException | None = None) -> None:
        with self._cv:
            if self.cancelled is None:
                self.cancelled = exc or Cancelled("cancelled")
            self._cv.notify_all()

    # consumers ------------------------------------------------------------------
    def _eligible(self, worker: str, cpu: bool) -> int | None:
        for k, it in enumerate(self._items):
            if it.cpu != cpu or worker in it.avoid:
                continue
            if self.ahead is not None and it.parent >= self.released + self.ahead:
                return None  # later items are later parents: none may start yet
            return k
        return None

    def try_get(self, worker: str, cpu: bool = False, allow_solo: bool = True) -> Item | None:
        """The next item for ``worker``, or ``None`` if none may be taken right now."""
        with self._cv:
            if self.cancelled is not None:
                return None
            k = self._eligible(worker, cpu)
            if k is None or (self._items[k].solo and not allow_solo):
                return None
            return self._items.pop(k)

    def get(self, worker: str, cpu: bool = False, timeout: float | None = None) -> Item | None:
        """Block until an item for ``worker``; ``None`` once all work is done.

        Raises :class:`Cancelled` (or the cancelling error's class) when the run
        was cancelled.
        """
        with self._cv:
            while True:
                if self.cancelled is not None:
                    raise Cancelled(str(self.cancelled))
                k = self._eligible(worker, cpu)
                if k is not None:
                    return self._items.pop(k)
                if self._outstanding == 0:
                    return None
                self._cv.wait(timeout if timeout is not None else 0.5)

    @property
    def outstanding(self) -> int:
        with self._cv:
            return self._outstanding

    def pending(self) -> list[Item]:
        with self._cv:
            return list(self._items)

    def reroute(self, live: set) -> int:
        """Items that every worker in ``live`` has failed on go to the CPU fallback."""
        with self._cv:
            n = 0
            for it in self._items:
                if not it.cpu and it.avoid and not (live - it.avoid):
                    it.cpu = True
                    n += 1
            if n:
                self._cv.notify_all()
            return n

    def redirect_all_to_cpu(self) -> None:
        """No device worker is left: every queued item goes to the CPU fallback."""
        with self._cv:
            for it in self._items:
                it.cpu = True
            self._cv.notify_all()
