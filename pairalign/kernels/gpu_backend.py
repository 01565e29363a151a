"""Run windows of pairs through the CUDA kernels (``align.cu``) with CuPy."""

from __future__ import annotations

from importlib import resources

import numpy as np

from ..job import Job
from ..pairs import PairBatch, _ranges
from ..scheduler.windows import BLOCK, Window, window_pairs

STRIPE = 8
THREADS = 256
#: Widest window: 16M pairs, whose index and result arrays take ~0.6 GB.
MAX_WIDTH = 4096
NEG = {np.dtype(np.int16): -16384, np.dtype(np.int32): -(1 << 30)}
_CTYPE = {np.dtype(np.int16): "short", np.dtype(np.int32): "int"}


class GPUBackend:
    """CUDA kernels through CuPy, one thread per pair.

    Parameters
    ----------
    devices : sequence of int, optional
        GPU ordinals; the first one runs the windows (several devices: see the
        scheduler).
    """

    name = "gpu"

    def __init__(self, devices=None) -> None:
        import cupy as cp

        self.cp = cp
        self.devices = list(devices) if devices else [0]
        self.device = cp.cuda.Device(self.devices[0])
        self._modules: dict = {}
        self.timings: dict[str, float] = {}

    def describe(self) -> str:
        props = self.cp.cuda.runtime.getDeviceProperties(self.devices[0])
        return f"gpu {self.devices[0]} ({props['name'].decode()})"

    def _module(self, dtype: np.dtype):
        mod = self._modules.get(dtype)
        if mod is None:
            cp = self.cp
            src = resources.files("pairalign.kernels").joinpath("align.cu").read_text()
            cc = "".join(map(str, self.device.compute_capability))
            names = [f"fill<{m},{t}>" for m in range(3) for t in ("true", "false")]
            names += [f"walk<{m}>" for m in range(3)]
            mod = cp.RawModule(code=src, options=(f"-arch=sm_{cc}", "-std=c++17",
                                                  f"-DSCORE={_CTYPE[dtype]}"),
                               name_expressions=names)
            self._modules[dtype] = mod
        return mod

    # memory ---------------------------------------------------------------
    def free_memory(self) -> int:
        with self.device:
            free, _ = self.cp.cuda.runtime.memGetInfo()
        pool = self.cp.get_default_memory_pool()
        return int(free + pool.free_bytes())

    def task_memory(self, job: Job) -> int:
        """Device bytes of the largest single pair (a 16 x 16 block of them)."""
        n, m = int(job.rows.lengths[0]), int(job.col_set.lengths[0])
        return BLOCK * BLOCK * self._pair_bytes(job, n, m)

    def fit_memory(self, job: Job, budget: int) -> int:
        return 0

    @staticmethod
    def _pair_bytes(job: Job, n: int, m: int) -> int:
        tb = ((n + STRIPE - 1) // STRIPE) * m * 4 if job.traceback else 0
        ops = (n + m) * 5 * 2 if job.traceback else 0
        return tb + ops + 8 * (m + 1) + 64

    def device_budget(self) -> int:
        """Device bytes one window may take: most of what is free."""
        return int(self.free_memory() * 0.8)

    def window_width(self, job: Job, budget: int) -> int:
        """As wide as can be: windows too large for the device are split by the engine.

        One launch then holds as many pairs as memory allows, its blocks ordered
        longest first, so the hardware block scheduler balances them (LPT).
        """
        n = max(len(job.rows), len(job.col_set))
        return min(MAX_WIDTH, -(-n // BLOCK) * BLOCK)

    def window_bytes(self, job: Job, w: Window) -> int:
        n, m = job.window_extent(w)
        return w.pairs * self._pair_bytes(job, n, m)

    def _add(self, key: str, value: float) -> None:
        self.timings[key] = self.timings.get(key, 0.0) + value

    # running --------------------------------------------------------------
    def prepare(self, job: Job) -> dict:
        cp = self.cp
        if job.triangle:
            codes, offsets, col_base = job.rows.codes, job.rows.offsets, 0
        else:
            codes = np.concatenate([job.rows.codes, job.cols.codes])
            offsets = np.concatenate([job.rows.offsets[:-1], job.cols.offsets + job.rows.offsets[-1]])
            col_base = len(job.rows)
        with self.device:
            return {"codes": cp.asarray(codes), "offsets": cp.asarray(offsets),
                    "lengths": np.diff(offsets), "col_base": col_base,
                    "matrix": cp.asarray(job.scoring.matrix.astype(np.int32))}

    def run_window(self, job: Job, state: dict, w: Window) -> PairBatch:
        with self.device:
            return self._run(job, state, w)

    def _run(self, job: Job, state: dict, w: Window) -> PairBatch:
        cp = self.cp
        dtype = job.score_dtype(w)
        mod = self._module(dtype)
        pr, pc = window_pairs(w)
        npairs = len(pr)
        col_base = state["col_base"]
        lengths = state["lengths"]
        n_max, m_max = job.window_extent(w)
        d_row = cp.asarray(pr.astype(np.int32))
        d_col = cp.asarray((pc + col_base).astype(np.int32))
        sc = job.scoring
        neg = NEG[dtype]
        bnd_h = cp.empty((m_max + 1) * npairs, dtype)
        bnd_f = cp.empty((m_max + 1) * npairs, dtype)
        stripes = (n_max + STRIPE - 1) // STRIPE
        tb = cp.empty(stripes * m_max * npairs if job.traceback else 1, cp.uint32)
        score = cp.empty(npairs, cp.int32)
        ei = cp.empty(npairs, cp.int32)
        ej = cp.empty(npairs, cp.int32)
        grid = ((npairs + THREADS - 1) // THREADS,)
        K = sc.matrix.shape[0]
        ev = [cp.cuda.Event() for _ in range(3)]
        ev[0].record()
        tb_flag = "true" if job.traceback else "false"
        mod.get_function(f"fill<{job.mode_code},{tb_flag}>")(
            grid, (THREADS,),
            (state["codes"], state["offsets"], d_row, d_col,
             np.int32(npairs), state["matrix"], np.int32(K), np.int32(sc.gap_open),
             np.int32(sc.gap_extend), np.int32(neg), bnd_h, bnd_f, tb, np.int32(m_max),
             score, ei, ej))
        ev[1].record()
        del bnd_h, bnd_f
        if job.traceback:
            bound = lengths[pr] + lengths[pc + col_base]
            op_off = np.zeros(npairs + 1, np.int64)
            np.cumsum(bound, out=op_off[1:])
            d_off = cp.asarray(op_off)
            op_code = cp.empty(int(op_off[-1]), cp.uint8)
            op_len = cp.empty(int(op_off[-1]), cp.int32)
            qb, tbeg, nops, ident, alen = (cp.empty(npairs, cp.int32) for _ in range(5))
            mod.get_function(f"walk<{job.mode_code}>")(
                grid, (THREADS,),
                (state["codes"], state["offsets"], d_row, d_col, np.int32(npairs), tb,
                 np.int32(m_max), ei, ej, d_off, op_code, op_len, qb, tbeg, nops, ident, alen))
            ev[2].record()
            del tb
            counts = nops.astype(cp.int64)
            gather = _ranges(d_off[:-1], counts, xp=cp)
            offs = cp.zeros(npairs + 1, cp.int64)
            cp.cumsum(counts, out=offs[1:])
            code_h = op_code[gather].get()
            len_h = op_len[gather].get()
            offs_h = offs.get()
            qb_h, tb_h, ident_h, alen_h = qb.get(), tbeg.get(), ident.get(), alen.get()
        else:
            minus = np.full(npairs, -1, np.int32)
            qb_h = tb_h = ident_h = alen_h = minus
            offs_h = np.zeros(npairs + 1, np.int64)
            code_h = np.zeros(0, np.uint8)
            len_h = np.zeros(0, np.int32)
        ev[2].synchronize() if job.traceback else ev[1].synchronize()
        self._add("fill", cp.cuda.get_elapsed_time(ev[0], ev[1]) / 1e3)
        if job.traceback:
            self._add("traceback", cp.cuda.get_elapsed_time(ev[1], ev[2]) / 1e3)
        self._add("cells", float(w.cells))
        return PairBatch(query=pr.astype(np.int64), target=pc.astype(np.int64),
                         score=score.get(), query_begin=qb_h, query_end=ei.get(),
                         target_begin=tb_h, target_end=ej.get(), identities=ident_h,
                         length=alen_h, op_offsets=offs_h, op_code=code_h, op_len=len_h)

