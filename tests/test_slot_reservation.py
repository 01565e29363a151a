"""The GPU backend's stream slots taken at a job's start (``GPUBackend.reserve``),
on a CuPy stand-in: the thread's blocks, the budget read while it runs, the
jobs it skips, a device that cannot give the memory, and the engine's call."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from pairalign.engine import run_job
from pairalign.job import Job, SortedSet
from pairalign.kernels import gpu_backend
from pairalign.kernels.cpu_backend import CPUBackend
from pairalign.kernels.gpu_backend import GPUBackend
from pairalign.scoring import Scoring


class FakeCupy:
    """What ``reserve`` and ``free_memory`` call: a device of ``free`` bytes
    whose allocations take ``delay`` seconds each (or fail: ``fail``), each
    recorded with the stream current in its thread."""

    def __init__(self, free: int, delay: float = 0.0, fail: bool = False):
        self.free, self.delay, self.fail = free, delay, fail
        self.allocated: list[tuple[int, int]] = []  # (stream ptr, bytes)
        self.synced: list[int] = []  # stream ptrs, as each was synchronized
        self.started = threading.Event()
        self.local = threading.local()
        fake = self

        class Stream:
            made = 0

            def __init__(self, non_blocking=False, priority=0):
                Stream.made += 1
                self.ptr = Stream.made

            def __enter__(self):
                fake.local.stream = self

            def __exit__(self, *exc):
                fake.local.stream = None

            def synchronize(self):
                fake.synced.append(self.ptr)

        runtime = SimpleNamespace(memGetInfo=lambda: (fake.free, fake.free))
        self.cuda = SimpleNamespace(Stream=Stream, runtime=runtime)
        self.uint8 = np.uint8

    def get_default_memory_pool(self):
        return SimpleNamespace(free_bytes=lambda: 0)

    def empty(self, n, dtype):
        if self.fail:
            self.started.set()
            raise MemoryError(f"out of memory allocating {n} bytes")
        self.free -= n  # gone from the device before the pool caches it
        self.started.set()
        time.sleep(self.delay)
        self.allocated.append((self.local.stream.ptr, n))
        return SimpleNamespace(nbytes=n)


def fake_backend(cp: FakeCupy) -> GPUBackend:
    be = object.__new__(GPUBackend)
    be.cp, be.timings, be._timings_lock = cp, {}, threading.Lock()
    be.device = _NullContext()
    be._streams, be._plans, be._reservation, be._hp = [], {}, None, None
    be._last_slot_bytes, be._slots = 0, {}
    return be


class _NullContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def job_of(n: int, length: int, traceback: bool = True) -> Job:
    rng = np.random.default_rng(n * 1000 + length)
    seqs = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), length)) for _ in range(n)]
    sc = Scoring.create("protein")
    return Job("local", sc, traceback, SortedSet.encode(seqs, sc))


@pytest.mark.parametrize("host_arena", [True, False])
def test_a_large_job_takes_a_budget_a_slot_on_a_thread(monkeypatch, host_arena):
    """Each of the DEPTH slot streams gets one block of the budget, on a
    thread, from the host stream's arena of CuPy's pool (SLOTS_IN_HOST_ARENA)
    or else its own; while it runs the free memory (and so the budget the
    engine fits windows to) is what it was before; the job's first window
    then takes the reserved size, another job's none."""
    monkeypatch.setattr(gpu_backend, "SLOTS_IN_HOST_ARENA", host_arena)
    cp = FakeCupy(free=4_000_000, delay=0.2)
    be = fake_backend(cp)
    job = job_of(120, 200)
    budget = be.device_budget()
    assert be._job_bytes_bound(job) >= gpu_backend.RESERVE_LEAST_SLOTS * gpu_backend.DEPTH * budget
    be.reserve(job)
    assert cp.started.wait(5.0)
    assert be._reservation["thread"].is_alive()
    assert be.free_memory() == 4_000_000 and be.device_budget() == budget
    assert be._reserved_bytes(job) == budget
    streams = be._window_streams(gpu_backend.DEPTH)
    arenas = [be._host_stream() if host_arena else s for s in streams]
    assert sorted(cp.allocated) == sorted((s.ptr, budget) for s in arenas)
    assert be.free_memory() == 4_000_000 - gpu_backend.DEPTH * budget  # the stand-in keeps them
    assert be._reserved_bytes(job_of(120, 200)) == 0
    assert be.timings["reserve"] >= 0.2 * gpu_backend.DEPTH


def test_small_and_score_only_jobs_take_nothing_ahead():
    """A job whose windows will not fill RESERVE_LEAST_SLOTS budgets a slot,
    or a score-only one (its slots are small), starts no thread: its slots
    stay the size of its largest window."""
    for job in (job_of(6, 50), job_of(120, 200, traceback=False)):
        cp = FakeCupy(free=4_000_000)
        be = fake_backend(cp)
        be.reserve(job)
        assert be._reservation is None and cp.allocated == []
        assert be._reserved_bytes(job) == 0


def test_reservation_off_or_refused_leaves_the_launch_to_allocate(monkeypatch):
    """RESERVE_SLOTS off takes nothing; a device that cannot give the blocks
    makes no error, only no reserved size (the launch allocates its own)."""
    job = job_of(120, 200)
    monkeypatch.setattr(gpu_backend, "RESERVE_SLOTS", False)
    be = fake_backend(FakeCupy(free=4_000_000))
    be.reserve(job)
    assert be._reservation is None
    monkeypatch.setattr(gpu_backend, "RESERVE_SLOTS", True)
    be = fake_backend(FakeCupy(free=4_000_000, fail=True))
    be.reserve(job)
    assert be._reserved_bytes(job) == 0 and be.cp.allocated == []


def test_the_engine_reserves_before_it_plans():
    """run_job calls the first worker's ``reserve`` with the job once, before
    any window is fitted or run; the results are the backend's own."""
    calls = []

    class Reserving(CPUBackend):
        def reserve(self, job):
            calls.append(("reserve", job))

        def run_window(self, job, state, w):
            calls.append(("window", None))
            return super().run_window(job, state, w)

    job = job_of(30, 40)
    got = run_job(job, Reserving())
    want = run_job(job_of(30, 40), CPUBackend())
    assert calls[0] == ("reserve", job) and [c for c, _ in calls].count("reserve") == 1
    assert len(calls) > 1
    assert np.array_equal(got.score, want.score)


def test_a_budget_just_above_the_largest_slot_takes_its_size():
    """Where the budget is at most SLOT_BUDGET_SLACK above the largest slot
    block's size (a smaller one since leaves it) it is that size (the next
    job's slots find the cached blocks); further above, or below, it is
    the budget."""
    cp = FakeCupy(free=4_000_000)
    be = fake_backend(cp)
    budget = be.device_budget()
    stream = be._window_streams(1)[0]
    be._slot_block(budget, stream)
    be._slot_block(budget // 3, stream)
    assert be._last_slot_bytes == budget
    slack = gpu_backend.SLOT_BUDGET_SLACK
    for free, want in ((int(4_000_000 * (1 + slack / 2)), budget),
                       (int(4_000_000 * (1 + 2 * slack)), None),
                       (3_000_000, None)):
        cp.free = free
        assert be.device_budget() == (want or int(free * 0.8 / gpu_backend.DEPTH))


@pytest.mark.parametrize("host_arena", [True, False])
def test_a_slot_grown_waits_for_its_stream_where_others_could_reuse_its_block(
        monkeypatch, host_arena):
    """A slot's block is kept while it holds the next window; a larger one
    replaces it, and where the old block goes back to the host stream's
    arena (SLOTS_IN_HOST_ARENA), the slot's stream is synchronized first
    (its last window may still read the block); in its own arena, not."""
    monkeypatch.setattr(gpu_backend, "SLOTS_IN_HOST_ARENA", host_arena)
    cp = FakeCupy(free=4_000_000)
    be = fake_backend(cp)
    stream = be._window_streams(1)[0]
    first = be._slot(stream, 1000)
    assert be._slot(stream, 600) is first and cp.synced == []
    grown = be._slot(stream, 3000)
    assert grown is not first and grown.nbytes == 3000
    assert cp.synced == ([stream.ptr] if host_arena else [])
    arena = be._host_stream() if host_arena else stream
    assert [ptr for ptr, _ in cp.allocated] == [arena.ptr] * 2


class TwoDevices:
    """A CuPy stand-in of two devices that answers as CuPy does: the free
    memory and the pool's cached bytes of the current device, and streams
    made on the current device."""

    def __init__(self, free: list[int], cached: list[int]):
        self.free, self.cached, self.stack = free, cached, [0]
        fake = self

        class Device:
            def __init__(self, ordinal: int):
                self.id = ordinal

            def __enter__(self):
                fake.stack.append(self.id)
                return self

            def __exit__(self, *exc):
                fake.stack.pop()

        class Stream:
            def __init__(self, non_blocking=False, priority=0):
                self.device_id, self.ptr = fake.current, id(self)

        runtime = SimpleNamespace(memGetInfo=lambda: (fake.free[fake.current], 0))
        self.cuda = SimpleNamespace(Device=Device, Stream=Stream, runtime=runtime)

    @property
    def current(self) -> int:
        return self.stack[-1]

    def get_default_memory_pool(self):
        return SimpleNamespace(free_bytes=lambda: self.cached[self.current])


def test_a_backend_off_the_current_device_reads_and_makes_on_its_own():
    """A backend of device 1 while device 0 is current: its free memory is
    device 1's, cached blocks included (not device 0's cached blocks), and
    its window streams and host stream are made on device 1; device 0 is
    current again after each."""
    cp = TwoDevices(free=[1_000, 5_000], cached=[9_000, 300])
    be = fake_backend(cp)
    be.device = cp.cuda.Device(1)
    assert be.free_memory() == 5_300 and cp.current == 0
    made = [*be._window_streams(gpu_backend.DEPTH), be._host_stream()]
    assert {s.device_id for s in made} == {1} and cp.current == 0
