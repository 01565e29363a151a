"""The command line's timeline across threads: when each stage starts and ends.

cProfile sees only the thread that started it; the engine's worker and
formatting threads are invisible to it. This wraps named functions so that each
call records (thread, start, end), runs the command line in this process and
prints the spans in start order, in seconds since the process started.

    python benchmarks/cli_timeline.py -- all-vs-all shared/data/proteome_HG003687.faa \\
        --backend gpu -o /tmp/p.tsv
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import time

T0 = time.perf_counter()

#: module, attribute path: the functions traced
TRACED = [
    ("pairalign.cli_options", "start_numba"),
    ("pairalign.backends", "get_backend"),
    ("pairalign.sequences", "read_sequences"),
    ("pairalign.engine", "prepare_work"),
    ("pairalign.engine", "_NumbaGuard.needed"),
    ("pairalign.engine", "fit_window"),
    ("pairalign.engine", "to_input"),
    ("pairalign.kernels.gpu_backend", "GPUBackend.prepare"),
    ("pairalign.kernels.gpu_backend", "GPUBackend._plan"),
    ("pairalign.kernels.gpu_backend", "GPUBackend._module"),
    ("pairalign.kernels.gpu_backend", "GPUBackend._empty_pinned"),
    ("pairalign.kernels.gpu_backend", "GPUBackend._layout"),
    ("pairalign.kernels.gpu_backend", "GPUBackend._launch"),
    ("pairalign.kernels.gpu_backend", "GPUBackend._detach"),
    ("pairalign.kernels.gpu_backend", "GPUBackend._fetch"),
    ("pairalign.kernels.gpu_backend", "GPUBackend._download"),
    ("pairalign.pairs", "PairBatch.oriented"),
    ("pairalign.pairs", "Placement.add"),
    ("pairalign.pairs", "Placement.finish"),
    ("pairalign.output", "write_tsv"),
    ("os", "fsync"),
    ("os", "replace"),
]

#: modules whose first import is reported with the frames that caused it
WATCHED = ("cupyx", "scipy")
first_imports: dict[str, list[str]] = {}


class _Watch:
    """A meta-path finder that finds nothing and notes who imported a watched module."""

    def find_spec(self, name, path=None, target=None):
        if name in WATCHED and name not in first_imports:
            import traceback

            frames = [f for f in traceback.extract_stack()[:-1] if "importlib" not in f.filename]
            first_imports[name] = [f"{f.filename}:{f.lineno} {f.name}" for f in frames[-6:]]
        return None

spans: list[tuple[float, float, str, str]] = []


def traced(name: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spans.append((t - T0, time.perf_counter() - T0, threading.current_thread().name, name))
    return wrapper


def install() -> None:
    for module, path in TRACED:
        owner = importlib.import_module(module)
        *parents, attr = path.split(".")
        for p in parents:
            owner = getattr(owner, p)
        fn = getattr(owner, attr)
        setattr(owner, attr, traced(path, fn))
        # names imported elsewhere with ``from module import fn`` keep the
        # original: patch those too
        for mod in list(sys.modules.values()):
            if mod is not None and getattr(mod, "__name__", "").startswith("pairalign") \
                    and getattr(mod, attr, None) is fn and not parents:
                setattr(mod, attr, getattr(owner, attr))


def report(top_repeats: int = 3) -> None:
    """Spans in start order; a name called many times shows its first calls and a total."""
    seen: dict[str, int] = {}
    totals: dict[tuple[str, str], list[float]] = {}
    for start, end, thread, name in sorted(spans):
        key = (thread, name)
        totals.setdefault(key, [0.0, 0, start, end])
        tot = totals[key]
        tot[0] += end - start
        tot[1] += 1
        tot[3] = max(tot[3], end)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] <= top_repeats:
            print(f"{start:7.3f} {end:7.3f} {end - start:7.3f}  {thread:24} {name}", file=sys.stderr)
    for name, frames in first_imports.items():
        print(f"first import of {name}:", *frames, sep="\n    ", file=sys.stderr)
    print("totals (thread, name: calls, busy s, first start, last end):", file=sys.stderr)
    for (thread, name), (busy, calls, first, last) in sorted(totals.items(), key=lambda kv: kv[1][2]):
        print(f"  {thread:24} {name:28} {calls:4d} {busy:7.3f} {first:7.3f} {last:7.3f}",
              file=sys.stderr)


def main() -> None:
    argv = sys.argv[1:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    sys.meta_path.insert(0, _Watch())
    t = time.perf_counter()
    import pairalign.cli as cli  # noqa: F401  (the import itself is a stage)

    print(f"  0.000 {time.perf_counter() - T0:7.3f}  import pairalign (since process "
          f"start of this script: {t - T0:.3f})", file=sys.stderr)
    install()
    try:
        cli.main(argv, prog_name="pairalign", standalone_mode=True)
    except SystemExit:
        pass
    finally:
        print(f"end {time.perf_counter() - T0:.3f} s", file=sys.stderr)
        report()


if __name__ == "__main__":
    main()
