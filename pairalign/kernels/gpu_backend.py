"""Run windows of pairs through the CUDA kernels (``align.cu``) with CuPy."""

from __future__ import annotations

from importlib import resources

import time
from collections import deque
from typing import Iterable, Iterator

import numpy as np

from ..job import Job
from ..pairs import PairBatch, _ranges
from ..scheduler.windows import BLOCK, Window

STRIPE = 8
THREADS = 256
#: Windows in flight at once, each on its own stream (and its share of memory).
DEPTH = 4
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
        self._bytes: dict = {}
        self._states: dict = {}
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
        """Device bytes of the largest 16 x 16 block of pairs."""
        n, m = int(job.rows.lengths[0]), int(job.col_set.lengths[0])
        return BLOCK * BLOCK * self._pair_bytes(job, n, m)

    def fit_memory(self, job: Job, budget: int) -> int:
        return 0

    @staticmethod
    def _pair_bytes(job: Job, n: int, m: int) -> int:
        tb = ((n + STRIPE - 1) // STRIPE) * m * 4 if job.traceback else 0
        ops = (n + m) * 5 * 2 if job.traceback else 0
        return tb + ops + 8 * (m + 1) + 64

    def window_bytes(self, job: Job, w: Window) -> int:
        """Device bytes a window takes (traceback, boundary rows, operations, results)."""
        key = (id(job), w)
        if key not in self._bytes:
            with self.device:
                _, _, _, layout = self._layout(job, self._state(job), w)
            self._bytes[key] = layout["bytes"]
        return self._bytes[key]

    def device_budget(self) -> int:
        """Device bytes one window may take: of what is free, a share for each
        window in flight (see :meth:`run_windows`)."""
        return int(self.free_memory() * 0.8 / DEPTH)

    def window_width(self, job: Job, budget: int) -> int:
        """As wide as can be: windows too large for the device are split by the engine.

        One launch then holds as many pairs as memory allows, its blocks ordered
        longest first, so the hardware block scheduler balances them (LPT).
        """
        n = max(len(job.rows), len(job.col_set))
        return min(MAX_WIDTH, -(-n // BLOCK) * BLOCK)

    def _add(self, key: str, value: float) -> None:
        self.timings[key] = self.timings.get(key, 0.0) + value

    # running --------------------------------------------------------------
    def prepare(self, job: Job) -> dict:
        return self._state(job)

    def _state(self, job: Job) -> dict:
        if self._states.get("job") is job:
            return self._states["state"]
        cp = self.cp
        codes, offsets, col_base = job.joined()
        with self.device:
            state = {"codes": cp.asarray(codes), "offsets": cp.asarray(offsets),
                     "lengths": cp.asarray(np.diff(offsets).astype(np.int32)),
                     "col_base": col_base,
                     "matrix": cp.asarray(job.scoring.matrix.astype(np.int32))}
        self._states = {"job": job, "state": state}
        self._bytes = {}
        return state

    def _layout(self, job: Job, state: dict, w: Window):
        """Pairs of a window (on the device) and each warp's share of the buffers."""
        cp = self.cp
        r = cp.arange(w.r0, w.r1, dtype=cp.int32)
        c = cp.arange(w.c0, w.c1, dtype=cp.int32)
        rows = cp.repeat(r, len(c))
        cols = cp.tile(c, len(r))
        if w.triangle:
            keep = rows < cols
            rows, cols = rows[keep], cols[keep]
        cols += state["col_base"]
        npairs = int(rows.size)
        nwarps = -(-npairs // 32)
        n = cp.zeros(nwarps * 32, cp.int64)
        m = cp.zeros(nwarps * 32, cp.int64)
        n[:npairs] = state["lengths"][rows]
        m[:npairs] = state["lengths"][cols]
        wn = n.reshape(nwarps, 32).max(axis=1)
        wm = m.reshape(nwarps, 32).max(axis=1)
        tb_words = ((wn + STRIPE - 1) // STRIPE) * wm * 32 if job.traceback else wm * 0
        bnd = (wm + 1) * 32
        offs = cp.zeros(nwarps + 1, cp.int64)
        boffs = cp.zeros(nwarps + 1, cp.int64)
        cp.cumsum(tb_words, out=offs[1:])
        cp.cumsum(bnd, out=boffs[1:])
        op_off = None
        if job.traceback:
            op_off = cp.zeros(npairs + 1, cp.int64)
            cp.cumsum(n[:npairs] + m[:npairs], out=op_off[1:])
        totals = cp.stack([offs[-1], boffs[-1],
                           op_off[-1] if op_off is not None else offs[0]]).get()
        itemsize = job.score_dtype(w).itemsize
        layout = {"npairs": npairs, "warp_off": offs, "warp_boff": boffs,
                  "warp_m": wm.astype(cp.int32), "tb_words": int(totals[0]),
                  "bnd": int(totals[1]), "ops": int(totals[2]), "op_off": op_off}
        layout["bytes"] = (4 * layout["tb_words"] + 2 * itemsize * layout["bnd"]
                           + 5 * layout["ops"] + 64 * npairs)
        return rows, cols, npairs, layout

    def run_window(self, job: Job, state: dict, w: Window) -> PairBatch:
        return next(self.run_windows(job, state, [w]))

    def run_windows(self, job: Job, state: dict, windows: Iterable[Window],
                    depth: int = DEPTH) -> Iterator[PairBatch]:
        """Results of ``windows``, in order, with up to ``depth`` windows in flight.

        Each window runs on its own CUDA stream: the tail of one (its longest
        pairs) overlaps the next, and the host's decoding of one overlaps the
        kernels of the next.
        """
        with self.device:
            streams = [self.cp.cuda.Stream(non_blocking=True) for _ in range(depth)]
            pending: deque = deque()
            for k, w in enumerate(windows):
                pending.append(self._launch(job, state, w, streams[k % depth]))
                if len(pending) >= depth:
                    yield self._collect(job, pending.popleft())
            while pending:
                yield self._collect(job, pending.popleft())

    def _launch(self, job: Job, state: dict, w: Window, stream) -> dict:
        """Queue a window's kernels on ``stream``; returns what collecting needs."""
        cp = self.cp
        dtype = job.score_dtype(w)
        mod = self._module(dtype)
        sc = job.scoring
        h = {"w": w, "stream": stream, "ev": [cp.cuda.Event() for _ in range(4)]}
        with stream:
            h["ev"][3].record()
            d_row, d_col, npairs, lay = self._layout(job, state, w)
            h["rows"], h["cols"], h["npairs"] = d_row, d_col, npairs
            h["col_base"] = state["col_base"]
            grid = ((npairs + THREADS - 1) // THREADS,)
            bnd_h = cp.empty(lay["bnd"], dtype)
            bnd_f = cp.empty(lay["bnd"], dtype)
            tb = cp.empty(max(lay["tb_words"], 1), cp.uint32)
            h["score"], h["ei"], h["ej"] = (cp.empty(npairs, cp.int32) for _ in range(3))
            if job.traceback:
                h["off"] = lay["op_off"]
                h["code"] = cp.empty(lay["ops"], cp.uint8)
                h["len"] = cp.empty(lay["ops"], cp.int32)
                h["qb"], h["tb"], h["nops"], h["ident"], h["alen"] = (
                    cp.empty(npairs, cp.int32) for _ in range(5))
            h["ev"][0].record()
            tb_flag = "true" if job.traceback else "false"
            mod.get_function(f"fill<{job.mode_code},{tb_flag}>")(
                grid, (THREADS,),
                (state["codes"], state["offsets"], d_row, d_col, np.int32(npairs),
                 state["matrix"], np.int32(sc.matrix.shape[0]), np.int32(sc.gap_open),
                 np.int32(sc.gap_extend), np.int32(NEG[dtype]), bnd_h, bnd_f, tb,
                 lay["warp_off"], lay["warp_boff"], lay["warp_m"],
                 h["score"], h["ei"], h["ej"]))
            h["ev"][1].record()
            del bnd_h, bnd_f
            if job.traceback:
                mod.get_function(f"walk<{job.mode_code}>")(
                    grid, (THREADS,),
                    (state["codes"], state["offsets"], d_row, d_col, np.int32(npairs), tb,
                     lay["warp_off"], lay["warp_m"], h["ei"], h["ej"], h["off"], h["code"],
                     h["len"], h["qb"], h["tb"], h["nops"], h["ident"], h["alen"]))
            h["ev"][2].record()
        return h

    def _collect(self, job: Job, h: dict) -> PairBatch:
        """Wait for a launched window and bring its results to the host."""
        cp = self.cp
        npairs = h["npairs"]
        with h["stream"]:
            h["ev"][2].synchronize()
            t_host = time.perf_counter()
            if job.traceback:
                counts = h["nops"].astype(cp.int64)
                gather = _ranges(h["off"][:-1], counts, xp=cp)
                offs = cp.zeros(npairs + 1, cp.int64)
                cp.cumsum(counts, out=offs[1:])
                code_h, len_h = h["code"][gather].get(), h["len"][gather].get()
                offs_h = offs.get()
                qb_h, tb_h = h["qb"].get(), h["tb"].get()
                ident_h, alen_h = h["ident"].get(), h["alen"].get()
            else:
                qb_h = tb_h = ident_h = alen_h = np.full(npairs, -1, np.int32)
                offs_h = np.zeros(npairs + 1, np.int64)
                code_h, len_h = np.zeros(0, np.uint8), np.zeros(0, np.int32)
            batch = PairBatch(query=h["rows"].get().astype(np.int64),
                              target=h["cols"].get().astype(np.int64) - h["col_base"],
                              score=h["score"].get(), query_begin=qb_h,
                              query_end=h["ei"].get(), target_begin=tb_h,
                              target_end=h["ej"].get(), identities=ident_h, length=alen_h,
                              op_offsets=offs_h, op_code=code_h, op_len=len_h)
        ev = h["ev"]
        self._add("download", time.perf_counter() - t_host)
        self._add("setup", cp.cuda.get_elapsed_time(ev[3], ev[0]) / 1e3)
        self._add("fill", cp.cuda.get_elapsed_time(ev[0], ev[1]) / 1e3)
        self._add("traceback", cp.cuda.get_elapsed_time(ev[1], ev[2]) / 1e3)
        self._add("cells", float(h["w"].cells))
        return batch
