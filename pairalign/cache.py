"""pairalign's own cache folder (the cost model, the named matrices).

``$PAIRALIGN_CACHE_DIR``, else ``$XDG_CACHE_HOME/pairalign``, else
``~/.cache/pairalign``. Compiled kernels are numba's and CuPy's to keep
(``NUMBA_CACHE_DIR``, ``CUPY_CACHE_DIR``). Every file in it is written
atomically and only as a speed-up: a folder that cannot be written costs
time, never a run.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable


def cache_dir() -> Path:
    """The folder, from the environment as it is now.

    >>> import os
    >>> os.environ["PAIRALIGN_CACHE_DIR"] = "/tmp/pa"
    >>> str(cache_dir())
    '/tmp/pa'
    >>> del os.environ["PAIRALIGN_CACHE_DIR"]
    """
    own = os.environ.get("PAIRALIGN_CACHE_DIR")
    if own:
        return Path(own)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pairalign"


def write_atomically(path: Path, write: Callable[[BinaryIO], None]) -> bool:
    """A cache file by ``write`` (given a binary handle) through a temporary
    file beside it, renamed over ``path`` once whole; False, and nothing
    left behind, where the folder cannot be made or written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False
    return True
