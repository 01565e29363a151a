"""Run a job's windows on a backend and gather the pairs in input order."""

from __future__ import annotations

import math
import time
from typing import Callable, Protocol

import numpy as np

from .errors import OptionError
from .job import Job
from .pairs import PairBatch
from .scheduler.windows import BLOCK, Window, plan_windows, split_window

#: Default memory budget for one run's working buffers (``--max-memory``).
DEFAULT_MAX_MEMORY = 4 << 30

#: Bytes of results per pair besides the operations.
_PAIR_BYTES = 48
#: Bytes per alignment operation slot (code, run length) reserved per pair.
_OP_BYTES = 5

Progress = Callable[[int, int], None]


class Backend(Protocol):
    name: str

    def describe(self) -> str: ...
    def prepare(self, job: Job) -> object: ...
    def run_window(self, job: Job, state: object, w: Window) -> PairBatch: ...
    def task_memory(self, job: Job) -> int: ...
    def fit_memory(self, job: Job, budget: int) -> int: ...


def parse_memory(text: str | int) -> int:
    """Bytes from ``4G``, ``512M``, ``100000`` and the like."""
    if isinstance(text, int):
        return text
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    s = str(text).strip().upper().removesuffix("B").removesuffix("I")
    num, unit = (s[:-1], s[-1]) if s and s[-1] in units else (s, "")
    try:
        value = float(num) * units[unit]
    except ValueError:
        raise OptionError(f"bad memory size {text!r}: expected e.g. 4G, 512M") from None
    if value <= 0:
        raise OptionError(f"memory size must be positive, got {text!r}")
    return int(value)


def window_width(job: Job, backend: Backend, max_memory: int,
                 width: int | None = None) -> int:
    """The window width ``W``: a multiple of 16 whose buffers fit the budget."""
    if backend.task_memory(job) > max_memory:
        n, m = int(job.rows.lengths[0]), int(job.col_set.lengths[0])
        raise OptionError(
            f"--max-memory {max_memory / 2**20:.0f} MiB is too small for the traceback "
            f"of sequences of {n} x {m}: it needs "
            f"{backend.task_memory(job) / 2**20:.0f} MiB "
            f"(or use --no-traceback)")
    fixed = backend.fit_memory(job, max_memory)
    if width is not None:
        if width <= 0 or width % BLOCK:
            raise OptionError(f"window size must be a positive multiple of {BLOCK}, got {width}")
        return width
    if hasattr(backend, "window_width"):
        return backend.window_width(job, max_memory)
    longest = int(job.rows.lengths[0]) + int(job.col_set.lengths[0])
    per_pair = _PAIR_BYTES + (_OP_BYTES * longest if job.traceback else 0)
    w = int(math.sqrt(max(max_memory - fixed, 0) / 2 / per_pair))
    return max(BLOCK, min(256, w // BLOCK * BLOCK))


def run_job(job: Job, backend: Backend, *, max_memory: int = DEFAULT_MAX_MEMORY,
            width: int | None = None, progress: Progress | None = None,
            timings: dict | None = None) -> PairBatch:
    """Align every pair of ``job``; pairs come back in input order.

    For all-vs-all, pair ``(i, j)`` with ``i < j`` in input order is reported
    from ``i``'s side. It is computed with the longer sequence (the earlier one
    on equal lengths) as the query, whatever the window size, so every backend
    and every run gives the same alignment.
    """
    clock = time.perf_counter()
    w = window_width(job, backend, max_memory, width)
    col_lengths = None if job.triangle else job.cols.lengths
    windows = plan_windows(job.rows.lengths, col_lengths, w)
    state = backend.prepare(job)
    total = sum(x.pairs for x in windows)
    fitted = [pair for win in windows for pair in fit_window(job, backend, win)]
    on_device = [sub for sub, fits in fitted if fits]
    too_large = [sub for sub, fits in fitted if not fits]
    runner = getattr(backend, "run_windows", None)
    if runner is None:
        def runner(job, state, subs):
            return (backend.run_window(job, state, sub) for sub in subs)
    done = 0
    batches = []
    for batch in runner(job, state, on_device):
        batches.append(batch)
        done += len(batch)
        if progress is not None:
            progress(done, total)
    if too_large:  # blocks too large for the device: the CPU aligns them
        from .kernels.cpu_backend import CPUBackend

        cpu = CPUBackend()
        cpu.fit_memory(job, max_memory)
        cpu_state = cpu.prepare(job)
        for sub in too_large:
            batches.append(cpu.run_window(job, cpu_state, sub))
            done += sub.pairs
            if progress is not None:
                progress(done, total)
    aligned = time.perf_counter()
    out = orient(job, PairBatch.concat(batches))
    if timings is not None:
        timings["windows"] = timings.get("windows", 0.0) + aligned - clock
        timings["order"] = timings.get("order", 0.0) + time.perf_counter() - aligned
    return out


def fit_window(job: Job, backend: Backend, w: Window) -> list[tuple[Window, bool]]:
    """``w``, or its quarters (recursively) where the device cannot hold it.

    Each window comes with whether the backend can hold it; one that cannot,
    even as a single 16 x 16 block, goes to the CPU.
    """
    if not hasattr(backend, "window_bytes"):
        return [(w, True)]
    if backend.window_bytes(job, w) <= backend.device_budget():
        return [(w, True)]
    if w.r1 - w.r0 <= BLOCK and w.c1 - w.c0 <= BLOCK:
        return [(w, False)]
    rows, cols = job.rows.lengths, job.col_set.lengths
    return [x for sub in split_window(w, rows, cols) for x in fit_window(job, backend, sub)]


def orient(job: Job, batch: PairBatch) -> PairBatch:
    """Map sorted positions to input indices and sort pairs in input order."""
    q = job.rows.order[batch.query]
    t = job.col_set.order[batch.target]
    batch = PairBatch(**{**batch.__dict__, "query": q, "target": t})
    if job.triangle:
        batch = batch.swapped(q > t)
    n = np.int64(len(job.rows))
    if job.triangle:  # rank of (q, t), q < t, in row-major order of the upper triangle
        pos = batch.query * (2 * n - batch.query - 1) // 2 + (batch.target - batch.query - 1)
    else:
        pos = batch.query * np.int64(len(job.cols)) + batch.target
    order = np.empty(len(batch), np.int64)
    order[pos] = np.arange(len(batch))  # every pair is present once: a permutation
    return batch.take(order)
