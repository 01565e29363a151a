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
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_checked = False


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
    cache = folder / "__pycache__"
    try:
        digest = hashlib.sha256((folder / "conventions.py").read_bytes()).hexdigest()[:16]
        stamp = cache / f"conventions-{digest}.stamp"
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
