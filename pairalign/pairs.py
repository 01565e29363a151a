"""Columnar results for a batch of aligned pairs, and operations on them.

The per-pair passes run in numba (:mod:`pairalign.kernels.batch_ops`), which is
imported at the first call: importing this module does not start numba.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field, fields, replace
from typing import Callable

import numpy as np

from .kernels.conventions import OP_ALIGNED

_COLUMNS = ("query", "target", "score", "query_begin", "query_end", "target_begin",
            "target_end", "identities", "length")
#: The columns a staged Placement places as rows (batch_ops.place_rows)
_STAGED = ("score", "query_end", "target_end")
_STAGED_TRACEBACK = ("score", "query_begin", "query_end", "target_begin", "target_end",
                     "identities", "length")
#: The columns that are -1 for every pair of a score-only batch
_UNSET = ("query_begin", "target_begin", "identities", "length")


#: With traceback, a Placement makes the arrays of the job's operations while
#: its batches come in, from an estimate of their total (the operations per
#: pair so far), and faults their pages in on a thread of its own
#: (:class:`_OperationsReserve`), so that the operations' copy into them at
#: :meth:`Placement.finish` is a copy, not a first touch of new memory. At
#: 1e13 cells on the H100, with traceback, in one process (best of two):
#: global 8.607 to 8.203 s, the operations' placement after the GPU 1.38 to
#: 0.81 s; local 5.616 to 5.570 s (benchmarks/NOTES.md, v39).
RESERVE_OPERATIONS = True
#: A Placement faults in the pages of the columns its batches are placed
#: into on threads of its own from its creation (:func:`_touch_soon`), joined
#: at its first batch: a batch's pairs are scattered over every page of every
#: column, so the first batches' stores otherwise fault in nearly all of
#: them, on the consumer's thread, while the windows' results queue. Local
#: with traceback at 1e13 cells, in one process: H200 4.37-4.52 s against
#: 4.43-4.62 s, H100 4.77-4.88 s against 4.81-4.98 s (NOTES.md, v43).
TOUCH_PLACED = True
#: While those threads run, batches that come are held, up to this many
#: bytes of them, and placed once the pages are in: the consumer goes back
#: for the next result at once instead of waiting, so that the workers'
#: results do not fill their queue and stop the GPUs. A fresh virtual
#: machine's first touch of its memory runs at a quarter of the speed
#: (NOTES.md, v48), and its first run's first batch waited for the pages
#: while the GPU went idle (NOTES.md, v50). 0: the first batch waits.
HOLD_WHILE_TOUCHING = 2 << 30
#: Arrays smaller than this are left to fault in as they are placed into: a
#: thread each would cost a small job more than their faults.
TOUCH_LEAST_BYTES = 1 << 20
#: The pages are faulted in by pieces of this many bytes, on up to
#: :data:`TOUCH_THREADS` threads. With a thread an array, the staged rows of
#: a four-GPU run (one array: 11 GB at 1e14 cells score-only) were one
#: thread's while the consumer's first batch waited: four H200s, its
#: placing 4.73 s to 2.34-3.46 s, the run 6.91 s to 6.10-6.68 s (NOTES.md,
#: v47).
TOUCH_PIECE_BYTES = 1 << 30
TOUCH_THREADS = 8
#: Where a device places the operations it kept, the operations of the
#: windows that came to the host (the device had no room for them during the
#: run) go up to it and are placed there with them, instead of scattered on
#: the host after the device's download: global with traceback at 1e13
#: cells left part of its 15.6 GB of operations to the host, whose scatter
#: took 0.84 s after the download, against 0.39 s to bring them up through
#: the staging buffer. H100, gpu.py first runs, a process each: 8.32, 8.88,
#: 9.14 s on against 8.83, 9.19 s off (NOTES.md, v44).
HOST_OPS_TO_DEVICE = True
#: The share of the pairs placed before the estimate is taken; the arrays'
#: room over it; the fewest operations estimated worth it.
RESERVE_AFTER = 0.1
RESERVE_MARGIN = 1.3
RESERVE_LEAST = 1 << 24


class _OperationsReserve:
    """Host arrays (``code``, ``length``) for a job's operations, made before
    their total is known (``capacity`` entries), their pages faulted in on a
    thread of its own up to the latest estimate (:meth:`want`) until
    :meth:`take` stops it: nothing else writes them meanwhile."""

    PAGE = 4096
    CHUNK = 1 << 24  # bytes faulted in a step

    def __init__(self, capacity: int) -> None:
        self.code = np.empty(capacity, np.uint8)
        self.length = np.empty(capacity, np.int32)
        self._target = 0  # entries wanted
        self._done = 0  # entries whose pages are in
        self._stop = False
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="pairalign-reserve", daemon=True)
        self._thread.start()

    def want(self, entries: int) -> None:
        """Fault in the pages of the first ``entries`` entries (at most all)."""
        with self._cv:
            self._target = max(self._target, min(int(entries), len(self.code)))
            self._cv.notify()

    def _run(self) -> None:
        code = self.code
        length = self.length.view(np.uint8)  # touched by the byte
        step = self.CHUNK // 5  # entries: a byte of code and four of length each
        while True:
            with self._cv:
                while not self._stop and self._done >= self._target:
                    self._cv.wait()
                if self._stop:
                    return
                lo, hi = self._done, min(self._target, self._done + step)
            touch_pages(code, lo, hi, self.PAGE)
            touch_pages(length, 4 * lo, 4 * hi, self.PAGE)
            with self._cv:
                self._done = hi

    def take(self, total: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The first ``total`` entries of both arrays, or None where they hold
        fewer; the faulting thread stopped first."""
        with self._cv:
            self._stop = True
            self._cv.notify()
        self._thread.join()
        if total > len(self.code):
            return None
        return self.code[:total], self.length[:total]


def touch_pages(buf: np.ndarray, lo: int, hi: int, page: int) -> None:
    """A zero written every ``page`` bytes of ``buf[lo:hi]`` (bytes): the pages
    faulted in ahead of their use. NumPy lets go of the GIL for the strided
    write (as fast as numba's loop, 0.06 s for 512 MB here) and needs no
    numba: the placement makes its arrays before the run's windows start,
    where importing numba put 0.4 s of the GIL on the main thread (the H100's
    host), ahead of the thread that starts numba beside the windows."""
    buf[lo:hi:page] = 0


def _touch_soon(arrays: list[np.ndarray]) -> list[threading.Thread]:
    """Threads, started, that write a zero into every page of each of
    ``arrays`` of at least :data:`TOUCH_LEAST_BYTES`: their bytes cut into
    pieces of :data:`TOUCH_PIECE_BYTES`, dealt to up to
    :data:`TOUCH_THREADS` threads. Nothing else may write the arrays until
    they are joined."""
    page = _OperationsReserve.PAGE
    step = max(page, TOUCH_PIECE_BYTES // page * page)
    pieces = [(a.reshape(-1).view(np.uint8), lo, min(a.nbytes, lo + step))
              for a in arrays if a.nbytes >= TOUCH_LEAST_BYTES
              for lo in range(0, a.nbytes, step)]
    count = min(len(pieces), max(1, TOUCH_THREADS))

    def touch(share: list[tuple[np.ndarray, int, int]]) -> None:
        for buf, lo, hi in share:
            touch_pages(buf, lo, hi, page)
        threading.current_thread().ended = time.perf_counter()

    threads = [threading.Thread(target=touch, args=(pieces[k::count],), name="pairalign-touch",
                                daemon=True) for k in range(count)]
    for thread in threads:
        thread.start()
    return threads


def staged_row_bytes(traceback: bool) -> int:
    """Bytes of a staged :class:`Placement`'s row a pair: an int32 each of
    its staged columns, and with traceback the operation count."""
    return 4 * (len(_STAGED_TRACEBACK if traceback else _STAGED) + traceback)


@dataclass(frozen=True)
class PairBatch:
    """Results of many pairs, one numpy array per field.

    Coordinates are 0-based, ends exclusive. ``op_code``/``op_len`` hold the
    run-length alignment operations of every pair, pair ``p`` at
    ``op_offsets[p]:op_offsets[p + 1]`` (codes in
    :mod:`pairalign.kernels.conventions`: ``M`` for aligned residues, match or
    mismatch, then ``I`` and ``D``; the CIGARs of
    :class:`~pairalign.results.AlignmentResult` tell ``=`` from ``X`` by the
    residues). Without traceback the begins, identities and lengths are -1
    and there are no operations. A run's results in input order give the
    score and ends (with traceback, every column but the indices) as
    strided views of one array, a row a pair (``Placement(staged=True)``,
    ``engine.STAGED_PLACEMENT``); ``np.ascontiguousarray`` copies one where
    a caller needs it contiguous.
    """

    query: np.ndarray
    target: np.ndarray
    score: np.ndarray
    query_begin: np.ndarray
    query_end: np.ndarray
    target_begin: np.ndarray
    target_end: np.ndarray
    identities: np.ndarray
    length: np.ndarray
    op_offsets: np.ndarray
    op_code: np.ndarray
    op_len: np.ndarray

    def __len__(self) -> int:
        return len(self.score)

    @property
    def n_ops(self) -> np.ndarray:
        """Each pair's count of run-length operations (0 without CIGARs)."""
        return np.diff(self.op_offsets)

    def aligned_columns(self) -> np.ndarray:
        """Columns of an aligned residue pair (``M``: matches and mismatches)
        of every pair, from its operations (int64)."""
        total = np.zeros(len(self.op_code) + 1, np.int64)
        np.cumsum(np.where(self.op_code == OP_ALIGNED, self.op_len, 0), out=total[1:])
        return total[self.op_offsets[1:]] - total[self.op_offsets[:-1]]

    @classmethod
    def empty(cls) -> "PairBatch":
        """A batch of no pair."""
        z = np.zeros(0, np.int32)
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), z, z, z, z, z, z, z,
                   np.zeros(1, np.int64), np.zeros(0, np.uint8), z)

    @classmethod
    def concat(cls, batches: list["PairBatch"]) -> "PairBatch":
        """One batch holding all pairs of ``batches``, in order."""
        batches = [b for b in batches if len(b)]
        if not batches:
            return cls.empty()
        if len(batches) == 1:
            return batches[0]
        cols = {name: np.concatenate([getattr(b, name) for b in batches]) for name in _COLUMNS}
        counts = np.concatenate([b.n_ops for b in batches])
        return cls(**cols, op_offsets=_offsets(counts),
                   op_code=np.concatenate([b.op_code for b in batches]),
                   op_len=np.concatenate([b.op_len for b in batches]))

    def kept(self, keep: Callable[["PairBatch"], np.ndarray]) -> "PairBatch":
        """The pairs that ``keep`` (a function of the batch) marks True.

        Raises
        ------
        OptionError
            Where ``keep`` gives anything but a boolean mask of one entry a pair.
        """
        mask = np.asarray(keep(self))
        if mask.dtype != bool or mask.shape != (len(self),):
            from .errors import OptionError

            raise OptionError(f"keep must give a boolean mask of the batch's {len(self)} "
                              f"pairs, not an array of {mask.dtype} and shape {mask.shape}")
        return self.take(mask)

    def take(self, index: np.ndarray) -> "PairBatch":
        """The pairs at ``index`` (an integer array or a boolean mask), in that order."""
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        index = index.astype(np.int64, copy=False)
        from .kernels import batch_ops

        cols = {}
        for name in _COLUMNS:
            src = getattr(self, name)
            cols[name] = np.empty(len(index), src.dtype)
            if src.flags.c_contiguous:
                batch_ops.gather(src, index, cols[name])
            else:  # a staged placement's view of its rows: no numba compile for its layout
                np.take(src, index, out=cols[name])
        counts = self.n_ops[index]
        offsets = _offsets(counts)
        code = np.empty(int(offsets[-1]), self.op_code.dtype)
        length = np.empty(int(offsets[-1]), self.op_len.dtype)
        batch_ops.gather_runs(self.op_offsets, index, offsets, self.op_code,
                              self.op_len, code, length)
        return PairBatch(**cols, op_offsets=offsets, op_code=code, op_len=length)

    def oriented(self, row_order: np.ndarray, col_order: np.ndarray,
                 triangle: bool, own_ops: bool = False) -> "PairBatch":
        """The pairs with query and target mapped through ``row_order`` and
        ``col_order``; with ``triangle``, a pair whose query maps above its
        target is seen from the other side (query and target, their begins and
        ends exchanged, insertions and deletions swapped). One parallel pass.
        With ``own_ops``, the operation codes are swapped in place (for a
        batch no one else holds: a new array's first touch costs more than
        the pass)."""
        from .kernels import batch_ops

        n = len(self)
        out = {name: np.empty(n, getattr(self, name).dtype)
               for name in ("query_begin", "query_end", "target_begin", "target_end")}
        query = np.empty(n, row_order.dtype)
        target = np.empty(n, col_order.dtype)
        code = self.op_code if own_ops else np.empty_like(self.op_code)
        batch_ops.orient(row_order, col_order, triangle, self.query, self.target,
                         self.query_begin, self.query_end, self.target_begin,
                         self.target_end, self.op_offsets, self.op_code, query, target,
                         out["query_begin"], out["query_end"], out["target_begin"],
                         out["target_end"], code)
        return replace(self, query=query, target=target, **out, op_code=code)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write every array to an ``.npz`` file (see :meth:`load`)."""
        np.savez(path, **{f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "PairBatch":
        """A batch that :meth:`save` wrote."""
        with np.load(path) as data:
            return cls(**{f.name: data[f.name] for f in fields(cls)})

    def ops(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """Operation codes and run lengths of pair ``p``."""
        s, e = self.op_offsets[p], self.op_offsets[p + 1]
        return self.op_code[s:e], self.op_len[s:e]

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays."""
        return sum(getattr(self, f.name).nbytes for f in fields(self))

    def __sizeof__(self) -> int:
        """Bytes held, the arrays' included (what Dask's ``sizeof`` counts for a
        worker's results)."""
        return object.__sizeof__(self) + self.nbytes

    def __reduce__(self):
        """Pickled compactly (results cross processes and machines through
        Dask): a column of one value (without traceback: the begins,
        identities and lengths; offsets with no operations) travels as that
        value alone, known without a scan where it is a
        :func:`constant_column`, and the indices as int32 where they fit.
        Score-only batches take 20 bytes a pair instead of 52. The other
        columns travel as they are: narrowing each by its range (10 bytes a
        pair) cost the worker's event loop more than the bytes saved over
        loopback (benchmarks/NOTES.md, v63)."""
        n = len(self)
        wire = {}
        for f in fields(PairBatch):
            col = getattr(self, f.name)
            if not n or f.name in ("op_code", "op_len"):
                wire[f.name] = col
            elif is_constant_column(col):
                wire[f.name] = (col[0].item(), col.dtype.str)
            elif f.name in ("query", "target"):
                small = col.dtype == np.int64 and col.min() >= 0 and col.max() < 2**31
                wire[f.name] = (col.astype(np.int32), col.dtype.str) if small else col
            elif f.name == "op_offsets":
                wire[f.name] = (0, col.dtype.str) if col[-1] == 0 == col[0] else col
            else:
                unset = col[0] == -1 and (col == -1).all()
                wire[f.name] = (-1, col.dtype.str) if unset else col
        return _from_wire, (n, wire)


def _from_wire_column(n: int, col) -> np.ndarray:
    """A column from the wire: as it is, ``(values, dtype)`` narrowed, or
    ``(value, dtype)`` one value throughout."""
    if not isinstance(col, tuple):
        return col
    values, dtype = col
    if isinstance(values, np.ndarray):
        return values.astype(dtype)
    return constant_column(n, values, dtype)


def _from_wire(n: int, wire: dict) -> PairBatch:
    """A :class:`PairBatch` from its pickled form (:meth:`PairBatch.__reduce__`);
    its constant columns are read-only (:func:`constant_column`)."""
    return PairBatch(**{f.name: _from_wire_column(n + (f.name == "op_offsets"), wire[f.name])
                        for f in fields(PairBatch)})


#: Read-only arrays of one value, by (value, dtype): every array made (a
#: larger one as a longer column is asked for), so that a slice of any of
#: them is known to be constant (:func:`is_constant_column`).
_CONSTANTS: dict[tuple[int, np.dtype], list[np.ndarray]] = {}
_CONSTANTS_LOCK = threading.Lock()


def constant_column(n: int, value: int, dtype) -> np.ndarray:
    """``n`` entries of ``value``, read-only: a slice of one array made once
    (at least doubled when a longer one is asked for), not new memory filled
    each time. Score-only batches' begins, identities, lengths (-1) and
    operation offsets (0) are such columns."""
    key = (value, np.dtype(dtype))
    with _CONSTANTS_LOCK:
        made = _CONSTANTS.setdefault(key, [])
        if not made or len(made[-1]) < n:
            a = np.full(max(n, 2 * len(made[-1]) if made else 0), value, key[1])
            a.flags.writeable = False
            made.append(a)
        return made[-1][:n]


def is_constant_column(col: np.ndarray) -> bool:
    """Whether ``col`` is known without a look at its entries to hold one
    value: a slice of a :func:`constant_column` array."""
    base = col.base
    if (not isinstance(base, np.ndarray) or base.ndim != 1 or not len(base)
            or col.flags.writeable or base.flags.writeable):
        return False
    return any(base is a for a in _CONSTANTS.get((base[0].item(), col.dtype), ()))


#: A salvage entry: a consumer took the operations to the host itself
#: (:meth:`DeviceOps.take`); they count as rescued, nothing is kept.
_TAKEN = ()
#: Rescues (a retiring worker's thread) and takes (the consumer's) of one
#: entry happen once, in one order.
_SALVAGE_LOCK = threading.Lock()


@dataclass(frozen=True)
class DeviceOps:
    """A window's operations left on the device that computed them, until a
    :class:`Placement` puts every pair's in input order there
    (``owner.place_ops``) and brings them to the host at once.

    ``offsets`` (``npairs + 1``), ``code`` and ``length`` are the device
    arrays of the window's pairs in batch order, as :class:`PairBatch` holds
    them on the host, and ``ranks`` each pair's rank in input order (on the
    device too); ``owner`` is the backend that made them.
    """

    owner: object
    offsets: object
    code: object
    length: object
    ranks: object
    #: once the owner's worker retired (:meth:`rescue`): the entry on the
    #: host, ``(ranks, offsets, code, length)``, or None where the device
    #: could not give it (its windows run again elsewhere); ``_TAKEN`` once
    #: a consumer took the operations itself (:meth:`take`)
    salvage: list = field(default_factory=list, compare=False, repr=False)

    def rescue(self) -> bool:
        """Copy the entry to the host (:attr:`salvage`), once; False where the
        device cannot give it any more (a device lost to a sticky error)."""
        with _SALVAGE_LOCK:
            if not self.salvage:
                try:
                    entry = self.entry_on_host()
                except Exception:  # whatever the lost device raises: its pairs run again
                    entry = None
                self.salvage.append(entry)
            return self.salvage[0] is not None

    def take(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(code, length)`` on the host, for a consumer that holds the
        batch there itself (the streaming buckets): the rescued entry's, or
        copied now, after which the entry counts as rescued (should the
        device be lost later, its windows do not run again: the consumer has
        their operations); None where the device lost them (its windows run
        again). Once per entry."""
        with _SALVAGE_LOCK:
            if self.salvage:
                entry = self.salvage[0]
                if entry == _TAKEN:
                    raise RuntimeError("operations taken to the host twice")
                return None if entry is None else (entry[2], entry[3])
            try:
                got = self.on_host()
            except Exception:  # whatever the lost device raises: its pairs run again
                self.salvage.append(None)
                return None
            self.salvage.append(_TAKEN)
            return got

    def on_host(self) -> tuple[np.ndarray, np.ndarray]:
        """``(code, length)`` copied to the host."""
        return self.code.get(), self.length.get()

    def entry_on_host(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The entry copied to the host as a :class:`Placement` keeps the
        host's: ``(ranks, offsets, code, length)``."""
        return (self.ranks.get(), self.offsets.get(), *self.on_host())

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays on the device."""
        return self.offsets.nbytes + self.code.nbytes + self.length.nbytes + self.ranks.nbytes


@dataclass(frozen=True)
class DevicePairBatch(PairBatch):
    """A :class:`PairBatch` whose operations are still on the device
    (``device_ops``; ``op_code`` and ``op_len`` are empty, ``op_offsets``
    holds the counts). Only a :class:`Placement` takes it as it is; anything
    else takes :meth:`on_host`. The engine makes these only for callers that
    asked (``iter_windows(device_ops=True)``)."""

    device_ops: DeviceOps | None = None

    def __reduce__(self):
        raise TypeError("a DevicePairBatch holds operations on a device: pickle its "
                        "on_host() instead")

    def on_host(self) -> PairBatch:
        """The batch with its operations copied to the host (a copy: they
        stay where they are; see :func:`taken_to_host`)."""
        return self.with_ops(*self.device_ops.on_host())

    def with_ops(self, code: np.ndarray, length: np.ndarray) -> PairBatch:
        """The batch on the host, with operations ``code`` and ``length``."""
        cols = {f.name: getattr(self, f.name) for f in fields(PairBatch)}
        return PairBatch(**(cols | {"op_code": code, "op_len": length}))

    @property
    def nbytes(self) -> int:
        """Bytes of the batch once on the host (its operations counted)."""
        ops = self.device_ops
        return (sum(getattr(self, f.name).nbytes for f in fields(PairBatch))
                + ops.code.nbytes + ops.length.nbytes)

    def save(self, path) -> None:
        self.on_host().save(path)


def on_host(batch: PairBatch) -> PairBatch:
    """``batch`` with its operations on the host (a :class:`DevicePairBatch`'s
    copied there)."""
    return batch.on_host() if isinstance(batch, DevicePairBatch) else batch


def taken_to_host(batch: PairBatch) -> PairBatch | None:
    """``batch`` with its operations on the host, a :class:`DevicePairBatch`'s
    taken from its device (:meth:`DeviceOps.take`: should the device be lost
    later, its windows do not run again); None where the device lost them
    already (its windows run again: their pairs come in a later batch)."""
    if not isinstance(batch, DevicePairBatch):
        return batch
    got = batch.device_ops.take()
    return None if got is None else batch.with_ops(*got)


class Placement:
    """One batch in input order built from several, each pair put at its rank.

    The pairs are those of ``rows`` queries against ``cols`` targets (row-major
    rank ``q * cols + t``), or with ``cols`` None the pairs ``q < t`` of ``rows``
    sequences (upper triangle, row-major). Columns are placed as batches arrive
    (one parallel pass each, the GIL released); operations once all are in
    (their offsets follow from every pair's count). Every pair must come
    exactly once, so the query and target at each rank are known and written
    once, with the first batch, not placed; without ``traceback`` only the
    scores and ends are placed (the batches' begins, identities and lengths
    are -1: one read-only array for all four, written once too).
    Numba-parallel: hold the caller's guard where worker threads run numba
    too.

    With ``staged``, the placed columns (the score and ends, or with
    traceback every per-pair column and the operation count) go into one
    int32 row a pair (``batch_ops.place_rows``): a pair's scattered stores
    touch one or two cache lines instead of one a column. The columns that
    :meth:`finish` gives are strided views of the rows (``rows[:, k]``), not
    copies: no pass over them at the end, and no second form held beside
    them (a copy took 0.22-0.29 s of 11 GB after the last batch of a
    four-GPU run of 1e14 cells, benchmarks/NOTES.md, v49).

    With ``guard`` (a context manager: the caller's numba guard), the
    columns known from the ranks alone are written on a thread of their own
    from the first batch on, beside the placing, under the guard, instead of
    before the first batch is placed (a run's workers wait for the consumer
    meanwhile). ``spent`` holds the seconds of each part: ``known``,
    ``touch`` (the wait for the pages, :data:`TOUCH_PLACED`, once the
    batches held meanwhile reach :data:`HOLD_WHILE_TOUCHING` or the last
    has come), ``add`` (without it), ``finish`` (the held batches' placing
    among it where they waited for it; with ``guard``, ``known`` ran beside
    the others), and where threads touched the pages, ``touched``: when they
    were done, from the placement's creation.
    """

    def __init__(self, rows: int, cols: int | None = None, traceback: bool = True,
                 staged: bool = False, guard=None) -> None:
        self.n = rows
        self.traceback = traceback
        self.triangle = cols is None
        self.ncols = rows if cols is None else cols
        total = rows * (rows - 1) // 2 if cols is None else rows * cols
        template = PairBatch.empty()
        self.staged_names = (_STAGED_TRACEBACK if traceback else _STAGED) if staged else ()
        self.cols = {name: np.empty(total, getattr(template, name).dtype) for name in _COLUMNS
                     if name not in self.staged_names + (() if traceback else _UNSET)}
        if not traceback:
            # every -1 column one read-only array (as a device's score-only
            # batches have them): 12 bytes a pair fewer held and written
            unset = np.empty(total, np.int32)
            self.cols.update({name: unset for name in _UNSET})
        #: staged: a row a pair, the count last with traceback (see place_rows)
        self.rows = (np.empty((total, staged_row_bytes(traceback) // 4), np.int32)
                     if staged else None)
        self.counts = None if staged else np.zeros(total, np.int64)
        self._known = False
        self._guard = guard
        self._known_thread: threading.Thread | None = None
        self._known_error: BaseException | None = None
        self.spent = {"known": 0.0, "touch": 0.0, "add": 0.0, "finish": 0.0}
        self.ops: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        #: the DeviceOps of batches whose operations are on a device
        self.device_ops: list[DeviceOps] = []
        #: the job's pairs
        self.total = total
        #: operations and pairs placed so far, and their arrays made ahead
        #: (RESERVE_OPERATIONS)
        self._seen_ops = self._seen_pairs = 0
        self._reserve: _OperationsReserve | None = None
        #: the threads faulting in the placed columns' pages (TOUCH_PLACED)
        self._created = time.perf_counter()
        self._touching = _touch_soon(self._placed_arrays()) if TOUCH_PLACED else []
        #: batches held while they run (HOLD_WHILE_TOUCHING), and their bytes
        self._held: list[PairBatch] = []
        self._held_bytes = 0

    def _touched(self) -> None:
        """Once the placed arrays' pages are in (TOUCH_PLACED); ``spent``'s
        ``touched`` is when, in seconds from the placement's creation."""
        for thread in self._touching:
            thread.join()
        if self._touching:
            self.spent["touched"] = max(getattr(th, "ended", self._created)
                                        for th in self._touching) - self._created
        self._touching = []

    def _holds(self, batch: PairBatch) -> bool:
        """Whether ``batch`` is held (HOLD_WHILE_TOUCHING) instead of placed."""
        if not self._touching or not any(th.is_alive() for th in self._touching):
            return False
        if self._held_bytes + batch.nbytes > HOLD_WHILE_TOUCHING:
            return False
        self._held.append(batch)
        self._held_bytes += batch.nbytes
        return True

    def _placed_arrays(self) -> list[np.ndarray]:
        """The arrays :meth:`add` scatters into."""
        if self.rows is not None:
            return [self.rows]
        names = _COLUMNS[2:] if self.traceback else _STAGED
        return [self.cols[k] for k in names] + ([self.counts] if self.traceback else [])

    def _write_known(self) -> None:
        """The columns that need no batch: the indices of each rank, and the
        -1 columns without traceback."""
        from .kernels import batch_ops

        t = time.perf_counter()
        c = self.cols
        batch_ops.pair_indices(self.n, self.ncols, self.triangle, c["query"], c["target"])
        if not self.traceback:
            batch_ops.fill(c[_UNSET[0]], np.int32(-1))
        self.spent["known"] += time.perf_counter() - t

    def _write_known_guarded(self) -> None:
        try:
            with self._guard:
                self._write_known()
        except BaseException as e:  # raised again by _known_columns(wait=True)
            self._known_error = e

    def _known_columns(self, wait: bool = False) -> None:
        """:meth:`_write_known` once, at the first batch, while the windows
        after it run (where the main thread has time to spare: at the end of
        a large run it does not); on a thread of its own with ``guard``.
        ``wait``: return once they are written."""
        if not self._known:
            self._known = True
            if self._guard is None:
                self._write_known()
            else:
                self._known_thread = threading.Thread(target=self._write_known_guarded,
                                                      name="pairalign-known", daemon=True)
                self._known_thread.start()
        if wait and self._known_thread is not None:
            self._known_thread.join()
            self._known_thread = None
            if self._known_error is not None:
                raise self._known_error

    def _unstage(self) -> None:
        """The staged rows (``staged``) as columns, the counts among them:
        views of the rows, one a field."""
        if self.rows is None:
            return
        rows, self.rows = self.rows, None
        for k, name in enumerate(self.staged_names):
            self.cols[name] = rows[:, k]
        self.counts = rows[:, -1] if self.traceback else None

    def add(self, batch: PairBatch) -> None:
        """Put ``batch``'s pairs (input indices) in place (or hold it until
        the placed arrays' pages are in: :data:`HOLD_WHILE_TOUCHING`)."""
        t = time.perf_counter()
        self._known_columns()
        if self._holds(batch):
            self.spent["add"] += time.perf_counter() - t
            return
        waited = self._place_held()
        self._place(batch)
        self.spent["add"] += time.perf_counter() - t - waited

    def _place_held(self) -> float:
        """The pages in (where no batch came too), then the batches held;
        returns the seconds waited for the pages, counted as ``touch``."""
        t = time.perf_counter()
        self._touched()
        waited = time.perf_counter() - t
        self.spent["touch"] += waited
        held, self._held, self._held_bytes = self._held, [], 0
        for batch in held:
            self._place(batch)
        return waited

    def _place(self, batch: PairBatch) -> None:
        """``batch``'s pairs scattered into place, its operations kept for finish."""
        from .kernels import batch_ops

        device = getattr(batch, "device_ops", None)
        # each pair's rank, kept where the host places its operations at
        # finish (a score-only batch's ranks are not: 8 bytes a pair of fresh
        # memory; operations left on a device come with their ranks there)
        keep = device is None and self.traceback and len(batch.op_code) > 0
        pos = np.empty(len(batch) if keep else 0, np.int64)
        columns = [getattr(batch, k) for k in _COLUMNS]
        if self.rows is not None:
            batch_ops.place_rows(self.n, self.ncols, self.triangle, self.traceback, *columns,
                                 batch.op_offsets, self.rows, pos)
        else:
            c = self.cols
            batch_ops.place(self.n, self.ncols, self.triangle, self.traceback, *columns,
                            batch.op_offsets, *(c[k] for k in _COLUMNS[2:]), self.counts, pos)
        if device is not None:
            self.device_ops.append(device)
        elif keep:
            self.ops.append((pos, batch.op_offsets, batch.op_code, batch.op_len))
        if self.traceback and RESERVE_OPERATIONS:
            self._reserve_ahead(int(device.code.size) if device is not None
                                else len(batch.op_code), len(batch))

    def _reserve_ahead(self, ops: int, pairs: int) -> None:
        """The operations' arrays made, and their pages faulted in, from the
        operations per pair so far (RESERVE_OPERATIONS)."""
        self._seen_ops += ops
        self._seen_pairs += pairs
        if not self._seen_pairs:
            return
        estimate = self._seen_ops * self.total // self._seen_pairs
        if self._reserve is None:
            if self._seen_pairs < RESERVE_AFTER * self.total or estimate < RESERVE_LEAST:
                return
            self._reserve = _OperationsReserve(int(RESERVE_MARGIN * estimate) + 1)
        self._reserve.want(estimate)

    def _reserved(self, total: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The operations' arrays made ahead, where they hold ``total``."""
        reserve, self._reserve = self._reserve, None
        return None if reserve is None else reserve.take(total)

    def finish(self) -> PairBatch:
        """Every pair in input order. Operations left on a device are placed
        there and come to the host in one download (those of several
        devices on one of them: :meth:`_onto_one_device`), the others are
        placed on the host after it. Where the device
        has not the memory to place them all (``owner.can_place_ops``), its
        operations come to the host as they are and are placed there too.
        Where a device holds every pair's operations and sums their offsets
        itself, it places them while the host makes the columns. Where a
        device fails to place or adopt them, they come to the host as they
        are, with a :class:`~pairalign.errors.DeviceErrorWarning`."""
        t = time.perf_counter()
        try:
            self._place_held()
            self._take_salvaged()
            self._onto_one_device()
            return self._finish()
        finally:
            self.spent["finish"] += time.perf_counter() - t

    def _finish(self) -> PairBatch:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1, thread_name_prefix="pairalign-place") as pool:
            try:
                return self._finish_columns(self._place_early(pool))
            finally:
                self._reserved(0)  # its thread stopped, where nothing took it

    def _take_salvaged(self) -> None:
        """Entries whose owner's worker retired (:meth:`DeviceOps.rescue`):
        on the host where they were rescued; dropped where they were lost,
        their pairs having come again in the batches of the windows that
        ran again (which placed the same columns at the same ranks)."""
        left = []
        for ops in self.device_ops:
            if not ops.salvage:
                left.append(ops)
            elif ops.salvage[0]:  # (not None: lost; nor _TAKEN: a consumer's)
                self.ops.append(ops.salvage[0])
        self.device_ops = left

    def _onto_one_device(self) -> None:
        """Where windows of several device backends left their operations on
        their devices (a run of several GPUs), the others' copied to the
        one that holds most (``adopt_ops``, device to device), where it has
        the memory for them beside the job's operations; else they come to
        the host, to be placed with the host's. Then one device holds every
        operation left on a device (:meth:`_device_owner`)."""
        groups: dict[int, list[DeviceOps]] = {}
        for ops in self.device_ops:
            groups.setdefault(id(ops.owner), []).append(ops)
        if len(groups) < 2:
            return
        kept, *rest = sorted(groups.values(), key=lambda g: -sum(ops.nbytes for ops in g))
        owner = kept[0].owner
        others = [ops for group in rest for ops in group]
        total = self._operations_total()
        self.device_ops = kept
        if hasattr(owner, "adopt_ops") and owner.can_place_ops(
                total, self.total, extra=sum(ops.nbytes for ops in others)):
            try:
                self.device_ops = kept + owner.adopt_ops(others)
            except Exception as exc:
                self.ops += self._ops_to_host(exc, others)
        else:
            self.ops += [ops.entry_on_host() for ops in others]

    def _operations_total(self) -> int:
        """The job's operations: those left on devices and the host's."""
        return (sum(int(ops.code.size) for ops in self.device_ops)
                + sum(len(code) for _, _, code, _ in self.ops))

    def _device_owner(self):
        """The one device backend whose windows left operations there, or None."""
        if not self.device_ops:
            return None
        owners = {id(ops.owner): ops.owner for ops in self.device_ops}
        if len(owners) > 1:
            raise ValueError("operations left on more than one device backend")
        return next(iter(owners.values()))

    def _host_ops_up(self) -> list | None:
        """The host's operation entries ``(ranks, offsets, codes, lengths)``
        for the device to place beside its own (HOST_OPS_TO_DEVICE; none
        where there are none), or None where they stay on the host."""
        return self.ops if HOST_OPS_TO_DEVICE or not self.ops else None

    def _place_early(self, pool):
        """Where every pair's operations are on one device that sums their
        offsets itself (``owner.offsets_on_device``), their placement and
        download on ``pool``, beside the host's pass over the counts:
        ``(future, host, out)``, a future of ``(code, length)``, the host's
        entries it took and the arrays it downloads into; else None."""
        owner = self._device_owner()
        host = self._host_ops_up()
        if owner is None or host is None or not getattr(owner, "offsets_on_device", False):
            return None
        total = self._operations_total()  # (host is self.ops, every host entry)
        if not owner.can_place_ops(total, self.total, offsets_on_device=True,
                                   extra=_entries_bytes(host)):
            return None
        out = self._reserved(total)
        early = pool.submit(owner.place_ops, self.device_ops, None, total, self.total,
                            out=out, host=host)
        self.ops = []  # the device places them
        return early, host, out

    def _finish_columns(self, early) -> PairBatch:
        from .kernels import batch_ops

        self._known_columns(wait=True)
        self._unstage()
        if not self.traceback:  # read-only once placed: one array is all four columns
            self.cols[_UNSET[0]].flags.writeable = False
        if not self.ops and not self.device_ops:  # score only: no pass over the counts
            return PairBatch(**self.cols,
                             op_offsets=np.zeros(len(self.cols["query"]) + 1, np.int64),
                             op_code=np.zeros(0, np.uint8), op_len=np.zeros(0, np.int32))
        offsets = np.empty(len(self.counts) + 1, np.int64)
        batch_ops.prefix_sums(self.counts, offsets)
        total = int(offsets[-1])
        code = length = None
        if early is not None:
            early, host, out = early
            try:
                code, length = early.result()
            except Exception as exc:
                self.ops = [*host, *self._ops_to_host(exc, self.device_ops)]
            else:
                if len(code) != total:
                    raise RuntimeError(f"the device placed {len(code)} operations where "
                                       f"the pairs' counts sum to {total}")
        else:
            out = self._reserved(total)
            if self.device_ops:
                code, length = self._place_on_device(offsets, total, out)
        if code is None and out is not None:
            code, length = out
        if code is None:
            code = np.empty(total, np.uint8)
            length = np.empty(total, np.int32)
        for pos, src_off, src_code, src_len in self.ops:
            batch_ops.scatter_runs(src_off, pos, offsets, src_code, src_len, code, length)
        self.ops = []
        self.device_ops = []
        return PairBatch(**self.cols, op_offsets=offsets, op_code=code, op_len=length)

    def _place_on_device(self, offsets: np.ndarray, total: int, out) -> tuple:
        """The job's operations placed by the device that holds those left on
        a device (with the host's where it has the memory for them too):
        ``(code, length)``; ``(None, None)`` where the device's come to the
        host instead, to be scattered there with the host's, because the
        device has not the memory to place them or failed to."""
        owner = self._device_owner()
        host = self._host_ops_up()
        try:
            if host and owner.can_place_ops(total, len(self.counts),
                                            extra=_entries_bytes(host)):
                placed = owner.place_ops(self.device_ops, offsets, total, out=out, host=host)
                self.ops = []
                return placed
            if owner.can_place_ops(total, len(self.counts)):
                return owner.place_ops(self.device_ops, offsets, total, out=out)
        except Exception as exc:
            self.ops += self._ops_to_host(exc, self.device_ops)
            return None, None
        # the device cannot hold the job's operations beside those left
        # there: theirs come to the host and are scattered there
        self.ops += [ops.entry_on_host() for ops in self.device_ops]
        return None, None

    @staticmethod
    def _ops_to_host(exc: BaseException, entries: list) -> list:
        """After a device failed to place (or adopt) ``entries``, with ``exc``:
        their host entries, to be placed on the host, and a
        :class:`~pairalign.errors.DeviceErrorWarning`; an error where the
        device can no longer give them (a device lost: every pair is placed,
        or the run raises a :class:`~pairalign.errors.DeviceError`)."""
        import warnings

        from .errors import DeviceError, DeviceErrorWarning

        try:
            host = [ops.entry_on_host() for ops in entries]
        except Exception as lost:
            raise DeviceError(f"the device holding the alignments failed to place them "
                              f"({type(exc).__name__}: {exc}) and cannot give them any "
                              f"more ({type(lost).__name__}: {lost})") from exc
        warnings.warn(f"placing the alignments on the device failed "
                      f"({type(exc).__name__}: {exc}); they were placed on the host",
                      DeviceErrorWarning, stacklevel=2)
        return host


def _entries_bytes(entries: list) -> int:
    """Bytes of host operation entries (each a tuple of arrays)."""
    return sum(a.nbytes for entry in entries for a in entry)


def _column_bytes(names) -> int:
    empty = PairBatch.empty()
    return sum(getattr(empty, name).itemsize for name in names)


#: Host bytes of a pair's results besides its operations: a row of a
#: :class:`PairBatch` (two indices, seven int32 columns, an operation offset).
PAIR_BYTES = _column_bytes(f.name for f in fields(PairBatch)
                           if f.name not in ("op_code", "op_len"))
#: Host bytes per alignment operation slot (code, run length) reserved per pair.
OP_BYTES = _column_bytes(("op_code", "op_len"))


def pair_bytes(traceback: bool, n: int, m: int) -> int:
    """Host bytes of the results of a pair of lengths ``n`` and ``m``: with a
    traceback, ``n + m`` operation slots besides."""
    return PAIR_BYTES + (OP_BYTES * (n + m) if traceback else 0)


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _ranges(starts, counts):
    """Concatenation of ``arange(s, s + c)`` for every start and count, vectorised."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    nz = counts > 0
    starts, counts = np.asarray(starts, np.int64)[nz], counts[nz]
    step = np.ones(total, np.int64)
    ends = np.cumsum(counts)
    step[0] = starts[0]
    step[ends[:-1]] = starts[1:] - (starts[:-1] + counts[:-1] - 1)
    return np.cumsum(step)


def compact_ops(op_code: np.ndarray, op_len: np.ndarray, bound_offsets: np.ndarray,
                n_ops: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Squeeze per-pair operation slots (sized by a bound) down to what was written."""
    gather = _ranges(bound_offsets[:-1], n_ops)
    return _offsets(n_ops), op_code[gather], op_len[gather]
