"""In-process A/B of kernel variants: preprocessor definitions of ``align.cu``
and settings of ``gpu_backend``.

    python benchmarks/kernel_ab.py [--cells 1e12] [--variant NAME=ITEM,ITEM ...]

An item ``DEF`` defines a macro, ``-DDEF=VALUE`` a macro with a value (one of
``align.cu``'s ``#ifndef`` settings, ``-DPACK_TB_BLOCKS=5`` say); ``ATTR=VALUE``
sets ``gpu_backend.ATTR``, and ``module.ATTR=VALUE`` that of
``pairalign.module`` (an integer, a float, True, False, None, a tuple of
strings written ``a+b``, or else a string) for that variant; ``SHAPE=RxG``
sets the packed score-only kernel's shape (rows a lane, lanes a group) in the
run's mode; ``SOURCE=path`` compiles another version of ``align.cu``.

Each variant runs the proteome all-vs-all (BLOSUM62 11/1, in each ``--mode``) with
and without traceback and, with ``--cells`` and ``--tb-cells``, scaled workloads
score-only and with traceback; best of ``--reps``
runs after a warm-up, interleaved so that drift hits every variant alike. Scores
and alignments must agree across variants (checked: a digest of every pair's
result in input order). The variant ``base`` has no definitions.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import time

import numpy as np

from workloads import DATA, cells_of, sampled_proteins  # noqa: E402

import pairalign  # noqa: E402
from pairalign.engine import run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.pairs import PairBatch  # noqa: E402
from pairalign.kernels import gpu_backend as gb  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402


def owner(attr: str):
    """The module and name of a setting: ``ATTR`` of ``gpu_backend``, or
    ``module.ATTR`` of ``pairalign.module`` (``scheduler.lpt.TAIL_SHARE``)."""
    import importlib

    module, _, name = attr.rpartition(".")
    return (importlib.import_module(f"pairalign.{module}") if module else gb), name


def set_all(items: list[str]) -> None:
    """Each ``ATTR=VALUE`` (a ``--set`` option's, a variant's) in force (:func:`owner`,
    :func:`setting`); a name its module does not have stops the script, as
    a misspelt one would otherwise set nothing that is read."""
    for item in items:
        attr, _, value = item.partition("=")
        module, name = owner(attr)
        if not hasattr(module, name):
            raise SystemExit(f"{item}: {module.__name__} has no setting {name}")
        setattr(module, name, setting(value))


def apply(items, mode="local") -> None:
    """A variant's items in force: its definitions, shape and settings."""
    gb.DEFINES = tuple(i[2:] if i.startswith("-D") else i for i in items
                       if "=" not in i or i.startswith("-D"))
    gb.PACK_SHAPES = dict(DEFAULT_SHAPES)
    for item in items:
        if item.startswith("-D"):
            continue
        if item.startswith("SHAPE="):
            rows, group = item.partition("=")[2].split("x")
            gb.PACK_SHAPES[mode] = (int(rows), int(group))
        elif "=" in item:
            set_all([item])


def parse_variants(specs) -> list[tuple[str, tuple[str, ...]]]:
    """``NAME=ITEM,ITEM`` specs as (name, items), after ``base``, whose items
    put back the settings that the others change."""
    variants = [("base", ())]
    base_settings = {}
    for v in specs:
        name, _, defs = v.partition("=")
        items = tuple(d for d in defs.split(",") if d)
        variants.append((name, items))
        for item in items:
            attr = item.partition("=")[0]
            if ("=" in item and attr != "SHAPE" and not item.startswith("-D")
                    and attr not in base_settings):
                base_settings[attr] = getattr(*owner(attr))
    variants[0] = ("base", tuple(f"{k}={v}" for k, v in base_settings.items()))
    return variants


def run(be, seqs, tb, items, mode="local"):
    apply(items, mode)
    sc = Scoring.create("protein")
    job = Job(mode, sc, tb, SortedSet.encode(seqs, sc))
    be.timings.clear()
    ALLOC.update(calls=0, seconds=0.0, slow=0)
    t = time.perf_counter()
    batch = run_job(job, be)
    wall = time.perf_counter() - t
    tim = be.timings
    # every pair's score and alignment (input order), to be equal across variants
    digest = hashlib.blake2b(digest_size=16)
    for field in dataclasses.fields(PairBatch):
        digest.update(np.ascontiguousarray(getattr(batch, field.name)).tobytes())
    bounded = {k: tim[k] for k in ("score_pass", "bound_pass", "box_order", "box_fill")
               if k in tim}
    bounded |= {k: tim[k] / float(tim["cells"]) for k in ("bound_cells", "box_cells")
                if k in tim}
    return ((wall, tim.get("fill", 0.0), tim.get("fill_wide", 0.0), tim.get("traceback", 0.0),
            {k: tim.get(k, 0.0) for k in ("launch", "layout", "alloc", "enqueue", "wait",
                                          "download", "compact", "d2h", "copy_out",
                                          "gpu_span", "gpu_busy", "place", "place_upload", "place_device")}
            | {"malloc": ALLOC["seconds"], "slow mallocs": ALLOC["slow"]} | bounded),
            digest.hexdigest())


def setting(value: str):
    """A variant's ``ATTR=VALUE``: None, True, False, an integer, a float, a
    tuple of strings (``a+b``), or else the string."""
    parsed = {"None": None, "True": True, "False": False}
    if value in parsed:
        return parsed[value]
    if "+" in value:
        return tuple(value.split("+"))
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


ALLOC = {"calls": 0, "seconds": 0.0, "slow": 0}
DEFAULT_SHAPES = dict(gb.PACK_SHAPES)


def trace_allocations() -> None:
    """Route CuPy's allocations through a timer around its default pool."""
    import cupy as cp

    pool = cp.get_default_memory_pool()

    def malloc(nbytes):
        t = time.perf_counter()
        mem = pool.malloc(nbytes)
        dt = time.perf_counter() - t
        ALLOC["calls"] += 1
        ALLOC["seconds"] += dt
        ALLOC["slow"] += dt > 1e-3
        return mem

    cp.cuda.set_allocator(malloc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", type=float, default=0)
    ap.add_argument("--tb-cells", type=float, default=0,
                    help="also a scaled workload of this many cells with traceback")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--mode", default="local",
                    help="a mode, or several comma-separated (each variant compiled once)")
    ap.add_argument("--traceback-only", action="store_true",
                    help="only the runs with traceback (the proteome's)")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=DEF1,DEF2 (the base variant always runs first)")
    ap.add_argument("--no-check", action="store_true",
                    help="time variants whose results differ on purpose (WALK_SKIP, say)")
    ap.add_argument("--alloc-trace", action="store_true",
                    help="time CuPy's device allocations (seconds in malloc, slow calls)")
    args = ap.parse_args()
    if args.alloc_trace:
        trace_allocations()
    variants = parse_variants(args.variant)
    be = gb.GPUBackend()
    print(f"device: {be.describe()}", flush=True)
    prot = pairalign.read_sequences(DATA / "proteome_HG003687.faa").sequences
    modes = args.mode.split(",")
    for _, defs in variants:  # compile and warm every variant
        for mode in modes:
            run(be, prot[:300], True, defs, mode)
            run(be, prot[:300], False, defs, mode)
    work = [("proteome", prot, True)]
    if args.tb_cells:
        work.append((f"scaled {args.tb_cells:g}", sampled_proteins(args.tb_cells), True))
    if not args.traceback_only:
        work.append(("proteome", prot, False))
        if args.cells:
            work.append((f"scaled {args.cells:g}", sampled_proteins(args.cells), False))
    work = [(name, seqs, tb, mode) for mode in modes for name, seqs, tb in work]
    rows = []
    for name, seqs, tb, mode in work:
        cells = cells_of([len(s) for s in seqs])
        best = {}
        ref = None
        for _ in range(args.reps):
            for vname, defs in variants:
                times, scores = run(be, seqs, tb, defs, mode)
                if ref is None:
                    ref = scores
                if ref != scores and not args.no_check:
                    raise SystemExit(f"{vname}: scores or alignments differ from base on {name}")
                if vname not in best or times[0] < best[vname][0]:
                    best[vname] = times
        for vname, _ in variants:
            wall, fill, fwide, walk, host = best[vname]
            rows.append(f"{name:16} {mode:10} tb={'y' if tb else 'n'} {vname:12} "
                        f"wall {wall:6.3f} s  fill {fill:6.3f} (wide {fwide:6.3f})  "
                        f"walk {walk:6.3f}  e2e {cells / wall / 1e9:6.0f}  "
                        f"fill {cells / fill / 1e9:6.0f} GCUPS  launching thread: "
                        + " ".join(f"{k} {v:.3f}" for k, v in host.items() if v))
            print(rows[-1], flush=True)
    print("\n".join(["", "summary (results equal across variants):", *rows]))


if __name__ == "__main__":
    main()
