"""Results in input order with bounded host memory: a bucket sort through files.

Windows finish in cost order, not input order. Jobs whose results fit are
sorted in memory; larger ones have each finished window's pairs split by
input-order rank into buckets, each bucket's pieces spilled to a temporary
folder, and the buckets read back, sorted and handed on one at a time. Host memory then holds the
windows in flight and one bucket, whatever the number of sequences.
"""

from __future__ import annotations

import itertools
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Iterator

import numpy as np

from .engine import (_NUMBA, DEFAULT_MAX_MEMORY, _sorted_by_rank, assemble, consumer_limit,
                     iter_windows, pair_rank, placement, run_cap, run_workers)
from .job import Job
from .pairs import OP_BYTES, PAIR_BYTES, PairBatch, taken_to_host

#: Bytes a job's results are counted a pair, besides their operations, where
#: the ordered output decides whether it places them in memory or spills
#: them: a batch's row (``pairs.PAIR_BYTES``) with room to spare (a
#: placement holds 32-52, staged or not: ``Placement``).
PLACED_PAIR_BYTES = PAIR_BYTES + 12


def estimated_bytes(job: Job) -> int:
    """A generous estimate of the host bytes of all results of ``job``."""
    per_pair = PLACED_PAIR_BYTES
    if job.operations:  # runs are bounded by the shorter length, often far fewer
        per_pair += OP_BYTES * int(min(job.rows.lengths.mean(), job.col_set.lengths.mean()))
    return job.pairs * per_pair


def in_input_order(job: Job, backend, *, max_memory: int = DEFAULT_MAX_MEMORY,
                   width: int | None = None, progress=None, client=None,
                   timings: dict | None = None, spill_dir: str | None = None,
                   bucket_bytes: int | None = None, keep=None) -> Iterator[PairBatch]:
    """Batches of all pairs of ``job``, together in input order (row-major;
    ``i < j`` for all-vs-all), with bounded host memory; at least one batch.

    Finished windows are held in memory while they fit ``bucket_bytes``; a job
    whose results fit is sorted in memory and comes as one batch. Past that,
    everything goes to buckets by input-order rank in a temporary folder (sized
    from a generous estimate of the job's results), read back one at a time.

    Parameters
    ----------
    bucket_bytes : int, optional
        Results held at once; a quarter of ``max_memory`` by default.
    timings : dict, optional
        Filled as :func:`pairalign.engine.run_job` fills it (predicted and
        measured times included) once the last window is in.
    spill_dir : str, optional
        Where the temporary folder goes (the system's temporary folder by default).
    keep : callable, optional
        A batch -> boolean mask: only the pairs it keeps come, each window's
        filtered as it finishes (on the Dask worker that ran it, for a
        cluster's run), before the ordering, so that only those are held or
        spilled.
    """
    with consumer_limit(run_cap(backend, client)):  # its passes within a CPU run's threads
        yield from _in_input_order(job, backend, max_memory=max_memory, width=width,
                                   progress=progress, client=client, timings=timings,
                                   spill_dir=spill_dir, bucket_bytes=bucket_bytes, keep=keep)


def _in_input_order(job: Job, backend, *, max_memory: int, width: int | None, progress,
                    client, timings: dict | None, spill_dir: str | None,
                    bucket_bytes: int | None, keep) -> Iterator[PairBatch]:
    bucket_bytes = bucket_bytes or max(max_memory // 4, 1)
    # while the results fit, each window's pairs also go into place as it
    # comes (overlapping the windows still running), operations left on the
    # device where it can; past the budget, buckets
    workers = run_workers(backend, client)
    fits = PLACED_PAIR_BYTES * job.pairs <= bucket_bytes
    # a placement takes every pair once: not some of them
    place = placement(job, workers) if fits and keep is None else None
    windows = iter_windows(job, backend, max_memory=max_memory, width=width,
                           progress=progress, client=client, timings=timings,
                           device_ops=place is not None, keep=keep)
    held: list[PairBatch] = []
    size = 0
    for batch in windows:
        held.append(batch)
        size += batch.nbytes
        if size > bucket_bytes:
            place = None
            break
        if place is not None:
            with _NUMBA:
                place.add(batch)
    else:
        if keep is not None:
            yield _sorted_by_rank(job, PairBatch.concat(held))
        elif place is None:
            yield assemble(job, held, workers=workers)
        else:
            held.clear()
            with _NUMBA:
                whole = place.finish()
            yield whole
        return
    buckets = max(2, -(-max(estimated_bytes(job), size) // bucket_bytes))
    span = -(-job.pairs // buckets)  # ranks per bucket
    with tempfile.TemporaryDirectory(prefix="pairalign-", dir=spill_dir) as tmp:
        files = [BucketFile(Path(tmp) / f"bucket{k}") for k in range(buckets)]
        for batch in itertools.chain(held, windows):
            batch = taken_to_host(batch)
            if batch is None:  # its device lost the operations: its windows come again
                continue
            rank = pair_rank(job, batch)
            bucket = rank // span
            order = np.argsort(bucket, kind="stable")
            cuts = np.searchsorted(bucket[order], np.arange(buckets + 1))
            for k in np.flatnonzero(np.diff(cuts)):
                files[k].append(batch.take(order[cuts[k]:cuts[k + 1]]))
        held.clear()
        if not any(files):  # every pair filtered out
            yield PairBatch.empty()
        for f in files:
            if f:
                yield _sorted_by_rank(job, f.read())


class BucketFile:
    """A bucket's pieces (batches) appended to one file as their arrays' raw
    bytes, their dtypes and lengths kept here: a window's slice of a bucket
    is often a few pairs, and a file of its own for each (an ``.npz``) took
    5-7 times the pieces' bytes on disk, and as many inodes, in ordered
    runs of little memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pieces: list[list[tuple[str, int]]] = []  # each array's dtype and length

    def __bool__(self) -> bool:
        return bool(self.pieces)

    def append(self, batch: PairBatch) -> None:
        arrays = [np.ascontiguousarray(getattr(batch, f.name)) for f in fields(PairBatch)]
        with open(self.path, "ab") as handle:
            for a in arrays:
                handle.write(memoryview(a).cast("B"))
        self.pieces.append([(a.dtype.str, a.size) for a in arrays])

    def read(self) -> PairBatch:
        """Every piece, concatenated; the file is removed."""
        data = self.path.read_bytes()
        self.path.unlink()
        batches, at = [], 0
        for piece in self.pieces:
            cols = {}
            for f, (dtype, size) in zip(fields(PairBatch), piece):
                a = np.frombuffer(data, dtype, size, at)
                at += a.nbytes
                cols[f.name] = a
            batches.append(PairBatch(**cols))
        self.pieces = []
        return PairBatch.concat(batches)

