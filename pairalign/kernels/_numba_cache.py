"""Drop compiled kernels that :mod:`.conventions` has outdated.

numba keys a cached kernel on its own source file (time and size) only, with
the constants it reads from other modules frozen in. A checkout that changes
:mod:`.conventions` (the operation codes, say) but not a kernel module would
load that module's kernels compiled with the old codes, and give wrong
alignments without an error. Before the kernel modules define their kernels,
:func:`drop_stale` removes this folder's cached kernels when the conventions
differ from those they were compiled with (a stamp file beside them).
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_checked = False


def _conventions_digest(folder: Path) -> str:
    """What names the conventions the kernels of ``folder`` are compiled with."""
    return hashlib.sha256((folder / "conventions.py").read_bytes()).hexdigest()[:16]


def _can_write(folder: str | Path) -> bool:
    """Whether a file can be made in ``folder`` (made if missing), as numba
    tries its cache folders."""
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
        return True
    except OSError:
        return False


def ensure_cache_folder(folder: Path = _HERE) -> str | None:
    """Where neither ``folder``'s ``__pycache__`` nor numba's user-wide cache
    folder can be written and ``NUMBA_CACHE_DIR`` is unset (a read-only
    install and home, as containers run), numba's ``cache=True`` raises when
    a kernel is defined: point numba's cache at a folder of the system's
    temporary one instead (per user and conventions, see :func:`drop_stale`).
    Returns that folder, or None where numba had one."""
    from numba.core import config

    if config.CACHE_DIR or _can_write(folder / "__pycache__"):
        return None
    from numba.misc.appdirs import AppDirs

    if _can_write(AppDirs(appname="numba", appauthor=False).user_cache_dir):
        return None
    digest = _conventions_digest(folder)
    uid = os.getuid() if hasattr(os, "getuid") else 0
    shared = os.path.join(tempfile.gettempdir(), f"pairalign-numba-{uid}-{digest}")
    # numba loads what it finds there (pickled indexes): a folder of the
    # shared temporary one is used only if this user alone can write it,
    # else a new one of this process's
    config.CACHE_DIR = (shared if _private(shared)
                        else tempfile.mkdtemp(prefix=f"pairalign-numba-{uid}-"))
    return config.CACHE_DIR


def _private(folder: str) -> bool:
    """Whether ``folder`` (made if missing) is a folder, not a link, of this
    user's that no one else can write, and writable."""
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.lstat(folder)
    except OSError:
        return False
    mine = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return (stat.S_ISDIR(st.st_mode) and mine and not st.st_mode & 0o022
            and _can_write(folder))


def drop_stale(folder: Path = _HERE) -> bool:
    """Remove ``folder``'s cached numba kernels (``__pycache__/*.nbi`` and
    ``*.nbc``) unless they were compiled with the ``conventions.py`` that is
    there now; returns whether any were removed. Once a process for this
    package's folder; a cache that cannot be written is left as it is.

    The stamp is written even where there is no cache yet (its folder made):
    the kernels this process compiles are cached with the conventions of now.
    Without it, the run after a first one with no ``__pycache__`` (Python told
    not to write bytecode, as container images often are) would find them
    unstamped, drop them and compile every kernel again."""
    global _checked
    if folder == _HERE:
        if _checked:
            return False
        _checked = True
        ensure_cache_folder()
    cache = folder / "__pycache__"
    try:
        stamp = cache / f"conventions-{_conventions_digest(folder)}.stamp"
        if stamp.exists():
            return False
        stale = [f for pattern in ("*.nbi", "*.nbc") for f in cache.glob(pattern)]
        for f in stale + list(cache.glob("conventions-*.stamp")):
            f.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.touch()
        return bool(stale)
    except OSError:  # a read-only install: numba caches elsewhere or not at all
        return False
