"""Workloads shared by the benchmarks: proteome proteins sampled and mutated,
and random proteins of one length."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
#: shared/data beside the repository, or a copy inside it (device runs)
DATA = next((d for d in (ROOT.parent / "shared" / "data", ROOT / "shared" / "data")
             if d.exists()), ROOT.parent / "shared" / "data")
PROTEOME = DATA / "proteome_HG003687.faa"
AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", np.uint8)


class NumbaCompiles:
    """Numba's dispatcher compilations (``numba:compile`` events: a compile,
    or a load from numba's cache) inside a ``with`` block, on any thread:
    ``count``, ``seconds`` (summed over events, which may overlap) and
    ``slowest`` (``(seconds, function)``, the five longest)."""

    def __enter__(self) -> "NumbaCompiles":
        from numba.core import event

        self._recording = event.install_recorder("numba:compile")
        self._recorder = self._recording.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._recording.__exit__(*exc)
        starts: dict[int, float] = {}
        spans = []
        for t, ev in self._recorder.buffer:
            key = id(ev.data)
            if ev.is_start:
                starts[key] = t
            elif key in starts:
                func = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
                spans.append((t - starts.pop(key), getattr(func, "__qualname__", "?")))
        self.count = len(spans)
        self.seconds = sum(s for s, _ in spans)
        self.slowest = sorted(spans, reverse=True)[:5]


class CupyCompiles:
    """CuPy's kernel compilations inside a ``with`` block, on any thread:
    NVRTC runs (``compiled``: ``(seconds, first kernel name)``, a kernel
    not in CuPy's disk cache) and disk-cache lookups (``looked_up``:
    seconds summed). A fresh machine has no disk cache: its first process
    compiles every kernel it runs; later processes load them."""

    def __enter__(self) -> "CupyCompiles":
        import re
        import threading
        import time

        from cupy.cuda import compiler

        self._compiler = compiler
        # (CuPy's private names: where a version lacks one, it is not counted)
        self._saved = {name: getattr(compiler, name) for name in
                       ("compile_using_nvrtc", "_compile_with_cache_cuda")
                       if hasattr(compiler, name)}
        self.compiled: list[tuple[float, str]] = []
        self.looked_up = 0.0
        lock = threading.Lock()

        def nvrtc(source, *args, **kwargs):
            t = time.perf_counter()
            try:
                return self._saved["compile_using_nvrtc"](source, *args, **kwargs)
            finally:
                m = re.search(r"__global__\s+void\s+(\w+)", source)
                with lock:
                    self.compiled.append((time.perf_counter() - t, m.group(1) if m else "?"))

        def cached(*args, **kwargs):
            t = time.perf_counter()
            try:
                return self._saved["_compile_with_cache_cuda"](*args, **kwargs)
            finally:
                with lock:
                    self.looked_up += time.perf_counter() - t

        for name, wrapper in (("compile_using_nvrtc", nvrtc),
                              ("_compile_with_cache_cuda", cached)):
            if name in self._saved:
                setattr(compiler, name, wrapper)
        return self

    def __exit__(self, *exc) -> None:
        for name, fn in self._saved.items():
            setattr(self._compiler, name, fn)


def cells_of(lengths) -> int:
    """DP cells of the all-vs-all of sequences of these lengths (pairs i < j)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    t = int(lengths.sum())
    return (t * t - int((lengths * lengths).sum())) // 2


def sampled_proteins(cells: float, seed: int = 1, rate: float = 0.1) -> list[str]:
    """Proteins drawn from the proteome (random proteome-like ones if the file is
    absent), each with ``rate`` substitutions, until their all-vs-all reaches
    ``cells`` DP cells."""
    rng = np.random.default_rng(seed)
    if PROTEOME.is_file():
        import pairalign

        pool = pairalign.read_sequences(PROTEOME).sequences
    else:
        lengths = np.clip(rng.lognormal(5.7, 0.6, 4000).astype(int), 40, 3000)
        pool = [rng.choice(AMINO, n).tobytes().decode() for n in lengths]
    picks = []
    total = sq = 0
    while (total * total - sq) // 2 < cells:
        k = int(rng.integers(0, len(pool)))
        n = len(pool[k])
        picks.append(k)
        total += n
        sq += n * n
    out = []
    for k in picks:
        s = np.frombuffer(pool[k].encode(), np.uint8).copy()
        hit = rng.random(len(s)) < rate
        s[hit] = rng.choice(AMINO, int(hit.sum()))
        out.append(s.tobytes().decode())
    return out


def uniform_proteins(rng: np.random.Generator, cells: float, length: int) -> list[str]:
    """Random proteins of exactly ``length`` residues (drawn from ``rng``),
    enough for their all-vs-all to reach about ``cells`` DP cells."""
    n = int((2 * cells) ** 0.5 / length) + 1
    return [rng.choice(AMINO, length).tobytes().decode() for _ in range(n)]


def proteome_or_sampled(cells: float) -> list[str]:
    """The proteome's proteins (``cells`` 0), or proteins sampled to ``cells``."""
    import pairalign

    return sampled_proteins(cells) if cells else pairalign.read_sequences(PROTEOME).sequences


def warm_gpu_backend(mode: str, traceback: bool | tuple[bool, ...], backend=None,
                     sample_cells: float = 0, modes: tuple[str, ...] = ()):
    """A GPU backend (``backend``, or a new one) whose kernels have run once, in
    ``mode``, with and/or without traceback (``traceback``: one setting or
    several, in turn), so that a timed run compiles nothing: on the
    proteome's 400 shortest proteins (16-bit scores), then on its 60 longest
    (32-bit), with ``sample_cells`` of sampled proteins beside them (the
    scaled workloads' window shapes). A window is 32-bit throughout where
    one of its pairs needs it: the proteome's first 400 proteins, the
    warm-up before, hold a 3,485-residue one, and NVRTC compiled the 16-bit
    module in the timed run's first window (7-9 s of its layout on a fresh
    H100, where the module's first kernel is looked up). A module holds one
    mode's kernels: those of ``modes`` besides ``mode`` are compiled too,
    both widths (not run). numba's planner is loaded as a run of many
    windows loads it (compiled once an install, ~8 s, which a timed run's
    first windows would otherwise share the GIL with)."""
    from pairalign.engine import run_job
    from pairalign.job import Job, SortedSet
    from pairalign.kernels import gpu_backend
    from pairalign.kernels.conventions import MODES
    from pairalign.kernels.gpu_backend import GPUBackend
    from pairalign.scoring import Scoring

    be = GPUBackend() if backend is None else backend
    sc = Scoring.create("protein")
    by_length = sorted(proteome_or_sampled(0), key=len)
    sample = sampled_proteins(sample_cells) if sample_cells else []
    for tb in (traceback,) if isinstance(traceback, bool) else traceback:
        for warm in (by_length[:400], sample + by_length[-60:]):
            run_job(Job(mode, sc, tb, SortedSet.encode(warm, sc)), be)
    for other in set(modes) - {mode}:
        for width in (np.int16, np.int32):
            be._module(np.dtype(width), MODES[other])
    assert len({key[0] for key in be._modules}) == 2, "both score widths compiled"
    be.load_planner(gpu_backend.PLAN_IN_NUMBA_WINDOWS)
    return be


def add_run_arguments(ap) -> None:
    """The options of a benchmark that times ``run_job`` runs on one workload:
    ``--cells`` (0: the proteome), ``--traceback``, ``--mode``, ``--runs``."""
    ap.add_argument("--cells", type=float, default=0, help="0: the proteome")
    ap.add_argument("--traceback", action="store_true")
    ap.add_argument("--mode", default="local", choices=("local", "global", "semiglobal"))
    ap.add_argument("--runs", type=int, default=2)
