"""Cached numba kernels compiled with other conventions are dropped."""

from __future__ import annotations

from pairalign.kernels._numba_cache import drop_stale


def test_kernels_cached_with_other_conventions_are_dropped(tmp_path):
    (tmp_path / "conventions.py").write_text("OP_INS = 2\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    old = [cache / "cpu._walk-1.py311.nbi", cache / "cpu._walk-1.py311.1.nbc"]
    for f in old:
        f.write_bytes(b"x")
    (cache / "cpu.cpython-311.pyc").write_bytes(b"x")
    assert drop_stale(tmp_path)  # no stamp: compiled with unknown conventions
    assert not any(f.exists() for f in old) and (cache / "cpu.cpython-311.pyc").exists()
    # kernels compiled since, with these conventions, stay
    for f in old:
        f.write_bytes(b"x")
    assert not drop_stale(tmp_path)
    assert all(f.exists() for f in old)
    # the conventions change: they go, and the stamp is the new one
    (tmp_path / "conventions.py").write_text("OP_INS = 1\n")
    assert drop_stale(tmp_path)
    assert not any(f.exists() for f in old)
    assert len(list(cache.glob("conventions-*.stamp"))) == 1
    assert not drop_stale(tmp_path)


def test_a_first_run_without_a_cache_folder_stamps_the_kernels_it_compiles(tmp_path):
    # Python told not to write bytecode: no __pycache__ before numba's first cache
    (tmp_path / "conventions.py").write_text("OP_INS = 2\n")
    assert not drop_stale(tmp_path)
    cache = tmp_path / "__pycache__"
    assert len(list(cache.glob("conventions-*.stamp"))) == 1
    compiled = [cache / "cpu._walk-1.py311.nbi", cache / "cpu._walk-1.py311.1.nbc"]
    for f in compiled:  # what the first run's numba writes
        f.write_bytes(b"x")
    # the next run keeps them (it used to drop them and compile everything again)
    assert not drop_stale(tmp_path)
    assert all(f.exists() for f in compiled)


def test_a_cache_folder_that_cannot_be_made_is_left_alone(tmp_path):
    (tmp_path / "conventions.py").write_text("OP_INS = 2\n")
    (tmp_path / "__pycache__").write_bytes(b"")  # a file where the folder would go
    assert not drop_stale(tmp_path)
    assert (tmp_path / "__pycache__").is_file()


def test_numba_caches_in_a_temporary_folder_where_nothing_else_is_writable(tmp_path,
                                                                           monkeypatch):
    """A read-only install and home (NUMBA_CACHE_DIR unset): numba's
    ``cache=True`` would raise at each kernel's definition; its cache goes to
    a folder of the temporary one, per user and conventions, and a kernel
    defined then caches there. Where the install or the home can be written,
    nothing changes."""
    from numba import njit
    from numba.core import config

    from pairalign.kernels import _numba_cache

    (tmp_path / "conventions.py").write_text("OP_INS = 1\n")
    monkeypatch.setattr(config, "CACHE_DIR", "")
    monkeypatch.setattr(_numba_cache.tempfile, "tempdir", str(tmp_path / "tmp"))
    writable, really = {"home": True}, _numba_cache._can_write

    def can_write(folder):  # the install never, the home where told
        if str(folder).startswith(str(tmp_path / "tmp")):
            return really(folder)
        return writable["home"] and "__pycache__" not in str(folder)

    monkeypatch.setattr(_numba_cache, "_can_write", can_write)
    assert _numba_cache.ensure_cache_folder(tmp_path) is None and config.CACHE_DIR == ""
    writable["home"] = False
    folder = _numba_cache.ensure_cache_folder(tmp_path)
    assert folder == config.CACHE_DIR and folder.startswith(str(tmp_path / "tmp"))
    assert _numba_cache.ensure_cache_folder(tmp_path) is None  # numba has one now

    @njit(cache=True)
    def twice(x):
        return 2 * x

    assert twice(21) == 42
    assert any(p.suffix == ".nbi" for p in (tmp_path / "tmp").rglob("*"))


def test_a_temporary_cache_folder_that_others_can_write_is_not_used(tmp_path, monkeypatch):
    """numba loads the pickled indexes it finds in its cache folder: a
    folder of the shared temporary one that another user made, or that
    anyone can write, is passed over for a new one of the process's own."""
    import os

    from numba.core import config

    from pairalign.kernels import _numba_cache

    (tmp_path / "conventions.py").write_text("OP_INS = 1\n")
    monkeypatch.setattr(config, "CACHE_DIR", "")
    monkeypatch.setattr(_numba_cache.tempfile, "tempdir", str(tmp_path / "tmp"))
    really = _numba_cache._can_write
    monkeypatch.setattr(_numba_cache, "_can_write",
                        lambda folder: str(folder).startswith(str(tmp_path / "tmp"))
                        and really(folder))
    first = _numba_cache.ensure_cache_folder(tmp_path)
    assert os.stat(first).st_mode & 0o777 == 0o700
    monkeypatch.setattr(config, "CACHE_DIR", "")
    os.chmod(first, 0o777)  # anyone may write it now
    second = _numba_cache.ensure_cache_folder(tmp_path)
    assert second != first and os.path.dirname(second) == str(tmp_path / "tmp")
    assert os.stat(second).st_mode & 0o777 == 0o700
