"""Run a job's windows on one or more workers and gather the pairs.

The run, in order:

1. **Windows.** The pair triangle (or rectangle) is cut into windows of ``W x W``
   sorted positions, ``W`` from the memory budget (:func:`window_width`).
2. **LPT.** Windows are ranked by cost (DP cells), largest first; with several
   workers, large ones are cut further so that the workers can balance
   (:func:`pairalign.scheduler.lpt.balance`); the workers take them
   interleaved, largest, smallest, second largest, ...
3. **Workers.** One thread per worker: per GPU a backend of its own
   (``GPUBackend(devices=[d])``, its own prepared state: sequences on that
   device), or one CPU backend whose numba kernels use the cores inside each
   window. A worker falling idle takes the next window of the shared queue; a
   GPU worker feeds its windows to the backend's pipelined ``run_windows``
   (several windows in flight on streams). A window too large for a device's
   free memory is split and the pieces put back; a block of 16 x 16 pairs that
   still does not fit goes to a CPU fallback worker.
4. **Failures.** A window whose run raises (out of memory, any CUDA error) is
   put back: the windows in flight with it run again alone; one that fails
   alone is quartered (the quarters go to any worker), and one that cannot be
   split is tried on another worker, then on the CPU. A worker failing three
   times in a row with errors other than out-of-memory retires (its device is
   taken as lost), and so does one whose device no longer responds after an
   error (a sticky CUDA error), at once. Every pair is counted:
   nothing is lost or given twice, or the run raises. Where windows left
   their operations on the retired worker's device (``device_ops``), those
   come to the host, or, where the device lost them, the windows run again
   elsewhere: a placement then gets their pairs twice, the same columns at
   the same ranks, and drops the lost operations. A device that kept
   operations is probed once the last batch is in; where it no longer
   responds, the windows whose operations it cannot give run again on the
   CPU fallback.
5. **Results.** Workers hand results through a bounded queue to the consumer
   (:func:`iter_windows`), which maps them to input indices; :func:`run_job`
   gathers them in input order.

Output is identical whatever the number of workers, the order in which they
finish, or the failures met: every pair is computed the same way in any window
(the longer sequence as the query), and :func:`run_job` sorts pairs by input
order.
"""

from __future__ import annotations

import contextlib
import math
import queue as _queue
import threading
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Protocol

import numpy as np

from .errors import CPUFallbackWarning, DeviceError, DeviceErrorWarning, OptionError
from .job import Job
from .pairs import OP_BYTES, PAIR_BYTES, PairBatch, Placement, pair_bytes
from .scheduler import cost as _cost
from .scheduler.devices import (bind_thread, is_out_of_memory, label as _label,
                                min_window_pairs, recover, responds, worker_backends)
from .scheduler import lpt as _lpt
from .scheduler.lpt import (Cancelled, Item, WorkQueue, balance, interleaved, lpt_assign,
                             lpt_order)
from .scheduler.windows import (BLOCK, Window, halve_window, halves, plan_windows,
                                split_window, window_pairs)

# The plan lives in its own module and is re-exported here; it defines the
# default memory budget for one run's working buffers (--max-memory).
from .scheduler.plan import (DEFAULT_MAX_MEMORY, DevicePlan, Plan, PlanWindow,  # noqa: E402
                             format_plan, format_run_report, plan)

#: Failures in a row after which a worker (its device) is given up.
RETIRE_AFTER = 3
#: A window whose size bound (a backend's ``window_bytes_bound``) exceeds its
#: budget this many times over is split without its exact size, whose plan
#: would cost the host more than the split: the bound was 1.04-1.72 times the
#: exact size on the 1e13-cell job with traceback, where 57 of the 133 plans
#: made before the run (0.17 s on a two-core host) were of such windows, all
#: split after them. Larger factors plan more; a smaller one may split a
#: window that would have fit (its pieces still run).
BOUND_SPLIT_FACTOR = 2.0
#: A run leaves the windows whose bound is between one and BOUND_SPLIT_FACTOR
#: budgets whole until its worker checks each before its launch
#: (``_LocalRun._fits``, which plans it exactly and splits it there if it
#: must), instead of planning them exactly before the first launch: 85 plans,
#: most of ``prepare_work``'s 0.13-0.16 s at 1e13 cells with traceback on the
#: H100 host, now made by the launching thread while earlier windows run.
#: gpu.py's first runs of local with traceback at 1e13 cells, a process each:
#: 4.90-4.97 s on against 4.93-5.00 s off (within the spread; NOTES.md, v44).
DEFER_EXACT_FIT = True
#: A window over its device's budget is halved across its longer side (a
#: triangle's diagonal window quartered), instead of quartered, where it is
#: fitted to the budget (``fit_window``, ``_LocalRun._fits``; a window that
#: failed is still quartered). Counted on the CPU (``benchmarks/
#: split_model.py``, local with traceback, windows of 1,024): at 1e13 cells
#: and the H100's 33.8 GB slots 411 windows run quartered (as the H100 ran:
#: 411) against 288 halved; at 3e13 cells and 56 GB slots 760 against 552,
#: each filling 0.6 of its slot against 0.4 (median). Fewer windows, less of
#: the host's Python a window, which bounds four GPUs with traceback
#: (NOTES.md, v53). On an H100, local with traceback at 1e13 cells, same
#: process, best of four: 4.43 s quartered against 4.37 s halved (the walk
#: 2.35 against 2.16 s); on four H200s at 3e13 cells, processes
#: alternating, 5.24 and 5.30 s against 6.70 and 5.86 s (521-528 windows
#: against 716-720); results equal (NOTES.md, v54).
SPLIT_HALVES = True
#: The fewest results the queue between workers and the consumer holds. The
#: consumer's first batch takes longest (the placement's pages first touched:
#: 0.136 s at 1e13 cells with traceback, on the H100's host), while one GPU
#: ends a window every 15-40 ms: at 4 (two a worker and two), that GPU's
#: thread waited 46 ms at the run's start with the next window unlaunched.
MIN_RESULTS_QUEUED = 8
#: Failures one window (with the windows it was cut from) may meet before the run fails.
MAX_WINDOW_FAILURES = 8

Progress = Callable[[int, int], None]


class Backend(Protocol):
    """What the engine runs windows on.

    A window's batch holds the sorted positions of its pairs (``job.rows``
    and ``job.col_set``), or, for a backend whose ``input_indices`` is true,
    input indices with every all-vs-all pair seen from its lower index (what
    :func:`to_input` makes of the former).
    """

    name: str

    def describe(self) -> str: ...
    def prepare(self, job: Job) -> object: ...
    def run_window(self, job: Job, state: object, w: Window) -> PairBatch: ...
    def task_memory(self, job: Job) -> int: ...
    def fit_memory(self, job: Job, budget: int) -> int: ...


_MEMORY_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_memory(text: str | int) -> int:
    """Bytes from ``4G``, ``512M``, ``100000`` and the like.

    Raises
    ------
    OptionError
        For anything but a positive, finite size.
    """
    if isinstance(text, int) and not isinstance(text, bool):
        value: float = text
    else:
        s = str(text).strip().upper().removesuffix("B").removesuffix("I")
        num, unit = (s[:-1], s[-1]) if s and s[-1] in _MEMORY_UNITS else (s, "")
        try:
            value = float(num) * _MEMORY_UNITS[unit]
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise OptionError(f"bad memory size {text!r}: expected e.g. 4G, 512M")
    if value <= 0:
        raise OptionError(f"memory size must be positive, got {text!r}")
    return int(value)


def format_memory(n: int) -> str:
    """A size in bytes as text, in the largest unit it reaches (3 significant
    digits): ``format_memory(3 << 19)`` is ``'1.5 MiB'``."""
    for unit in ("T", "G", "M", "K"):
        if n >= _MEMORY_UNITS[unit]:
            return f"{n / _MEMORY_UNITS[unit]:.3g} {unit}iB"
    return f"{n} bytes"


def window_width(job: Job, backend: Backend, max_memory: int,
                 width: int | None = None, workers: int = 1) -> int:
    """The window width ``W``: a multiple of 16 whose buffers fit the budget
    (a device backend's own choice, told how many ``workers`` share the job)."""
    if backend.task_memory(job) > max_memory:
        n, m = int(job.rows.lengths[0]), int(job.col_set.lengths[0])
        raise OptionError(
            f"the memory budget (--max-memory, max_memory) of {format_memory(max_memory)} "
            f"is too small for sequences of {n} x {m}"
            f"{' with traceback' if job.traceback else ''}: it needs "
            f"{format_memory(backend.task_memory(job))}"
            f"{' (or drop the traceback)' if job.traceback else ''}")
    fixed = backend.fit_memory(job, max_memory)
    if width is not None:
        if width <= 0 or width % BLOCK:
            raise OptionError(f"window size must be a positive multiple of {BLOCK}, got {width}")
        return width
    if hasattr(backend, "window_width"):
        return backend.window_width(job, max_memory, workers=workers)
    per_pair = pair_bytes(job.traceback, int(job.rows.lengths[0]), int(job.col_set.lengths[0]))
    w = int(math.sqrt(max(max_memory - fixed, 0) / 2 / per_pair))
    return max(BLOCK, min(256, w // BLOCK * BLOCK))


# ---------------------------------------------------------------------------------
# orientation and order
# ---------------------------------------------------------------------------------


def to_input(job: Job, batch: PairBatch, own: bool = False) -> PairBatch:
    """Map sorted positions to input indices; all-vs-all pairs seen from the
    lower index. ``own``: ``batch`` is a window's, held by no one else (its
    operation codes are reused)."""
    with _NUMBA:
        return batch.oriented(job.rows.order, job.col_set.order, job.triangle, own_ops=own)


def in_input(job: Job, backend, batch: PairBatch) -> PairBatch:
    """A batch that ``backend`` made for a window, in input indices (see
    :class:`Backend`): oriented by :func:`to_input` unless the backend did it."""
    if getattr(backend, "input_indices", False):
        return batch
    return to_input(job, batch, own=True)


def pair_rank(job: Job, batch: PairBatch) -> np.ndarray:
    """Each pair's position in input order (row-major; upper triangle for all-vs-all)."""
    n = np.int64(len(job.rows))
    q, t = batch.query.astype(np.int64), batch.target.astype(np.int64)
    if job.triangle:
        return q * (2 * n - q - 1) // 2 + (t - q - 1)
    return q * np.int64(len(job.cols)) + t


def orient(job: Job, batch: PairBatch) -> PairBatch:
    """Map sorted positions to input indices and sort pairs in input order.

    ``batch`` must hold every pair of the job exactly once.
    """
    return _in_input_order(job, to_input(job, batch))


def _in_input_order(job: Job, batch: PairBatch) -> PairBatch:
    pos = pair_rank(job, batch)
    order = np.empty(len(batch), np.int64)
    order[pos] = np.arange(len(batch))  # every pair is present once: a permutation
    with _NUMBA:
        return batch.take(order)


#: A run of several device workers leaves each window's operations on its
#: device, as one worker does, and the placement copies them device to device
#: onto one of them at the end to be placed there at once
#: (:meth:`~pairalign.pairs.Placement.finish`), instead of every window's
#: coming to the host and the host scattering them all after the last batch
#: (two H200s at 1e13 cells, local with traceback: 2.39-2.56 s against
#: 2.83-3.00 s; 6.98 against 8.64 s at 3e13; NOTES.md, v51). As with one
#: GPU, a worker that retires gives what its device kept to
#: :meth:`_LocalRun._salvage` (to the host, or its windows run again).
SEVERAL_DEVICE_OPS = True


#: Placements stage their columns as a row a pair (``Placement(staged=True)``),
#: given as views of the rows at the end: one or two cache lines a pair's
#: scattered stores instead of one a column. Four H200s, score-only at 3e13
#: cells (``benchmarks/scaling.py --consumer place,place-staged``): 1.99 s
#: staged against 2.37 s (NOTES.md, v34). One GPU was left unstaged then,
#: when the staged rows were copied into columns at the end (7.31 against
#: 7.17 s); as views, one H100 at 1e14 cells score-only: 22.33 s staged
#: against 24.96 s, the consumer 3.73 s against 12.87 s (unstaged, an
#: H200's one worker waited 1.79 s on it); at 1e13 cells level (2.26
#: against 2.27 s; with traceback 4.57-4.63 against 4.61-4.71 s; NOTES.md,
#: v53).
#: ``None``: staged where several workers share the run only (as before
#: v53). True or False: always, never.
STAGED_PLACEMENT: bool | None = True
#: A placement writes the columns known from the ranks alone (the indices,
#: and the -1 columns without traceback: 16-20 bytes a pair) on a thread of
#: its own beside the placing (``Placement(guard=...)``), instead of before
#: its first batch while the workers wait. ``None``: beside where the
#: placement is staged.
#: Four H200s, 3e13 cells score-only, staged, one process: 1.97 s beside
#: against 2.07 and 2.14 s before (the workers blocked 0.01-0.05 s against
#: 0.26-0.44 s). One H100, global with traceback at 1e13 cells, not staged
#: (the known pass 0.04 s): 9.48 and 9.03 s beside against 9.08 and 8.84 s
#: (NOTES.md, v34). True or False: always, never.
KNOWN_COLUMNS_BESIDE: bool | None = None


def staged_placement(workers: int) -> bool:
    """Whether a placement for a run of ``workers`` workers stages its
    columns (:data:`STAGED_PLACEMENT`)."""
    return workers > 1 if STAGED_PLACEMENT is None else bool(STAGED_PLACEMENT)


def placement(job: Job, workers: int = 1) -> Placement:
    """An empty :class:`~pairalign.pairs.Placement` for the pairs of ``job``,
    for a run of ``workers`` workers (staged as :func:`staged_placement`
    says; its known columns beside the placing as
    :data:`KNOWN_COLUMNS_BESIDE` says, by default where staged)."""
    staged = staged_placement(workers)
    beside = staged if KNOWN_COLUMNS_BESIDE is None else KNOWN_COLUMNS_BESIDE
    return Placement(len(job.rows), None if job.triangle else len(job.cols), job.traceback,
                     staged=staged, guard=_NUMBA if beside else None)


def assemble(job: Job, batches: Iterable[PairBatch], spent: dict | None = None,
             workers: int = 1) -> PairBatch:
    """Every pair of ``job`` in input order, from batches (input indices, as
    :func:`iter_windows` yields them) that hold each pair once, for a run
    of ``workers`` workers (:func:`placement`).

    Each batch's columns are put in place as it comes, while later windows
    run; the operations once all are in. ``spent`` receives ``order`` (seconds
    spent placing), ``finish`` (the clock when the last batch came) and
    ``placement`` (the placement's own seconds by part:
    :attr:`~pairalign.pairs.Placement.spent`).
    """
    place = placement(job, workers)
    placing = 0.0
    for batch in batches:
        t = time.perf_counter()
        with _NUMBA:
            place.add(batch)
        placing += time.perf_counter() - t
    finish = time.perf_counter()
    with _NUMBA:
        out = place.finish()
    if spent is not None:
        spent["order"] = placing + time.perf_counter() - finish
        spent["finish"] = finish
        spent["placement"] = dict(place.spent)
    return out


def run_workers(backend, client=None) -> int:
    """How many workers a local run of ``backend`` has (one where ``client``
    runs it: its results come to one consumer as a local run's do)."""
    return 1 if client is not None else len(worker_backends(backend))


def _sorted_by_rank(job: Job, batch: PairBatch) -> PairBatch:
    """A batch (some of the pairs) sorted by input order."""
    order = np.argsort(pair_rank(job, batch), kind="stable")
    with _NUMBA:
        return batch.take(order)


class _NumbaGuard:
    """Serialises numba parallel regions where the threading layer is not thread-safe.

    numba's ``workqueue`` layer aborts when two threads launch parallel regions
    at once; ``omp`` and ``tbb`` do not. The guard locks only under ``workqueue``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._needed: bool | None = None
        #: called once before numba's first dispatch (the command line's
        #: :func:`~pairalign.cli_options.skip_blas_probe`)
        self.prepare: Callable[[], None] | None = None

    def needed(self) -> bool:
        """Whether parallel regions must take turns; the first call starts
        numba's threading layer (once, whichever threads ask)."""
        if self._needed is None:
            with self._starting:
                if self._needed is None:
                    try:
                        if self.prepare is not None:
                            self.prepare()
                        import numba

                        PairBatch.empty().take(np.zeros(0, np.int64))  # starts the layer
                        self._needed = numba.threading_layer() == "workqueue"
                    except Exception:
                        self._needed = True
        return self._needed

    def start_soon(self, then: Callable[[], None] | None = None) -> None:
        """Start numba (:meth:`needed`) on a thread now, unless it has begun;
        then call ``then`` on that thread (also where numba had started).

        A GPU run calls this as its windows start: numba's start holds the
        GIL for ~0.5 s, which the GPU's windows overlap, so that their
        results find it ready. Waiting for the first results to start it
        put that start after the GPU's first window (the proteome from the
        command line on the H100: 1.9 s against 2.1 s, median of five)."""
        if then is None and (self._needed is not None or self._starting.locked()):
            return

        def start() -> None:
            self.needed()
            if then is not None:
                then()
        threading.Thread(target=start, name="pairalign-numba-start", daemon=True).start()

    def __enter__(self):
        if self.needed():
            self._lock.acquire()
        saved = _LIMITS.__dict__.setdefault("saved", [])
        n = consumer_threads()
        own = None
        if n is not None:
            import numba

            own = numba.get_num_threads()
            if n < own:
                numba.set_num_threads(n)
            else:
                own = None
        saved.append(own)
        return self

    def __exit__(self, *exc):
        own = _LIMITS.saved.pop()
        if own is not None:
            import numba

            numba.set_num_threads(own)
        if self._needed:
            self._lock.release()
        return False


_NUMBA = _NumbaGuard()

#: Per thread: the limits that runs consumed on it put on pairalign's own
#: numba passes there (``stack``, see :func:`consumer_limit`), and the
#: settings the passes in progress replaced (``saved``).
_LIMITS = threading.local()


def consumer_threads() -> int | None:
    """The numba threads of pairalign's passes on this thread (placing,
    ordering: every pass under ``_NUMBA``), the least of the limits of the
    runs consumed here, or None for numba's setting."""
    values = [e[0] for e in getattr(_LIMITS, "stack", ()) if e[0] is not None]
    return min(values) if values else None


@contextlib.contextmanager
def consumer_limit(threads: int | None = None) -> Iterator[list]:
    """A limit on the numba threads of pairalign's passes on this thread for
    the ``with`` block: ``[threads]``, which the block may change (None: no
    limit). The thread's own numba setting, which the caller's code sees, is
    never changed between passes; a generator suspended in the block keeps
    its limit on pairalign's passes only."""
    entry = [threads]
    stack = _LIMITS.__dict__.setdefault("stack", [])
    stack.append(entry)
    try:
        yield entry
    finally:
        entry[0] = None  # (a generator closed on another thread leaves it there, spent)
        here = getattr(_LIMITS, "stack", [])
        for k in range(len(here) - 1, -1, -1):
            if here[k] is entry:
                del here[k]
                break

#: While several workers run, the consumer's numba passes (placing batches)
#: take its thread's share of the cores, ``1 / (workers + 1)``, instead of all
#: of them beside the workers' threads (each GPU backend copies downloads out
#: on threads of its own). Two H100s of one host, 32 cores, score-only at 1e13
#: cells, placing every batch (``benchmarks/scaling.py --consumer
#: place,place-all``): 1.34-1.43 s with its share (10 threads) against
#: 1.45-1.58 s with all 32; one GPU 2.63-2.72 s either way (NOTES.md, v29).
SHARE_CORES_WITH_WORKERS = True
#: The same with one worker: half the cores. With traceback its GPU backend
#: downloads each window's results and copies them out on threads of its
#: own while the consumer places the last ones, and numba's threads on
#: every core (spinning between passes) halved that copy's rate. One H100,
#: local with traceback at 1e13 cells, in one process: copy-out 1.66-1.72 s
#: to 0.63-0.71 s a run, wall 4.97-5.11 s to 4.71-4.79 s; score-only and
#: global with traceback unchanged (NOTES.md, v43).
SHARE_CORES_ONE_WORKER = True


def run_cap(backend, client=None) -> int | None:
    """The numba threads a local CPU run's consumer may use (its
    ``threads``), else None."""
    if client is not None:
        return None
    return _cpu_threads(list(backend) if isinstance(backend, (list, tuple)) else [backend])


def _cpu_threads(workers: list) -> int | None:
    """The threads a CPU run was given (its ``threads``), else None."""
    asked = [w.requested for w in workers if getattr(w, "name", "") == "cpu"
             and getattr(w, "requested", None)]
    return min(asked) if asked else None


def _consumer_share(workers: int, running: bool, cap: int | None) -> int | None:
    """The numba threads of the consumer's passes: its share of the cores,
    ``1 / (workers + 1)`` of its own setting, while workers run (with
    SHARE_CORES_WITH_WORKERS; one worker with SHARE_CORES_ONE_WORKER), and
    at most ``cap`` (a CPU run's ``threads``) always; None for no limit."""
    share = (SHARE_CORES_WITH_WORKERS and running
             and (workers > 1 or SHARE_CORES_ONE_WORKER and workers == 1))
    if not share:
        return cap
    _NUMBA.needed()  # numba started (a GPU run starts it beside its first windows)
    import numba

    n = max(1, numba.get_num_threads() // (workers + 1))
    return n if cap is None else min(n, cap)


# ---------------------------------------------------------------------------------
# fitting windows to a device
# ---------------------------------------------------------------------------------


def fit_window(job: Job, backend: Backend, w: Window, budget: int | None = None,
               by_bound: bool = False, defer: bool = False) -> list[tuple[Window, bool]]:
    """``w``, or its quarters (recursively) where the device cannot hold it.

    Each window comes with whether the backend can hold it; one that cannot,
    even as a single pair, goes to the CPU. With ``by_bound``, a
    window that the backend's ``window_bytes_bound`` (if it has one) puts
    within the budget fits without its exact size (planning it takes the
    backend longer): the caller checks it again before it runs; one that the
    bound puts over :data:`BOUND_SPLIT_FACTOR` budgets is split without it.
    With ``defer`` too, one between the two is left whole, for that check
    (which plans it exactly, and splits it there if it must) to decide.
    """
    if not hasattr(backend, "window_bytes"):
        return [(w, True)]
    if budget is None:
        budget = backend.device_budget()
    bound = getattr(backend, "window_bytes_bound", None) if by_bound else None
    size = bound(job, w) if bound is not None else None
    if size is not None and size <= (BOUND_SPLIT_FACTOR if defer else 1) * budget:
        return [(w, True)]
    if not (w.splittable and size is not None and size > BOUND_SPLIT_FACTOR * budget):
        if backend.window_bytes(job, w) <= budget:
            return [(w, True)]
        if not w.divisible:
            return [(w, False)]
    rows, cols = job.rows.lengths, job.col_set.lengths
    return [x for sub in split_to_fit(w, rows, cols)
            for x in fit_window(job, backend, sub, budget, by_bound, defer)]


def split_to_fit(w: Window, rows: np.ndarray, cols: np.ndarray) -> list[Window]:
    """The pieces of a window that its device's budget cannot hold: halves
    (:func:`~.scheduler.windows.halve_window`) with :data:`SPLIT_HALVES`,
    else quarters (:func:`~.scheduler.windows.split_window`); a block's
    halves, of any size, down to single pairs (long reads, whose 16 x 16
    pairs' traceback can outgrow a device)."""
    if not w.splittable:
        return halve_window(w, rows, cols, cut=halves)
    return (halve_window if SPLIT_HALVES else split_window)(w, rows, cols)


def window_memory(job: Job, backend: Backend, w: Window) -> int:
    """Bytes a window's working buffers take: on the device (GPU), or on the host.

    Host estimate (CPU): result columns, the operation slots reserved per pair
    (``len_i + len_j`` each, with traceback) and one traceback matrix per thread.
    """
    if hasattr(backend, "window_bytes"):
        return int(backend.window_bytes(job, w))
    rows, cols = job.rows.lengths, job.col_set.lengths
    total = w.pairs * PAIR_BYTES
    if job.traceback:
        if not w.triangle or w.c0 >= w.r1:
            ops = (w.c1 - w.c0) * int(rows[w.r0:w.r1].sum()) + (w.r1 - w.r0) * int(cols[w.c0:w.c1].sum())
        elif w.c0 == w.r0 and w.c1 == w.r1:
            ops = (w.r1 - w.r0 - 1) * int(rows[w.r0:w.r1].sum())
        else:
            pr, pc = window_pairs(w)
            ops = int(rows[pr].sum() + cols[pc].sum())
        total += ops * OP_BYTES
    threads = int(getattr(backend, "threads", 1) or 1)
    try:
        total += threads * int(backend.task_memory(job))
    except Exception:
        pass
    return total


# ---------------------------------------------------------------------------------
# the work of a run: windows, their LPT rank, pieces
# ---------------------------------------------------------------------------------


@dataclass
class Work:
    """What a run (or a plan) executes."""

    workers: list
    width: int
    #: planned windows, in the order they run: LPT rank order (largest first),
    #: interleaved (:data:`~.scheduler.lpt.INTERLEAVE`) unless ordered
    parents: list[Window]
    #: each parent's pieces: cut so that several workers balance, then (GPU) so
    #: that each fits the first device's memory
    pieces: list[list[Window]]
    #: pairs that the device cannot hold, even alone: (parent, window of one pair), for the CPU
    too_large: list[tuple[int, Window]] = field(default_factory=list)
    #: the device budget the pieces were fitted to (``None``: not fitted, no device)
    fit_budget: int | None = None

    @property
    def pairs(self) -> int:
        return sum(w.pairs for w in self.parents)

    @property
    def cells(self) -> int:
        return sum(w.cells for w in self.parents)

    def items(self) -> list[Item]:
        out = [Item(key=(p, k), window=w, parent=p)
               for p, ws in enumerate(self.pieces) for k, w in enumerate(ws)]
        out += [Item(key=(p, 1 << 30, k), window=w, parent=p, cpu=True)
                for k, (p, w) in enumerate(self.too_large)]
        return out


def reserve_slots(job: Job, backend) -> list:
    """Every worker's device memory for ``job``'s windows taken (``reserve``,
    on a thread of each device's own) while the windows are planned, as one
    GPU's is. Only the first worker fits the windows, so another one sized
    its slots by the windows it had seen at its first launch (with windows
    interleaved, the job's smallest) and grew them past each larger one,
    each growth waiting for its stream (``slot_grown`` counts them). Two
    H200s with traceback ran their GPUs 75% busy, with out-of-memory
    failures in some runs (benchmarks/NOTES.md, v50); reserved, none of
    v51's two-H200 runs grew a slot or failed a window. Returns the workers
    (:func:`~.scheduler.devices.worker_backends`), for the run to use the
    very ones that reserved."""
    workers = worker_backends(backend)
    for worker in workers:
        reserve = getattr(worker, "reserve", None)
        if reserve is not None:
            reserve(job)
    return workers


def prepare_work(job: Job, backend, max_memory: int = DEFAULT_MAX_MEMORY,
                 width: int | None = None, n_workers: int | None = None,
                 ordered: bool = False, defer: bool = False) -> Work:
    """Workers, window width, windows in LPT order (interleaved,
    :data:`~.scheduler.lpt.INTERLEAVE`, unless they are for an
    ``ordered`` stream, whose batches come largest first on any number of
    workers) and their pieces.

    For a device backend (one with ``window_bytes``), pieces are fitted here, as
    the engine always did, to the first device's budget while nothing runs on
    it; a worker whose device has at least that budget runs them unchecked,
    another checks (and splits) each window before launching it. A backend
    with ``window_bytes_bound`` has its pieces fitted by that bound (no
    plans before the first launch) and each checked before it launches;
    with ``defer`` (a run's, not a plan's), a piece that the bound puts
    within :data:`BOUND_SPLIT_FACTOR` budgets is left for that check to
    split where its exact size must (see :func:`fit_window`).
    """
    workers = worker_backends(backend)
    first = workers[0]
    n = len(workers) if n_workers is None else n_workers
    w = window_width(job, first, max_memory, width, workers=n)
    for other in workers[1:]:
        other.fit_memory(job, max_memory)
    col_lengths = None if job.triangle else job.cols.lengths
    windows = plan_windows(job.rows.lengths, col_lengths, w)
    order = lpt_order([x.cost for x in windows])
    if not ordered and _lpt.INTERLEAVE:
        order = interleaved(order)
    parents = [windows[k] for k in order]
    pieces = balance(parents, job.rows.lengths, job.col_set.lengths, n,
                     min_pairs=min_window_pairs(first))
    work = Work(workers, w, parents, pieces)
    if hasattr(first, "window_bytes") and parents:
        budget = int(first.device_budget())
        fitted: list[list[Window]] = []
        for p, ws in enumerate(pieces):
            mine = []
            for piece in ws:
                # by bound: plans are left to the launching thread (its
                # _fits checks each window), while earlier windows run
                for sub, fits in fit_window(job, first, piece, budget, by_bound=True,
                                            defer=defer):
                    if fits:
                        mine.append(sub)
                    else:
                        work.too_large.append((p, sub))
            fitted.append(mine)
        work.pieces = fitted
        work.fit_budget = budget
    return work


def _default_fallback(first) -> Callable | None:
    """A CPU backend for blocks that no device can hold (not for a CPU run)."""
    if getattr(first, "name", "") == "cpu":
        return None

    def make():
        from .kernels.cpu_backend import CPUBackend

        return CPUBackend()
    return make


# ---------------------------------------------------------------------------------
# the local scheduler: one thread per worker
# ---------------------------------------------------------------------------------


@dataclass
class WorkerStats:
    label: str
    description: str
    windows: int = 0
    pairs: int = 0
    cells: int = 0
    busy_s: float = 0.0
    failures: int = 0
    retired: bool = False
    predicted_s: float | None = None
    #: seconds its results waited for room in the queue to the consumer (a
    #: consumer behind the workers: meanwhile the worker launches nothing)
    blocked_s: float = 0.0
    #: per-window (pairs, cells, seconds) as measured
    measured: list = field(default_factory=list)
    backend_timings: dict | None = None
    #: clock (time.perf_counter) when its first and its last result came
    first_at: float | None = None
    last_at: float | None = None

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("label", "description", "windows", "pairs",
                                            "cells", "busy_s", "blocked_s", "failures",
                                            "retired", "predicted_s", "first_at", "last_at")}
        if self.backend_timings is not None:
            d["backend_timings"] = dict(self.backend_timings)
        d["measured"] = [list(m) for m in self.measured]
        return d


class _LocalRun:
    """Threads that take windows from a :class:`WorkQueue` and put results in a queue."""

    def __init__(self, job: Job, work: Work, max_memory: int, *, ordered: bool,
                 buffer: int | None, fallback, max_failures: int | None = None,
                 device_ops: bool = False) -> None:
        self.job = job
        # operations may stay on the devices for the consumer's placement
        self.device_ops = device_ops and (len(work.workers) == 1 or SEVERAL_DEVICE_OPS)
        self.work = work
        self.max_memory = max_memory
        n = len(work.workers)
        depth = max(MIN_RESULTS_QUEUED, 2 * n + 2)
        self.q = WorkQueue(ahead=max(4, 2 * n) if ordered else None)
        self.out: _queue.Queue = _queue.Queue(maxsize=buffer or depth)
        self.labels = [_label(b, k) for k, b in enumerate(work.workers)]
        if len(set(self.labels)) != n:
            self.labels = [f"{lab}#{k}" for k, lab in enumerate(self.labels)]
        self.stats = [WorkerStats(lab, _describe(b)) for lab, b in zip(self.labels, work.workers)]
        self.live = set(self.labels)
        self.alive_threads: set[str] = set()
        self.lock = threading.Lock()
        self.failures = 0
        #: failures other than out of memory, and the first one's message
        self.errors = 0
        self.first_error: str | None = None
        #: the first failure's message, out of memory included
        self.first_failure: str | None = None
        self.retries = 0
        # failures are bounded by construction (windows split down to blocks, blocks
        # move on to other workers and the CPU, and then the run fails); this is a
        # further limit for callers that want one
        self.max_failures = max_failures
        #: per worker, the items whose batches left their operations on its
        #: device; the pairs of those run again after it retired, their
        #: device having lost them (see _salvage); the workers between a
        #: failure and its consequences (its window put back, the worker
        #: retired or not): the results do not end meanwhile
        self.kept: dict[str, list[tuple[Item, object]]] = {}
        self.redone = 0
        self.unsettled = 0
        self.fallback_factory = fallback
        self.fallback_stats: WorkerStats | None = None
        self.threads: list[threading.Thread] = []
        self.rows, self.cols = job.rows.lengths, job.col_set.lengths

    # -- set-up --------------------------------------------------------------------
    def start(self) -> None:
        items = self.work.items()
        if any(it.cpu for it in items) and self.fallback_factory is None:
            raise OptionError("some pairs are too large for the device "
                              "and no CPU fallback was allowed")
        for it in items:
            self.q.put(it)
        for k, b in enumerate(self.work.workers):
            self._spawn(self.labels[k], self._worker, k, b)
        # results are placed by numba (a CPU run's has started); a device's
        # planner may move to numba once it is loaded (GPUBackend.load_planner)
        _NUMBA.start_soon(next((b.planner_loader(len(items)) for b in self.work.workers
                                if hasattr(b, "planner_loader")), None))
        if any(it.cpu for it in items):
            self._ensure_fallback()

    def _spawn(self, name: str, fn, *args) -> None:
        with self.lock:
            self.alive_threads.add(name)
        t = threading.Thread(target=self._thread_main, args=(name, fn) + args,
                             name=f"pairalign-{name}", daemon=True)
        self.threads.append(t)
        t.start()

    def _thread_main(self, name: str, fn, *args) -> None:
        try:
            fn(*args)
        except Cancelled:
            pass
        except BaseException as exc:  # a bug in the scheduler: stop the run
            self.q.cancel(exc)
        finally:
            with self.lock:
                self.alive_threads.discard(name)
            self._post(("exit", name))

    def stop(self, exc: BaseException | None = None) -> None:
        self.q.cancel(exc)
        for t in self.threads:
            t.join(timeout=5.0)

    def working(self) -> bool:
        """Whether any worker (or the CPU fallback) still runs."""
        with self.lock:
            return bool(self.alive_threads)

    # -- results -------------------------------------------------------------------
    def _post(self, msg) -> None:
        while True:
            try:
                self.out.put(msg, timeout=0.2)
                return
            except _queue.Full:
                if self.q.cancelled is not None and msg[0] != "exit":
                    raise Cancelled("cancelled")
                if self.q.cancelled is not None:
                    return

    def _deliver(self, stats: WorkerStats, item: Item, batch: PairBatch, seconds: float,
                 backend) -> None:
        if len(batch) != item.window.pairs:  # a backend bug: retrying would not help
            self.q.cancel(RuntimeError(f"backend returned {len(batch)} pairs for a window "
                                       f"of {item.window.pairs}: {item.window}"))
            raise Cancelled("bad batch")
        stats.windows += 1
        stats.pairs += item.window.pairs
        stats.cells += item.window.cells
        stats.busy_s += seconds
        stats.measured.append((item.window.pairs, item.window.cells, seconds))
        t = time.perf_counter()
        stats.last_at = t
        if stats.first_at is None:
            stats.first_at = t
        kept = getattr(batch, "device_ops", None)
        if kept is not None:
            with self.lock:
                self.kept.setdefault(stats.label, []).append((item, kept))
        self._post(("batch", item, batch, backend))
        stats.blocked_s += time.perf_counter() - t
        self.q.done()

    # -- failures ------------------------------------------------------------------
    def _count_failure(self, stats: WorkerStats, exc: BaseException, n: int = 1) -> None:
        stats.failures += 1
        with self.lock:
            self.failures += 1
            self.retries += n
            if self.first_failure is None:
                self.first_failure = f"{stats.label}: {type(exc).__name__}: {exc}"
            if not is_out_of_memory(exc):  # too large a window is no fault
                self.errors += 1
                if self.first_error is None:
                    self.first_error = f"{stats.description}: {type(exc).__name__}: {exc}"
            over = self.max_failures is not None and self.failures > self.max_failures
        if over:
            self.q.cancel(exc)
            raise Cancelled("too many failures")

    def _requeue(self, item: Item, **change) -> None:
        for k, v in change.items():
            setattr(item, k, v)
        self.q.put(item)
        if item.cpu:
            self._ensure_fallback()

    def _failed_alone(self, label: str, item: Item, exc: BaseException) -> None:
        """``item`` failed running alone on worker ``label``: split it, or move it."""
        item.failures += 1
        if item.failures > MAX_WINDOW_FAILURES:
            self.q.cancel(exc)
            raise Cancelled("window keeps failing")
        w = item.window
        if w.splittable:
            for j, sub in enumerate(split_window(w, self.rows, self.cols)):
                self.q.put(Item(key=item.key + (j,), window=sub, parent=item.parent,
                                failures=item.failures, cpu=item.cpu))
            if item.cpu:
                self._ensure_fallback()
            return
        avoid = item.avoid | {label}
        with self.lock:
            others = self.live - avoid
        if others and not item.cpu:
            self._requeue(item, avoid=avoid, solo=True)
        elif not item.cpu and self.fallback_factory is not None:
            self._requeue(item, cpu=True, solo=True)
        else:
            self.q.cancel(exc)
            raise Cancelled("window failed everywhere")

    def _retire(self, label: str) -> None:
        with self.lock:
            self.live.discard(label)
            live = set(self.live)
        self._salvage(label)
        for st in self.stats:
            if st.label == label:
                st.retired = True
        if not live:
            if self.fallback_factory is None:
                self.q.cancel(DeviceError(f"every worker failed ({RETIRE_AFTER} "
                                          "failures in a row each, or its device lost) "
                                          "and no fallback"))
                return
            self.q.redirect_all_to_cpu()
            self._ensure_fallback()
            return
        # items that every live worker has failed on: to the CPU
        if self.fallback_factory is None:
            stuck = [it for it in self.q.pending()
                     if not it.cpu and it.avoid and not (live - it.avoid)]
            if stuck:
                self.q.cancel(DeviceError(f"{len(stuck)} windows failed on every worker "
                                          "and no fallback"))
            return
        if self.q.reroute(live):
            self._ensure_fallback()

    # -- the device worker ---------------------------------------------------------
    def _worker(self, k: int, backend) -> None:
        keep = getattr(backend, "keep_ops_on_device", None) if self.device_ops else None
        try:
            if keep is not None:
                keep(True)
            self._work(k, backend)
        finally:
            if keep is not None:
                keep(False)
            bt = getattr(backend, "timings", None)
            if isinstance(bt, dict):
                self.stats[k].backend_timings = dict(bt)

    def _work(self, k: int, backend) -> None:
        label = self.labels[k]
        stats = self.stats[k]
        bind_thread(backend)
        job = self.job
        state = None
        in_a_row = 0
        numba_guard = _NUMBA if "gpu" not in str(getattr(backend, "name", "")) else contextlib.nullcontext()
        while True:
            item = self.q.get(label)
            if item is None:
                break
            if state is None:
                try:
                    state = backend.prepare(job)
                except Exception as exc:
                    self._unsettle()
                    try:
                        recover(backend)
                        self._requeue(item)
                        self.q.done()
                        self._count_failure(stats, exc, 0)
                        in_a_row = self._in_a_row(in_a_row, "error", backend)
                        if in_a_row >= RETIRE_AFTER:
                            self._retire(label)
                            return
                    finally:
                        self._settle()
                    continue
            budget = backend.device_budget() if hasattr(backend, "window_bytes") else None
            if item.solo:
                ok = self._run_alone(label, stats, backend, state, item, budget, numba_guard)
            else:
                ok = self._run_stream(label, stats, backend, state, item, budget, numba_guard)
            try:
                in_a_row = self._in_a_row(in_a_row, ok, backend)
                if in_a_row >= RETIRE_AFTER and self._can_retire(label):
                    self._retire(label)
                    return
            finally:
                if ok is not True:  # a failure: unsettled by _run_alone or _run_stream
                    self._settle()

    @staticmethod
    def _in_a_row(before: int, ok, backend) -> int:
        """A worker's failures in a row after a window's outcome ``ok`` (True,
        ``"oom"`` or ``"error"``): out of memory says the window was too large,
        not that the device is lost; an error after which the device no longer
        responds counts as all of them (it retires at once, before the end of
        the run can find what its device kept lost)."""
        if ok is True:
            return 0
        if ok != "error":
            return before
        return before + 1 if responds(backend) else max(before + 1, RETIRE_AFTER)

    def _unsettle(self) -> None:
        """A worker met a failure: the results, and the other workers, wait
        until it has settled it (:meth:`_settle`), so that a window it put
        back, taken and finished by another worker, cannot end them before
        it has retired and salvaged what its device kept (windows to run
        again among it)."""
        with self.lock:
            self.unsettled += 1
        self.q.hold()

    def _settle(self) -> None:
        with self.lock:
            self.unsettled -= 1
        self.q.done()

    def _salvage(self, label: str) -> None:
        """A retired worker's device may be lost, and with it the operations
        that its windows left there: each entry comes to the host where the
        device still gives it (:meth:`~pairalign.pairs.DeviceOps.rescue`),
        and the windows of those it cannot give run again elsewhere (their
        pairs counted again: the placement takes the later batch's)."""
        for item in self._unrescued(label):
            self.q.put(Item(key=item.key + (-1,), window=item.window, parent=item.parent,
                            avoid=frozenset({label})))

    def _unrescued(self, label: str) -> list[Item]:
        """The items whose operations ``label``'s device kept and can no
        longer give (each entry rescued to the host where it still can),
        no longer kept; their pairs counted as coming again."""
        with self.lock:
            kept = self.kept.pop(label, [])
        lost = [item for item, ops in kept if not ops.rescue()]
        with self.lock:
            self.redone += sum(item.window.pairs for item in lost)
        return lost

    def _lost_at_end(self) -> Iterator[tuple[Item, PairBatch, object]]:
        """Windows whose operations a device kept, where at the run's end the
        device no longer responds (lost after its last window, with no
        failure to tell) and cannot give them: each runs again on the CPU
        fallback, here in the consumer's thread, and comes as another batch
        (the placement drops the lost entries, as :meth:`_salvage`'s)."""
        lost = []
        for k, label in enumerate(self.labels):
            with self.lock:
                entries = self.kept.get(label)
            if not entries or responds(self.work.workers[k]):
                continue
            with self.lock:
                self.errors += 1
                if self.first_error is None:
                    self.first_error = (f"{self.stats[k].description}: no longer responds "
                                        "after its last window")
            lost += self._unrescued(label)
        if not lost:
            return
        if self.fallback_factory is None:
            raise DeviceError(f"a device was lost after its last window with the "
                              f"alignments of {len(lost)} windows, and no fallback")
        backend = self._fallback_backend()
        state = backend.prepare(self.job)
        for item in lost:
            with _NUMBA:
                batch = backend.run_window(self.job, state, item.window)
            yield item, batch, backend

    def _can_retire(self, label: str) -> bool:
        with self.lock:
            others = self.live - {label}
        return bool(others) or self.fallback_factory is not None

    def _fits(self, backend, item: Item, budget) -> bool:
        """Whether the device holds ``item``; if not, its pieces are put back."""
        if budget is None:
            return True
        # fitted before the run to a budget no larger than this one; one with
        # a bound fitted by it, and checked here by its plan (its launch's)
        if (self.work.fit_budget is not None and budget >= self.work.fit_budget
                and not hasattr(backend, "window_bytes_bound")):
            return True
        w = item.window
        if backend.window_bytes(self.job, w) <= budget:
            return True
        if not w.divisible:
            self._requeue(Item(key=item.key, window=w, parent=item.parent,
                               failures=item.failures, cpu=True))
        else:
            for j, sub in enumerate(split_to_fit(w, self.rows, self.cols)):
                self.q.put(Item(key=item.key + (j,), window=sub, parent=item.parent,
                                failures=item.failures))
        self.q.done()
        return False

    def _run_alone(self, label, stats, backend, state, item, budget, guard) -> bool:
        t0 = time.perf_counter()
        try:
            if not self._fits(backend, item, budget):
                return True
            with guard:
                batch = backend.run_window(self.job, state, item.window)
        except Exception as exc:
            self._unsettle()
            recover(backend)
            self._count_failure(stats, exc)
            self._failed_alone(label, item, exc)
            self.q.done()
            return _failure_kind(exc, item.window)
        self._deliver(stats, item, batch, time.perf_counter() - t0, backend)
        return True

    def _run_stream(self, label, stats, backend, state, first, budget, guard) -> bool:
        """Windows through the backend's pipeline until the queue has none ready."""
        inflight: deque[Item] = deque()
        q = self.q

        def feed():
            item = first
            while item is not None:
                if q.cancelled is not None:
                    return
                inflight.append(item)
                if self._fits(backend, item, budget):
                    yield item.window
                else:
                    inflight.pop()
                item = q.try_get(label, allow_solo=False)

        runner = getattr(backend, "run_windows", None)
        if runner is None:
            def runner(job, state, windows):
                for w in windows:
                    with guard:
                        b = backend.run_window(job, state, w)
                    yield b
        mark = time.perf_counter()
        try:
            for batch in runner(self.job, state, feed()):
                item = inflight.popleft()
                now = time.perf_counter()
                self._deliver(stats, item, batch, now - mark, backend)
                mark = time.perf_counter()
        except Cancelled:
            raise
        except Exception as exc:
            self._unsettle()
            recover(backend)
            items = list(inflight)
            inflight.clear()
            if len(items) == 1:
                self._count_failure(stats, exc)
                self._failed_alone(label, items[0], exc)
                self.q.done()
                return _failure_kind(exc, items[0].window)
            else:
                self._count_failure(stats, exc, len(items))
                for it in items:  # which one failed is unknown: each runs again alone
                    self._requeue(it, solo=True)
                self.q.done(len(items))
            return _failure_kind(exc)
        return True

    # -- the CPU fallback ----------------------------------------------------------
    def _ensure_fallback(self) -> None:
        with self.lock:
            if self.fallback_stats is not None or self.fallback_factory is None:
                return
            self.fallback_stats = WorkerStats("cpu-fallback", "cpu (fallback)")
        self._spawn("cpu-fallback", self._fallback)

    def _fallback_backend(self):
        """The CPU fallback's backend, fitted to the run's memory."""
        make = self.fallback_factory
        backend = make() if callable(make) else make
        if hasattr(backend, "fit_memory"):
            backend.fit_memory(self.job, self.max_memory)
        return backend

    def _fallback(self) -> None:
        backend = self._fallback_backend()
        stats = self.fallback_stats
        stats.description = f"{_describe(backend)} (fallback)"
        state = None
        while True:
            item = self.q.get("cpu-fallback", cpu=True)
            if item is None:
                return
            if state is None:
                state = backend.prepare(self.job)
            t0 = time.perf_counter()
            try:
                with _NUMBA:
                    batch = backend.run_window(self.job, state, item.window)
            except Exception as exc:
                self._count_failure(stats, exc)
                self._failed_alone("cpu-fallback", item, exc)
                self.q.done()
                continue
            self._deliver(stats, item, batch, time.perf_counter() - t0, backend)

    # -- the consumer --------------------------------------------------------------
    def results(self) -> Iterator[tuple[Item, PairBatch, object]]:
        """``(item, batch, backend)`` as workers finish them; ends when every pair is in."""
        total = self.work.pairs
        got = 0
        while got < total + self.redone or self.unsettled:
            if self.q.cancelled is not None:
                raise self.q.cancelled
            try:
                msg = self.out.get(timeout=0.2)
            except _queue.Empty:
                with self.lock:
                    alive = bool(self.alive_threads)
                if not alive and self.out.empty():
                    if self.q.cancelled is not None:
                        raise self.q.cancelled
                    raise RuntimeError(f"scheduler lost pairs: {got} of {total} came back")
                continue
            if msg[0] == "batch":
                got += len(msg[2])
                yield msg[1], msg[2], msg[3]
        for item, batch, backend in self._lost_at_end():
            got += len(batch)
            yield item, batch, backend
        if got != total + self.redone:
            raise RuntimeError(f"scheduler returned {got} pairs, {total + self.redone} "
                               "expected")


def _failure_kind(exc: BaseException, window: Window | None = None) -> str:
    """``"oom"`` when the window was too large (it gets split), else ``"error"``.

    Out of memory on a 16 x 16 block, which a failure does not split
    (:func:`~.scheduler.windows.split_window`; windows are fitted below a
    block before they launch), counts as an error.
    """
    if window is not None and not window.splittable:
        return "error"
    return "oom" if is_out_of_memory(exc) else "error"


def _describe(backend) -> str:
    try:
        return backend.describe()
    except Exception:
        return str(getattr(backend, "name", type(backend).__name__))


# ---------------------------------------------------------------------------------
# the public entry points
# ---------------------------------------------------------------------------------


def _call_progress(progress, done: int, total: int, cells_done: int, cells_total: int) -> None:
    if progress is None:
        return
    if getattr(progress, "wants_cells", False):
        progress(done, total, cells_done, cells_total)
    else:
        progress(done, total)


def iter_windows(job: Job, backend, *, max_memory: int = DEFAULT_MAX_MEMORY,
                 width: int | None = None, ordered: bool = False,
                 progress: Progress | None = None, timings: dict | None = None,
                 client=None, buffer: int | None = None,
                 fallback="auto", device_ops: bool = False,
                 keep: Callable[[PairBatch], np.ndarray] | None = None) -> Iterator[PairBatch]:
    """Stream the results of ``job``, one :class:`PairBatch` per window, as they finish.

    The streaming form of :func:`run_job`, for writers that must not hold
    ``n^2`` results: host memory stays bounded by the windows in flight and a
    bounded queue between the workers and this generator (workers wait while
    it is full, so a slow consumer slows the run instead of filling memory).

    Each batch holds input indices (``query < target`` for all-vs-all), every
    pair of the job exactly once over all batches. A writer streams them::

        for batch in iter_windows(job, backend, ordered=True):
            write_tsv(batch)            # e.g. AlignmentResult over the batch

    Parameters
    ----------
    job : Job
    backend : backend, list of backends
        A CPU backend (one worker), a GPU backend (one worker per device in its
        ``devices``), or a list of backends (one worker each).
    max_memory, width : as :func:`run_job`.
    ordered : bool
        ``False``: batches come as windows finish (order varies from run to
        run; fastest, least memory). ``True``: one batch per planned window,
        in the plan's order (largest windows first), its pairs sorted by input
        order; the same sequence of batches whatever the number of workers,
        their speed or the failures met (a window cut into pieces comes back
        whole). A reorder buffer holds finished windows until the earlier ones
        are in; workers start no window more than ``2 x workers`` (at least 4)
        planned windows ahead of the oldest one missing, so the buffer holds
        at most that many windows.
    progress : callable, optional
        ``progress(pairs_done, pairs_total)`` after each window; with an
        attribute ``wants_cells = True`` it is called with
        ``(pairs_done, pairs_total, cells_done, cells_total)``.
    timings : dict, optional
        Filled when the run ends (see :func:`run_job`).
    client : dask.distributed.Client, optional
        Run the windows as Dask tasks on the cluster's workers instead
        (:mod:`pairalign.scheduler.distributed`).
    buffer : int, optional
        Results the queue between workers and consumer holds (default
        ``2 x workers + 2``, at least :data:`MIN_RESULTS_QUEUED`).
    fallback : "auto", callable, backend or None
        What runs blocks that no device can hold or that failed on every
        device: ``"auto"`` a CPU backend (none for a CPU run).
    device_ops : bool
        Batches of device backends may leave their operations on their
        devices (:class:`~pairalign.pairs.DevicePairBatch`; with several
        workers as :data:`SEVERAL_DEVICE_OPS` says), for a
        :class:`~pairalign.pairs.Placement` to place on one of them at its
        end; for callers that place every batch or take
        :func:`~pairalign.pairs.on_host`. Where a worker retires, the
        windows whose operations its device lost come again (their pairs
        twice over the run: a placement keeps the later batch's).
    keep : callable, optional
        A batch -> boolean mask (:meth:`~pairalign.pairs.PairBatch.kept`):
        only the pairs it keeps come, each window's filtered as it finishes,
        on the Dask worker that ran it for a cluster's run (so only they
        cross the network; ``keep`` must pickle). Batches keep their
        operations on the host (``device_ops`` is ignored); ``progress``
        counts the pairs aligned, kept or not.

    Yields
    ------
    PairBatch
    """
    if client is not None:
        from .scheduler.distributed import iter_distributed

        yield from iter_distributed(job, client, backend=backend, max_memory=max_memory,
                                    width=width, ordered=ordered, progress=progress,
                                    timings=timings, keep=keep)
        return
    if keep is not None:
        with contextlib.closing(iter_windows(job, backend, max_memory=max_memory, width=width,
                                             ordered=ordered, progress=progress,
                                             timings=timings, buffer=buffer,
                                             fallback=fallback)) as batches:
            for batch in batches:
                yield batch.kept(keep)
        return
    clock = time.perf_counter()
    workers = reserve_slots(job, backend)
    work = prepare_work(job, workers, max_memory, width, ordered=ordered,
                        defer=DEFER_EXACT_FIT)
    first = work.workers[0]
    if fallback == "auto":
        fallback = _default_fallback(first)
    predicted = _predict(job, work)
    run = _LocalRun(job, work, max_memory, ordered=ordered, buffer=buffer, fallback=fallback,
                    device_ops=device_ops and not ordered)
    total, cells_total = work.pairs, work.cells
    done = cells_done = 0
    started = time.perf_counter()
    finished = False
    cap = _cpu_threads(work.workers)
    with consumer_limit(cap) as share:
        try:
            run.start()
            if ordered:
                pending: dict[int, list[PairBatch]] = {}
                have = [0] * len(work.parents)
                nxt = 0
            for item, batch, backend in run.results():
                # (windows run again after their device was lost come twice)
                done = min(done + len(batch), total)
                cells_done = min(cells_done + item.window.cells, cells_total)
                _call_progress(progress, done, total, cells_done, cells_total)
                share[0] = _consumer_share(len(work.workers), run.working(), cap)
                b = in_input(job, backend, batch)
                if not ordered:
                    yield b
                    continue
                pending.setdefault(item.parent, []).append(b)
                have[item.parent] += len(b)
                while nxt < len(work.parents) and have[nxt] == work.parents[nxt].pairs:
                    merged = PairBatch.concat(pending.pop(nxt))
                    nxt += 1
                    run.q.release(nxt)
                    yield _sorted_by_rank(job, merged)
            if total == 0:
                _call_progress(progress, 0, 0, 0, 0)
            finished = True
        finally:
            run.stop(None if finished else Cancelled("consumer stopped"))
    if run.errors:
        warnings.warn(f"{run.errors} window(s) failed and ran again elsewhere; results "
                      f"are complete, the first error was {run.first_error}",
                      DeviceErrorWarning, stacklevel=2)
    fell = run.fallback_stats
    if fell is not None and fell.pairs:
        warnings.warn(f"{fell.pairs:,} of {total:,} pairs ({fell.cells / max(cells_total, 1):.1%} "
                      f"of the cells) ran on the CPU: the device could not run their windows "
                      f"(too large for its memory, or failing)", CPUFallbackWarning, stacklevel=2)
    wall = time.perf_counter() - started
    _record(job, work, run)
    if timings is not None:
        _fill_timings(timings, job, work, run, predicted, wall, time.perf_counter() - clock)


def run_job(job: Job, backend, *, max_memory: int = DEFAULT_MAX_MEMORY,
            width: int | None = None, progress: Progress | None = None,
            timings: dict | None = None, client=None) -> PairBatch:
    """Align every pair of ``job``; pairs come back in input order.

    For all-vs-all, pair ``(i, j)`` with ``i < j`` in input order is reported
    from ``i``'s side. It is computed with the longer sequence (the earlier one
    on equal lengths) as the query, whatever the window size, so every backend,
    every number of workers and every run gives the same alignment.

    ``backend`` is a backend (a GPU backend with several ``devices`` runs one
    worker per device) or a list of backends; ``client`` a
    ``dask.distributed.Client`` to run the windows on a cluster.

    ``timings`` (a dict) receives: ``windows`` and ``order`` (seconds, summed
    over calls), ``placement`` (the last call's
    :attr:`~pairalign.pairs.Placement.spent`), ``predicted`` (seconds the
    cost model predicted for the windows, ``None`` without a model),
    ``measured`` (seconds they took), and
    ``scheduler``: per worker its windows, pairs, cells, busy seconds, failures
    and predicted seconds; the retries; the first failure's message; the model.
    """
    clock = time.perf_counter()
    inner: dict = {}
    spent: dict = {}
    with consumer_limit(run_cap(backend, client)):
        out = assemble(job, iter_windows(job, backend, max_memory=max_memory, width=width,
                                         progress=progress, timings=inner, client=client,
                                         device_ops=True),
                       spent, workers=run_workers(backend, client))
    if timings is not None:
        timings["windows"] = timings.get("windows", 0.0) + spent["finish"] - clock
        timings["order"] = timings.get("order", 0.0) + spent["order"]
        if "placement" in spent:
            timings["placement"] = spent["placement"]
        for k in ("predicted", "measured", "scheduler"):
            if k in inner:
                timings[k] = inner[k]
    return out


# ---------------------------------------------------------------------------------
# prediction, records, the plan
# ---------------------------------------------------------------------------------


def _predict(job: Job, work: Work, model=None) -> dict | None:
    """Predicted seconds per piece and the LPT makespan, if a model is known."""
    first = work.workers[0]
    if model is None:
        try:
            model = _cost.get_model(_cost.model_key(first, job))
        except Exception:
            model = None
    if model is None:
        return None
    pieces = [w for ws in work.pieces for w in ws]
    times = _cost.predict_windows(model, pieces)
    assign = lpt_assign(times, len(work.workers), order=range(len(pieces)))
    return {"model": model, "times": times, "assign": assign, "makespan": assign.makespan}


def _record(job: Job, work: Work, run: _LocalRun) -> None:
    """Measured windows join the cost model's samples (in this process).

    A worker's first window is left out: it carries the warm-up (compilation,
    the sequences' upload, the pipeline filling) that later windows do not.
    The others' times are spread over the bursts in which a pipelined
    worker's results come (:func:`~pairalign.scheduler.cost.spread_bursts`).
    """
    for b, st in zip(work.workers, run.stats):
        if len(st.measured) > 1:
            try:
                _cost.record(_cost.model_key(b, job), _cost.spread_bursts(st.measured[1:]))
            except Exception:
                pass


def _fill_timings(timings: dict, job: Job, work: Work, run: _LocalRun, predicted,
                  wall: float, total: float) -> None:
    stats = list(run.stats) + ([run.fallback_stats] if run.fallback_stats else [])
    if predicted is not None:
        for k, st in enumerate(run.stats):
            st.predicted_s = predicted["assign"].loads[k]
    timings["windows"] = timings.get("windows", 0.0) + total
    timings["predicted"] = None if predicted is None else float(predicted["makespan"])
    timings["measured"] = wall
    timings["scheduler"] = {
        "workers": [s.as_dict() for s in stats],
        "windows": sum(s.windows for s in stats),
        "planned_windows": len(work.parents),
        "width": work.width,
        "failures": run.failures,
        "first_failure": run.first_failure,
        "retries": run.retries,
        "model": None if predicted is None else str(predicted["model"]),
    }


__all__ = ["DEFAULT_MAX_MEMORY", "Backend", "parse_memory", "run_job", "iter_windows",
           "orient", "pair_rank", "to_input", "fit_window", "prepare_work", "plan",
           "Plan", "DevicePlan", "PlanWindow", "format_plan", "format_run_report"]
