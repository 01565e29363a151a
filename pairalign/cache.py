"""pairalign's own cache folder (the cost model, the named matrices).

``$PAIRALIGN_CACHE_DIR``, else ``$XDG_CACHE_HOME/pairalign``, else
``~/.cache/pairalign``. Compiled kernels are numba's and CuPy's to keep
(``NUMBA_CACHE_DIR``, ``CUPY_CACHE_DIR``). Every file in it is written
atomically and only as a speed-up: a folder that cannot be written costs
time, never a run.
"""

from __future__ import annotations

import os
from pathlib import Path


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
