"""Compute kernels: numba on the CPU (:mod:`.cpu`, driven by :mod:`.cpu_backend`)
and CUDA C through CuPy (``align.cu``, driven by :mod:`.gpu_backend`). Both keep
the conventions of :mod:`.conventions`, so they give the same alignments."""
