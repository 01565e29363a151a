"""What a first run pays to compile the CUDA kernels (NVRTC), by what a module holds.

    CUDA_CACHE_DISABLE=1 python benchmarks/compile_times.py

A run compiles ``align.cu`` once a score width and a mode
(``GPUBackend._module``: before v46, once a score width with every mode's
kernels) and CuPy keeps the result on disk: later runs load it. The first run
after an install or an upgrade pays the compile. This times, each compile
fresh (the source made unique, CuPy's cache kept in memory; run it with
``CUDA_CACHE_DISABLE=1``, or the driver's own cache of the PTX's translation
answers the repeats): every mode's kernels in one module; one mode's; and
the two widths of one mode compiled on two threads at once, as
``GPUBackend._compile_ahead`` does (NVRTC lets go of the GIL).
"""

from __future__ import annotations

import os

os.environ.setdefault("CUPY_CACHE_IN_MEMORY", "1")  # nothing read from or written to disk

import itertools  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from importlib import resources  # noqa: E402

import cupy as cp  # noqa: E402

from pairalign.kernels import gpu_backend as gb  # noqa: E402

MODE_NAMES = {code: name for name, code in gb.MODES.items()}
SOURCE = resources.files("pairalign.kernels").joinpath("align.cu").read_text()
_unique = itertools.count()


def compile_seconds(names: list[str], score: str = "short") -> float:
    """Seconds to compile and load a module of ``names`` (a source no cache holds)."""
    cc = "".join(map(str, cp.cuda.Device().compute_capability))
    src = f"{SOURCE}\n// {next(_unique)} {time.time()}\n"
    t = time.perf_counter()
    mod = cp.RawModule(code=src, options=gb.nvrtc_options(score, cc), name_expressions=names)
    mod.get_function(names[0])
    return time.perf_counter() - t


def main() -> None:
    if os.environ.get("CUDA_CACHE_DISABLE") != "1":
        print("warning: CUDA_CACHE_DISABLE is not 1: repeated PTX may come from the "
              "driver's cache", flush=True)
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}", flush=True)
    rows = [(f"{'every mode' if len(modes) == 3 else MODE_NAMES[modes[0]]}, "
             f"{'16' if score == 'short' else '32'}-bit scores", gb.kernel_names(modes), score)
            for modes in ([0, 1, 2], [0], [1], [2]) for score in ("short", "int")]
    for label, names, score in rows:
        print(f"{label:32} {len(names):3} kernels  {compile_seconds(names, score):7.2f} s",
              flush=True)
    for mode in range(3):
        spent: list[float] = []

        def one(score: str) -> None:
            spent.append(compile_seconds(gb.kernel_names([mode]), score))

        t = time.perf_counter()
        threads = [threading.Thread(target=one, args=(s,)) for s in ("short", "int")]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        print(f"{MODE_NAMES[mode]}, both widths on two threads: wall "
              f"{time.perf_counter() - t:.2f} s, each " + ", ".join(f"{s:.2f}" for s in spent)
              + " s", flush=True)


if __name__ == "__main__":
    main()
