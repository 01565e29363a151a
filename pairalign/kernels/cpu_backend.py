"""Run windows of pairs through the numba kernels."""

from __future__ import annotations

import warnings

import numba
import numpy as np

from ..errors import MemoryBudgetWarning
from ..job import Job
from ..pairs import PairBatch, _offsets, _ranges, compact_ops
from ..scheduler.windows import Window, first_columns, window_pairs
from . import cpu, cpu_wave

NEG = {np.dtype(np.int16): -16384, np.dtype(np.int32): -(1 << 30)}
#: Rows a block of a checkpointed task's traceback; None: :func:`checkpoint_rows`.
CHECKPOINT_ROWS: int | None = None
#: Time a task takes checkpointed over its time holding its whole traceback.
#: Only the blocks its walks pass through are filled again, each lane to its
#: walk's column, so it depends on the pairs (two AVX2 cores, v59): 1.3x
#: (semiglobal) and 1.4x (local) for copies of one 3 kb sequence, every walk
#: end to end (1.9x when blocks were filled across); 0.7-0.8x for
#: simulated reads of 4-7.9 kb, most pairs not overlapping (16 AVX-512
#: threads bound by DRAM writing whole tracebacks: 0.7x). Where the budget
#: holds the longest task's whole traceback for at least 1 /
#: CHECKPOINT_COST of the threads, that many run; else all of them, and
#: the tasks whose whole traceback is larger than the longest task's
#: checkpointed one are checkpointed.
CHECKPOINT_COST = 1.3
#: :attr:`CPUBackend.traceback_limit` where no task is checkpointed.
NO_CHECKPOINT = 1 << 62
#: A window's queries of at least WAVE_MIN_ROWS residues with few targets in
#: it run a pair at a time on all of a thread's lanes (:mod:`.cpu_wave`), not
#: as a task of mostly idle lanes, where the pair's traceback there fits a
#: thread's share of the budget: score-only at most WAVE_MAX_TARGETS (a
#: 16th of a 16-bit task's lanes: 2 with AVX2, 4 with AVX-512), with
#: traceback one a WAVE_ROWS_A_TARGET residues of the query,
#: WAVE_MIN_TARGETS_TRACEBACK to WAVE_MAX_TARGETS_TRACEBACK (a long task's
#: traceback leaves the cache).
#: Where a window's other tasks keep every thread busy, what counts is a
#: thread's rate: a query against c targets, semiglobal, GCUPS task / wave
#: a thread (the task runs on one; the waves on c):
#: - two AVX2 cores, 7-8 kb: with traceback c = 1 0.049 / 0.39, 8 0.38 /
#:   0.46, 16 0.71 / 0.40; score-only 2 0.63 / 0.63, 4 1.24 / 0.60; 1-1.2
#:   kb with traceback 2 0.19 / 0.17, 4 0.44 / 0.17 (its traceback in cache);
#: - 16 AVX-512 cores (v59), 7-8 kb: with traceback c = 1 0.065 / 0.54, 8
#:   0.37 / 0.29; score-only 1 0.071 / 0.51, 4 0.33 / 0.45, 8 0.75 / 0.53.
#: A job of few queries leaves threads idle, where the waves run up to 10x
#: faster (16 targets, 16 cores). None: never.
WAVE_MAX_TARGETS: int | None = cpu.LANES[2] // 16
#: A thread's rate on waves over its rate on a task's lane (traceback,
#: score-only): the ratios at one target above, score-only as
#: WAVE_MAX_TARGETS. Where a window's tasks are fewer than the threads,
#: whether its other queries of one task each go to waves is worked out
#: from them (:meth:`CPUBackend._idle_wave_rows`).
WAVE_RATE_RATIO = {True: 8, False: WAVE_MAX_TARGETS}
WAVE_MIN_TARGETS_TRACEBACK = 2
WAVE_MAX_TARGETS_TRACEBACK = 8
WAVE_ROWS_A_TARGET = 1000
WAVE_MIN_ROWS = 1024


def checkpoint_rows(n: np.ndarray | int, itemsize: int) -> np.ndarray:
    """Rows a block of a checkpointed task of ``n`` rows: about
    ``sqrt(4 itemsize n)``, where the block's traceback (``rows x M x lanes / 2``
    bytes) weighs about as much as the checkpoints (``n / rows`` times ``H`` and
    ``F``, ``2 (M + 1) lanes itemsize`` bytes)."""
    if CHECKPOINT_ROWS is not None:
        return np.full(np.shape(n), CHECKPOINT_ROWS, np.int64)
    return np.maximum(1, np.sqrt(4 * itemsize * np.asarray(n, np.float64))).astype(np.int64)


def traceback_bytes(n, m, lanes: int, itemsize: int, rows) -> np.ndarray:
    """Bytes of the traceback of a task of ``n`` rows and ``m`` columns: whole
    (``rows`` 0), or a block of ``rows`` rows and a checkpoint every ``rows`` rows."""
    n, m, rows = (np.asarray(x, np.int64) for x in (n, m, rows))
    whole = n * m * (lanes // 2)
    per = np.maximum(rows, 1)
    blocks = np.minimum(n, per) * m * (lanes // 2) + -(-n // per) * 2 * (m + 1) * lanes * itemsize
    return np.where(rows > 0, blocks, whole)


class CPUBackend:
    """The embedded default: numba kernels on the host's cores.

    Parameters
    ----------
    threads : int, optional
        Cores to use; all of them by default.
    """

    name = "cpu"

    def __init__(self, threads: int | None = None) -> None:
        limit = numba.config.NUMBA_NUM_THREADS
        self.requested = limit if threads is None else max(1, min(int(threads), limit))
        self.threads = self.requested
        #: a task whose whole traceback passes this many bytes is checkpointed
        #: (set by :meth:`fit_memory`, NO_CHECKPOINT where none is; None before)
        self.traceback_limit: int | None = None

    def describe(self) -> str:
        return f"cpu ({self.threads} threads)"

    def _longest_task(self, job: Job) -> tuple[int, int, int]:
        """Bytes of the longest task: its whole traceback, its checkpointed one
        (0 and 0 without traceback) and its rows (``H`` and ``F``)."""
        n, m = int(job.rows.lengths[0]), int(job.col_set.lengths[0])
        lanes = cpu.LANES[2]  # the most lanes, two bytes each
        rows = 8 * (m + 1) * lanes
        if not job.traceback:
            return 0, 0, rows
        whole, checkpointed = (int(traceback_bytes(n, m, lanes, 2, k))
                               for k in (0, checkpoint_rows(n, 2)))
        return whole, checkpointed, rows

    def task_memory(self, job: Job) -> int:
        """Bytes one task (one query x one chunk of lanes) holds at most; before
        :meth:`fit_memory`, the least the longest task can run in."""
        whole, checkpointed, rows = self._longest_task(job)
        if self.traceback_limit is None:
            return min(whole, checkpointed) + rows
        return (checkpointed if whole > self.traceback_limit else whole) + rows

    def fit_memory(self, job: Job, budget: int) -> int:
        """Threads and checkpointing for the budget; returns the tasks' bytes.

        The longest task holds its whole traceback where the budget holds that
        for enough threads (:data:`CHECKPOINT_COST`), else the tasks whose whole
        traceback passes the longest task's checkpointed one are checkpointed
        (:attr:`traceback_limit`). Fewer threads than asked for is a
        :class:`~pairalign.errors.MemoryBudgetWarning`.
        """
        self.threads = self.requested
        self.traceback_limit = NO_CHECKPOINT
        whole, checkpointed, rows = self._longest_task(job)
        threads = min(self.threads, budget // (whole + rows))
        if checkpointed < whole and threads * CHECKPOINT_COST < self.threads:
            threads = min(self.threads, budget // (checkpointed + rows))
            self.traceback_limit = checkpointed
        per_task = self.task_memory(job)
        threads = max(1, threads)
        # at most a task a query and chunk of targets, and a pair a task: fewer
        # threads than that is no loss
        tasks = min(len(job.rows) * -(-len(job.col_set) // cpu.LANES[4]), job.pairs)
        if threads < min(self.threads, tasks):
            from ..engine import format_memory

            n, m = int(job.rows.lengths[0]), int(job.col_set.lengths[0])
            warnings.warn(
                f"the memory budget of {format_memory(budget)} (--max-memory) holds "
                f"the working buffers of {threads} of {self.threads} CPU threads for "
                f"sequences of {n} x {m} ({format_memory(per_task)} a thread): "
                f"a larger budget runs more threads", MemoryBudgetWarning, stacklevel=2)
        self.threads = threads
        return self.threads * per_task

    def prepare(self, job: Job) -> dict:
        """Host arrays shared by every window of a job."""
        codes, offsets, col_base = job.joined()
        return {"codes": codes, "offsets": offsets, "col_base": col_base}

    def run_window(self, job: Job, state: dict, w: Window) -> PairBatch:
        """Align every pair of a window; query/target are sorted positions.

        Each task (one query x one chunk of targets) gets the narrowest score type
        that its own pairs allow: 16-bit tasks of 64 lanes, 32-bit ones of 32.
        A long query with few targets runs its pairs on waves instead, one at
        a time on all lanes (:meth:`_wave_rows`).
        """
        numba.set_num_threads(self.threads)
        offsets, col_base = state["offsets"], state["col_base"]
        lengths = np.diff(offsets)
        pr, pc = window_pairs(w)
        n_pairs = len(pr)
        if job.traceback:
            bound = lengths[pr] + lengths[pc + col_base]
        else:
            bound = np.zeros(n_pairs, np.int64)
        op_off = np.zeros(n_pairs + 1, np.int64)
        np.cumsum(bound, out=op_off[1:])
        op_code = np.empty(op_off[-1], np.uint8)
        op_len = np.empty(op_off[-1], np.int32)
        out = {k: np.empty(n_pairs, np.int32) for k in
               ("score", "query_begin", "query_end", "target_begin", "target_end",
                "identities", "length", "n_ops")}

        # pair slot of (row r, first column c): window_pairs' row-major order
        _, first = first_columns(w)
        per_row = w.c1 - first
        row_start = np.concatenate([[0], np.cumsum(per_row)[:-1]]).astype(np.int64)

        L16, L32 = cpu.LANES[2], cpu.LANES[4]
        plan16 = _plan(w, L16, lengths, col_base)
        wave = self._wave_rows(job, lengths, col_base, w, first)
        done = 0
        if wave.any():
            done += self._run_wave(job, state, lengths, w, wave, first, row_start, op_off,
                                   out, op_code, op_len)
            plan16 = _subset(plan16, ~wave[plan16["row"] - w.r0])
        n16 = lengths[plan16["row"]]
        need32 = ~job.scoring.fits_int16(n16, plan16["M"], job.mode)
        if not need32.all():
            done += self._run(job, state, w, _subset(plan16, ~need32), np.dtype(np.int16),
                              first, row_start, op_off, out, op_code, op_len)
        if need32.any():
            wide = np.zeros((w.r1 - w.r0, len(plan16["starts"])), bool)
            wide[plan16["row"][need32] - w.r0, plan16["chunk"][need32]] = True
            plan32 = _plan(w, L32, lengths, col_base)
            parent = (plan32["starts"][plan32["chunk"]] - w.c0) // L16
            keep = wide[plan32["row"] - w.r0, parent]
            plan32 = _subset(plan32, keep)
            n32 = lengths[plan32["row"]]
            for n, m in set(zip(n32.tolist(), plan32["M"].tolist())):
                job.scoring.score_dtype(n, m, job.mode)  # raises where 32 bits could overflow
            done += self._run(job, state, w, plan32, np.dtype(np.int32),
                              first, row_start, op_off, out, op_code, op_len)
        assert done == n_pairs
        n_ops = out.pop("n_ops")
        if job.operations:
            offs, code, ln = compact_ops(op_code, op_len, op_off, n_ops)
        else:  # score only, or begins, identities and lengths without the operations
            offs = np.zeros(n_pairs + 1, np.int64)
            code, ln = np.zeros(0, np.uint8), np.zeros(0, np.int32)
        return PairBatch(query=pr.astype(np.int64), target=pc.astype(np.int64), **out,
                         op_offsets=offs, op_code=code, op_len=ln)

    def _wave_rows(self, job: Job, lengths: np.ndarray, col_base: int, w: Window,
                   first: np.ndarray) -> np.ndarray:
        """Which rows of window ``w`` run their pairs on :mod:`.cpu_wave`
        (see WAVE_MAX_TARGETS), as a mask over ``w.r0 .. w.r1 - 1``."""
        rows = np.zeros(w.r1 - w.r0, bool)
        if WAVE_MAX_TARGETS is None:
            return rows
        n = lengths[w.r0:w.r1]
        count = w.c1 - first
        rows = (count > 0) & (count <= wave_targets(n, job.traceback)) & (n >= WAVE_MIN_ROWS)
        rows |= self._idle_wave_rows(job, lengths, col_base, w, first, rows)
        if job.traceback and rows.any():
            cols = lengths[_ranges(first[rows], count[rows]) + col_base]
            need = cpu_wave.traceback_bytes(np.repeat(n[rows], count[rows]), cols,
                                            cpu.LANES[4])
            rows[rows] = np.maximum.reduceat(need, _offsets(count[rows])[:-1]) \
                <= self.task_memory(job)
        return rows

    def _idle_wave_rows(self, job: Job, lengths: np.ndarray, col_base: int, w: Window,
                        first: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The rows besides ``rows`` (the waves by a thread's rate) that go to
        waves where the window's tasks are fewer than the threads: queries of
        one task each, all of them or none, as the window's time (waves, then
        tasks, each their longest unit or their sum over the threads) is the
        shorter. A task's time is its rows times its longest target's length
        (every lane computes), a pair's on waves its cells over
        WAVE_RATE_RATIO."""
        n = lengths[w.r0:w.r1]
        count = w.c1 - first
        chunks = -(-count // cpu.LANES[2])
        none = np.zeros_like(rows)
        if chunks.sum() >= self.threads:
            return none
        extra = (count > 0) & (chunks == 1) & (n >= WAVE_MIN_ROWS) & ~rows
        if not extra.any():
            return none
        cl = lengths[w.c0 + col_base:w.c1 + col_base]  # longest first
        prefix = np.concatenate([[0], np.cumsum(cl)])
        at = first - w.c0
        task = n * cl[np.minimum(at, len(cl) - 1)]  # a chunk's lanes all compute
        ratio = WAVE_RATE_RATIO[job.traceback]
        waves = n * (prefix[at + count] - prefix[at]) / ratio

        def span(total, longest):
            return max(longest.max(initial=0), total.sum() / self.threads)

        def window(on):
            off = (count > 0) & ~on
            return span(waves[on], task[on] / ratio) + span(task[off] * chunks[off], task[off])

        return extra if window(rows | extra) < window(rows) else none

    def _run_wave(self, job, state, lengths, w, rows, first, row_start, op_off, out, op_code,
                  op_len) -> int:
        """Align the pairs of the window's ``rows`` (a mask) one at a time on
        all lanes (:mod:`.cpu_wave`); returns how many. ``lengths``: the
        job's sequence lengths (``run_window``'s)."""
        offsets, col_base = state["offsets"], state["col_base"]
        r = np.flatnonzero(rows)
        count = w.c1 - first[r]
        p_row = np.repeat(r + w.r0, count)
        p_col = _ranges(first[r], count)
        p_out = (np.repeat(row_start[r], count) + p_col - np.repeat(first[r], count))
        n, m = lengths[p_row], lengths[p_col + col_base]
        for k in np.unique(np.stack([n, m]), axis=1).T:
            job.scoring.score_dtype(int(k[0]), int(k[1]), job.mode)  # 32 bits must hold
        sc = job.scoring
        K = sc.kernel_matrix.shape[0]
        mat = np.full((K + 1) * K, cpu_wave.PAD_SCORE, np.int32)
        mat[:K * K] = sc.kernel_matrix.astype(np.int32).ravel()
        order, wstart = cpu.assign_workers((n * m + 64).astype(np.int64),
                                           min(self.threads, len(p_row)))
        cpu_wave.align_pairs(job.mode_code, job.traceback, state["codes"], offsets,
                             p_row, p_col + col_base, p_out, mat, K, np.int32(sc.gap_open),
                             np.int32(sc.gap_extend), np.int32(NEG[np.dtype(np.int32)]),
                             cpu.LANES[4], order, wstart, op_off, out["score"],
                             out["query_begin"], out["query_end"], out["target_begin"],
                             out["target_end"], out["identities"], out["length"],
                             out["n_ops"], op_code, op_len)
        return len(p_row)

    def _run(self, job, state, w, plan, dtype, first, row_start, op_off, out, op_code,
             op_len) -> int:
        """Run one score type's tasks; returns the pairs they align."""
        t_row, t_chunk, lane0 = plan["row"], plan["chunk"], plan["lane0"]
        if len(t_row) == 0:
            return 0
        offsets = state["offsets"]
        L = plan["cols"].shape[1]
        # profiles of the chunks these tasks use, each as wide as its longest target
        used, t_chunk = np.unique(t_chunk, return_inverse=True)
        chunk_cols = np.ascontiguousarray(plan["cols"][used])
        widths = plan["widths"][used]
        prof_w = plan["chunk_len"][used]
        K = job.scoring.kernel_matrix.shape[0]
        prof_off = np.zeros(len(used) + 1, np.int64)
        np.cumsum(K * prof_w * L, out=prof_off[1:])
        profiles = np.empty(prof_off[-1], dtype)
        neg = NEG[dtype]
        cpu.build_profiles(state["codes"], offsets, chunk_cols, widths, prof_off, prof_w,
                           job.scoring.kernel_matrix, neg, profiles)
        sc = job.scoring
        consts = np.array([0, 1, 2, 3, sc.gap_open, sc.gap_extend, neg], dtype)
        c_first = plan["starts"][plan["chunk"]] + lane0
        t_out = (row_start[t_row - w.r0] + c_first - first[t_row - w.r0]).astype(np.int64)
        n = np.diff(offsets)[t_row]
        ck_rows = self._checkpoints(job, n, plan["M"], L, dtype.itemsize)
        # cells, and a little per task
        cost = n * plan["M"] * np.where(ck_rows > 0, CHECKPOINT_COST, 1) + 64
        order, wstart = cpu.assign_workers(cost.astype(np.int64), min(self.threads, len(t_row)))
        cpu.align_tasks(job.mode_code, job.traceback, state["codes"], offsets,
                        t_row, t_chunk, lane0, t_out, ck_rows, chunk_cols, widths, profiles,
                        prof_off, prof_w, consts, order, wstart, op_off, out["score"],
                        out["query_begin"], out["query_end"], out["target_begin"],
                        out["target_end"], out["identities"], out["length"], out["n_ops"],
                        op_code, op_len)
        return int((widths[t_chunk] - lane0).sum())

    def _checkpoints(self, job: Job, n: np.ndarray, M: np.ndarray, lanes: int,
                     itemsize: int) -> np.ndarray:
        """Rows of the blocks of each task's checkpointed traceback (0: whole)
        for tasks of ``n`` rows and ``M`` columns: checkpointed where the whole
        passes :attr:`traceback_limit` and checkpoints take less room."""
        if not job.traceback or self.traceback_limit in (None, NO_CHECKPOINT):
            return np.zeros(len(n), np.int64)
        rows = checkpoint_rows(n, itemsize)
        whole = traceback_bytes(n, M, lanes, itemsize, 0)
        smaller = traceback_bytes(n, M, lanes, itemsize, rows) < whole
        return np.where((whole > self.traceback_limit) & smaller, rows, 0)


def wave_targets(n: np.ndarray, traceback: bool) -> np.ndarray:
    """The most targets a query of ``n`` residues may have in a window for
    its pairs to run on :mod:`.cpu_wave` (see WAVE_MAX_TARGETS)."""
    n = np.asarray(n, np.int64)
    if not traceback:
        return np.full(n.shape, WAVE_MAX_TARGETS, np.int64)
    return np.clip(n // WAVE_ROWS_A_TARGET, WAVE_MIN_TARGETS_TRACEBACK,
                   WAVE_MAX_TARGETS_TRACEBACK)


def _plan(w: Window, L: int, lengths: np.ndarray, col_base: int) -> dict:
    """Tasks of a window in chunks of ``L`` columns: row, chunk, first active lane, and
    the longest active target ``M``."""
    starts = np.arange(w.c0, w.c1, L)
    widths = np.minimum(L, w.c1 - starts)
    lane = np.arange(L)
    cols = (starts[:, None] + lane[None, :]).clip(max=w.c1 - 1) + col_base
    clen = np.where(lane[None, :] < widths[:, None], lengths[cols], 0)
    suffix_max = np.maximum.accumulate(clen[:, ::-1], axis=1)[:, ::-1]
    rows = np.arange(w.r0, w.r1)
    t_row = np.repeat(rows, len(starts))
    t_chunk = np.tile(np.arange(len(starts)), len(rows))
    if w.triangle:
        lane0 = np.clip(t_row + 1 - starts[t_chunk], 0, L)
    else:
        lane0 = np.zeros(len(t_row), np.int64)
    keep = widths[t_chunk] - lane0 > 0
    t_row, t_chunk, lane0 = t_row[keep], t_chunk[keep], lane0[keep]
    return {"starts": starts, "widths": widths, "cols": cols, "chunk_len": clen.max(axis=1),
            "row": t_row, "chunk": t_chunk, "lane0": lane0,
            "M": suffix_max[t_chunk, lane0]}


def _subset(plan: dict, keep: np.ndarray) -> dict:
    out = dict(plan)
    for k in ("row", "chunk", "lane0", "M"):
        out[k] = plan[k][keep]
    return out
