"""Compute kernels: numba on the CPU (:mod:`.cpu`), CUDA C through CuPy (:mod:`.gpu`)."""
