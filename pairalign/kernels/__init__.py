"""Compute kernels: numba on the CPU (:mod:`.cpu`, driven by :mod:`.cpu_backend`)
and CUDA C through CuPy (``align.cu``, driven by :mod:`.gpu_backend`). Both keep
the conventions of :mod:`.conventions`, so they give the same alignments. The
host's numba passes over results (:mod:`.batch_ops`, :mod:`.text`) live here
too, imported at their first call: importing pairalign does not start numba."""
