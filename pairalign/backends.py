"""Choosing the backend that runs the kernels: CPU (numba) or GPU (CuPy)."""

from __future__ import annotations

import ctypes
import threading
from numbers import Integral
from typing import Sequence

from .errors import OptionError

BACKENDS = ("auto", "cpu", "gpu")


def start_cuda(devices: Sequence[int] | None = None) -> threading.Thread:
    """Start the CUDA driver and the devices' primary contexts on a thread.

    Through ctypes, which releases the GIL for each driver call, so that the
    0.2-0.3 s the driver takes to start (``cuInit``, then a context per device)
    overlaps whatever the caller imports meanwhile; CuPy then finds them
    started. ``devices``: the ordinals a run will use (every visible one by
    default, as :func:`get_backend`). Without a driver or a device the thread
    does nothing. The command line calls this (it owns its process); the API
    does not.
    """
    def start() -> None:
        try:
            cuda = ctypes.CDLL("libcuda.so.1")
            if cuda.cuInit(0) != 0:
                return
            count = ctypes.c_int(0)
            if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
                return
            for ordinal in (range(count.value) if devices is None else devices):
                if not 0 <= ordinal < count.value:
                    continue
                dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
                if cuda.cuDeviceGet(ctypes.byref(dev), ordinal) == 0:
                    cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
        except Exception:  # no driver library, or one that fails: CuPy reports it later
            pass

    thread = threading.Thread(target=start, name="pairalign-cuda-start", daemon=True)
    thread.start()
    return thread


def gpu_available() -> bool:
    """Whether CuPy imports and sees at least one CUDA device."""
    return _why_no_gpu() is None


def _why_no_gpu() -> str | None:
    """Why there is no GPU to run on (None where there is one): no CuPy, or
    CuPy's error, or no device."""
    try:
        import cupy
    except ModuleNotFoundError as err:
        if err.name == "cupy":
            return ("CuPy is not installed: pip install 'pairalign[gpu]' (or cupy-cuda12x "
                    "for CUDA 12)")
        return f"CuPy does not import: {_one_line(err)}"
    except Exception as err:  # a CuPy that fails to import (its CUDA libraries)
        return f"CuPy does not import: {_one_line(err)}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # no driver, a driver too old for this CuPy
        return f"CuPy finds no CUDA device: {_one_line(err)}"
    return None if count > 0 else "CuPy sees no CUDA device"


def _one_line(err: BaseException, limit: int = 300) -> str:
    text = " ".join(str(err).replace("=", " ").split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def backend_name(name: str = "auto") -> str:
    """The backend that ``name`` takes, ``"cpu"`` or ``"gpu"`` (``auto``: the
    GPU where CuPy sees one); an :class:`OptionError` for an unknown name, or
    for ``gpu`` where CuPy sees no device."""
    if name not in BACKENDS:
        raise OptionError(f"unknown backend {name!r}: expected one of {', '.join(BACKENDS)}")
    if name == "auto":
        return "gpu" if gpu_available() else "cpu"
    why = _why_no_gpu() if name == "gpu" else None
    if why is not None:
        raise OptionError(f"backend 'gpu' asked for, but {why}")
    return name


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
        GPU ordinals (GPU backend); every visible device by default. With
        several, the engine runs one worker per device (each its own
        ``GPUBackend(devices=[d])``), taking windows in LPT order.
    """
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, Integral)
                                or threads < 1):
        raise OptionError(f"threads must be a whole number >= 1, got {threads!r}")
    if backend_name(name) == "gpu":
        from .kernels.gpu_backend import GPUBackend

        return GPUBackend(devices=_gpu_devices(devices))
    if devices is not None and len(devices):
        import warnings

        from .errors import CPUFallbackWarning

        why = "the CPU backend was asked for" if name == "cpu" else "CuPy sees no GPU"
        warnings.warn(f"devices {','.join(map(str, devices))} were given, but {why}: "
                      f"the run is on the CPU", CPUFallbackWarning, stacklevel=2)
    from .kernels.cpu_backend import CPUBackend

    return CPUBackend(threads=threads)


def gpu_count() -> int:
    """Number of CUDA devices CuPy sees (0 without CuPy or a driver)."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def _gpu_devices(devices: Sequence[int] | None) -> list[int]:
    """The ordinals to run on: those given (checked), or every visible device."""
    count = gpu_count()
    if devices is None or len(devices) == 0:
        return list(range(count))
    out = [int(d) for d in devices]
    if len(set(out)) != len(out):
        raise OptionError(f"a device is listed twice in {out}")
    bad = [d for d in out if not 0 <= d < count]
    if bad:
        raise OptionError(f"no CUDA device {bad[0]}: {count} visible "
                          f"(ordinals 0 to {count - 1})")
    return out
