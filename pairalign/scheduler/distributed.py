"""Windows as Dask tasks: past one machine, on an existing engine.

With a ``dask.distributed.Client`` (``run_job(..., client=client)``, or
``--cluster tcp://HOST:PORT`` through :func:`connect`), the windows of a job
are planned here as for a local run (LPT order; balanced over the cluster's
worker threads) and submitted as tasks, largest first, with Dask priorities in
the same order. The job (sequences and scoring) travels once to every worker
(``scatter(broadcast=True)``). Each task runs up to :data:`WINDOWS_PER_TASK`
consecutive windows, in flight together, with a backend made on the worker
and kept there for the job's tasks (dropped at the run's end, or, where its
client died before, by the next run's first task on that worker):

- a GPU if CuPy sees one there: ``PAIRALIGN_DEVICE`` chooses the ordinal;
  otherwise a worker named by an integer ``k`` (as ``LocalCluster`` names them)
  takes GPU ``k`` modulo the count, so a ``LocalCluster(n_workers=<GPUs>)`` on
  a machine of several GPUs puts one worker on each; else GPU 0 (run one
  worker per GPU with ``CUDA_VISIBLE_DEVICES`` set, as dask-cuda does);
- else the CPU (numba, the worker's cores).

A window too large for the worker's device is cut and run piecewise on it; a
task whose windows raise runs them again one by one, each retried cut in
quarters, then on the worker's CPU; a task
that still fails is retried once by Dask (maybe on another worker), then the
run raises. Results come back as the tasks complete, on a thread of the
client's, fetched straight from the workers where the client reaches them all
(``DIRECT_FETCH``), else through the scheduler; at most ``2 x threads + 2``
tasks are in flight, and as many fetched results wait (each a task's
windows), so memory stays bounded on both sides; :func:`iter_distributed`
yields them as they come, or in plan order, where no task more than twice
that past the oldest window still awaited is submitted (a slow window holds
the run back, not every later result in the client's memory). A run's
``keep`` filter runs on the workers, so that only the pairs it keeps cross
the network.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import uuid
from typing import Iterator

from ..job import Job
from ..pairs import PairBatch
from .devices import bind_thread, recover
from .lpt import balance, lpt_order
from .windows import plan_windows, split_window

#: Depth of the split-and-retry of a failing window on a worker.
_RETRY_DEPTH = 3


def connect(address: str, timeout: float = 30.0):
    """A ``dask.distributed.Client`` for a scheduler at ``address`` (``tcp://HOST:PORT``).

    Raises
    ------
    OptionError
        Where Dask is not installed, or no Dask scheduler answers at
        ``address`` within ``timeout`` seconds (a malformed address, a refused
        connection, a service that is not Dask's).
    """
    from ..errors import OptionError

    try:
        from dask.distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise OptionError("--cluster needs dask[distributed]: pip install "
                          "'pairalign[distributed]'") from exc
    if not address.strip():
        raise OptionError("no Dask scheduler address given (an empty --cluster)")
    try:
        _answers_within(address, timeout)  # Dask's own handshake has no deadline
        return Client(address, timeout=timeout)
    except Exception as exc:  # a garbage frame read as a length: a MemoryError among them
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise OptionError(f"no Dask scheduler at {address}: {why}") from None


def _answers_within(address: str, timeout: float) -> None:
    """A Dask handshake with ``address``, connection and handshake within
    ``timeout`` seconds (on a loop of its own, so that it also works where the
    caller's thread runs one); raises otherwise."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect as comm_connect
    from distributed.security import Security

    args = Security().get_connection_args("client")

    async def probe():
        comm = await asyncio.wait_for(comm_connect(address, timeout=timeout, **args), timeout)
        await comm.close()

    with ThreadPoolExecutor(1) as pool:
        try:
            pool.submit(asyncio.run, probe()).result()
        except (asyncio.TimeoutError, TimeoutError):
            raise TimeoutError(f"no Dask handshake within {timeout:g} s") from None


# ---------------------------------------------------------------------------------
# on the worker
# ---------------------------------------------------------------------------------

_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def _worker_id() -> tuple[str, object]:
    try:
        from dask.distributed import get_worker

        w = get_worker()
        return w.address, w.name
    except Exception:
        return f"pid{os.getpid()}", None


def _gpu_ordinal(name) -> int:
    env = os.environ.get("PAIRALIGN_DEVICE")
    if env:
        return int(env)
    from ..backends import gpu_count

    count = max(1, gpu_count())
    try:
        return int(name) % count
    except (TypeError, ValueError):
        return 0


def _make_backend(kind: str, name):
    from ..backends import gpu_available

    if kind in ("auto", "gpu") and gpu_available():
        from ..kernels.gpu_backend import GPUBackend

        return GPUBackend(devices=[_gpu_ordinal(name)])
    if kind == "gpu":
        raise RuntimeError("this Dask worker has no GPU")
    from ..kernels.cpu_backend import CPUBackend

    return CPUBackend()


def _held_by_scheduler(keys: list[str]) -> set[str] | None:
    """Those of ``keys`` that the scheduler still holds in memory (``None``
    where this is no Dask worker or the scheduler did not answer)."""
    try:
        from distributed import get_worker
        from distributed.utils import sync

        w = get_worker()
        held = sync(w.loop, w.scheduler.who_has, keys=keys, callback_timeout=PROBE_TIMEOUT_S)
    except Exception:
        return None
    return {k for k, where in held.items() if where}


def _drop_orphans(addr: str) -> int:
    """Drop this worker's entries of runs that ended without :func:`forget`
    (a client killed outright calls nothing): the scheduler no longer holds
    the run's job (it released it with the client), and no task of the run is
    on this worker. Asked of the scheduler, not of the worker's store: Dask's
    active memory manager drops a broadcast job's replicas while a run lives."""
    with _CACHE_LOCK:
        idle = {e["job_key"]: k for k, e in _CACHE.items()
                if k[0] == addr and e["job_key"] and not e["tasks"]}
    if not idle:
        return 0
    held = _held_by_scheduler(list(idle))
    if held is None:
        return 0
    dropped = []
    with _CACHE_LOCK:
        for job_key, k in idle.items():
            e = _CACHE.get(k)
            if job_key not in held and e is not None and not e["tasks"]:
                dropped.append(_CACHE.pop(k))
    for e in dropped:
        recover(e.get("backend"))
    return len(dropped)


def _worker_entry(job: Job, token: str, kind: str, max_memory: int, planned: int = 0,
                  job_key: str | None = None) -> dict:
    """This worker's entry of the run ``token`` (made at its first task, the
    backend then sized to the device's free memory), with one more of the
    run's tasks counted in it: the caller ends it by :func:`_task_done`."""
    addr, name = _worker_id()
    key = (addr, token)
    with _CACHE_LOCK:
        known = key in _CACHE
    if not known:  # before the new backend sizes itself to what is free
        _drop_orphans(addr)
    with _CACHE_LOCK:
        entry = _CACHE.get(key)
        if entry is None:
            entry = {"lock": threading.Lock(), "backend": None, "state": None,
                     "cpu": None, "cpu_state": None, "label": None,
                     "job_key": job_key, "tasks": 0,
                     "released": None,  # when its last task left the device
                     "spent": {"fit_window": 0.0, "fit_window_cpu": 0.0, "in_input": 0.0,
                               "keep": 0.0, "between_tasks": 0.0, "lock_wait": 0.0}}  # s
            _CACHE[key] = entry
        entry["tasks"] += 1
    try:
        with entry["lock"]:
            if entry["backend"] is None:
                b = _make_backend(kind, name)
                bind_thread(b)
                b.fit_memory(job, max_memory)
                entry["state"] = b.prepare(job)
                loader = getattr(b, "planner_loader", None)
                if loader is not None:  # numba's planner for a long run, as the engine's
                    from ..engine import _NUMBA

                    _NUMBA.start_soon(loader(planned))
                entry["backend"] = b
                dev = getattr(b, "devices", None)
                entry["label"] = f"{addr}/{b.name}{dev[0] if dev else ''}"
    except BaseException:
        _task_done(entry)
        raise
    return entry


def _task_done(entry: dict) -> None:
    with _CACHE_LOCK:
        entry["tasks"] -= 1


def _cpu_of(entry: dict, job: Job, max_memory: int):
    if entry["cpu"] is None:
        if getattr(entry["backend"], "name", "") == "cpu":
            entry["cpu"], entry["cpu_state"] = entry["backend"], entry["state"]
        else:
            from ..kernels.cpu_backend import CPUBackend

            cpu = CPUBackend()
            cpu.fit_memory(job, max_memory)
            entry["cpu"], entry["cpu_state"] = cpu, cpu.prepare(job)
    return entry["cpu"], entry["cpu_state"]


def _run_on(job: Job, backend, state, windows, spent: dict | None = None) -> list[PairBatch]:
    """Batches of ``windows`` on ``backend``, in input indices; the seconds
    that took added to ``spent["in_input"]``."""
    from ..engine import in_input

    runner = getattr(backend, "run_windows", None)
    batches = (runner(job, state, windows) if runner is not None
               else (backend.run_window(job, state, w) for w in windows))
    out = []
    for b in batches:
        t = time.perf_counter()
        out.append(in_input(job, backend, b))
        if spent is not None:
            spent["in_input"] += time.perf_counter() - t
    return out


def _fit(job: Job, entry: dict, w) -> list:
    """``w`` fitted to the worker's device (:func:`pairalign.engine.fit_window`)."""
    from ..engine import fit_window

    t, cpu = time.perf_counter(), time.thread_time()
    parts = fit_window(job, entry["backend"], w)
    entry["spent"]["fit_window"] += time.perf_counter() - t
    entry["spent"]["fit_window_cpu"] += time.thread_time() - cpu
    return parts


def _run_fitted(job: Job, entry: dict, fitted: list, max_memory: int) -> list[list[PairBatch]]:
    """Each window's batches from its fitted parts (``fitted``, a list a window):
    those the device holds in flight together on the worker's backend, the
    others on its CPU."""
    fits = [x for parts in fitted for x, ok in parts if ok]
    done = iter(_run_on(job, entry["backend"], entry["state"], fits, entry["spent"]))
    out = []
    for parts in fitted:
        got = [next(done) for _, ok in parts if ok]
        too_large = [x for x, ok in parts if not ok]
        if too_large:
            cpu, cpu_state = _cpu_of(entry, job, max_memory)
            got += _run_on(job, cpu, cpu_state, too_large)
        out.append(got)
    return out


def _run_window(job, entry, w, max_memory, depth=0) -> list[PairBatch]:
    """A window on the worker's backend: fitted to its memory, split on errors."""
    backend = entry["backend"]
    try:
        return _run_fitted(job, entry, [_fit(job, entry, w)], max_memory)[0]
    except Exception:
        recover(backend)
        if depth < _RETRY_DEPTH and w.splittable:
            rows, cols = job.rows.lengths, job.col_set.lengths
            return [b for sub in split_window(w, rows, cols)
                    for b in _run_window(job, entry, sub, max_memory, depth + 1)]
        if getattr(backend, "name", "") != "cpu":
            cpu, cpu_state = _cpu_of(entry, job, max_memory)
            return _run_on(job, cpu, cpu_state, [w])
        raise


def _run_together(job: Job, entry: dict, windows: list, fitted: list,
                  max_memory: int) -> list[list[PairBatch]]:
    """Each of ``windows``' batches, their fitted parts (``fitted``) in flight
    together on the worker's backend; after an error, each window again on
    its own (:func:`_run_window`: split, then the CPU)."""
    if any(parts is None for parts in fitted):
        return [_run_window(job, entry, w, max_memory) for w in windows]
    try:
        return _run_fitted(job, entry, fitted, max_memory)
    except Exception:
        recover(entry["backend"])
        return [_run_window(job, entry, w, max_memory) for w in windows]


def run_window_task(job: Job, token: str, windows: list, kind: str = "auto",
                    max_memory: int = 4 << 30, keep=None,
                    planned: int = 0, job_key: str | None = None
                    ) -> tuple[list[list[PairBatch]], float, str, dict | None]:
    """Windows on this Dask worker: each one's batches (input indices, a part of
    the window each, not copied into one; only the pairs that ``keep``
    keeps, where given), seconds, worker label, and the worker backend's
    timings so far (``None`` if it keeps none). ``planned``: the run's
    windows in all (a long run's plans move to numba, as in the engine);
    ``job_key``: the Dask key of the run's scattered job, by which a later
    run finds this one's entry orphaned (:func:`_drop_orphans`).

    The windows run in flight together (the device's tail of one overlaps the
    next). They are fitted to the device first, before the worker's lock:
    fitting each as the backend takes it, while the one before runs, made a
    run with traceback 1.8x slower on one H200 (the launching thread's fits
    and the fetching thread's downloads take turns with the GIL); where the
    worker has several threads, one's windows are fitted while another's
    run."""
    arrived = time.perf_counter()
    entry = _worker_entry(job, token, kind, max_memory, planned, job_key)
    try:
        return _task(job, entry, windows, max_memory, keep, arrived)
    finally:
        _task_done(entry)


def _task(job: Job, entry: dict, windows: list, max_memory: int, keep,
          arrived: float) -> tuple[list[list[PairBatch]], float, str, dict | None]:
    spent = entry["spent"]
    if entry["released"] is not None:  # since the last task left the device
        spent["between_tasks"] += max(0.0, arrived - entry["released"])
    bind_thread(entry["backend"])
    fitted = []
    for w in windows:
        try:
            fitted.append(_fit(job, entry, w))
        except Exception:  # fitted again, and its errors handled, with the window
            fitted.append(None)
    t = time.perf_counter()
    with entry["lock"]:  # one task at a time per worker: the backend is not re-entrant
        bind_thread(entry["backend"])
        t0 = time.perf_counter()
        spent["lock_wait"] += t0 - t
        try:
            per_window = _run_together(job, entry, windows, fitted, max_memory)
        finally:
            entry["released"] = time.perf_counter()
        seconds = entry["released"] - t0
    for w, batches in zip(windows, per_window):
        got = sum(len(b) for b in batches)
        if got != w.pairs:
            raise RuntimeError(f"worker returned {got} pairs for a window of {w.pairs}")
    t = time.perf_counter()
    if keep is not None:
        per_window = [[b.kept(keep) for b in batches] for batches in per_window]
    spent["keep"] += time.perf_counter() - t
    bt = getattr(entry["backend"], "timings", None)
    bt = dict(bt, **spent) if isinstance(bt, dict) else None
    return ([[b for b in batches if len(b)] for batches in per_window], seconds,
            entry["label"], bt)


def forget(token: str, dask_worker=None) -> int:
    """Drop the backends and device state a job left on this worker."""
    addr = dask_worker.address if dask_worker is not None else _worker_id()[0]
    with _CACHE_LOCK:
        keys = [k for k in _CACHE if k[1] == token and k[0] == addr]
        for k in keys:
            entry = _CACHE.pop(k)
            recover(entry.get("backend"))
    return len(keys)


def worker_info() -> dict:
    from ..backends import gpu_count

    return {"gpus": gpu_count(), "pid": os.getpid()}


# ---------------------------------------------------------------------------------
# on the client
# ---------------------------------------------------------------------------------


def _cluster(client) -> tuple[int, int, bool]:
    """Workers, their threads in all, and whether any has a GPU."""
    info = client.scheduler_info()
    workers = info.get("workers", {})
    threads = sum(int(w.get("nthreads", 1)) for w in workers.values()) or 1
    try:
        gpus = any(v.get("gpus", 0) > 0 for v in client.run(worker_info).values())
    except Exception:
        gpus = False
    return len(workers), threads, gpus


def plan_distributed(job: Job, client, backend=None, max_memory: int = 4 << 30,
                     width: int | None = None):
    """Windows for the cluster: ``(width, parents in LPT order, pieces, threads)``."""
    from ..engine import window_width
    from .devices import min_window_pairs, primary

    n_workers, threads, gpus = _cluster(client)
    if backend is not None:
        w = window_width(job, primary(backend), max_memory, width)
    elif width is not None:
        w = width
    elif gpus:
        from ..kernels.gpu_backend import widest_window

        # one worker's width: the wider windows of several GPUs were measured
        # in one process only (gpu_backend.MAX_WIDTH_SEVERAL)
        w = widest_window(len(job.rows), len(job.col_set), job.triangle)
    else:
        from ..kernels.cpu_backend import CPUBackend

        w = window_width(job, CPUBackend(), max_memory, None)
    col_lengths = None if job.triangle else job.cols.lengths
    windows = plan_windows(job.rows.lengths, col_lengths, w)
    parents = [windows[k] for k in lpt_order([x.cost for x in windows])]
    min_pairs = (1 << 18) if gpus else min_window_pairs(primary(backend)) if backend else 256
    pieces = balance(parents, job.rows.lengths, job.col_set.lengths, threads,
                     min_pairs=min_pairs)
    return w, parents, pieces, threads


#: Results fetched straight from the workers that hold them (Dask's
#: ``direct``), unless the client was made with ``direct_to_workers=False`` or
#: a worker does not answer it (:func:`workers_reachable`).
#: Through the scheduler each result crosses two connections: a LocalCluster's
#: client took score-only batches of 1 M pairs in ~100 ms that way against ~32
#: ms direct (two AMD cores).
DIRECT_FETCH = True
#: How long the client waits for each worker's answer before a run fetches
#: directly (s): one that does not answer in time sends the run's results
#: through the scheduler (a client behind a tunnel to the scheduler alone).
#: Dask's own fallback tries the worker again on every result, each time up
#: to its connect timeout (30 s by default).
PROBE_TIMEOUT_S = 3.0
#: How long closing waits for the fetching thread (s); it is a daemon thread.
_FETCHER_JOIN_S = 30.0


def workers_reachable(client, addresses=None, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether this client can connect to every worker of its cluster (or to
    ``addresses``) directly, each within ``timeout`` seconds: a Dask handshake
    with each, in parallel, with the client's security settings."""
    import asyncio

    from distributed.comm import connect

    if addresses is None:
        addresses = list(client.scheduler_info().get("workers", {}))

    async def answers(address) -> bool:
        try:
            comm = await asyncio.wait_for(connect(address, timeout=timeout,
                                                  **client.connection_args), timeout)
        except (OSError, asyncio.TimeoutError, TimeoutError):
            return False
        await comm.close()
        return True

    async def every() -> bool:
        return all(await asyncio.gather(*(answers(a) for a in addresses)))

    return client.sync(every)


def _fetches_directly(client) -> bool:
    """Whether a run fetches its results from the workers (``DIRECT_FETCH``):
    as the client was made to (``direct_to_workers``), else where it reaches
    every worker."""
    asked = getattr(client, "direct_to_workers", None)
    return (DIRECT_FETCH and workers_reachable(client)) if asked is None else asked


class _Fetcher:
    """A job's window tasks submitted, at most ``limit`` in flight, and their
    results fetched as they complete, on a thread of its own: the client takes
    results in the background while its caller works on earlier ones, and at
    most ``limit`` fetched results wait for the caller.

    ``submit(i)`` submits item ``i`` (0 to ``count - 1``, in that order) and
    returns its future; ``may_submit(i)``, where given, holds item ``i`` and
    the later ones back while it is False (an ordered consumer's reorder
    buffer), until :meth:`wake` finds it True. :meth:`next` gives ``(i,
    result)`` in completion order, raises a task's error, and gives None once
    every item came; :meth:`close` cancels what is left.
    """

    def __init__(self, client, submit, count: int, limit: int, direct: bool,
                 may_submit=None):
        from dask.distributed import as_completed

        self._client, self._submit, self._count, self._direct = client, submit, count, direct
        self._limit = max(1, limit)
        self._may_submit = may_submit
        self._completed = as_completed(loop=client.loop)  # not the default client's
        self._running: dict = {}  # future -> item
        self._submitted = 0
        self._lock = threading.Lock()
        self._held = threading.Condition(self._lock)  # what holds items back may change
        self._closed = False
        self._results: queue.Queue = queue.Queue(maxsize=self._limit)
        self._thread = threading.Thread(target=self._fetch, name="pairalign-dask-fetch",
                                        daemon=True)
        self._thread.start()

    def _fill(self) -> None:  # under the lock
        while (self._submitted < self._count and len(self._running) < self._limit
               and (self._may_submit is None or self._may_submit(self._submitted))):
            fut = self._submit(self._submitted)
            self._running[fut] = self._submitted
            self._completed.add(fut)
            self._submitted += 1

    def wake(self) -> None:
        """Look again at the items ``may_submit`` held back."""
        with self._held:
            self._held.notify_all()

    def _fetch(self) -> None:
        try:
            for _ in range(self._count):
                with self._held:
                    self._fill()
                    while not self._running and not self._closed:  # held back
                        self._held.wait(0.5)
                        self._fill()
                    if self._closed:
                        return
                fut = next(self._completed)
                with self._lock:
                    if self._closed:
                        return
                    i = self._running.pop(fut)
                try:
                    result = self._client.gather(fut, direct=self._direct)
                finally:  # an error's traceback holds this frame: not the task
                    fut.release()
                with self._lock:
                    if self._closed:
                        return
                    self._fill()
                self._put((i, result))
            self._put(None)
        except BaseException as exc:  # a task's error (or a cancelled one's) for next()
            self._put(exc)

    def _put(self, item) -> None:
        while not self._closed:
            try:
                self._results.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def next(self):
        """``(item, result)`` of the next task to complete; None once all came."""
        got = self._results.get()
        if isinstance(got, BaseException):
            raise got
        return got

    def close(self) -> None:
        """Cancel the tasks still running and let the thread go."""
        with self._held:
            self._closed = True
            running = list(self._running)
            self._running.clear()
            self._held.notify_all()
        for fut in running:
            fut.cancel()
        self._thread.join(_FETCHER_JOIN_S)


#: An ordered stream submits no task more than this many times the tasks in
#: flight past the first task of the oldest window its consumer waits for (a
#: window's own tasks always): a slow task then holds back the run, not the
#: client's memory, while the results behind it wait to be yielded in order.
ORDERED_TASKS_AHEAD = 2
#: Windows a task holds at most: a worker's device runs a task's windows in
#: flight together, and waits between tasks (the next task's hand-off and fit;
#: one H200 at 1e13 cells with traceback ran 54% busy at one window a task).
WINDOWS_PER_TASK = 4
#: Tasks each worker thread gets at least where the windows allow, so that the
#: cluster's last tasks still balance; below, fewer windows a task.
TASKS_PER_THREAD = 8


def task_groups(windows: int, threads: int) -> list[range]:
    """The tasks of a run of ``windows`` planned windows (in plan order) on
    ``threads`` worker threads: consecutive windows, up to
    :data:`WINDOWS_PER_TASK` a task, at least :data:`TASKS_PER_THREAD` tasks
    a thread where there are windows for them."""
    per = max(1, min(WINDOWS_PER_TASK, windows // (TASKS_PER_THREAD * max(threads, 1))))
    return [range(i, min(i + per, windows)) for i in range(0, windows, per)]


def iter_distributed(job: Job, client, *, backend=None, max_memory: int = 4 << 30,
                     width: int | None = None, ordered: bool = False, progress=None,
                     timings: dict | None = None, max_inflight: int | None = None,
                     kind: str = "auto", keep=None) -> Iterator[PairBatch]:
    """Stream a job's results from a Dask cluster (see :func:`pairalign.engine.iter_windows`).

    ``kind``: ``"auto"`` (GPU where the worker has one, else CPU), ``"cpu"`` or
    ``"gpu"``. The local ``backend``, if given, only sizes the windows.
    ``keep`` (a batch -> boolean mask) filters each window's pairs on the
    worker that ran it: only the kept pairs cross to the client.
    """
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError

    from ..engine import _call_progress, _sorted_by_rank

    started = time.perf_counter()
    w, parents, pieces, threads = plan_distributed(job, client, backend, max_memory, width)
    items = [(p, k, win) for p, ws in enumerate(pieces) for k, win in enumerate(ws)]
    tasks = task_groups(len(items), threads)
    total = sum(x.pairs for x in parents)
    cells_total = sum(x.cells for x in parents)
    token = uuid.uuid4().hex
    limit = max_inflight or (2 * threads + 2)
    job_future = client.scatter(job, broadcast=True, hash=False) if items else None
    stats: dict[str, dict] = {}

    def submit(i: int):
        windows = [items[k][2] for k in tasks[i]]
        return client.submit(run_window_task, job_future, token, windows, kind, max_memory,
                             keep, len(items), job_future.key,
                             key=f"pairalign-window-{token}-{i}",
                             priority=len(tasks) - i, pure=False, retries=1)

    done = cells_done = 0
    pending: dict[int, list[PairBatch]] = {}
    have = [0] * len(parents)
    next_parent = 0
    first_parent = [items[t[0]][0] for t in tasks]
    first_task: dict[int, int] = {}
    for i, t in enumerate(tasks):
        for k in t:
            first_task.setdefault(items[k][0], i)

    def in_reorder_bound(i: int) -> bool:  # an ordered stream's buffer stays bounded
        p = next_parent
        return (first_parent[i] <= p or p >= len(parents)
                or i < first_task[p] + ORDERED_TASKS_AHEAD * limit)

    fetcher = (_Fetcher(client, submit, len(tasks), limit, _fetches_directly(client),
                        in_reorder_bound if ordered else None) if tasks else None)
    try:
        while fetcher is not None:
            t = time.perf_counter()
            try:
                got = fetcher.next()
            except (FutureCancelledError, KilledWorker) as exc:  # the cluster's, not a bug
                from ..errors import DeviceError

                raise DeviceError("the Dask cluster lost the run (a worker or the scheduler "
                                  f"gone): {' '.join(str(exc).split())}") from exc
            wait = time.perf_counter() - t
            if got is None:
                break
            i, (per_window, seconds, label, bt) = got
            wins = [items[k] for k in tasks[i]]
            pairs = sum(win.pairs for _, _, win in wins)
            cells = sum(win.cells for _, _, win in wins)
            st = stats.setdefault(label, {"label": label, "description": label, "windows": 0,
                                          "pairs": 0, "cells": 0, "busy_s": 0.0,
                                          "blocked_s": 0.0, "wait_s": 0.0, "failures": 0,
                                          "retired": False, "predicted_s": None})
            st["windows"] += len(wins)
            st["pairs"] += pairs
            st["cells"] += cells
            st["busy_s"] += seconds
            st["wait_s"] += wait  # the client's wait for this result (compute and transfer)
            if bt is not None:
                st["backend_timings"] = bt
            done += pairs
            cells_done += cells
            _call_progress(progress, done, total, cells_done, cells_total)
            if not ordered:
                for batches in per_window:
                    yield from batches
                continue
            for (p, _, win), batches in zip(wins, per_window):
                pending.setdefault(p, []).extend(batches)
                have[p] += win.pairs
            while next_parent < len(parents) and have[next_parent] == parents[next_parent].pairs:
                merged = PairBatch.concat(pending.pop(next_parent))
                next_parent += 1
                fetcher.wake()
                yield _sorted_by_rank(job, merged)
        if done != total:
            raise RuntimeError(f"cluster returned {done} pairs, {total} expected")
        if total == 0:
            _call_progress(progress, 0, 0, 0, 0)
    finally:
        if fetcher is not None:
            fetcher.close()
        try:
            client.run(forget, token)
        except Exception:
            pass
        if job_future is not None:
            try:
                job_future.release()
            except Exception:
                pass
    wall = time.perf_counter() - started
    if timings is not None:
        timings["windows"] = timings.get("windows", 0.0) + wall
        timings["predicted"] = None
        timings["measured"] = wall
        timings["scheduler"] = {"workers": list(stats.values()),
                                "windows": sum(s["windows"] for s in stats.values()),
                                "planned_windows": len(parents), "width": w,
                                "failures": 0, "retries": 0, "model": None,
                                "cluster": True}
