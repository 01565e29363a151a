"""Workers of a run: one backend per GPU (each with its own state), or the CPU.

Nothing here imports CuPy unless a GPU backend is in use: the functions look at
the backend objects they are given (``devices``, ``device``, ``cp``), so they
work with fakes in tests.
"""

from __future__ import annotations

from typing import Sequence


def visible_gpus() -> list[int]:
    """Ordinals of the CUDA devices CuPy sees (``CUDA_VISIBLE_DEVICES`` applies)."""
    try:
        import cupy

        return list(range(cupy.cuda.runtime.getDeviceCount()))
    except Exception:  # no cupy, no driver, no device
        return []


def worker_backends(backend) -> list:
    """One backend per worker.

    - a list or tuple of backends: each is a worker (tests, custom set-ups);
    - an object with ``workers()``: what it returns;
    - a backend whose ``devices`` lists several GPU ordinals: ``backend`` itself
      for the first, and ``type(backend)(devices=[d])`` for each other, so every
      device has its own backend, kernels, streams and prepared state;
    - anything else: ``[backend]`` (the CPU backend: one worker, whose numba
      kernels use the cores inside each window).
    """
    if isinstance(backend, (list, tuple)):
        if not backend:
            raise ValueError("no backends given")
        return list(backend)
    own = getattr(backend, "workers", None)
    if callable(own):
        return list(own())
    devices = getattr(backend, "devices", None)
    if devices is not None and len(devices) > 1:
        # kept on the backend: later runs reuse the same per-device backends
        cache = getattr(backend, "_device_workers", None)
        if cache is None:
            cache = {}
            try:
                backend._device_workers = cache
            except AttributeError:
                pass
        out = [backend]
        for d in list(devices)[1:]:
            if d not in cache:
                cache[d] = type(backend)(devices=[d])
            out.append(cache[d])
        return out
    return [backend]


def primary(backend):
    """The backend that sizes windows and names the run: the first worker's."""
    if isinstance(backend, (list, tuple)):
        return backend[0]
    return backend


def label(backend, index: int = 0) -> str:
    """A short name of a worker: ``gpu0``, ``cpu``, or ``<name><index>``."""
    name = getattr(backend, "name", type(backend).__name__)
    devices = getattr(backend, "devices", None)
    if devices:
        return f"{name}{devices[0]}"
    return name if index == 0 else f"{name}{index}"


def bind_thread(backend) -> None:
    """Make the backend's device current in this thread (CuPy keeps it per thread)."""
    dev = getattr(backend, "device", None)
    use = getattr(dev, "use", None)
    if callable(use):
        try:
            use()
        except Exception:
            pass


def recover(backend) -> None:
    """After an error on a device: drop cached blocks so that a retry finds memory."""
    cp = getattr(backend, "cp", None)
    if cp is None:
        return
    try:
        dev = getattr(backend, "device", None)
        if dev is not None:
            with dev:
                cp.get_default_memory_pool().free_all_blocks()
                cp.get_default_pinned_memory_pool().free_all_blocks()
        else:
            cp.get_default_memory_pool().free_all_blocks()
    except Exception:
        pass


def responds(backend) -> bool:
    """Whether the backend's device still runs work after an error.

    False where the backend's probe (``responds()``) says its device is lost
    (a sticky CUDA error: every later call on the device raises it again) or
    raises itself; True for a backend without one (the CPU).
    """
    probe = getattr(backend, "responds", None)
    if not callable(probe):
        return True
    try:
        return bool(probe())
    except Exception:
        return False


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` says a device (or the host) ran out of memory."""
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    return "OutOfMemory" in name or "out of memory" in str(exc).lower()


def min_window_pairs(backend) -> int:
    """Fewest pairs worth a window of their own on this backend.

    A GPU runs one thread per pair: below a few waves of its cores the launch
    waits on its longest pair. 2^18 pairs fill an H100 (132 SMs x 2048 threads)
    about once.
    """
    own = getattr(backend, "min_window_pairs", None)
    if isinstance(own, int):
        return own
    return 1 << 18 if getattr(backend, "name", "") == "gpu" else 256


def check_devices(devices: Sequence[int] | None) -> list[int] | None:
    """Validate GPU ordinals (no duplicates, non-negative)."""
    if devices is None:
        return None
    out = [int(d) for d in devices]
    if len(set(out)) != len(out):
        raise ValueError(f"device listed twice in {out}")
    if any(d < 0 for d in out):
        raise ValueError(f"negative device ordinal in {out}")
    return out
