"""The scheduler: LPT, several workers, failures, streaming, progress, plan, cost model.

GPU workers are stood in for by fake backends that wrap the CPU backend (so
their results are real) and fail, stall or refuse memory on chosen windows.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import random
import threading
import time
import warnings

import numpy as np
import pytest

import pairalign
from pairalign import engine
from pairalign.engine import (format_plan, format_run_report, iter_windows, plan, prepare_work,
                              run_job)
from pairalign.errors import CPUFallbackWarning, DeviceErrorWarning
from pairalign.job import Job, SortedSet
from pairalign.kernels.cpu_backend import CPUBackend
from pairalign.pairs import PairBatch
from pairalign.progress import ProgressBar, chain, terminal_progress
from pairalign.scheduler import cost
from pairalign.scheduler.devices import worker_backends
from pairalign.scheduler import lpt
from pairalign.scheduler.lpt import (Item, WorkQueue, balance, interleaved, lpt_assign,
                                     lpt_bound, lpt_order)
from pairalign.scheduler.windows import (BLOCK, halve_window, halves, make_window, plan_windows,
                                         split_window, window_pairs)
from pairalign.scoring import Scoring

from conftest import assert_same_pairs as same

AMINO = list("ACDEFGHIKLMNPQRSTVWY")


@pytest.fixture(autouse=True)
def _private_cost_cache(tmp_path, monkeypatch):
    """Cost samples go to a temporary cache, and none leak between tests."""
    monkeypatch.setenv("PAIRALIGN_CACHE_DIR", str(tmp_path / "cache"))
    cost.clear()
    yield
    cost.clear()


def random_seqs(n, lo=8, hi=90, seed=0):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(AMINO, int(k))) for k in rng.integers(lo, hi, n)]


def make_job(n=70, m=None, mode="local", traceback=True, seed=0):
    sc = Scoring.create("protein")
    rows = SortedSet.encode(random_seqs(n, seed=seed), sc)
    cols = None if m is None else SortedSet.encode(random_seqs(m, seed=seed + 1), sc)
    return Job(mode, sc, traceback, rows, cols)


_CPU = CPUBackend(threads=1)


class FakeOOM(Exception):
    """Stands for cupy.cuda.memory.OutOfMemoryError."""


class Fake:
    """A worker: the CPU kernels, with failures and delays where told.

    ``fail(w, calls)`` -> bool decides whether a call on window ``w`` raises
    (``calls``: how many times this fake saw ``w`` before). ``pipeline``:
    offer ``run_windows`` with two windows in flight, as the GPU backend does.
    ``budget``: offer ``window_bytes``/``device_budget`` (bytes = pairs, or
    cells with ``by_cells``).
    ``bound``: offer ``window_bytes_bound`` as ``bound`` times the bytes.
    ``input_indices``: return batches in input indices, oriented, as the GPU
    backend does (the engine must not orient them again). ``ran_event`` is
    set once this fake has run a window; ``hold`` (an event) holds every window
    after this fake's first until it is set (at most 5 s), so that a test can
    make sure that another fake gets work.
    """

    name = "fake"
    cost_key = "fake"

    def __init__(self, tag, fail=None, delay=0.0, pipeline=False, budget=None, seed=0,
                 input_indices=False, ran_event=None, hold=None, bound=None, by_cells=False):
        self.tag = tag
        self.ran_event = ran_event
        self.hold = hold
        self.input_indices = input_indices
        self.fail = fail or (lambda w, calls: False)
        self.delay = delay
        self.calls: dict = {}
        self.ran: list = []
        self.lock = threading.Lock()
        self.rng = random.Random(seed)
        if pipeline:
            self.run_windows = self._run_windows
        if budget is not None:
            self.window_bytes = lambda job, w: w.cells if by_cells else w.pairs
            self.device_budget = lambda: budget
        if bound is not None:
            self.window_bytes_bound = lambda job, w: int(w.pairs * bound)

    def describe(self):
        return f"fake {self.tag}"

    def task_memory(self, job):
        return _CPU.task_memory(job)

    def fit_memory(self, job, budget):
        return _CPU.fit_memory(job, budget)

    def prepare(self, job):
        return _CPU.prepare(job)

    def run_window(self, job, state, w):
        with self.lock:
            n = self.calls.get(w, 0)
            self.calls[w] = n + 1
        if self.hold is not None and self.ran:
            self.hold.wait(5.0)
        if self.delay:
            time.sleep(self.rng.random() * self.delay)
        if self.fail(w, n):
            raise FakeOOM(f"out of memory on {self.tag} for {w}")
        out = _CPU.run_window(job, state, w)
        if self.input_indices:
            out = out.oriented(job.rows.order, job.col_set.order, job.triangle)
        with self.lock:
            self.ran.append(w)
        if self.ran_event is not None:
            self.ran_event.set()
        return out

    def _run_windows(self, job, state, windows, depth=2):
        pending = []
        for w in windows:
            pending.append(w)
            if len(pending) >= depth:
                yield self.run_window(job, state, pending.pop(0))
        while pending:
            yield self.run_window(job, state, pending.pop(0))


@pytest.fixture(scope="module")
def tri():
    job = make_job(70)
    return job, run_job(job, _CPU)


@pytest.fixture(scope="module")
def rect():
    job = make_job(40, 55, mode="semiglobal")
    return job, run_job(job, _CPU)


def covered(job, batches):
    """Every pair of ``job`` exactly once over ``batches`` (input indices)."""
    q = np.concatenate([b.query for b in batches])
    t = np.concatenate([b.target for b in batches])
    n = len(job.rows)
    total = n * (n - 1) // 2 if job.triangle else n * len(job.cols)
    assert len(q) == total
    keys = set(zip(q.tolist(), t.tolist()))
    assert len(keys) == total, "a pair came twice"
    if job.triangle:
        assert (q < t).all()


# ---------------------------------------------------------------------------------
# LPT
# ---------------------------------------------------------------------------------


def test_lpt_order_largest_first_stable():
    assert lpt_order([3, 9, 3, 1, 9]) == [1, 4, 0, 2, 3]
    assert lpt_order([]) == []


@pytest.mark.parametrize("interleave", [False, True])
def test_workers_run_their_windows_largest_first_or_interleaved(tri, interleave,
                                                                monkeypatch):
    """INTERLEAVE: the windows go largest, smallest, second largest, ... on one
    worker and on several (not for an ordered stream); the results are the same."""
    job, ref = tri
    monkeypatch.setattr(lpt, "INTERLEAVE", interleave)
    for backend in (CPUBackend(), [CPUBackend(), CPUBackend()]):
        costs = [w.cost for w in prepare_work(job, backend, width=32).parents]
        largest_first = sorted(costs, reverse=True)
        assert len(set(costs)) > 2
        assert costs == ([largest_first[k] for k in interleaved(range(len(costs)))]
                         if interleave else largest_first)
        same(run_job(job, backend, width=32), ref)
    # an ordered stream's batches come largest first
    for backend in (CPUBackend(), [CPUBackend(), CPUBackend()]):
        work = prepare_work(job, backend, width=32, ordered=True)
        assert [w.cost for w in work.parents] == largest_first


def test_lpt_assign_takes_idle_first():
    a = lpt_assign([7, 5, 4, 3, 3, 2], 2)
    # 7 -> w0, 5 -> w1, 4 -> w1 (9), 3 -> w0 (10), 3 -> w1 (12), 2 -> w0 (12)
    assert a.workers == [[0, 3, 5], [1, 2, 4]]
    assert a.loads == [12, 12]
    a = lpt_assign([1, 1], 3, ready=[5, 0, 0])
    assert a.workers == [[], [0], [1]]


def _optimal(costs, m):
    best = float("inf")
    for assign in itertools.product(range(m), repeat=len(costs)):
        if assign and assign[0] != 0:  # symmetry: the first job on worker 0
            continue
        loads = [0.0] * m
        for c, w in zip(costs, assign):
            loads[w] += c
        best = min(best, max(loads))
    return best


@pytest.mark.parametrize("m", [2, 3])
def test_lpt_makespan_within_graham_bound(m):
    rng = random.Random(m)
    worst = 0.0
    for _ in range(60):
        costs = [rng.randint(1, 50) for _ in range(rng.randint(m + 1, 8))]
        ratio = lpt_assign(costs, m).makespan / _optimal(costs, m)
        worst = max(worst, ratio)
        assert ratio <= lpt_bound(m) + 1e-12
    # Graham's tight instance: 2m+1 jobs 2m-1, 2m-1, 2m-2, 2m-2, ..., m, m, m
    costs = [c for k in range(2 * m - 1, m, -1) for c in (k, k)] + [m, m, m]
    assert lpt_assign(costs, m).makespan / _optimal(costs, m) == pytest.approx(lpt_bound(m))


def test_balance_pieces_cover_parents_and_are_small():
    job = make_job(300, seed=3)
    lengths = job.rows.lengths
    wins = plan_windows(lengths, None, 128)
    wins = [wins[k] for k in lpt_order([w.cost for w in wins])]
    total = sum(w.cost for w in wins)
    pieces = balance(wins, lengths, lengths, 4, min_pairs=16)
    assert balance(wins, lengths, lengths, 4, min_pairs=16) == pieces  # deterministic
    assert [[w] for w in wins] == balance(wins, lengths, lengths, 1)
    for parent, ps in zip(wins, pieces):
        a = set(zip(*[x.tolist() for x in window_pairs(parent)]))
        b = [p for w in ps for p in zip(*[x.tolist() for x in window_pairs(w)])]
        assert len(b) == len(set(b)) and set(b) == a
        assert [w.cost for w in ps] == sorted((w.cost for w in ps), reverse=True)
        for w in ps:
            assert w.cost <= total / 32 or w.pairs < 64 or (
                w.r1 - w.r0 <= BLOCK and w.c1 - w.c0 <= BLOCK)
    assert sum(len(p) for p in pieces) > len(wins)
    # the pieces last in LPT order (a share of the cost: tail) quartered once more
    untailed = balance(wins, lengths, lengths, 4, min_pairs=16, tail=0)
    tailed = balance(wins, lengths, lengths, 4, min_pairs=16, tail=1 / 16)
    assert tailed[0] == untailed[0]
    assert len(tailed[-1]) > len(untailed[-1])
    for ps, qs in zip(tailed, untailed):
        assert sorted(x for w in ps for x in window_pairs(w)[0].tolist()) == sorted(
            x for w in qs for x in window_pairs(w)[0].tolist())
    share = 0.999 * sum(w.cost for ps in untailed[::-1][:3] for w in ps) / total
    last = balance(wins, lengths, lengths, 4, min_pairs=16, tail=share)
    assert all(len(a) > len(b) for a, b in zip(last[::-1][:3], untailed[::-1][:3]))
    assert len(last[-4]) == len(untailed[-4])


def test_work_queue_order_avoid_and_ahead():
    job = make_job(40)
    lengths = job.rows.lengths
    w = make_window(lengths, lengths, 0, 16, 16, 32, True)
    q = WorkQueue(ahead=2)
    for p in range(4):
        q.put(Item(key=(p, 0), window=w, parent=p))
    assert q.try_get("a").parent == 0
    q.put(Item(key=(0, 0, 1), window=w, parent=0, avoid=frozenset({"a"})))
    assert q.try_get("a").parent == 1          # the put-back piece is avoided by "a"
    assert q.try_get("a") is None               # parent 2 is beyond released + ahead
    assert q.try_get("b").key == (0, 0, 1)      # "b" may take it, first
    q.release(1)
    assert q.try_get("a").parent == 2
    q.done(3)
    assert q.outstanding == 2


# ---------------------------------------------------------------------------------
# several workers: same output, whatever the order or the failures
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["tri", "rect"])
def test_multi_worker_identical(which, request):
    job, ref = request.getfixturevalue(which)
    for k, n in enumerate((1, 2, 3)):
        fakes = [Fake(f"g{i}", delay=0.004, seed=k * 10 + i, pipeline=i % 2 == 1)
                 for i in range(n)]
        if n > 1:  # g0 takes a second window once g1 has run one
            fakes[0].hold = fakes[1].ran_event = threading.Event()
        timings = {}
        out = run_job(job, fakes, width=32, timings=timings)
        same(out, ref)
        sched = timings["scheduler"]
        assert sum(w["pairs"] for w in sched["workers"]) == len(ref)
        for w in sched["workers"]:  # each window measured; the first and last result's clock
            assert len(w["measured"]) == w["windows"]
            assert sum(p for p, _, _ in w["measured"]) == w["pairs"]
            assert (w["first_at"] <= w["last_at"]) if w["windows"] else w["last_at"] is None
        if n > 1:
            assert sched["windows"] > sched["planned_windows"]  # balanced into pieces
            assert sum(w["windows"] > 0 for w in sched["workers"]) >= 2


@pytest.mark.parametrize("which", ["tri", "rect"])
@pytest.mark.parametrize("ordered", [False, True])
def test_workers_that_orient_their_batches_beside_those_that_do_not(which, ordered, request):
    """A backend whose batches are already in input indices (the GPU's) is
    not oriented again, beside one whose batches are not, on failures too."""
    job, ref = request.getfixturevalue(which)
    # b runs out of memory once on each window larger than a block (blocks it runs);
    # a and c wait until b has run a window, so that every run mixes the two kinds
    fail_big = lambda w, calls: (w.r1 - w.r0 > BLOCK or w.c1 - w.c0 > BLOCK) and calls == 0  # noqa: E731
    b_ran = threading.Event()
    fakes = [Fake("a", delay=0.003, seed=1, input_indices=True, pipeline=True, hold=b_ran),
             Fake("b", fail=fail_big, delay=0.003, seed=2, ran_event=b_ran),
             Fake("c", delay=0.003, seed=3, input_indices=True, hold=b_ran)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeviceErrorWarning)
        if ordered:
            got = PairBatch.concat(list(iter_windows(job, fakes, width=32, ordered=True)))
            order = np.argsort(got.query * len(job.col_set) + got.target, kind="stable")
            same(got.take(order), ref)
        else:
            same(run_job(job, fakes, width=32), ref)
    assert [f.tag for f in fakes if f.ran] == ["a", "b", "c"]


def test_dask_task_batches_in_input_indices_from_either_kind_of_backend(tri):
    """A Dask task's windows (``distributed._run_on``, no cluster needed) come
    back in input indices whether the backend orients its batches or not."""
    from pairalign.scheduler.distributed import _run_on

    job, ref = tri
    windows = plan_windows(job.rows.lengths, None, 32)
    for fake in (Fake("a"), Fake("b", input_indices=True), Fake("c", pipeline=True),
                 Fake("d", pipeline=True, input_indices=True)):
        got = PairBatch.concat(_run_on(job, fake, fake.prepare(job), windows))
        order = np.argsort(got.query * len(job.col_set) + got.target, kind="stable")
        same(got.take(order), ref)


@pytest.mark.parametrize("rows, cols, triangle, workers", [
    (13_622, 13_622, True, 1), (13_622, 13_622, True, 2), (13_622, 13_622, True, 4),
    (13_622, 13_622, True, 8), (2_128, 2_128, True, 4), (3_000, 40_000, False, 4),
    (3_000, 9_000, False, 4), (100, 100, True, 4)])
@pytest.mark.parametrize("traceback", [False, True])
def test_gpu_window_width_grows_only_for_large_jobs_on_several_devices(
        rows, cols, triangle, workers, traceback, monkeypatch):
    """Several GPUs take MAX_WIDTH_SEVERAL (MAX_WIDTH_SEVERAL_TRACEBACK with
    traceback) where each would get at least SEVERAL_MIN_WINDOWS windows
    that wide (counted here from the job's windows as planned), else
    MAX_WIDTH; never wider than the job. (With traceback, as a wider
    setting would: 2,048.)"""
    from pairalign.kernels import gpu_backend as g

    assert g.MAX_WIDTH_SEVERAL_TRACEBACK == g.MAX_WIDTH  # by default, no wider
    monkeypatch.setattr(g, "MAX_WIDTH_SEVERAL_TRACEBACK", 2048)
    several = g.MAX_WIDTH_SEVERAL_TRACEBACK if traceback else g.MAX_WIDTH_SEVERAL
    got = g.widest_window(rows, cols, triangle, workers, traceback)
    wide = plan_windows(np.ones(rows, np.int64), None if triangle else np.ones(cols, np.int64),
                        several)
    want = (several if workers > 1 and len(wide) >= g.SEVERAL_MIN_WINDOWS * workers
            else g.MAX_WIDTH)
    assert got == min(want, -(-max(rows, cols) // BLOCK) * BLOCK)
    assert got % BLOCK == 0


def test_gpu_style_backend_gives_one_worker_per_device():
    class FakeGPU:
        name = "gpu"

        def __init__(self, devices=None):
            self.devices = list(devices) if devices else [0]

    b = FakeGPU(devices=[0, 2, 3])
    ws = worker_backends(b)
    assert ws[0] is b and [w.devices for w in ws[1:]] == [[2], [3]]
    assert worker_backends(b)[1] is ws[1]  # kept for later runs
    assert b.devices == [0, 2, 3]
    assert len(worker_backends(FakeGPU(devices=[1]))) == 1


def test_ordered_stream_is_the_same_whatever_the_workers(tri):
    job, ref = tri

    def stream(backends):
        return list(iter_windows(job, backends, width=32, ordered=True))

    one = stream([Fake("a")])
    fail_big = lambda w, calls: w.pairs > 200 and calls == 0  # noqa: E731
    many = stream([Fake("a", delay=0.003, seed=1), Fake("b", fail=fail_big, seed=2),
                   Fake("c", delay=0.003, pipeline=True, seed=3)])
    assert len(one) == len(many) == len(plan_windows(job.rows.lengths, None, 32))
    for x, y in zip(one, many):
        same(x, y)
    covered(job, many)


def test_failures_split_and_retry_nothing_lost_or_duplicated(tri):
    job, ref = tri
    # "out of memory" on any window of more than 300 pairs: split until they fit
    oom = lambda w, calls: w.pairs > 300  # noqa: E731
    fakes = [Fake("a", fail=oom, pipeline=True), Fake("b", fail=oom, delay=0.002)]
    timings = {}
    with warnings.catch_warnings():  # too large a window is no device fault
        warnings.simplefilter("error", DeviceErrorWarning)
        out = run_job(job, fakes, width=64, timings=timings)
    same(out, ref)
    sched = timings["scheduler"]
    assert sched["failures"] > 0
    # the first failure's message names its worker (an out of memory here)
    labels = [w["label"] for w in sched["workers"]]
    assert any(sched["first_failure"].startswith(f"{lab}: ") for lab in labels), labels
    assert "out of memory" in sched["first_failure"].lower()
    ran = [w for f in fakes for w in f.ran]
    assert all(w.pairs <= 300 for w in ran)
    assert sum(w.pairs for w in ran) == len(ref)  # each pair ran exactly once
    batches = list(iter_windows(job, [Fake("a", fail=oom), Fake("b", fail=oom)], width=64))
    covered(job, batches)


def test_every_worker_reserves_its_device_memory_before_the_windows_are_planned(tri,
                                                                                  monkeypatch):
    """Each device worker's slots are taken at the job's start (``reserve``),
    not only the first worker's, which alone fits the windows: the others
    would size their slots by the first window they see. Before planning:
    prepare_work finds every reservation made."""
    from pairalign import engine

    job, ref = tri
    reserved, seen = [], []

    class Reserving(Fake):
        def reserve(self, job):
            reserved.append((self.tag, job))

    prepare = engine.prepare_work

    def spy(*args, **kwargs):
        seen.append(list(reserved))
        return prepare(*args, **kwargs)

    monkeypatch.setattr(engine, "prepare_work", spy)
    fakes = [Reserving("a", pipeline=True), Reserving("b"), Fake("c")]
    same(run_job(job, fakes, width=64), ref)
    assert reserved == [("a", job), ("b", job)]
    assert seen == [reserved]


def test_pipelined_failure_reruns_windows_in_flight_alone(tri):
    job, ref = tri
    bad = make_window(job.rows.lengths, job.rows.lengths, 16, 32, 48, 64, True)
    flaky = lambda w, calls: w == bad and calls == 0  # noqa: E731
    f = Fake("a", fail=flaky, pipeline=True)
    timings = {}
    same(run_job(job, [f], width=16, timings=timings), ref)
    assert timings["scheduler"]["failures"] == 1
    assert f.calls[bad] == 2


def test_dead_worker_retires_others_finish(tri):
    job, ref = tri
    class Dead(Fake):
        def run_window(self, job, state, w):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
    dead = Dead("dead")
    timings = {}
    with pytest.warns(DeviceErrorWarning, match="ran again.*illegal memory access"):
        out = run_job(job, [dead, Fake("ok", delay=0.002)], width=32, timings=timings)
    same(out, ref)
    workers = {w["label"]: w for w in timings["scheduler"]["workers"]}
    assert workers["fake"]["retired"] and workers["fake"]["pairs"] == 0
    assert workers["fake1"]["pairs"] == len(ref)
    assert "retired" in format_run_report(timings)


class _Held:
    """Stands for a device array of a :class:`_Keeping` fake: ``get()`` copies
    it to the host, or raises once its device is lost."""

    def __init__(self, fake, a):
        self.fake, self.a = fake, a
        self.size, self.nbytes = a.size, a.nbytes

    def __len__(self):
        return len(self.a)

    def get(self):
        if self.fake.lost:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return self.a.copy()


class _Keeping(Fake):
    """A device worker that leaves its windows' operations on its "device"
    (``keep_ops_on_device``, as the GPU backend does) and after ``good``
    windows fails every window; ``lost``: its device loses what it kept
    (a sticky CUDA error), else it still gives it; ``sticky``: a lost
    device says so when probed (``responds``, as the GPU backend's does)."""

    def __init__(self, tag, good, lose, sticky=False, **kw):
        super().__init__(tag, input_indices=True, **kw)
        self.good, self.lose, self.sticky = good, lose, sticky
        self.lost = False
        self.keep = False
        self.kept = 0
        #: set at the failure that retires its worker (the third, or a lost
        #: sticky one's first): hold another fake on it
        self.failed = threading.Event()
        self.failures = 0

    def keep_ops_on_device(self, on):
        self.keep = on

    def responds(self):
        return not (self.sticky and self.lost)

    def run_window(self, job, state, w):
        from pairalign.engine import pair_rank
        from pairalign.pairs import DeviceOps, DevicePairBatch

        if len(self.ran) >= self.good:
            self.lost = self.lose
            self.failures += 1
            if self.failures >= (1 if self.sticky and self.lose else 3):
                self.failed.set()
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        out = super().run_window(job, state, w)
        if not self.keep:
            return out
        self.kept += 1
        ops = DeviceOps(self, *(_Held(self, a) for a in (out.op_offsets, out.op_code,
                                                         out.op_len, pair_rank(job, out))))
        cols = {name: getattr(out, name) for name in out.__dataclass_fields__}
        cols |= {"op_code": np.zeros(0, np.uint8), "op_len": np.zeros(0, np.int32)}
        return DevicePairBatch(**cols, device_ops=ops)


def _run_or_stream(job, workers, streamed):
    """run_job's batch, or (``streamed``) in_input_order's parts joined, as
    the command line writes them."""
    from pairalign.streaming import in_input_order

    if streamed:
        return PairBatch.concat(list(in_input_order(job, workers, width=16)))
    return run_job(job, workers, width=16)


def _cpu_ran(expected: bool):
    """Where a run's last device worker retires, the CPU fallback takes its
    windows and says so (CPUFallbackWarning)."""
    return (pytest.warns(CPUFallbackWarning, match="ran on the CPU") if expected
            else contextlib.nullcontext())


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("other", [True, False])
@pytest.mark.parametrize("lose", [True, False])
def test_a_retired_devices_kept_operations_are_rescued_or_run_again(tri, lose, other,
                                                                     streamed):
    """A device worker that kept its windows' operations on its device
    retires (errors in a row): where its device still gives them they come
    to the host, else (``lose``) its windows run again, on the other worker
    (``other``) or on the CPU fallback. The pairs are the CPU's either way,
    from run_job or streamed in input order (``in_input_order``, as the
    command line writes them); the other worker ran again exactly the
    windows whose operations were lost."""

    job, ref = tri
    keeping = _Keeping("keeping", good=4, lose=lose)
    workers = [keeping] + ([Fake("ok", delay=0.002, seed=3, hold=keeping.failed)]
                           if other else [])
    with pytest.warns(DeviceErrorWarning, match="illegal memory access"), _cpu_ran(not other):
        out = _run_or_stream(job, workers, streamed)
    same(out, ref)
    assert keeping.kept == 4 and keeping.lost == lose
    if other:  # (the CPU fallback's windows are not seen)
        again = set(keeping.ran) & set(workers[1].ran)
        assert again == (set(keeping.ran) if lose else set())


@pytest.mark.parametrize("other", [True, False])
def test_a_device_that_no_longer_responds_retires_at_its_first_failure(tri, other):
    """A device lost to a sticky error fails its window and, probed
    (``responds``), says so: its worker retires at once instead of after three
    failures, which at the end of a run may never come (the other worker
    takes the pieces of its failed window), and the windows whose operations
    the device took with it run again on the other worker or the CPU."""
    job, ref = tri
    keeping = _Keeping("keeping", good=4, lose=True, sticky=True)
    ok = Fake("ok", delay=0.002, seed=5, hold=keeping.failed)
    timings: dict = {}
    with pytest.warns(DeviceErrorWarning, match="illegal memory access"), _cpu_ran(not other):
        out = run_job(job, [keeping] + ([ok] if other else []), width=16, timings=timings)
    same(out, ref)
    assert keeping.failures == 1
    (stats,) = [w for w in timings["scheduler"]["workers"]
                if w["description"] == "fake keeping"]
    assert stats["retired"] and stats["failures"] == 1
    if other:
        assert set(keeping.ran) <= set(ok.ran)


def test_a_device_that_still_responds_is_not_retired_at_its_first_failure(tri):
    """An error after which the device still responds (a window's own fault)
    is not taken for a lost device: its worker retires after three in a row,
    as before."""
    job, ref = tri
    keeping = _Keeping("keeping", good=4, lose=False, sticky=True)
    ok = Fake("ok", delay=0.002, seed=6, hold=keeping.failed)
    timings: dict = {}
    with pytest.warns(DeviceErrorWarning):
        out = run_job(job, [keeping, ok], width=16, timings=timings)
    same(out, ref)
    assert keeping.failures == 3
    (stats,) = [w for w in timings["scheduler"]["workers"]
                if w["description"] == "fake keeping"]
    assert stats["retired"] and stats["failures"] == 3


@pytest.mark.parametrize("sticky", [False, True])
def test_spilled_operations_are_not_run_again_when_their_device_is_lost(tri, sticky):
    """Results streamed in input order through the buckets (more than the
    budget holds): a device batch's operations go to the host as it is
    spilled, and that copy counts as rescued. Where the device is lost
    later, only the windows whose operations it still held run again: no
    pair comes twice, and the pairs are the CPU's."""
    from pairalign.streaming import PLACED_PAIR_BYTES, in_input_order

    job, ref = tri
    keeping = _Keeping("keeping", good=4, lose=True, sticky=sticky)
    ok = Fake("ok", delay=0.002, seed=8, hold=keeping.failed)
    with pytest.warns(DeviceErrorWarning):
        # room for every pair's columns (its windows keep their operations on
        # the device), not for their operations: spilled from the second batch
        out = PairBatch.concat(list(in_input_order(job, [keeping, ok], width=16,
                                                   bucket_bytes=PLACED_PAIR_BYTES * job.pairs)))
    same(out, ref)
    assert keeping.kept == 4


class _LostAtEnd(_Keeping):
    """A :class:`_Keeping` fake that runs every window, then, probed at the
    run's end, has lost its device and what it kept (no failure told)."""

    def __init__(self, tag, **kw):
        super().__init__(tag, good=10**9, lose=True, **kw)
        self.probed = 0

    def responds(self):
        self.probed += 1
        self.lost = True
        return False


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("other", [True, False])
def test_a_device_lost_after_its_last_window_has_its_windows_run_again(tri, other,
                                                                     streamed):
    """A device that kept its windows' operations and is found lost at the
    run's end, with no failure before (probed once the last batch is in):
    its windows run again on the CPU fallback and the pairs are the CPU's,
    from run_job or streamed in input order, with a DeviceErrorWarning; with
    no fallback allowed, a DeviceError says so."""
    from pairalign.errors import DeviceError

    job, ref = tri
    lost = _LostAtEnd("lost")
    workers = [lost] + ([Fake("ok", delay=0.002, seed=7)] if other else [])
    with pytest.warns(DeviceErrorWarning, match="no longer responds after its last window"):
        out = _run_or_stream(job, workers, streamed)
    same(out, ref)
    assert lost.kept == len(lost.ran) > 0 and lost.probed == 1
    with pytest.raises(DeviceError, match="lost after its last window"):
        list(iter_windows(job, [_LostAtEnd("again")], width=16, fallback=None,
                          device_ops=True))


def test_results_wait_for_a_failing_worker_to_retire_and_salvage(tri, monkeypatch):
    """A worker whose window failed puts it back before it decides to
    retire: another worker may take and finish it first, the last of the
    job's. The results wait until the failing worker has retired and its
    device's lost operations have run again (here its decision takes 0.3 s),
    so the placement never meets operations that nobody salvaged."""
    from pairalign import engine

    job, ref = tri
    can_retire = engine._LocalRun._can_retire
    monkeypatch.setattr(engine._LocalRun, "_can_retire",
                        lambda self, label: time.sleep(0.3) or can_retire(self, label))
    keeping = _Keeping("keeping", good=4, lose=True)
    ok = Fake("ok", delay=0.002, seed=4, hold=keeping.failed)
    with pytest.warns(DeviceErrorWarning):
        out = run_job(job, [keeping, ok], width=16)
    same(out, ref)
    assert set(keeping.ran) <= set(ok.ran)


def test_every_worker_failing_goes_to_the_fallback(tri):
    job, ref = tri
    always = lambda w, calls: True  # noqa: E731
    fb = Fake("fallback")
    timings = {}
    with pytest.warns(CPUFallbackWarning, match=f"{len(ref):,} of {len(ref):,} pairs"):
        batches = list(iter_windows(job, [Fake("a", fail=always), Fake("b", fail=always)],
                                    width=32, fallback=fb, timings=timings))
    covered(job, batches)
    assert sum(w.pairs for w in fb.ran) == len(ref)
    labels = [w["label"] for w in timings["scheduler"]["workers"]]
    assert "cpu-fallback" in labels


def test_blocks_no_device_holds_are_halved_down_to_what_it_holds(tri):
    """The device holds 100 "bytes" (= pairs): a 16 x 16 block of 256 pairs
    never fits, nor a diagonal one of 120. They are halved, below a block,
    until they fit: the device runs every pair, the CPU none."""
    job, ref = tri
    fb = Fake("fallback")
    dev = Fake("dev", budget=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CPUFallbackWarning)
        batches = list(iter_windows(job, [dev], width=64, fallback=fb))
    covered(job, batches)
    assert all(w.pairs <= 100 for w in dev.ran) and not fb.ran
    assert any(w.r1 - w.r0 < BLOCK and w.r1 != len(job.rows) for w in dev.ran)
    assert sum(w.pairs for w in dev.ran) == len(ref)


def test_pairs_no_device_holds_go_to_the_fallback(tri):
    """The device's bytes are a window's cells: a pair of two of the
    longest sequences does not fit even alone, and goes to the CPU, alone;
    the rest runs on the device."""
    job, ref = tri
    fb = Fake("fallback")
    lengths = job.rows.lengths
    budget = int(lengths[0]) * int(lengths[3])  # a pair of the first three is over it
    cells = np.multiply.outer(lengths, lengths)[np.triu_indices(len(lengths), 1)]
    assert 3 <= (cells > budget).sum() < len(cells) // 10
    dev = Fake("dev", budget=budget, by_cells=True)
    with pytest.warns(CPUFallbackWarning) as caught:
        batches = list(iter_windows(job, [dev], width=64, fallback=fb))
    covered(job, batches)
    assert all(w.cells <= budget for w in dev.ran)
    assert fb.ran and all(w.pairs == 1 and w.cells > budget for w in fb.ran)
    assert len(fb.ran) == (cells > budget).sum()
    assert sum(w.pairs for w in dev.ran + fb.ran) == len(ref)
    # the warning counts the pairs and the share of the cells that the CPU took
    fell = sum(w.pairs for w in fb.ran)
    share = sum(w.cells for w in fb.ran) / sum(w.cells for w in dev.ran + fb.ran)
    (message,) = [str(w.message) for w in caught if w.category is CPUFallbackWarning]
    assert message.startswith(f"{fell:,} of {len(ref):,} pairs ({share:.1%} of the cells)")


def test_no_fallback_warning_where_the_device_runs_everything(tri):
    job, ref = tri
    with warnings.catch_warnings():
        warnings.simplefilter("error", CPUFallbackWarning)
        batches = list(iter_windows(job, [Fake("dev")], width=64, fallback=Fake("fallback")))
    covered(job, batches)


@pytest.mark.parametrize("pipeline", [False, True])
def test_windows_fitted_by_a_low_bound_are_split_before_they_launch(tri, pipeline):
    """A window that its bound said fits, but whose exact size does not, is
    checked again before it launches and cut: nothing over the budget runs,
    and every pair comes once."""
    job, ref = tri
    dev = Fake("dev", budget=300, bound=0.3, pipeline=pipeline)
    work = prepare_work(job, dev, width=64)
    assert max(w.pairs for ws in work.pieces for w in ws) > 300  # let through by the bound
    out = run_job(job, dev, width=64)
    same(out, ref)
    assert dev.ran and all(w.pairs <= 300 for w in dev.ran)


def test_halve_window_gives_two_pieces_of_every_pair_once():
    """A window halved across its longer side: two windows (a triangle's
    diagonal one, quartered: its halves would not be triangles) that hold
    its pairs, each once, and its cells."""
    rng = np.random.default_rng(3)
    rows = np.sort(rng.integers(5, 400, 200))[::-1]
    cols = np.sort(rng.integers(5, 400, 150))[::-1]
    cases = ([(rows, rows, w) for w in plan_windows(rows, None, 64)]
             + [(rows, cols, w) for w in plan_windows(rows, cols, 64)]
             + [(rows, cols, make_window(rows, cols, 0, 16, 0, 100, False)),
                (rows, cols, make_window(rows, cols, 3, 200, 7, 40, False))])
    halved = 0
    for r, c, w in cases:
        if not w.splittable:
            continue
        pieces = halve_window(w, r, c)
        if w.triangle and w.c0 == w.r0:
            assert pieces == split_window(w, r, c)
        else:
            assert len(pieces) == 2
            halved += 1
            long_rows = w.r1 - w.r0 >= w.c1 - w.c0
            assert all((x.c0, x.c1) == (w.c0, w.c1) if long_rows else (x.r0, x.r1) == (w.r0, w.r1)
                       for x in pieces)
        pairs = [list(zip(*(a.tolist() for a in window_pairs(x)))) for x in pieces]
        assert sorted(p for ps in pairs for p in ps) == sorted(zip(*(a.tolist()
                                                                      for a in window_pairs(w))))
        assert sum(x.pairs for x in pieces) == w.pairs
        assert sum(x.cells for x in pieces) == w.cells
    assert halved > 10


def test_blocks_halved_down_to_single_pairs_keep_every_pair_once():
    """Blocks (ragged ones, a triangle's diagonal ones) halved again and
    again with ``cut=halves`` until they hold one pair (the engine cuts no
    further): every piece holds pairs, and each pair of the block is
    in exactly one of them."""
    rng = np.random.default_rng(4)
    rows = np.sort(rng.integers(5, 400, 45))[::-1]
    cols = np.sort(rng.integers(5, 400, 37))[::-1]
    cases = ([(rows, rows, w) for w in plan_windows(rows, None, BLOCK)]
             + [(rows, cols, w) for w in plan_windows(rows, cols, BLOCK)]
             + [(rows, cols, make_window(rows, cols, 3, 10, 20, 21, False))])
    for r, c, w in cases:
        pieces, todo = [], [w]
        while todo:
            x = todo.pop()
            assert x.pairs > 0
            if x.divisible:
                todo += halve_window(x, r, c, cut=halves)
            else:
                pieces.append(x)
        assert all(x.pairs == 1 for x in pieces) and len(pieces) == w.pairs
        got = sorted(p for x in pieces for p in zip(*(a.tolist() for a in window_pairs(x))))
        assert got == sorted(zip(*(a.tolist() for a in window_pairs(w))))
        assert sum(x.cells for x in pieces) == w.cells


@pytest.mark.parametrize("bound", [0.3, 1.5, 3.0])
def test_windows_halved_to_fit_give_the_same_pairs_in_fewer_windows(tri, monkeypatch, bound):
    """With SPLIT_HALVES, a window over the device's budget is halved where
    it is fitted (before the run by its bound, or at its launch by its exact
    size): nothing over the budget runs, the result is the same, and the
    run takes fewer windows than quartered where exact sizes cut them (600
    "bytes" = pairs: a 1,024-pair window runs as two of 512 instead of four
    of 256), no more where a bound over BOUND_SPLIT_FACTOR budgets does."""
    from pairalign import engine

    job, ref = tri
    ran = {}
    for halved in (False, True):
        monkeypatch.setattr(engine, "SPLIT_HALVES", halved)
        dev = Fake("dev", budget=600, bound=bound, pipeline=True)
        same(run_job(job, dev, width=64), ref)
        assert dev.ran and all(w.pairs <= 600 for w in dev.ran)
        ran[halved] = len(dev.ran)
    assert ran[True] < ran[False] if bound < 2 else ran[True] <= ran[False]


@pytest.mark.parametrize("defer", [True, False])
def test_windows_over_budget_by_bound_left_to_their_launch(tri, monkeypatch, defer):
    """A window whose bound is between one and BOUND_SPLIT_FACTOR budgets is
    left whole by a run's prepare_work (``defer``, DEFER_EXACT_FIT), not
    planned exactly before the first launch (a plan's prepare_work still
    cuts it), and cut at its launch where its exact size must: nothing over
    the budget runs, every pair comes once, the result is the same."""
    from pairalign import engine

    job, ref = tri
    monkeypatch.setattr(engine, "DEFER_EXACT_FIT", defer)
    dev = Fake("dev", budget=300, bound=1.5)
    sized = []
    exact = dev.window_bytes
    dev.window_bytes = lambda job, w: sized.append(w) or exact(job, w)
    work = prepare_work(job, dev, width=64, defer=True)
    assert max(w.pairs for ws in work.pieces for w in ws) > 300 and not sized
    planned = prepare_work(job, dev, width=64)
    assert max(w.pairs for ws in planned.pieces for w in ws) <= 300 and sized
    out = run_job(job, dev, width=64)
    same(out, ref)
    assert dev.ran and all(w.pairs <= 300 for w in dev.ran)


def test_error_everywhere_raises_and_stops():
    job = make_job(40)

    class Broken(Fake):
        def run_window(self, job, state, w):
            raise ValueError("kernel bug")

    before = threading.active_count()
    with pytest.raises(ValueError, match="kernel bug"):
        list(iter_windows(job, [Broken("a"), Broken("b")], width=16, fallback=None))
    broken_cpu = Broken("cpu")
    broken_cpu.name = "cpu"  # a CPU run has no fallback
    with pytest.raises(ValueError, match="kernel bug"):
        run_job(job, broken_cpu, width=16)
    deadline = time.time() + 5
    while time.time() < deadline and threading.active_count() > before:
        time.sleep(0.05)
    assert threading.active_count() <= before


def test_consumer_stopping_early_stops_the_workers(tri):
    job, _ = tri
    gen = iter_windows(job, [Fake("a", delay=0.01), Fake("b", delay=0.01)], width=16)
    next(gen)
    gen.close()
    deadline = time.time() + 5
    while time.time() < deadline and any(t.name.startswith("pairalign-")
                                         for t in threading.enumerate()):
        time.sleep(0.05)
    assert not any(t.name.startswith("pairalign-") for t in threading.enumerate())


def test_stream_is_bounded(tri):
    """Workers wait for a slow consumer: at most the queue's worth is ever ahead."""
    job, _ = tri
    fakes = [Fake("a"), Fake("b")]
    gen = iter_windows(job, fakes, width=16, buffer=2)
    next(gen)
    time.sleep(0.3)
    ran = sum(len(f.ran) for f in fakes)
    gen.close()
    # one delivered, two queued, one held by each worker waiting to post
    assert ran <= 1 + 2 + len(fakes)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_consumer_takes_its_share_of_numba_threads_while_workers_run(tri, workers,
                                                                     monkeypatch):
    """With several workers the consumer's numba passes (orienting each
    window's results, then placing them: run_job) run on its share of the
    cores, ``1 / (workers + 1)`` of its own setting (one worker too:
    SHARE_CORES_ONE_WORKER), all of it for the results left once no worker
    runs; between two results, and when the stream ends or is closed, the
    thread's own setting is as it was."""
    import numba

    from pairalign import pairs

    job, ref = tri
    own = numba.get_num_threads()
    want = max(1, own // (workers + 1))
    passes, placed, seen, got = [], [], [], []
    oriented, add = pairs.PairBatch.oriented, pairs.Placement.add

    def counted_oriented(self, *args, **kwargs):
        passes.append(numba.get_num_threads())
        return oriented(self, *args, **kwargs)

    def counted_add(self, batch):
        with engine._NUMBA:
            placed.append(numba.get_num_threads())
        return add(self, batch)

    monkeypatch.setattr(pairs.PairBatch, "oriented", counted_oriented)
    monkeypatch.setattr(pairs.Placement, "add", counted_add)
    for b in iter_windows(job, [Fake(f"g{i}") for i in range(workers)], width=16):
        seen.append(numba.get_num_threads())
        got.append(b)
    # the queue holds fewer results than the job's windows: the first comes
    # while the workers run
    assert passes[0] == want and set(passes) <= {want, own}
    assert set(seen) == {own} and numba.get_num_threads() == own
    out = PairBatch.concat(got)
    same(out.take(np.argsort(out.query * len(job.col_set) + out.target, kind="stable")), ref)
    same(run_job(job, [Fake(f"g{i}") for i in range(workers)], width=16), ref)
    assert placed[0] == want and set(placed) <= {want, own}
    gen = iter_windows(job, [Fake(f"g{i}") for i in range(workers)], width=16)
    next(gen)
    assert numba.get_num_threads() == own
    gen.close()
    assert numba.get_num_threads() == own and engine.consumer_threads() is None


def test_a_workers_planner_is_loaded_on_the_numba_start_thread(tri):
    """A run asks its device worker for a planner loader with its number of
    windows, and runs what it gives on numba's start thread."""
    job, ref = tri
    asked, ran = [], threading.Event()
    where = []
    fake = Fake("a", pipeline=True)

    def planner_loader(windows):
        asked.append(windows)
        return lambda: (where.append(threading.current_thread().name), ran.set())

    fake.planner_loader = planner_loader
    same(run_job(job, [fake], width=16), ref)
    assert ran.wait(5) and where == ["pairalign-numba-start"]
    pairs = len(ref)
    assert len(asked) == 1 and 1 < asked[0] <= pairs


# ---------------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------------


def test_progress_callback_monotone_and_complete(tri):
    job, ref = tri
    calls = []
    run_job(job, [Fake("a"), Fake("b", pipeline=True)], width=16,
            progress=lambda d, t: calls.append((d, t)))
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == len(ref)
    assert {t for _, t in calls} == {len(ref)}

    cells = []

    def with_cells(d, t, c, ct):
        cells.append((c, ct))
    with_cells.wants_cells = True
    run_job(job, _CPU, width=16, progress=with_cells)
    total = sum(w.cells for w in plan_windows(job.rows.lengths, None, 16))
    assert cells[-1] == (total, total)
    assert [c for c, _ in cells] == sorted(c for c, _ in cells)


def test_progress_bar_silent_when_not_a_tty_or_quiet():
    assert terminal_progress(quiet=False, stream=io.StringIO()) is None
    assert terminal_progress(quiet=True, stream=io.StringIO()) is None

    class TTY(io.StringIO):
        def isatty(self):
            return True
    assert terminal_progress(quiet=True, stream=TTY()) is None
    assert isinstance(terminal_progress(quiet=False, stream=TTY()), ProgressBar)


def test_progress_bar_draws_after_delay_and_ends_its_line():
    now = [0.0]
    s = io.StringIO()
    bar = ProgressBar(s, delay=2.0, interval=0.1, clock=lambda: now[0])
    bar(10, 100, 1_000, 10_000)
    assert s.getvalue() == ""                  # a short run prints nothing
    now[0] = 3.0
    bar(50, 100, 5_000, 10_000)
    line = s.getvalue()
    assert line.startswith("\r") and "50/100 pairs" in line and "ETA" in line
    assert "cells/s" in line and "\n" not in line
    now[0] = 3.05
    bar(60, 100, 6_000, 10_000)                # within the interval: not redrawn
    assert s.getvalue() == line
    now[0] = 4.0
    bar(100, 100, 10_000, 10_000)
    assert s.getvalue().endswith("\n") and "100/100" in s.getvalue()
    quick = io.StringIO()
    bar = ProgressBar(quick, delay=2.0, clock=lambda: 0.5)
    bar(100, 100, 1, 1)
    assert quick.getvalue() == ""


def test_chain_calls_both_kinds():
    got = []
    plain = lambda d, t: got.append(("plain", d, t))  # noqa: E731

    def rich(d, t, c, ct):
        got.append(("rich", d, t, c, ct))
    rich.wants_cells = True
    both = chain(None, plain, rich)
    both(1, 2, 3, 4)
    assert got == [("plain", 1, 2), ("rich", 1, 2, 3, 4)]
    assert chain(None) is None and chain(plain) is plain


# ---------------------------------------------------------------------------------
# plan and cost model
# ---------------------------------------------------------------------------------


def test_cost_fit_gives_the_samples_total():
    """Weights of 1 / t favour the samples measured low: with noise the fit
    would run low. It is scaled to give the samples' total time."""
    rng = np.random.default_rng(9)
    m = rng.integers(1 << 18, 1 << 20, 200).astype(float)
    n = rng.uniform(2e4, 2e5, 200)
    true = 1e-3 + 4e-13 * m * n
    noisy = true * rng.lognormal(0, 0.4, true.size)
    model = cost.fit(m, m * n, noisy)
    assert model.predict(m, m * n).sum() == pytest.approx(noisy.sum(), rel=1e-9)


def test_cost_fit_recovers_known_coefficients():
    rng = np.random.default_rng(5)
    m = rng.integers(256, 1 << 20, 40).astype(float)
    n = rng.uniform(1e3, 4e5, 40)
    true = np.array([2e-3, 3e-8, 1e-7, 2e-12])
    t = true[0] + true[1] * m + true[2] * n + true[3] * m * n
    model = cost.fit(m, m * n, t)
    assert np.allclose(model.coef, true, rtol=1e-6)
    noisy = t * rng.normal(1, 0.01, len(t))
    model = cost.fit(m, m * n, noisy)
    assert model.coef[3] == pytest.approx(true[3], rel=0.05)
    assert model.rel_error < 0.03
    # a term that does not exist is fitted to zero, never negative
    t0 = 1e-3 + 5e-12 * m * n
    model = cost.fit(m, m * n, t0)
    assert (model.coef >= 0).all()
    assert model.predict(m, m * n) == pytest.approx(t0, rel=1e-3)


def test_cost_fit_on_bursty_pipelined_windows():
    """Results of a pipelined worker come in bursts of three: two windows timed
    at ~0, the third at all three's time. Spread over the bursts, the samples
    fit a model that predicts each window's time; as they come, they fit one
    with no cell term, right only on the total."""
    rng = np.random.default_rng(8)
    m = rng.integers(1 << 18, 1 << 20, 60).astype(float)
    n = rng.uniform(2e4, 2e5, 60)
    true = 1e-3 + 4e-13 * m * n
    timed = np.where(np.arange(60) % 3 == 2, true + np.roll(true, 1) + np.roll(true, 2), 1e-5)
    raw = list(zip(m, m * n, timed))
    spread = cost.spread_bursts(raw)
    assert sum(t for *_, t in spread) == pytest.approx(timed.sum())
    assert [(p, c) for p, c, _ in spread] == [(p, c) for p, c, _ in raw]
    good = cost.fit(*zip(*spread))
    assert good.predict(m, m * n).sum() == pytest.approx(true.sum(), rel=0.05)
    assert np.abs(good.predict(m, m * n) / true - 1).max() < 0.15
    bad = cost.fit(*zip(*raw))
    assert bad.coef[3] == 0 and np.abs(bad.predict(m, m * n) / true - 1).max() > 1


def test_calibrate_caches_and_predicts(tmp_path):
    job = make_job(30)
    spec = cost.CalibrationSpec(64, 60, 10, (16, 32), regions=(0.0, 1.0))
    model = cost.calibrate(_CPU, job, spec)
    assert model.samples == 4 and model.coef[3] >= 0
    assert cost.cache_path().is_file()
    cost.clear()
    again = cost.get_model(cost.model_key(_CPU, job))
    assert again is not None and np.allclose(again.coef, model.coef)


def test_a_plan_says_whether_its_calibration_was_kept(tmp_path, monkeypatch):
    """A plan that calibrated names the file that keeps the model, or says
    that none could be written (not 'kept in' a file that is not there)."""
    job = make_job(30)
    spec = cost.CalibrationSpec(64, 60, 10, (16, 32), regions=(0.0, 1.0))
    blocker = tmp_path / "a file"
    blocker.write_text("")
    for base, kept in ((tmp_path / "cache", True), (blocker / "cache", False)):
        monkeypatch.setenv("PAIRALIGN_CACHE_DIR", str(base))
        cost.clear()
        notes = plan(job, _CPU, width=32, calibrate=spec).notes
        path = base / "cost.json"
        said = f"kept in {path}" if kept else f"not kept: {path} cannot be written"
        assert any(said in n for n in notes), notes
        assert path.is_file() == kept
    assert sorted(os.listdir(tmp_path)) == ["a file", "cache"]


def test_plan_numbers_equal_the_run(tri, rect):
    for job, ref in (tri, rect):
        spec = cost.CalibrationSpec(64, 60, 10, (16, 32), regions=(0.0, 0.5, 1.0))
        p = plan(job, _CPU, width=32, calibrate=spec)
        timings = {}
        out = run_job(job, _CPU, width=32, timings=timings)
        same(out, ref)
        assert p.pairs == len(out) == sum(w.window.pairs for w in p.windows)
        windows = plan_windows(job.rows.lengths, None if job.triangle else job.cols.lengths, 32)
        assert p.cells == sum(w.cells for w in windows)
        assert sum(d.cells for d in p.devices) == p.cells
        assert p.predicted_s is not None and p.predicted_s > 0
        assert timings["predicted"] is not None and timings["measured"] > 0
        text = format_plan(p)
        assert str(p) == text
        assert f"pairs {p.pairs:,}" in text and "predicted s" in text


def test_plan_assigns_windows_to_each_device(tri):
    job, _ = tri
    fakes = [Fake("a"), Fake("b"), Fake("c")]
    p = plan(job, fakes, width=32, calibrate=False)
    assert p.model is None and p.predicted_s is None
    assert [d.label for d in p.devices] == ["fake", "fake1", "fake2"]
    assert all(d.windows > 0 for d in p.devices)
    assert sum(d.pairs for d in p.devices) == p.pairs
    # without a model the LPT assignment uses cells: loads balance within a window
    loads = [d.cells for d in p.devices]
    assert max(loads) - min(loads) <= max(w.window.cells for w in p.windows)
    assert "cost model: none" in str(p)


class OutOfMemoryError(Exception):
    """Named as cupy.cuda.memory.OutOfMemoryError."""


class FakeGPU:
    """Looks like GPUBackend to the scheduler: ``devices``, ``device.use()``, ``cp``'s
    memory pools, ``window_bytes``/``device_budget`` and a pipelined ``run_windows``;
    device 1 runs out of memory on windows over 300 pairs. The others start once
    device 1 has run out of memory (so that it takes the first, largest windows)
    and take a second window once it has run one (so that it runs some), each
    wait at most 5 s: events, not sleeps, so that a loaded machine changes nothing."""

    name = "gpu"
    min_window_pairs = 1024
    log: list = []
    oomed = threading.Event()
    gpu1_ran = threading.Event()

    def __init__(self, devices=None):
        self.devices = list(devices) if devices else [0]
        d = self.devices[0]
        log = self.log

        class Device:
            def use(self):
                FakeGPU.current.device = d
                log.append(("use", d))

            def __enter__(self):
                return self

            def __exit__(self, *a):
                return False

        class Pool:
            def free_all_blocks(self):
                log.append(("free", d))

        class CP:
            get_default_memory_pool = staticmethod(lambda: Pool())
            get_default_pinned_memory_pool = staticmethod(lambda: Pool())

        self.device = Device()
        self.cp = CP()
        self.timings = {}
        self.ran = []

    current = threading.local()

    def describe(self):
        return f"gpu {self.devices[0]} (fake)"

    def task_memory(self, job):
        return 0

    def fit_memory(self, job, budget):
        return 0

    def window_width(self, job, budget, workers=1):
        FakeGPU.log.append(("width", workers))
        return 64

    def window_bytes(self, job, w):
        return w.pairs

    def device_budget(self):
        return 100_000

    def prepare(self, job):
        assert FakeGPU.current.device == self.devices[0]  # bound to its device
        if self.devices[0] != 1:
            FakeGPU.oomed.wait(5.0)  # device 1 takes the first (largest) windows
        return _CPU.prepare(job)

    def run_window(self, job, state, w):
        return next(self.run_windows(job, state, [w]))

    def run_windows(self, job, state, windows, depth=3):
        pending = []

        def finish(w):
            if self.devices[0] != 1 and self.ran:
                FakeGPU.gpu1_ran.wait(5.0)
            self.ran.append(w)
            if self.devices[0] == 1:
                FakeGPU.gpu1_ran.set()
            self.timings["fill"] = self.timings.get("fill", 0.0) + 1e-3
            return _CPU.run_window(job, state, w)

        for w in windows:
            if self.devices[0] == 1 and w.pairs > 300:
                FakeGPU.oomed.set()
                raise OutOfMemoryError("Out of memory allocating 1,234 bytes")
            pending.append(w)
            if len(pending) >= depth:
                yield finish(pending.pop(0))
        while pending:
            yield finish(pending.pop(0))


def test_gpu_like_backend_over_three_devices(tri):
    job, ref = tri
    FakeGPU.log.clear()
    FakeGPU.oomed, FakeGPU.gpu1_ran = threading.Event(), threading.Event()
    timings = {}
    backend = FakeGPU(devices=[0, 1, 2])
    out = run_job(job, backend, timings=timings)
    same(out, ref)
    gpu1 = backend._device_workers[1]
    assert gpu1.ran and all(w.pairs <= 300 for w in gpu1.ran)
    workers = {w["label"]: w for w in timings["scheduler"]["workers"]}
    assert set(workers) == {"gpu0", "gpu1", "gpu2"}
    assert sum(w["pairs"] for w in workers.values()) == len(ref)
    assert ("use", 1) in FakeGPU.log and ("use", 2) in FakeGPU.log
    assert [x for x in FakeGPU.log if x[0] == "width"] == [("width", 3)]  # told its workers
    assert workers["gpu1"]["failures"] > 0 and ("free", 1) in FakeGPU.log  # recovered
    assert not workers["gpu1"]["retired"]  # out of memory is not a lost device
    assert workers["gpu0"]["backend_timings"]["fill"] > 0


def test_device_with_less_memory_splits_at_run_time(tri):
    job, ref = tri
    small_ran = threading.Event()  # big takes a second window once small has run one
    big = Fake("big", budget=10_000, delay=0.005, hold=small_ran)
    small, fb = Fake("small", budget=150, ran_event=small_ran), Fake("fb")
    timings = {}
    # blocks that the device they come to does not hold run on the CPU, and say so
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CPUFallbackWarning)
        batches = list(iter_windows(job, [big, small], width=64, fallback=fb, timings=timings))
    assert any(w.category is CPUFallbackWarning for w in caught) == bool(fb.ran)
    covered(job, batches)
    assert small.ran and all(w.pairs <= 150 for w in small.ran)
    assert sum(w.pairs for w in big.ran + small.ran + fb.ran) == len(ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CPUFallbackWarning)
        same(run_job(job, [Fake("big", budget=10_000), Fake("small", budget=150)], width=64), ref)


def test_consumer_shares_the_cores_while_workers_run_and_takes_them_back(monkeypatch):
    """The consumer's share of the threads is 1 / (workers + 1) while the
    workers run, none once they are done, within a CPU run's threads always;
    one worker takes half (SHARE_CORES_ONE_WORKER), or with that off, all.
    A limit acts on pairalign's passes (under ``_NUMBA``) only, the least of
    those in force, and the thread's own setting is back after each."""
    import numba

    own = numba.get_num_threads()
    share = engine._consumer_share
    assert share(3, True, None) == max(1, own // 4)
    assert share(3, False, None) is None and share(3, False, 1) == 1
    assert share(1, True, None) == max(1, own // 2)
    assert share(3, True, 1) == 1
    monkeypatch.setattr(engine, "SHARE_CORES_ONE_WORKER", False)
    assert share(1, True, None) is None

    def inside():
        with engine._NUMBA:
            return numba.get_num_threads()

    with engine.consumer_limit(None) as outer:
        assert inside() == own
        with engine.consumer_limit(1):
            assert inside() == 1 and numba.get_num_threads() == own
            outer[0] = own + 5
            assert inside() == 1
        assert inside() == own
    assert engine.consumer_threads() is None and numba.get_num_threads() == own


def test_a_suspended_stream_leaves_the_callers_numba_as_it_was(monkeypatch):
    """threads=1 holds the consumer's passes (orienting and placing each
    window's results, an ordered stream's buckets) to one thread too, and
    between two results the caller's thread has its own numba setting: a
    stream held open does not change it."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one numba thread: nothing to hold back")
    from pairalign import pairs

    seen = []
    add, oriented = pairs.Placement.add, pairs.PairBatch.oriented

    def counted_add(self, batch):
        with engine._NUMBA:
            seen.append(numba.get_num_threads())
        return add(self, batch)

    def counted_oriented(self, *args, **kwargs):
        seen.append(numba.get_num_threads())
        return oriented(self, *args, **kwargs)

    monkeypatch.setattr(pairs.Placement, "add", counted_add)
    monkeypatch.setattr(pairs.PairBatch, "oriented", counted_oriented)
    own = numba.get_num_threads()
    rng = np.random.default_rng(3)
    seqs = ["".join(rng.choice(AMINO, int(k))) for k in rng.integers(20, 90, 60)]
    during = [numba.get_num_threads()
              for _ in pairalign.iter_all(seqs, backend="cpu", threads=1, ordered=False,
                                          window=16, traceback=False)]
    assert seen and set(seen) == {1}
    assert len(during) > 3 and set(during) == {own} and numba.get_num_threads() == own
    seen.clear()  # run_job's placement too, and the ordered stream's buckets
    pairalign.align_all(seqs, backend="cpu", threads=1, window=16)
    from pairalign.api import _job
    from pairalign.streaming import in_input_order

    recs = pairalign.load(seqs)
    be, job = _job(recs, None, "local", pairalign.make_scoring(recs.alphabet), True, "cpu", 1,
                   None)
    parts = list(in_input_order(job, be, width=16, bucket_bytes=20_000))
    assert len(parts) > 1 and seen and set(seen) == {1} and numba.get_num_threads() == own
