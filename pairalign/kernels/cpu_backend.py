"""Run windows of pairs through the numba kernels."""

from __future__ import annotations

import numba
import numpy as np

from ..job import Job
from ..pairs import PairBatch, compact_ops
from ..scheduler.windows import Window, window_pairs
from . import cpu

NEG = {np.dtype(np.int16): -16384, np.dtype(np.int32): -(1 << 30)}


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
        self.threads = limit if threads is None else max(1, min(int(threads), limit))

    def describe(self) -> str:
        return f"cpu ({self.threads} threads)"

    def task_memory(self, job: Job) -> int:
        """Bytes one task (one query x one chunk of lanes) holds at most."""
        n, m = int(job.rows.lengths[0]), int(job.col_set.lengths[0])
        lanes = max(cpu.LANES.values())
        return (n * m * lanes // 2 if job.traceback else 0) + 8 * (m + 1) * lanes

    def fit_memory(self, job: Job, budget: int) -> int:
        """Run no more threads than the budget holds tasks; returns their bytes."""
        per_task = self.task_memory(job)
        self.threads = max(1, min(self.threads, budget // max(per_task, 1)))
        return self.threads * per_task

    def prepare(self, job: Job) -> dict:
        """Host arrays shared by every window of a job."""
        if job.triangle:
            codes, offsets, col_base = job.rows.codes, job.rows.offsets, 0
        else:
            codes = np.concatenate([job.rows.codes, job.cols.codes])
            offsets = np.concatenate([job.rows.offsets[:-1], job.cols.offsets + job.rows.offsets[-1]])
            col_base = len(job.rows)
        return {"codes": codes, "offsets": offsets, "col_base": col_base}

    def run_window(self, job: Job, state: dict, w: Window) -> PairBatch:
        """Align every pair of a window; query/target are sorted positions."""
        numba.set_num_threads(self.threads)
        dtype = job.score_dtype(w)
        L = cpu.LANES[dtype.itemsize]
        offsets, col_base = state["offsets"], state["col_base"]
        starts = np.arange(w.c0, w.c1, L)
        widths = np.minimum(L, w.c1 - starts)
        chunk_cols = (starts[:, None] + np.arange(L)[None, :]).clip(max=w.c1 - 1) + col_base
        rows = np.arange(w.r0, w.r1)
        t_row = np.repeat(rows, len(starts))
        t_chunk = np.tile(np.arange(len(starts)), len(rows))
        if w.triangle:
            lane0 = np.clip(t_row + 1 - starts[t_chunk], 0, L)
        else:
            lane0 = np.zeros(len(t_row), np.int64)
        active = np.maximum(widths[t_chunk] - lane0, 0)
        keep = active > 0
        t_row, t_chunk, lane0, active = t_row[keep], t_chunk[keep], lane0[keep], active[keep]
        t_out = np.concatenate([[0], np.cumsum(active)[:-1]]).astype(np.int64)
        pr, pc = window_pairs(w)
        lengths = np.diff(offsets)
        n_pairs = len(pr)
        assert n_pairs == int(active.sum())

        width = int(lengths[col_base + w.c0])
        profiles = np.empty((len(starts), job.scoring.matrix.shape[0], width, L), dtype)
        neg = NEG[dtype]
        cpu.build_profiles(state["codes"], offsets, chunk_cols, widths, job.scoring.matrix,
                           width, neg, profiles)
        sc = job.scoring
        consts = np.array([0, 1, 2, 3, sc.gap_open, sc.gap_extend, neg], dtype)
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
        cpu.align_tasks(job.mode_code, job.traceback, state["codes"], offsets,
                        t_row, t_chunk, lane0, t_out, chunk_cols, widths, profiles, consts, op_off, out["score"], out["query_begin"],
                        out["query_end"], out["target_begin"], out["target_end"],
                        out["identities"], out["length"], out["n_ops"], op_code, op_len)
        n_ops = out.pop("n_ops")
        offs, code, ln = compact_ops(op_code, op_len, op_off, n_ops)
        return PairBatch(query=pr.astype(np.int64), target=pc.astype(np.int64), **out,
                         op_offsets=offs, op_code=code, op_len=ln)
