"""Results in input order with bounded memory: the bucket sort through files."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from click.testing import CliRunner

import pairalign
from pairalign.api import _job, make_scoring
from pairalign.cli import main
from pairalign.engine import run_job
from pairalign.pairs import _COLUMNS, PairBatch
from pairalign.streaming import in_input_order


@pytest.fixture(scope="module")
def recs(records):
    r = records("adeno_fiber.faa")
    return pairalign.sequences.records_from_python(r.sequences[:70], ids=r.ids[:70])


@pytest.mark.parametrize("mode", ["global", "local"])
@pytest.mark.parametrize("traceback", [True, False])
def test_buckets_give_the_in_memory_result(recs, mode, traceback):
    be, job = _job(recs, None, mode, make_scoring(recs.alphabet), traceback, "cpu", None, None)
    ref = run_job(job, be)
    budget = ref.nbytes // 7
    parts = list(in_input_order(job, be, bucket_bytes=budget))
    assert len(parts) >= 5  # really bucketed
    got = PairBatch.concat(parts)
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(got, name)), name


@pytest.mark.parametrize("spilled", [False, True])
@pytest.mark.parametrize("share", ["some", "none"])
def test_kept_pairs_come_in_input_order(recs, spilled, share, monkeypatch):
    """keep filters each window as it finishes: the pairs it keeps come in
    input order, held in memory or through the buckets, and only they are
    held or spilled; where it keeps none, one empty batch comes."""
    from pairalign import streaming

    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    cut = np.quantile(ref.score, 0.8) if share == "some" else ref.score.max() + 1
    want = ref.take(ref.score >= cut)
    saved = []
    append = streaming.BucketFile.append
    monkeypatch.setattr(streaming.BucketFile, "append",
                        lambda self, batch: saved.append(len(batch)) or append(self, batch))
    budget = want.nbytes // 4 if spilled and share == "some" else (1 if spilled else None)
    parts = list(in_input_order(job, be, width=16, bucket_bytes=budget,
                                keep=lambda b: b.score >= cut))
    got = PairBatch.concat(parts)
    assert len(parts) >= 1 and (len(parts) > 1) == (spilled and share == "some")
    assert sum(saved) == (len(want) if spilled else 0)
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(want, name), getattr(got, name)), name


def test_a_spill_is_a_file_a_bucket_of_the_pieces_bytes(recs, tmp_path):
    """Each window's slice of a bucket is appended to the bucket's one file
    as raw bytes: as many files as buckets, not windows x buckets (.npz files
    of a few pairs each took 5-7 times the results' bytes), and about the
    results' bytes on disk."""
    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    parts = in_input_order(job, be, width=16, bucket_bytes=ref.nbytes // 7, spill_dir=tmp_path)
    got = [next(parts)]
    (folder,) = tmp_path.iterdir()
    files = list(folder.iterdir())
    spilled = sum(f.stat().st_size for f in files)
    got.extend(parts)
    assert 4 <= len(files) <= len(got) - 1  # the first part's bucket was read and removed
    assert spilled <= ref.nbytes
    same = PairBatch.concat(got)
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(same, name)), name


def test_spill_folder_is_removed(recs, tmp_path):
    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    parts = in_input_order(job, be, bucket_bytes=run_job(job, be).nbytes // 4,
                           spill_dir=tmp_path)
    assert len(list(parts)) > 1
    assert list(tmp_path.iterdir()) == []


def test_results_that_fit_stay_in_memory(recs, tmp_path):
    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    parts = list(in_input_order(job, be, spill_dir=tmp_path))
    assert len(parts) == 1 and len(parts[0]) == 70 * 69 // 2


def test_cli_output_identical_with_little_memory(recs, tmp_path, monkeypatch):
    """The command line's TSV is the same whether its results stay in memory
    (one part) or go through the bucket sort in parts (1M)."""
    from pairalign import cli

    parts = []

    def counted(*a, **k):
        for part in pairalign.iter_all(*a, **k):
            parts[-1] += 1
            yield part

    monkeypatch.setattr(cli, "iter_all", counted)
    fasta = tmp_path / "in.faa"
    fasta.write_text("".join(f">{i}\n{s}\n" for i, s in zip(recs.ids, recs.sequences)))
    outs = []
    for memory in ("4G", "1M"):
        out = tmp_path / f"{memory}.tsv"
        parts.append(0)
        res = CliRunner().invoke(main, ["all-vs-all", str(fasta), "-o", str(out),
                                        "--max-memory", memory, "--backend", "cpu", "-q"])
        assert res.exit_code == 0, res.output
        outs.append(out.read_bytes())
    assert parts[0] == 1 and parts[1] > 1, parts
    assert outs[0] == outs[1] and outs[0].count(b"\n") == 1 + 70 * 69 // 2


def test_iter_all_parts_cover_every_pair_in_order(records):
    # 140 sequences: their results (~1.1 MB) are more than a quarter of 3 MB
    r = records("adeno_fiber.faa")
    many = pairalign.sequences.records_from_python(r.sequences[:140], ids=r.ids[:140])
    parts = list(pairalign.iter_all(many, backend="cpu", max_memory="3M"))
    assert len(parts) > 1
    q = np.concatenate([p.pairs.query for p in parts])
    t = np.concatenate([p.pairs.target for p in parts])
    i, j = np.triu_indices(140, 1)
    assert np.array_equal(q, i) and np.array_equal(t, j)


def test_iter_all_reports_predicted_and_measured(recs):
    from pairalign.engine import format_run_report

    timings: dict = {}
    parts = list(pairalign.iter_all(recs, backend="cpu", timings=timings))
    assert sum(len(p) for p in parts) == 70 * 69 // 2
    assert timings["measured"] > 0 and "predicted" in timings
    assert "measured" in format_run_report(timings)


@pytest.mark.parametrize("traceback", [True, False])
@pytest.mark.parametrize("targets", [False, True])
@pytest.mark.parametrize("staged", [False, True])
def test_placement_rebuilds_a_batch_from_shuffled_pieces(recs, traceback, targets, staged,
                                                         monkeypatch):
    """Pieces of a batch, shuffled and cut anywhere, placed back by position
    (all-vs-all or queries against targets, with traceback or scores only,
    the columns placed as they are or as a row a pair: ``staged``); the
    indices every pair gets are those of input order, row-major."""
    from pairalign import engine
    from pairalign.engine import placement

    monkeypatch.setattr(engine, "STAGED_PLACEMENT", staged)

    other = (pairalign.sequences.records_from_python(recs.sequences[:23], ids=recs.ids[:23])
             if targets else None)
    be, job = _job(recs, other, "local", make_scoring(recs.alphabet), traceback, "cpu", None,
                   None)
    ref = run_job(job, be)
    q, t = (np.divmod(np.arange(70 * 23), 23) if targets else np.triu_indices(70, 1))
    assert np.array_equal(ref.query, q) and np.array_equal(ref.target, t)
    if not traceback:
        assert (ref.query_begin == -1).all() and (ref.length == -1).all()
    rng = np.random.default_rng(5)
    perm = rng.permutation(len(ref))
    cuts = np.sort(rng.choice(np.arange(1, len(ref)), 6, replace=False))
    place = placement(job)
    for piece in np.split(perm, cuts):
        place.add(ref.take(piece))
    got = place.finish()
    assert place.rows is None and place.staged_names == (
        () if not staged else ("score", "query_end", "target_end") if not traceback
        else ("score", "query_begin", "query_end", "target_begin", "target_end", "identities",
              "length"))
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(got, name)), name
        assert getattr(got, name).dtype == getattr(ref, name).dtype, name
    unset = [getattr(got, k) for k in ("query_begin", "target_begin", "identities", "length")]
    if not traceback:  # the -1 columns: one read-only array
        assert all(u is unset[0] for u in unset) and not unset[0].flags.writeable
    else:
        assert all(u.flags.writeable for u in unset)
        assert not any(np.shares_memory(a, b) for a in unset for b in unset if a is not b)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("hold", ["none", "one batch", "all"])
def test_placement_places_only_once_its_pages_are_touched(recs, staged, hold, monkeypatch):
    """The threads that fault a placement's placed arrays in (TOUCH_PLACED)
    write zeros, so nothing is placed before they are done: batches that
    come meanwhile are held (up to HOLD_WHILE_TOUCHING bytes; past it, a
    batch waits for them, and so does finish), and a slow thread zeroes
    nothing placed. Arrays under TOUCH_LEAST_BYTES get no thread."""
    import threading
    import time

    from pairalign import engine, pairs
    from pairalign.engine import placement
    monkeypatch.setattr(engine, "STAGED_PLACEMENT", staged)
    touch = pairs.touch_pages
    release = threading.Event()

    def slow(*args):
        release.wait(10)
        touch(*args)

    monkeypatch.setattr(pairs, "touch_pages", slow)
    assert pairs.TOUCH_PLACED
    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    assert not placement(job)._touching  # this job's arrays are all small
    monkeypatch.setattr(pairs, "TOUCH_LEAST_BYTES", 1)
    pieces = [ref.take(p) for p in
              np.array_split(np.random.default_rng(2).permutation(len(ref)), 3)]
    cap = {"none": 0, "one batch": pieces[0].nbytes, "all": 1 << 40}[hold]
    monkeypatch.setattr(pairs, "HOLD_WHILE_TOUCHING", cap)
    place = placement(job)
    assert place._touching  # running, held at the event
    threading.Timer(0.3, release.set).start()
    t = time.perf_counter()
    place.add(pieces[0])
    # held, the consumer goes on at once; else it waited for the pages
    assert (time.perf_counter() - t < 0.2) == (hold != "none")
    assert len(place._held) == (hold != "none") and bool(place._touching) == (hold != "none")
    for piece in pieces[1:]:
        place.add(piece)
    assert len(place._held) == (3 if hold == "all" else 0)
    got = place.finish()
    assert not place._touching and not place._held and place.spent["touched"] >= 0.3
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(got, name)), name


@pytest.mark.parametrize("piece_pages, threads", [(3, 2), (1, 8), (1000, 4)])
def test_touch_soon_zeroes_every_page_of_every_array_once(monkeypatch, piece_pages, threads):
    """The pages faulted in by pieces dealt to a few threads: a zero at every
    page's start of every array large enough, nothing else written, and no
    more threads than TOUCH_THREADS."""
    from pairalign import pairs

    page = pairs._OperationsReserve.PAGE
    monkeypatch.setattr(pairs, "TOUCH_PIECE_BYTES", piece_pages * page)
    monkeypatch.setattr(pairs, "TOUCH_THREADS", threads)
    monkeypatch.setattr(pairs, "TOUCH_LEAST_BYTES", 4 * page)
    arrays = [np.ones(10 * page + 5, np.uint8), np.full((7, page // 4 + 1), 0x01010101, np.int32),
              np.ones(3 * page, np.uint8)]  # the last under TOUCH_LEAST_BYTES
    made = pairs._touch_soon(arrays)
    assert 1 <= len(made) <= threads
    for thread in made:
        thread.join()
    for a in arrays[:2]:
        flat = a.reshape(-1).view(np.uint8)
        assert not flat[::page].any()
        rest = np.ones(flat.size, bool)
        rest[::page] = False
        assert flat[rest].all()
    assert arrays[2].all()


class _HostArray(np.ndarray):
    """Stands for a device array: ``get()`` copies it to the host."""

    def get(self):
        return np.array(self)


class _FakeDevice:
    """A device backend's ``place_ops``, in numpy: every pair's operations at
    the offset of the rank its DeviceOps bring, the rest of the arrays left
    as they come (the placement fills them).
    ``room``: whether it has the memory to place them (``can_place_ops``);
    ``own_room`` the same where it sums the offsets itself
    (``offsets_on_device``, with ``offsets`` None), which ``miscount`` gets
    wrong by one operation. ``fail``: an error that ``place_ops`` and
    ``adopt_ops`` raise (after writing part of the arrays they return)."""

    def __init__(self, room=True, offsets_on_device=False, own_room=True, miscount=False,
                 host_room=True, fail=None):
        self.fail = fail
        self.calls = []
        self.room = room
        self.host_room = host_room
        self.hosted = []  # the host entries each call brought up
        self.own_room = own_room
        self.offsets_on_device = offsets_on_device
        self.miscount = miscount
        self.asked = []
        self.outs = []  # whether each call brought the host's arrays
        self.adopted = []  # the other devices' entries each adopt_ops took

    def adopt_ops(self, entries):
        """Other devices' DeviceOps as this one's (copies), counted in ``adopted``."""
        from pairalign.pairs import DeviceOps

        self.adopted.append(len(entries))
        if self.fail is not None:
            raise self.fail
        return [DeviceOps(self, *(np.array(a).view(_HostArray) for a in
                                  (ops.offsets, ops.code, ops.length, ops.ranks)))
                for ops in entries]

    def can_place_ops(self, total, npairs, offsets_on_device=False, extra=0):
        self.asked.append((total, npairs, offsets_on_device) + ((extra,) if extra else ()))
        room = self.own_room if offsets_on_device else self.room
        return room and (self.host_room or not extra)

    def place_ops(self, entries, offsets, total, npairs=None, out=None, host=()):
        from types import SimpleNamespace

        self.calls.append(offsets is None)
        self.outs.append(out is not None)
        self.hosted.append(len(host))
        entries = [*entries, *(SimpleNamespace(ranks=r.view(_HostArray), offsets=o, code=c,
                                               length=n) for r, o, c, n in host)]
        if offsets is None:
            counts = np.zeros(npairs + 1, np.int64)
            for ops in entries:
                counts[ops.ranks.get() + 1] = np.diff(ops.offsets)
            offsets = np.cumsum(counts)
            total += self.miscount
        if out is not None and not self.miscount:
            code, length = out
            assert len(code) == len(length) == total
            code[:], length[:] = 255, -1
        else:
            code, length = np.full(total, 255, np.uint8), np.full(total, -1, np.int32)
        for ops in entries:
            for k, p in enumerate(ops.ranks.get()):
                s, e = ops.offsets[k], ops.offsets[k + 1]
                code[offsets[p]:offsets[p] + e - s] = ops.code[s:e]
                length[offsets[p]:offsets[p] + e - s] = ops.length[s:e]
            if self.fail is not None:
                raise self.fail
        return code, length


@pytest.mark.parametrize("mode, traceback", [("local", True), ("global", False)])
def test_run_job_with_a_staged_placement_gives_the_same_batch(recs, mode, traceback,
                                                              monkeypatch):
    """run_job places its windows' pairs as rows a pair (STAGED_PLACEMENT)
    and gives every column as the columns' placement does."""
    from pairalign import engine

    be, job = _job(recs, None, mode, make_scoring(recs.alphabet), traceback, "cpu", None, None)
    monkeypatch.setattr(engine, "STAGED_PLACEMENT", False)  # the columns' placement
    ref = run_job(job, be, width=16)
    monkeypatch.setattr(engine, "STAGED_PLACEMENT", True)
    got = run_job(job, be, width=16)
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(got, name)), name


def test_placement_stages_for_any_number_of_workers(monkeypatch):
    """By default a placement stages its columns for any run; None stages
    them for a run of several workers only; True or False holds for any
    run."""
    from pairalign import engine

    assert [engine.staged_placement(k) for k in (1, 2, 4)] == [True, True, True]
    monkeypatch.setattr(engine, "STAGED_PLACEMENT", None)
    assert [engine.staged_placement(k) for k in (1, 2, 4)] == [False, True, True]
    for forced in (True, False):
        monkeypatch.setattr(engine, "STAGED_PLACEMENT", forced)
        assert [engine.staged_placement(k) for k in (1, 4)] == [forced, forced]


@pytest.mark.parametrize("beside", [None, True, False])
def test_run_job_of_two_workers_stages_and_gives_one_workers_batch(recs, beside,
                                                                   monkeypatch):
    """run_job over two CPU workers places their pairs staged (the default
    for several workers), its known columns written beside the placing or
    before it (KNOWN_COLUMNS_BESIDE; by default beside where staged), and
    gives one worker's batch, every column; the run's placement reports its
    parts."""
    from pairalign import engine
    from pairalign.kernels.cpu_backend import CPUBackend
    from pairalign.pairs import Placement

    made = []

    class Recorded(Placement):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            made.append(self)

    monkeypatch.setattr(engine, "STAGED_PLACEMENT", None)
    monkeypatch.setattr(engine, "KNOWN_COLUMNS_BESIDE", beside)
    monkeypatch.setattr(engine, "Placement", Recorded)
    for traceback in (True, False):
        be, job = _job(recs, None, "local", make_scoring(recs.alphabet), traceback, "cpu",
                       None, None)
        ref = run_job(job, be, width=16)
        assert made[-1].staged_names == ()
        assert (made[-1]._guard is not None) == (beside is True)
        timings: dict = {}
        got = run_job(job, [CPUBackend(threads=1), CPUBackend(threads=1)], width=16,
                      timings=timings)
        assert made[-1].staged_names and made[-1].rows is None
        assert (made[-1]._guard is not None) == (beside is not False)
        assert set(made[-1].spent) == {"known", "touch", "add", "finish"}
        assert made[-1].spent["known"] > 0 and made[-1].spent["add"] > 0
        for name in ref.__dataclass_fields__:
            assert np.array_equal(getattr(ref, name), getattr(got, name)), name


def test_known_columns_written_beside_raise_their_error_at_finish(recs):
    """Where the thread that writes the known columns fails, finish raises
    its error instead of giving columns it did not write."""
    from pairalign.pairs import Placement

    class Failing:
        def __enter__(self):
            raise RuntimeError("no numba here")

        def __exit__(self, *exc):
            return False

    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), False, "cpu", None, None)
    ref = run_job(job, be)
    place = Placement(len(job.rows), None, False, guard=Failing())
    place.add(ref)
    with pytest.raises(RuntimeError, match="no numba here"):
        place.finish()


@pytest.mark.parametrize("traceback", [True, False])
def test_a_staged_placement_gives_views_of_its_rows(recs, traceback, monkeypatch):
    """A staged placement (several workers) gives its placed columns as views
    of its rows, one a field, not copies: what it holds a pair is within
    PLACED_PAIR_BYTES, which decides whether a job is placed in memory, as the
    columns' placement's is."""
    from pairalign import engine
    from pairalign.streaming import PLACED_PAIR_BYTES

    monkeypatch.setattr(engine, "STAGED_PLACEMENT", None)
    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), traceback, "cpu",
                   None, None)
    ref = run_job(job, be)
    held = {}
    for workers in (1, 2):
        place = engine.placement(job, workers)
        rows = place.rows
        assert (rows is not None) == (workers > 1)
        place.add(ref)
        got = place.finish()
        columns = [getattr(got, name) for name in place.staged_names]
        # an int32 a staged column (score and ends, or all seven), and the
        # count with traceback
        assert len(columns) == (7 if traceback else 3) if workers > 1 else not columns
        for k, column in enumerate(columns):
            assert column.base is rows and np.shares_memory(column, rows[:, k])
        # a staged batch's pairs taken as a column placement's are
        pick = np.random.default_rng(workers).permutation(len(ref))[:100]
        for a, b in ((ref, got), (ref.take(pick), got.take(pick))):
            for name in ref.__dataclass_fields__:
                assert np.array_equal(getattr(a, name), getattr(b, name)), name
        bases = {id(b): b for b in (a if a.base is None else a.base for a in
                                    [*(getattr(got, k) for k in _COLUMNS), place.counts]
                                    if a is not None)}
        held[workers] = sum(b.nbytes for b in bases.values()) / len(ref)
    assert held[2] <= held[1] <= PLACED_PAIR_BYTES


class _LostArray(_HostArray):
    """Stands for an array of a lost device: ``get()`` raises."""

    def get(self):
        raise RuntimeError("CUDA error: unspecified launch failure")


def _device_piece(device, ref, piece, kind=_HostArray):
    """``ref``'s pairs at ``piece`` (ranks: ``ref`` is in input order) as a batch
    whose operations stayed on ``device`` (as arrays of ``kind``)."""
    from pairalign.pairs import DeviceOps, DevicePairBatch

    part = ref.take(piece)
    ops = DeviceOps(device, part.op_offsets.view(kind), part.op_code.view(kind),
                    part.op_len.view(kind), piece.view(kind))
    cols = {name: getattr(part, name) for name in ref.__dataclass_fields__}
    cols |= {"op_code": np.zeros(0, np.uint8), "op_len": np.zeros(0, np.int32)}
    return DevicePairBatch(**cols, device_ops=ops)


def test_operations_taken_to_the_host_count_as_rescued(recs):
    """A consumer that takes a device batch's operations to the host
    (``taken_to_host``, as the buckets do) has them, and the entry then
    counts as rescued without keeping a copy; a lost device's batch is None
    (its windows run again), whether found lost by the take or before it by
    a rescue; a batch is taken once."""
    from pairalign.pairs import taken_to_host

    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    piece = np.arange(0, len(ref), 3)
    kept = _device_piece(_FakeDevice(), ref, piece)
    got = taken_to_host(kept)
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(got, name), getattr(ref.take(piece), name)), name
    assert kept.device_ops.rescue() and kept.device_ops.salvage == [()]
    with pytest.raises(RuntimeError, match="taken to the host twice"):
        taken_to_host(kept)
    lost = _device_piece(_FakeDevice(), ref, piece, kind=_LostArray)
    assert taken_to_host(lost) is None and not lost.device_ops.rescue()
    lost = _device_piece(_FakeDevice(), ref, piece, kind=_LostArray)
    assert not lost.device_ops.rescue() and taken_to_host(lost) is None


@pytest.mark.parametrize("room", ["all", "its own", "none"])
@pytest.mark.parametrize("up", [True, False])
@pytest.mark.parametrize("staged", [False, True])
def test_placement_takes_operations_left_on_a_device(recs, room, up, staged, monkeypatch):
    """Pieces whose operations stayed on a device beside pieces on the host,
    shuffled: one call places the device's, with the host's brought up to it
    (``up``: HOST_OPS_TO_DEVICE) where it has the memory for them too (else
    the host's go in after), and a device piece brought to the host
    (``on_host``) or sized (``nbytes``) is the host piece it stands for.
    Where the device has not the memory to place them (``room`` "none"),
    its pieces come to the host and are placed there with the others; the
    same with the columns staged as rows."""
    from pairalign import engine, pairs
    from pairalign.engine import placement
    from pairalign.pairs import on_host

    monkeypatch.setattr(engine, "STAGED_PLACEMENT", staged)
    monkeypatch.setattr(pairs, "HOST_OPS_TO_DEVICE", up)

    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    rng = np.random.default_rng(8)
    perm = rng.permutation(len(ref))
    cuts = np.sort(rng.choice(np.arange(1, len(ref)), 7, replace=False))
    device = _FakeDevice(room != "none", host_room=room == "all")
    place = placement(job)
    host_bytes = 0
    for k, piece in enumerate(np.split(perm, cuts)):
        part = ref.take(piece)
        if k % 2:
            kept = _device_piece(device, ref, piece)
            assert kept.nbytes == part.nbytes
            back = on_host(kept)
            for name in ref.__dataclass_fields__:
                assert np.array_equal(getattr(back, name), getattr(part, name)), name
            part = kept
        else:  # what the host keeps of it: ranks, offsets, codes and lengths
            host_bytes += 8 * len(part) + part.op_offsets.nbytes + part.op_code.nbytes \
                + part.op_len.nbytes
        place.add(part)
    got = place.finish()
    total = int(ref.op_offsets[-1])
    asked_up = [(total, len(ref), False, host_bytes)] if up else []
    assert device.asked == asked_up + ([] if up and room == "all" else
                                       [(total, len(ref), False)])
    assert device.calls == ([False] if room != "none" else [])
    assert device.hosted == ([4] if up and room == "all" else [0] if room != "none" else [])
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(got, name)), name


@pytest.mark.parametrize("own_room", [True, False])
@pytest.mark.parametrize("staged", [False, True])
def test_a_device_that_holds_every_operation_sums_their_offsets(recs, own_room, staged,
                                                                 monkeypatch):
    """Every piece's operations left on a device that sums the offsets
    itself: it is asked to place them with no offsets (while the host makes
    the columns), and the batch is the host's; where it has not the memory
    for the counts too, it places them from the host's offsets."""
    from pairalign import engine
    from pairalign.engine import placement

    monkeypatch.setattr(engine, "STAGED_PLACEMENT", staged)
    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    perm = np.random.default_rng(9).permutation(len(ref))
    device = _FakeDevice(offsets_on_device=True, own_room=own_room)
    place = placement(job)
    for piece in np.array_split(perm, 5):
        place.add(_device_piece(device, ref, piece))
    got = place.finish()
    total = int(ref.op_offsets[-1])
    assert total > 0
    assert device.asked == [(total, len(ref), True)] + ([] if own_room else
                                                          [(total, len(ref), False)])
    assert device.calls == [own_room]
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(got, name)), name


@pytest.mark.parametrize("room", [True, False])
@pytest.mark.parametrize("staged", [False, True])
def test_operations_left_on_several_devices_are_placed_on_one(recs, room, staged,
                                                               monkeypatch):
    """Pieces whose operations stayed on two devices (a run of two GPUs)
    beside host pieces: the device that holds most adopts the other's
    entries (a copy, device to device) where it has the memory for them, and
    places every one in one call; else the other's come to the host and are
    placed there with the host's. The batch is the same either way."""
    from pairalign import engine
    from pairalign.engine import placement

    monkeypatch.setattr(engine, "STAGED_PLACEMENT", staged)
    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    perm = np.random.default_rng(12).permutation(len(ref))
    big, small = _FakeDevice(room=room), _FakeDevice()
    pieces = np.array_split(perm, 6)
    owners = [big, big, small, None, big, small]  # big holds three pieces, small two
    place = placement(job, 2)
    for owner, piece in zip(owners, pieces):
        place.add(ref.take(piece) if owner is None else _device_piece(owner, ref, piece))
    got = place.finish()
    total = int(ref.op_offsets[-1])
    other = sum(8 * len(p) + 8 * (len(p) + 1) + 5 * int(np.diff(ref.op_offsets)[p].sum())
                for o, p in zip(owners, pieces) if o is small)
    assert big.asked[0] == (total, len(ref), False, other)
    assert big.adopted == ([2] if room else [])
    assert big.calls == ([False] if room else [])
    assert small.asked == small.adopted == small.calls == []
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(got, name)), name


@pytest.mark.parametrize("where", ["own offsets", "host offsets", "adopting"])
@pytest.mark.parametrize("staged", [False, True])
def test_operations_a_device_fails_to_place_are_placed_on_the_host(recs, where, staged,
                                                                   monkeypatch):
    """A device that fails to place the operations left on it (summing the
    offsets itself or from the host's) or to adopt another device's, after
    writing part of the arrays: its entries come to the host and are placed
    there with the host's, with a warning naming the error, and the batch is
    the same."""
    from pairalign import engine
    from pairalign.engine import placement
    from pairalign.errors import DeviceErrorWarning

    monkeypatch.setattr(engine, "STAGED_PLACEMENT", staged)
    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    perm = np.random.default_rng(13).permutation(len(ref))
    fail = RuntimeError("CUDA error: injected")
    device = _FakeDevice(offsets_on_device=where == "own offsets", fail=fail)
    other = _FakeDevice()
    owners = [device, None, device, device, other if where == "adopting" else device]
    place = placement(job, 2 if where == "adopting" else 1)
    for owner, piece in zip(owners, np.array_split(perm, len(owners))):
        place.add(ref.take(piece) if owner is None else _device_piece(owner, ref, piece))
    with pytest.warns(DeviceErrorWarning, match="placing the alignments on the device "
                      "failed .RuntimeError: CUDA error: injected"):
        got = place.finish()
    # (adopting: the device then fails to place its own too)
    assert device.adopted == ([1] if where == "adopting" else [])
    assert device.calls == [where == "own offsets"]
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(got, name)), name


def test_operations_a_lost_device_cannot_place_or_give_are_an_error(recs):
    """A device that fails to place its operations and can no longer give
    them (lost) raises an error that says so, naming both errors, instead of
    giving a batch without them (the run's workers retire a device lost
    before this, and its windows run again elsewhere)."""
    from pairalign.engine import placement
    from pairalign.errors import DeviceError

    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    device = _FakeDevice(fail=RuntimeError("CUDA error: injected"))
    place = placement(job)
    place.add(_device_piece(device, ref, np.arange(len(ref)), kind=_LostArray))
    with pytest.raises(DeviceError, match="failed to place them .RuntimeError: CUDA error: "
                       ".*. and cannot give them any more .RuntimeError: CUDA error: "
                       "unspecified launch failure"):
        place.finish()


def test_operations_placed_by_a_device_that_miscounts_them_are_an_error(recs):
    """A device whose own offsets disagree with the host's counts raises
    instead of giving a batch whose operations are misplaced."""
    from pairalign.engine import placement

    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    device = _FakeDevice(offsets_on_device=True, miscount=True)
    place = placement(job)
    place.add(_device_piece(device, ref, np.arange(len(ref))))
    with pytest.raises(RuntimeError, match="operations where the pairs' counts sum to"):
        place.finish()


@pytest.mark.parametrize("margin", [1.3, 0.5])
@pytest.mark.parametrize("pieces", ["host", "device", "device, own offsets", "both",
                                    "both, own offsets"])
def test_operations_reserved_ahead(recs, monkeypatch, pieces, margin):
    """With RESERVE_OPERATIONS, the operations' arrays are made from an
    estimate once a share of the pairs is in and the batch's operations go
    into them (the device's download or the host's scatter), where they hold
    the total (``margin`` 1.3 here); else (0.5) new ones: the same batch
    either way, from host pieces, device pieces (the host's offsets or the
    device's own) or both (the host's brought up to the device, which then
    sums the offsets itself where it can)."""
    from pairalign import pairs
    from pairalign.engine import placement

    monkeypatch.setattr(pairs, "RESERVE_OPERATIONS", True)
    monkeypatch.setattr(pairs, "RESERVE_LEAST", 1)
    monkeypatch.setattr(pairs, "RESERVE_AFTER", 0.2)
    monkeypatch.setattr(pairs, "RESERVE_MARGIN", margin)
    be, job = _job(recs, None, "local", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    total = int(ref.op_offsets[-1])
    perm = np.random.default_rng(4).permutation(len(ref))
    device = _FakeDevice(offsets_on_device=pieces.endswith("own offsets"))
    place = placement(job)
    for k, piece in enumerate(np.array_split(perm, 6)):
        on_device = pieces.startswith("device") or (pieces.startswith("both") and k % 2)
        place.add(_device_piece(device, ref, piece) if on_device else ref.take(piece))
    got = place.finish()
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(got, name)), name
    # the pairs' mean holds for these pieces: 1.3 times it holds the total
    reserved = margin > 1
    assert (got.op_code.base is not None) == reserved
    assert (got.op_len.base is not None) == reserved
    assert device.outs == ([reserved] if pieces != "host" else [])
    assert device.hosted == ([3] if pieces.startswith("both") else
                             [0] if pieces != "host" else [])
    assert device.calls == ([pieces.endswith("own offsets")] if pieces != "host" else [])
    assert place._reserve is None and total > 0
    assert not any(t.name == "pairalign-reserve" for t in threading.enumerate())


def test_reserve_faults_in_what_is_wanted_and_stops_when_taken():
    """The reserve's thread faults pages in up to the latest estimate, at
    most its capacity, and has stopped once the arrays are taken; a total
    past its capacity gets none."""
    from pairalign.pairs import _OperationsReserve

    r = _OperationsReserve(10_000_000)
    r.want(3_000_000)
    r.want(50_000_000)  # past the capacity: all of it
    code, length = r.take(9_000_000)
    assert not r._thread.is_alive()
    assert len(code) == len(length) == 9_000_000 and code.base is r.code
    assert r._target == 10_000_000
    r2 = _OperationsReserve(100)
    assert r2.take(101) is None and not r2._thread.is_alive()


@pytest.mark.parametrize("n", [0, 1, 2, 3, 8, 9])
@pytest.mark.parametrize("ncols", [None, 1, 4])
def test_pair_indices_enumerate_input_order(n, ncols):
    from pairalign.kernels.batch_ops import pair_indices

    q, t = np.triu_indices(n, 1) if ncols is None else np.divmod(np.arange(n * ncols), ncols)
    got_q, got_t = np.full(len(q), -9, np.int64), np.full(len(q), -9, np.int64)
    pair_indices(n, ncols or n, ncols is None, got_q, got_t)
    assert np.array_equal(got_q, q) and np.array_equal(got_t, t)


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 100_003])
def test_prefix_sums_match_numpy(n):
    """The parallel offsets of Placement.finish, pieces ragged or empty."""
    from pairalign.kernels.batch_ops import prefix_sums

    counts = np.random.default_rng(n).integers(0, 1000, n)
    out = np.full(n + 1, -7, np.int64)
    prefix_sums(counts, out)
    assert np.array_equal(out, np.concatenate([[0], np.cumsum(counts)]))


def test_overflow_after_placing_starts_goes_to_buckets(recs):
    """A budget that holds every pair's columns but not the operations: pairs
    start going into place, then the run turns to buckets, losing nothing."""
    from pairalign.streaming import PLACED_PAIR_BYTES

    be, job = _job(recs, None, "global", make_scoring(recs.alphabet), True, "cpu", None, None)
    ref = run_job(job, be)
    budget = PLACED_PAIR_BYTES * len(ref) + 1
    assert budget < ref.nbytes  # the premise: operations overflow it
    parts = list(in_input_order(job, be, bucket_bytes=budget, width=16))
    assert len(parts) >= 2
    got = PairBatch.concat(parts)
    for name in ref.__dataclass_fields__:
        assert np.array_equal(getattr(ref, name), getattr(got, name)), name
