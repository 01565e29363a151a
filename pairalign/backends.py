"""Choosing the backend that runs the kernels: CPU (numba) or GPU (CuPy)."""

from __future__ import annotations

from typing import Sequence

from .errors import OptionError

BACKENDS = ("auto", "cpu", "gpu")


def gpu_available() -> bool:
    """Whether CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no cupy, no driver, no device: all mean "no GPU"
        return False


def get_backend(name: str = "auto", threads: int | None = None,
                devices: Sequence[int] | None = None):
    """A backend instance by name.

    Parameters
    ----------
    name : {"auto", "cpu", "gpu"}
        ``auto`` takes the GPU when CuPy sees one, else the CPU.
    threads : int, optional
        CPU cores (CPU backend).
    devices : sequence of int, optional
        GPU ordinals (GPU backend); the first visible by default.
    """
    if name not in BACKENDS:
        raise OptionError(f"unknown backend {name!r}: expected one of {', '.join(BACKENDS)}")
    if name == "auto":
        name = "gpu" if gpu_available() else "cpu"
    if name == "gpu":
        if not gpu_available():
            raise OptionError("backend 'gpu' asked for, but CuPy sees no CUDA device")
        from .kernels.gpu_backend import GPUBackend

        return GPUBackend(devices=devices)
    from .kernels.cpu_backend import CPUBackend

    return CPUBackend(threads=threads)
