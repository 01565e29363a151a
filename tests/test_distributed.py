"""Windows as Dask tasks on a LocalCluster over loopback (CPU backend).

The cluster comes up once per module and is closed with timeouts, so that a
failing test cannot leave it running.
"""

from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("dask.distributed")

from pairalign.engine import iter_windows, run_job  # noqa: E402
from pairalign.errors import OptionError  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.pairs import PairBatch  # noqa: E402
from pairalign.kernels.cpu_backend import CPUBackend  # noqa: E402
from pairalign.scheduler import cost  # noqa: E402
from pairalign.scheduler.distributed import connect  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402

from conftest import assert_same_pairs as same  # noqa: E402

AMINO = list("ACDEFGHIKLMNPQRSTVWY")
CPU = CPUBackend(threads=1)


def seqs(n, seed):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(AMINO, int(k))) for k in rng.integers(8, 80, n)]


def job_of(n, m=None, mode="local", traceback=True):
    sc = Scoring.create("protein")
    return Job(mode, sc, traceback, SortedSet.encode(seqs(n, 1), sc),
               None if m is None else SortedSet.encode(seqs(m, 2), sc))


@pytest.fixture(autouse=True)
def _private_cost_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PAIRALIGN_CACHE_DIR", str(tmp_path / "cache"))
    cost.clear()


@pytest.fixture(scope="module")
def cluster():
    cl = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0", protocol="tcp://",
                                  host="127.0.0.1")
    client = distributed.Client(cl, timeout=30)
    try:
        yield client
    finally:
        client.close(timeout=10)
        cl.close(timeout=10)


@pytest.mark.parametrize("shape", [(60, None, "local", True), (30, 45, "global", True),
                                   (50, None, "semiglobal", False)])
def test_cluster_output_identical_to_local(cluster, shape):
    n, m, mode, tb = shape
    job = job_of(n, m, mode, tb)
    ref = run_job(job, CPU, width=16)
    timings = {}
    got = run_job(job, CPU, width=16, client=cluster, timings=timings)
    same(got, ref)
    workers = timings["scheduler"]["workers"]
    assert sum(w["pairs"] for w in workers) == len(ref)
    assert len(workers) == 2  # both workers took windows
    assert timings["scheduler"]["windows"] >= timings["scheduler"]["planned_windows"]


def test_cluster_job_with_stand_ins(cluster):
    """A job whose proteins hold U, O and J (codes of their own,
    Scoring.for_residues) through the cluster and through pickling: the
    local run's pairs, the same scoring on the far side."""
    import pickle

    from conftest import stand_in_sequences

    job = Job.create("local", Scoring.create("protein"), True,
                     stand_in_sequences(40, seed=3, extra="XUOJ"))
    back = pickle.loads(pickle.dumps(job))
    assert back.scoring.active == job.scoring.active < len(job.scoring.letters)
    assert back.scoring.letters == job.scoring.letters
    assert np.array_equal(back.scoring.kernel_matrix, job.scoring.kernel_matrix)
    same(run_job(job, CPU, width=16, client=cluster), run_job(job, CPU, width=16))


def test_cluster_alignments_without_cigars(cluster):
    """A job without CIGARs (cigar=False) through the cluster: the local
    run's pairs, no operations among them."""
    from dataclasses import replace

    job = replace(job_of(40, None, "global", True), cigar=False)
    ref = run_job(job, CPU, width=16)
    got = run_job(job, CPU, width=16, client=cluster)
    same(got, ref)
    assert len(got.op_code) == 0 and not got.op_offsets.any()
    assert (got.length > 0).all()


def on_a_worker(cut):
    """A ``keep`` that fails anywhere but on a Dask worker."""
    def keep(batch):
        distributed.get_worker()  # ValueError off a worker
        return batch.score > cut
    return keep


def test_cluster_kept_pairs_in_input_order(cluster):
    """Pairs filtered on the workers as each window finishes (``keep``):
    the local run's kept pairs, in input order."""
    from pairalign.streaming import in_input_order

    job = job_of(50, None, "local", True)
    ref = run_job(job, CPU, width=16)
    cut = int(np.median(ref.score))
    got = PairBatch.concat(list(in_input_order(job, CPU, width=16, client=cluster,
                                               keep=on_a_worker(cut))))
    same(got, ref.take(ref.score > cut))


@pytest.mark.parametrize("ordered", [False, True])
def test_cluster_filters_on_the_workers(cluster, ordered):
    """Only kept pairs come back, each window's filtered on its worker; the
    progress counts every pair aligned, and a plan-ordered stream still
    comes a planned window at a time."""
    job = job_of(60, None, "global", True)
    ref = run_job(job, CPU, width=16)
    cut = int(np.quantile(ref.score, 0.8))
    calls = []
    batches = list(iter_windows(job, CPU, width=16, client=cluster, ordered=ordered,
                                keep=on_a_worker(cut),
                                progress=lambda d, t: calls.append((d, t))))
    got = PairBatch.concat(batches)
    same(got.take(np.lexsort((got.target, got.query))), ref.take(ref.score > cut))
    assert calls[-1] == (len(ref), len(ref))
    if ordered:
        planned = list(iter_windows(job, CPU, width=16, ordered=True))
        assert len(batches) == len(planned)
        for b, p in zip(batches, planned):
            same(b, p.take(p.score > cut))


@pytest.mark.parametrize("threads", [1, 2, 16])
def test_task_groups_cover_the_windows_in_order(threads):
    from pairalign.scheduler.distributed import TASKS_PER_THREAD, WINDOWS_PER_TASK, task_groups

    for n in (0, 1, 7, 16, 100, 1000):
        tasks = task_groups(n, threads)
        assert [k for t in tasks for k in t] == list(range(n))
        assert all(1 <= len(t) <= WINDOWS_PER_TASK for t in tasks)
        if n >= TASKS_PER_THREAD * threads:
            assert len(tasks) >= TASKS_PER_THREAD * threads
        if n >= WINDOWS_PER_TASK * TASKS_PER_THREAD * threads:
            assert len(tasks[0]) == WINDOWS_PER_TASK


@pytest.mark.parametrize("ordered", [False, True])
def test_tasks_of_several_windows(cluster, monkeypatch, ordered):
    """Windows grouped into tasks: the same pairs, each planned window whole
    in a plan-ordered stream; a task whose windows fail together runs them
    again one by one."""
    from pairalign.scheduler import distributed as dist

    monkeypatch.setattr(dist, "TASKS_PER_THREAD", 1)
    run_on = dist._run_on
    together = []

    def fails_together(job, backend, state, windows, spent=None):
        windows = list(windows)
        if len(windows) > 1:
            together.append(len(windows))
            raise RuntimeError("several windows failed on purpose")
        return run_on(job, backend, state, windows, spent)

    job = job_of(60, None, "local", True)
    ref = run_job(job, CPU, width=16)
    local = list(iter_windows(job, CPU, width=16, ordered=True))
    monkeypatch.setattr(dist, "_run_on", fails_together)
    timings = {}
    got = list(iter_windows(job, CPU, width=16, client=cluster, ordered=ordered,
                            timings=timings))
    assert together  # some tasks held several windows
    assert timings["scheduler"]["windows"] >= len(local)
    if ordered:
        assert len(got) == len(local)
        for a, b in zip(got, local):
            same(a, b)
    else:
        got = PairBatch.concat(got)
        same(got.take(np.lexsort((got.target, got.query))), ref)


@pytest.mark.filterwarnings("ignore:Port .* is already in use")
def test_a_worker_of_two_threads(cluster):
    """One worker of two threads: windows fitted beside a task that runs,
    tasks run one at a time on the worker's backend; the local run's pairs."""
    job = job_of(50, None, "local", True)
    ref = run_job(job, CPU, width=16)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=":0", protocol="tcp://",
                                  host="127.0.0.1") as cl, distributed.Client(cl) as client:
        timings = {}
        same(run_job(job, CPU, width=16, client=client, timings=timings), ref)
    (worker,) = timings["scheduler"]["workers"]
    assert worker["windows"] >= 4 and worker["pairs"] == len(ref)


def test_a_failing_keep_raises_on_the_client(cluster):
    job = job_of(30)
    with pytest.raises(OptionError, match="boolean mask"):
        list(iter_windows(job, CPU, width=16, client=cluster, keep=lambda b: b.score))


def test_cluster_ordered_stream_and_progress(cluster):
    job = job_of(50)
    local = list(iter_windows(job, CPU, width=16, ordered=True))
    calls = []
    remote = list(iter_windows(job, CPU, width=16, ordered=True, client=cluster,
                               progress=lambda d, t: calls.append((d, t))))
    assert len(local) == len(remote)
    for a, b in zip(local, remote):
        same(a, b)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == calls[-1][1] == 50 * 49 // 2


def test_a_slow_window_holds_back_an_ordered_stream(cluster, monkeypatch):
    """An ordered stream whose first window is slow submits no more than
    ``ORDERED_TASKS_AHEAD`` x the tasks in flight meanwhile (the others would
    all run and wait in the client's reorder buffer), then yields the local
    run's windows."""
    import time

    from pairalign.scheduler import distributed as dist

    job = job_of(100)
    _, _, pieces, threads = dist.plan_distributed(job, cluster, CPU, width=16)
    slow = set(pieces[0])
    assert len(dist.task_groups(sum(map(len, pieces)), threads)) > 20
    submitted, seen = [], []
    submit, run_on = cluster.submit, dist._run_on

    def counted(*args, **kwargs):
        submitted.append(kwargs["key"])
        return submit(*args, **kwargs)

    def first_is_slow(job, backend, state, windows, spent=None):
        windows = list(windows)
        if slow & set(windows):
            time.sleep(1.0)
            seen.append(len(submitted))
        return run_on(job, backend, state, windows, spent)

    local = list(iter_windows(job, CPU, width=16, ordered=True))
    monkeypatch.setattr(cluster, "submit", counted)
    monkeypatch.setattr(dist, "_run_on", first_is_slow)  # the workers run in this process
    got = list(dist.iter_distributed(job, cluster, backend=CPU, width=16, ordered=True,
                                     max_inflight=2))
    assert seen and max(seen) <= dist.ORDERED_TASKS_AHEAD * 2
    assert len(submitted) == len(dist.task_groups(sum(map(len, pieces)), threads))
    assert len(got) == len(local)
    for a, b in zip(got, local):
        same(a, b)


def test_connect_gives_up_on_a_listener_that_never_answers(cluster):
    """A service that takes the connection and says nothing: Dask's handshake
    read has no deadline, so connect (and --cluster) waited forever; it now
    raises within its timeout, and the probe of a worker's address answers
    False within its own."""
    import socket
    import threading

    from pairalign.scheduler.distributed import workers_reachable

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []

    def take():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=take, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    outcome = []

    def attempt():
        try:
            connect(address, timeout=2)
        except OptionError as exc:
            outcome.append(str(exc))

    try:
        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(60)
        assert outcome and outcome[0].startswith(f"no Dask scheduler at {address}")
        answered = []
        probe = threading.Thread(target=lambda: answered.append(
            workers_reachable(cluster, [address], timeout=1.0)), daemon=True)
        probe.start()
        probe.join(60)
        assert answered == [False]
    finally:
        server.close()
        for conn in held:
            conn.close()


def test_workers_forget_a_finished_runs_job(cluster, monkeypatch):
    """Each run's backend and job, kept on a worker for the run's tasks, are
    dropped at its end (client.run(forget)): a long-lived worker does not
    hold every past job. (Only this test's runs are looked at: an earlier
    test's run that raised may have left tasks that still run.)"""
    from pairalign.scheduler import distributed as dist

    tokens, forgotten = [], []
    run = cluster.run

    def watched(fn, *args, **kwargs):
        out = run(fn, *args, **kwargs)
        if fn is dist.forget:
            tokens.append(args[0])
            forgotten.append(sum(out.values()))
        return out

    monkeypatch.setattr(cluster, "run", watched)
    for n in (30, 40):
        job = job_of(n)
        same(run_job(job, CPU, width=16, client=cluster), run_job(job, CPU, width=16))
    left = run(lambda: [k[1] for k in dist._CACHE])
    assert len(tokens) == 2 and min(forgotten) >= 1, forgotten
    assert not set(tokens) & {t for keys in left.values() for t in keys}


_KILLED_CLIENT = """
import os, signal, sys
import numpy as np
from dask.distributed import Client
from pairalign.job import Job, SortedSet
from pairalign.kernels.cpu_backend import CPUBackend
from pairalign.scheduler.distributed import iter_distributed
from pairalign.scoring import Scoring

rng = np.random.default_rng(7)
sc = Scoring.create("protein")
seqs = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), int(k)))
        for k in rng.integers(8, 80, 60)]
job = Job("local", sc, True, SortedSet.encode(seqs, sc), None)
client = Client(sys.argv[1], timeout=30)
for batch in iter_distributed(job, client, backend=CPUBackend(threads=1), width=16,
                              max_inflight=2):
    os.kill(os.getpid(), signal.SIGKILL)  # no forget, no release: the client is gone
"""


def test_a_killed_clients_run_is_dropped_by_the_next_run(cluster):
    """A client killed outright never calls forget: its run's entries (a
    backend each, a device's memory on a GPU worker) stay on the workers until
    the next run's first task there finds the run's job gone from the
    scheduler and drops them, before its own backend sizes itself."""
    import subprocess
    import sys
    import time

    from pairalign.scheduler import distributed as dist

    def tokens():
        return {k[1] for k in dist._CACHE}  # processes=False: the workers are threads here

    def clients():
        return cluster.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.clients))

    before, baseline = tokens(), clients()
    done = subprocess.run([sys.executable, "-c", _KILLED_CLIENT,
                           cluster.scheduler_info()["address"]],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    orphans = tokens() - before
    assert orphans
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
            clients() > baseline
            or any(e.get("tasks") for k, e in list(dist._CACHE.items()) if k[1] in orphans)):
        time.sleep(0.1)
    job = job_of(30)
    same(run_job(job, CPU, width=16, client=cluster), run_job(job, CPU, width=16))
    assert not tokens() & orphans


def test_a_live_runs_entries_outlast_another_run(cluster):
    """A run's entries stay while its client holds the job, even where Dask's
    active memory manager has dropped the job's replica from a worker (asked
    of the scheduler, not of the worker's store)."""
    import time

    from pairalign.scheduler import distributed as dist
    from pairalign.scheduler.distributed import iter_distributed

    before = set(dist._CACHE)  # (worker, run) keys: processes=False, the workers are here
    job = job_of(60)
    stream = iter_distributed(job, cluster, backend=CPU, width=16, max_inflight=2,
                              ordered=True)
    got = [next(stream)]
    live = set(dist._CACHE) - before
    assert len({k[1] for k in live}) == 1
    time.sleep(2.5)  # past an interval of the memory manager (2 s)
    other = job_of(60, 60)
    same(run_job(other, CPU, width=16, client=cluster), run_job(other, CPU, width=16))
    assert live <= set(dist._CACHE)
    got.extend(stream)
    same(PairBatch.concat(got), PairBatch.concat(list(iter_windows(job, CPU, width=16,
                                                                   ordered=True))))


def test_a_run_whose_cluster_loses_it_says_so(cluster, monkeypatch):
    """Futures cancelled under the run (its worker or scheduler gone) are
    the cluster's failure, not a bug: one DeviceError, not Dask's traceback."""
    from distributed.client import FutureCancelledError

    from pairalign.errors import DeviceError
    from pairalign.scheduler import distributed as dist

    def lost(self):
        raise FutureCancelledError("pairalign-window-x", "already forgotten")

    monkeypatch.setattr(dist._Fetcher, "next", lost)
    with pytest.raises(DeviceError, match="the Dask cluster lost the run"):
        run_job(job_of(30), CPU, width=16, client=cluster)


@pytest.mark.parametrize("address", ["garbage", "http://127.0.0.1:8786", "not-dask", ""])
def test_connect_says_when_no_scheduler_answers(cluster, address):
    """A malformed address, or a service that is not Dask's (here one that
    answers every connection with HTTP): one OptionError naming the address.
    The failed client stays Dask's default one; a run on another client
    still completes (it waited on the default client's loop)."""
    import socket
    import threading

    server = None
    if address == "not-dask":
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"

        def answer():
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4)

        threading.Thread(target=answer, daemon=True).start()
    try:
        with pytest.raises(OptionError, match=f"no Dask scheduler a[td]{'' if address else 'dress'}"):
            connect(address, timeout=10)
    finally:
        if server is not None:
            server.close()
    job = job_of(30)
    same(run_job(job, CPU, width=16, client=cluster), run_job(job, CPU, width=16))


def test_connect_by_address(cluster):
    address = cluster.scheduler.address
    assert address.startswith("tcp://127.0.0.1:")
    client = connect(address, timeout=10)
    try:
        job = job_of(30)
        same(run_job(job, CPU, width=16, client=client), run_job(job, CPU, width=16))
    finally:
        client.close(timeout=10)


@pytest.mark.parametrize("setting, client_says, reachable, direct", [
    (True, None, True, True), (True, None, False, False), (False, None, True, False),
    (True, False, True, False)])
def test_results_fetched_from_the_workers_or_through_the_scheduler(cluster, monkeypatch,
                                                                    setting, client_says,
                                                                    reachable, direct):
    """Each window's result is fetched once, straight from its worker
    (``DIRECT_FETCH``) unless a worker does not answer the client, the client
    was made to go through the scheduler (``direct_to_workers=False``) or the
    setting is off: the local run's pairs either way."""
    from pairalign.scheduler import distributed as dist

    monkeypatch.setattr(dist, "DIRECT_FETCH", setting)
    monkeypatch.setattr(cluster, "direct_to_workers", client_says)
    probe = dist.workers_reachable
    monkeypatch.setattr(dist, "workers_reachable",
                        lambda client: probe(client) and reachable)
    gather, asked = cluster.gather, []
    monkeypatch.setattr(cluster, "gather", lambda fut, direct=None, **kw: asked.append(direct)
                        or gather(fut, direct=direct, **kw))
    job = job_of(50)
    timings = {}
    same(run_job(job, CPU, width=16, client=cluster, timings=timings),
         run_job(job, CPU, width=16))
    assert asked == [direct] * timings["scheduler"]["windows"]


def test_workers_reachable(cluster):
    """The cluster's workers answer the client; a closed port does not, and
    the probe gives up after its timeout."""
    import time

    from pairalign.scheduler.distributed import workers_reachable

    assert workers_reachable(cluster)
    workers = list(cluster.scheduler_info()["workers"])
    t = time.perf_counter()
    assert not workers_reachable(cluster, workers + ["tcp://127.0.0.1:1"], timeout=1.0)
    assert time.perf_counter() - t < 10


def _fetchers():
    import threading

    return [t for t in threading.enumerate() if t.name == "pairalign-dask-fetch"]


def _window_tasks(cluster) -> list:
    return cluster.run_on_scheduler(lambda dask_scheduler: [
        k for k in dask_scheduler.tasks if "pairalign-window" in str(k)])


def test_a_stream_closed_early_cancels_its_tasks(cluster):
    """A consumer that stops after the first window (the generator closed)
    leaves no fetching thread and, soon, no window task on the cluster."""
    import time

    from pairalign.scheduler.distributed import iter_distributed

    stream = iter_distributed(job_of(60), cluster, backend=CPU, width=16, max_inflight=2)
    assert len(next(stream)) > 0
    stream.close()
    assert _fetchers() == []
    deadline = time.monotonic() + 20
    while _window_tasks(cluster) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _window_tasks(cluster) == []


def test_a_failing_window_raises_on_the_client(cluster, monkeypatch):
    """A window that fails on every try (Dask's retry included) raises its
    error from the stream, and the fetching thread ends."""
    from pairalign.scheduler import distributed as dist

    def fail(*args, **kwargs):
        raise ValueError("window failed on purpose")

    monkeypatch.setattr(dist, "_run_on", fail)  # the workers run in this process
    with pytest.raises(ValueError, match="on purpose"):
        run_job(job_of(40), CPU, width=16, client=cluster)
    assert _fetchers() == []


@pytest.mark.filterwarnings("ignore:Port .* is already in use")
def test_worker_processes():
    """Workers in their own processes: the job and the results are pickled."""
    job = job_of(40)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", host="127.0.0.1") as cl, \
            distributed.Client(cl, timeout=60) as client:
        same(run_job(job, CPU, width=16, client=client), run_job(job, CPU, width=16))


@pytest.mark.parametrize("traceback", [True, False])
def test_batches_pickle_compactly_and_whole(traceback):
    """A batch's pickled form (how results leave a Dask worker) gives back
    every column with its values and dtype; without traceback the constant
    columns stay behind and a pair takes at most 20 bytes of index and
    score columns and 8 of ends, against 52 in memory."""
    import pickle

    batch = run_job(job_of(60, mode="local", traceback=traceback), CPU, width=16)
    wire = pickle.dumps(batch, protocol=5)
    back = pickle.loads(wire)
    same(back, batch)
    for name in ("query", "target", "op_offsets", "op_code", "op_len", "score", "identities"):
        assert getattr(back, name).dtype == getattr(batch, name).dtype, name
    if not traceback:
        assert len(wire) < 20 * len(batch) + 2048 < batch.nbytes / 2
    empty = pickle.loads(pickle.dumps(type(batch).empty()))
    assert len(empty) == 0 and empty.op_offsets.tolist() == [0]


def test_search_top_through_the_cluster(cluster):
    """A search's best hits per query (each window's best kept on its worker):
    the local search's hits."""
    from pairalign.pipelines.search import search

    q, t = seqs(12, 3), seqs(40, 4)
    ref, ref_hits = search(q, t, top=3, backend="cpu", window=16)
    got, got_hits = search(q, t, top=3, backend="cpu", window=16, client=cluster)
    assert len(got_hits) == 3 * len(q)
    same(got.pairs.take(got_hits), ref.pairs.take(ref_hits))


def test_command_line_filters_through_the_cluster(cluster, tmp_path):
    """``pairalign all-vs-all --cluster ADDRESS --min-score N``, the command in
    a process of its own and the workers in this one: the lines of the same
    command run locally."""
    import subprocess
    import sys

    fasta = tmp_path / "seqs.fa"
    fasta.write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(seqs(30, 5))))
    scores = run_job(job_of(30), CPU).score  # (other sequences: a cut in the usual range)
    cut = str(int(np.median(scores)))

    def command(out, *extra):
        done = subprocess.run([sys.executable, "-m", "pairalign", "all-vs-all", str(fasta),
                               "-o", str(out), "--backend", "cpu", "--min-score", cut,
                               "-q", *extra], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return out.read_text()

    local = command(tmp_path / "local.tsv")
    remote = command(tmp_path / "remote.tsv", "--cluster", cluster.scheduler.address)
    assert remote == local
    assert 1 < len(local.splitlines()) < 30 * 29 // 2 + 1  # some pairs filtered out
